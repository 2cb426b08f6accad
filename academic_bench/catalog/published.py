"""Training throughput that others measured and published, as data with provenance (data/published_throughput.csv).

Each row is one single-node training configuration (GPU type and count, model shape, sequence length, batch,
method) with the figure its source reports (tokens per second per GPU, tokens per second of all the GPUs
together, or the time of one optimizer step; tokens per second per GPU over the forward and backward passes
alone, ``tokens_per_s_per_gpu_fwd_bwd``, where the source timed the optimizer step apart and left it out; sequences
or images per second of all the GPUs, ``samples_per_s``, or of sequences of lengths the source does not state,
``samples_per_s_varying_length``, kept and shown but never predicted), the
source's address and the line quoted from it that holds the figure. Where the source also states the GPU memory
the run took (whyNLP/tinyllama's README, its "GPU Memory" column: GiB for its DDP rows, "G" for its DeepSpeed rows,
read as GiB; the NeMo AutoModel blog's peak memory), ``memory_gib`` holds it and ``quote_memory`` the cell it was
read from. The study predicts each with the same shape and settings
(``answer.published_check``) to check its predictions against measurements it did not make; each model's shape
is a Hugging Face config in data/published_configs/ (``config_path``).

``method`` is the study's method switches joined by '+' (``none`` on one GPU, ``ddp`` for plain data parallelism,
``zero1``-``zero3``, ``fsdp_shard_grad_op``, ``fsdp_full_shard``, ``ckpt`` for activation checkpointing of every
block, ``bf16w`` for weights kept in bf16), or a switch the study has no method for (``selective_ckpt``,
``compile`` where the source names it), which the check names instead of predicting. ``ep`` marks a mixture of
experts' expert parallelism across the same GPUs as the sharding beside it: the study has no such method and predicts
the point as that sharding of every weight (``answer.published_check.methods_of``), a labelled approximation.

Left out by design: whole-run totals (GPU-hours of a finished training run: they hold restarts, evaluation and
idle time, not a step's throughput; so TinyLlama's "3456 A100 GPU hours" and its 24k tokens/s per A100-40G, a
two-node run of 16 GPUs), hand-written CUDA trainers (llm.c and the like: they measure kernels the study's PyTorch
engine does not run), FP8 training and the Muon optimizer (other arithmetic than the study's bf16 AdamW), runs on
more than one node (torchtitan's H200 benchmarks are 4 and 8 nodes), GPUs outside the check (the A40 rows of the
same README) and user reports their own thread diagnoses as a fault (whyNLP/tinyllama issue 1, 2 x RTX 4090 at
1.8k tokens/s, where the maintainer answers that his 2 x RTX 3090 run 'is still much faster than the results').

Sources: llm-foundry's MPT benchmark tables (H100 80GB, A100 80GB, A100 40GB; FSDP full-shard, with and without
activation checkpointing; the rows of 8 GPUs or fewer, sequences up to 8,192 and models up to 13B), torchtitan's Llama
3.1 8B on 8 x H100 (96 GB at 500 W: not the catalog's H100; Float8 rows left out), a nanoGPT iteration log on 8 x A100
(memory size not stated), accelerate's FSDP2 example (Llama 3.1 8B on 8 x H100 SXM in bf16, its figure read off a
chart: "~8000"), and whyNLP/tinyllama's README (TinyLlama-1.1B and LLaMA-7B with the transformers Trainer on 1-8 x RTX
3090, RTX 4090, RTX A6000 and A100 80GB, under accelerate's DDP and DeepSpeed ZeRO-2), NeMo AutoModel's pre-training
performance summary (mixtures of experts: Qwen3-30B-A3B with expert parallelism over FSDP, in two revisions of the
table, and GPT-OSS-20B under FSDP, each on 8 x H100 in bf16 with balanced routing forced), the benchmark behind the
Hugging Face blog on NeMo AutoModel (Qwen3-30B-A3B on 8 x H100 at micro-batch 1: Transformers v5 under FSDP2 with its
grouped_mm experts, and NeMo AutoModel with expert parallelism, each over forward and backward alone) and
Megatron-Bridge's Qwen3-30B-A3B on 8 x B200 in MXFP8 (kept unpredicted: the study has no MXFP8). No single-node H200
training throughput of a decoder in bf16 was found (Lambda's v2 table gives BERT-large on 1 and 8 x H200 in fp16,
below). Mixtures of experts left out: Megatron-Bridge's other single-node Qwen3-30B-A3B rows (MXFP8 on GB200, GB300
and B300, GPUs outside the check; its H100 rows are 16 GPUs in FP8), torchtitan's DeepSeek-V3 16B notes (MFU on B200,
no throughput), OLMoE's own run (256 H100s, several nodes), MegaBlocks' paper (its dMoE models are GPT-2 blocks with
non-gated experts, a layout transformers builds no decoder of), runs in pull-request threads whose settings are not
stated beside their figure (torchtitan pull request 4605, Qwen3-30B-A3B sweeps on 8 x B200 that give TFLOPS alone;
torchtitan issue 1789, DeepSeek-V3 16B on 8 x H100 under selective checkpointing, its lowered batch not stated beside
the figure), Megatron-MoE-ModelZoo's tables (16 nodes or more), ms-swift's Megatron examples (Qwen1.5-MoE-A2.7B,
Moonlight-16B-A3B and Qwen3-30B-A3B on 8 GPUs of a kind they do not name, with pipeline parallelism and packed
sequences) and OLMo-core's throughput table (dense models only); no revision of NeMo AutoModel's summary holds another
mixture on 8 GPUs or fewer.
Beyond the decoders (``family``, figure ``samples_per_s``): timm's RTX 3090 training benchmark (ViT and ConvNeXt, fp16
autocast: the study's ViT-L/16 and ConvNeXt-XL under PyTorch 1.10, 1.11 and 1.12 and DeiT III-L under 1.12, each in
NCHW and NHWC layouts, and ViT-B/16, ConvNeXt-L and ConvNeXt-B of its PyTorch 1.12 NCHW file, kept unpredicted;
left out: those three in its other files, the first PyTorch 1.10 files' figures, which a rerun of the same files
replaced, and deit3_large_patch16_224_in21ft1k, the network of deit3_large_patch16_224 with other weights, timed in
the same files), NVIDIA DeepLearningExamples' BERT-large pre-training tables on V100 16G and 32G (mixed precision,
the pytorch:19.07 README), and its pytorch:21.11 README's pre-training on 1 and 8 x A100 80GB and SQuAD fine-tuning on 1
and 8 x A100 80GB and V100 32G (its A100 pre-training rows are figures of sequences of varying length,
``samples_per_s_varying_length``: shown, not predicted; that README's V100 32G pre-training rows are left out, read
through the same loader and so of varying length too, where the 19.07 README's rows of the same GPU are of the full
length), and
Lambda's deeplearning-benchmark BERT-large SQuAD fine-tuning in fp16 (RTX 2080 Ti to H100 PCIe, and Lambda's own H100
80GB SXM5 rows on 1, 2, 4 and 8 GPUs, its folder's sys_pytorch.txt naming 'NVIDIA_H100_80GB_HBM3', each batch from its
batch-size file; the RTX 6000 Ada on 1, 2, 4 and 8 GPUs and two RTX 4090s under data parallelism, each run's log
naming its per-GPU batch; the Titan RTX and Quadro RTX 6000 on one GPU from its first table, the Quadro RTX 8000 on
one GPU from its later table; the one-GPU Lambda Cloud V100 16GB row of its later table, a board its compiling script
gives 300 W, the SXM2 board's power, where the PCIe V100 is a 250 W board). Left out of that table: its rows of two to
eight RTX 2080 Ti (each reads 6.0 sequences/s whatever the count; the two-card run's log, results/2x2080Ti_trt,
launches one process of run_squad.py at batch 2 without --fp16), its 2, 4 and 8 x RTX 8000 rows without the bridges
(data/gpus.csv has the card's bridged pairs) and with them (each figure is scripts/patch/run_squad.sh's count of steps
x GPUs x batch over the progress bar's mean seconds per epoch over both epochs, and these epochs are short, 29, 15 and
8 steps per GPU at batch 36, so the first epoch's warm-up weighs on the figure: on 8 GPUs,
results/8xQuadroRTX8000NVlink_trt2, the first step takes about 6 seconds, '1/8 [00:06<00:42,  6.11s/it]', both epochs
19, '2/2 [00:19<00:00, 10.98s/it]', where the second epoch's 8 steps took 6 to 7, '8/8 [00:06<00:00'), the first
table's one-GPU RTX 8000 row (an earlier run of the card the later table holds), and its cloud rows of 2 and 4 Quadro
RTX 6000 ('Lambda Cloud', 'Linode Cloud': virtual machines whose board and links the source does not state; the card
is also sold as a passive server board of other clocks: Leadtek's lists 14.9 TFLOPS FP32 at 250 W), its 2, 4 and 8 x
Lambda Cloud V100 16GB rows (virtual machines whose links between the GPUs the source does not state; two GPUs give
1.5 times one's figure) and its first table's V100 32GB rows on 1 to 8 GPUs (the board, SXM2 or PCIe, is not stated;
the multi-GPU figures are again the epoch-timed ones of 43, 21 and 11 steps per GPU). Its v2 table's H200 rows on 1
and 8 GPUs from the host LambdaBM_ENG04 (each figure the mean of its folder's three runs, cut to a whole number); the
same table's other hosts of the same count (its HTOff twin, ASUS, LENNOVO and SMC 8 x H200, the LambdaOD H100 SXM5
rows) and the first table's other vendors' H100 SXM5 rows (Dell, DellTexas, SMC, 1CC, RAIDZ1, LambdaCloud) left out as
repeats of a configuration already kept, and its 2, 4 and 8 x H100 PCIe rows left out: the card pairs over NVLink
bridges (data/gpus.csv) and the runs' files name no bridge. nanoGPT on one RTX 4090: pull request 225's log of
config/train_gpt2.py (GPT-2 124M, micro-batch 12 of 1,024 tokens, 40 accumulation steps at that commit, bf16 autocast,
compiled, fused AdamW). A GPT-2 124M on Ada: tyler-romero/nanogpt-speedrun's initial baseline (llm.c's PyTorch
trainer, 2 x RTX 4090 under DDP in bf16 autocast, compiled, micro-batch 32 of 1,024 tokens, 4 accumulation steps, its
run log's mean step time); its later records (rotary embeddings, ReLU squared, Muon) left out. Left out as well:
nanoGPT issue 215 (GPT-2 124M on one V100 32G in fp16: its accumulation per step is not stated, train.py dividing
config/train_gpt2.py's 40 steps among the GPUs, and the issue names neither the host's GPU count nor the board),
nanoGPT issue 179 (one RTX 4090 at nanoGPT's defaults: its log is not in the stored copy of the thread), single-GPU
RTX 4090 speedruns with Muon, FP8 or a changed architecture (nanoGPT_1GPU_SPEEDRUN), and cramming's BERT on an RTX
2080 Ti (a changed BERT-base: no head or shape the study predicts), and ljm565/universal-llm-trainer's
docs/gpu_test.md (Llama 3.1 8B and Phi-3-mini full fine-tuning on one 'H100' and one 'RTX Pro 6000' at batch 2 of
8,192 tokens: neither board is named, H100 SXM or PCIe, RTX PRO 6000 Workstation, Server or 300 W Max-Q, and its note
says both checkpointing methods were tried beside one figure). Left out for Blackwell and Ada besides: LoRA and QLoRA
benchmarks (Exxact's RTX PRO 6000 Server Edition, Fixstars' Max-Q, gigagpu.com: no method of the study), RTX 5090
GPT-2 notes with FP8, grouped-query attention or QK-norm (yxanul/testing_dense) and modded-nanogpt's 2024-06-06 AdamW
record on 8 x H100 (rotary embeddings, as the later records above).
Blackwell: NeMo's Llama 3 8B on 8 x B200 in bf16 (vuiseng9/nemo-perf-nvfp4's README, NeMo 25.09's performance script
at its recommended settings: data parallelism with the distributed optimizer, micro-batch 2), Lambda's v2 table's
BERT-large SQuAD rows on 1, 2, 4 and 8 x B200 (fp16), and a torchtitan run of Qwen3-30B-A3B on 8 x B200 reported in
mlc-ai/pith-train issue 79 (FSDP with selective checkpointing: kept unpredicted); torchtitan's DeepEP expert
parallelism, on a branch of Nous Research's fork proposed to pytorch/torchtitan (Qwen3-30B-A3B on 8 x B200 in bf16:
FSDP with expert parallelism 8, full checkpointing, compiled, routing forced balanced; the figure its config file
states, 'should get: tps: 14,768', kept, and not again its README's 1-node row of the same setting, 14,796; the
README's 9,930 for torchtitan's default expert parallelism left out, its batch, checkpointing and routing unstated).
Megatron-Bridge's summaries hold
Llama 3 8B on 8 x B200 in FP8 only (no bf16 row at 8 GPUs or fewer). State-space models (``family`` ``ssm``, kept
unpredicted): Nemotron 3 Nano 30B-A3B, a Mamba-2 hybrid, on 8 x H100 in bf16 (NeMo AutoModel's summary) and on
8 x B200 in MXFP8 (Megatron-Bridge's). No training throughput of a pure Mamba or Mamba-2 model with its shape and
settings stated beside the figure was found: flash-linear-attention issue 32 (2024-07-13) tables fla's Mamba at its
default config through benchmarks/benchmark_training_throughput.py, but its reporter notes that fla neither asks for
mamba_ssm and causal_conv1d nor warns when Mamba runs without their kernels, and the thread as read does not say
which path its later table (an A100 and an H100 column, the H100's form unnamed) timed.
Hopper, independent of llm-foundry: NVIDIA's dgxc-benchmarking recipe for Llama 3.1 8B pre-training on 8 x H100
(DGX H100) in BF16, the 8-GPU column of its table in two releases (NeMo 24.09 and 24.12: distributed optimizer,
context parallelism 2, no recompute), kept unpredicted: the study has no method for context parallelism. Its FP8
tables, its 16- to 128-GPU columns and its Llama 3 8B SFT table (fine-tuning examples whose padding or packing the
README does not state) are left out, as are: NeMo's older performance summaries and every Megatron-Bridge summary
row of a dense decoder on 8 GPUs (FP8 only); torchtune's README tables (its single-GPU full fine-tune runs
bitsandbytes' 8-bit PagedAdamW; its earlier table's Alpaca sequences are not packed to the stated length);
OLMo-core's throughput table ('a cluster of H100 GPUs', the count not stated); picotron's README ('nearly 50% MFU',
no setting beside it); torchtitan's async-TP and H200 benchmarks (tensor parallelism, FP8, several nodes);
lightning-thunder's lit-gpt benchmarks (the GPU not named, totals of 45 iterations with compilation); IBM's
fms-fsdp (128 GPUs); LLMs-from-scratch's training-speed notes (A100s only); a per-step GPT-2 124M table across a
dozen cloud GPUs (B200 to L4) found without a repository or commit to cite; and CUDO Compute's
H100/L40S blog (BERT-base fine-tuning in cloud VMs: no head the study predicts, settings not stated beside it).
"""
from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import pandas as pd

# What a row's ``value`` may be: tokens per second per GPU, of all the GPUs together, or one optimizer step's time;
# sequences or images per second of all the GPUs; or sequences per second where each batch is padded only to its own
# longest sequence (``samples_per_s_varying_length``), so that a counted sequence's length is not stated: such a row
# is kept and shown, never predicted, since the study charges each sequence its ``seq_len``.
FIGURES = ("tokens_per_s_per_gpu", "tokens_per_s", "step_time_ms", "samples_per_s", "tokens_per_s_per_gpu_fwd_bwd",
           "samples_per_s_varying_length")
COLUMNS = ("gpu", "n_gpus", "model", "shape", "params", "seq_len", "micro_batch", "grad_accum", "global_batch",
           "precision", "method", "framework", "figure", "value", "quote_figure", "source", "url", "quote", "notes",
           "memory_gib", "quote_memory", "family")
# A point's model family: ``decoder`` (GPT-style, predicted from its own shape by the work model), or one the study
# predicts from a catalog model of the family: ``encoder`` (BERT/RoBERTa, ``predict.published_family.FAMILY_MODEL``),
# ``vit``, ``convnext`` (``predict.published_vision.SAME_ARCHITECTURE``); ``ssm``: a model built of state-space
# layers (Mamba, Mamba-2 and their hybrids), kept with the reason the study does not predict it
# (``predict.published_family.STATE_SPACE_WHY``).
FAMILIES = ("decoder", "encoder", "vit", "convnext", "ssm")
# The Hugging Face config of each model's shape (data/published_configs/). llm-foundry's MPT is written as a GPT-2
# of the same widths, depth, MLP (4 x d_model, not gated), vocabulary and tied head: transformers builds MPT only
# with eager attention, and the study's work counts (``predict.decoder_work``) are the same for both. NeMo's Llama 3
# 8B has the widths of Llama 3.1 8B; 3.1's rescaled rotary frequencies change no work.
CONFIGS = {"MPT-125m": "mpt-125m.json", "MPT-350m": "mpt-350m.json", "MPT-760m": "mpt-760m.json",
           "MPT-1b": "mpt-1b.json", "MPT-3b": "mpt-3b.json", "MPT-7b": "mpt-7b.json", "MPT-13b": "mpt-13b.json",
           "GPT-2 124M (nanoGPT)": "gpt2-124m-nanogpt.json", "TinyLlama-1.1B": "tinyllama-1.1b.json",
           "LLaMA-7B": "llama-7b.json", "Llama 3.1 8B": "llama-3.1-8b.json", "Llama 3 8B": "llama-3.1-8b.json",
           "Qwen3-30B-A3B": "qwen3-30b-a3b.json", "GPT-OSS-20B": "gpt-oss-20b.json"}


def load_published_throughput() -> pd.DataFrame:
    """Every published point, with ``tokens_per_s_per_gpu`` filled in for the rows that give all the GPUs'
    tokens (over the GPU count) or a step's time (micro-batch x accumulation steps x sequence length per GPU,
    over the step), ``samples_per_s_per_gpu`` for the rows that give sequences or images per second, and
    ``optimizer_excluded`` true for the rows whose figure leaves the optimizer step out, ``length_varies`` for those
    whose sequences are of lengths the source does not state (their tokens per second left empty)."""
    text = resources.files("academic_bench").joinpath("data/published_throughput.csv").read_text()
    df = pd.read_csv(io.StringIO(text), dtype={"quote_figure": str, "quote": str, "quote_memory": str})
    unknown = sorted(set(df["figure"]) - set(FIGURES))
    if unknown:
        raise ValueError(f"data/published_throughput.csv: unknown figure(s) {unknown}; choose one of: "
                         f"{', '.join(FIGURES)}")
    step, total = df["figure"] == "step_time_ms", df["figure"] == "tokens_per_s"
    tokens = df["micro_batch"] * df["grad_accum"] * df["seq_len"]
    per_gpu = df["value"].where(~total, df["value"] / df["n_gpus"])
    df["tokens_per_s_per_gpu"] = per_gpu.where(~step, tokens / (df["value"] / 1e3)).astype(float)
    # Sequences or images per second of all the GPUs together: per GPU, and as tokens where a sequence has a length.
    df["length_varies"] = df["figure"] == "samples_per_s_varying_length"
    samples = (df["figure"] == "samples_per_s") | df["length_varies"]
    df["samples_per_s_per_gpu"] = (df["value"] / df["n_gpus"]).where(samples)
    df.loc[samples, "tokens_per_s_per_gpu"] = (df["samples_per_s_per_gpu"] * df["seq_len"]).where(~df["length_varies"])
    df["optimizer_excluded"] = df["figure"] == "tokens_per_s_per_gpu_fwd_bwd"  # per GPU, as tokens_per_s_per_gpu
    bad = sorted(set(df["family"]) - set(FAMILIES))
    if bad:
        raise ValueError(f"data/published_throughput.csv: unknown family {bad}; choose one of: {', '.join(FAMILIES)}")
    return df


def config_path(model: str) -> Path | None:
    """The config.json of a published model's shape (``CONFIGS``), or None where none is kept."""
    name = CONFIGS.get(model)
    if name is None:
        return None
    return Path(str(resources.files("academic_bench").joinpath("data/published_configs", name)))
