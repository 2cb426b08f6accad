"""Published points of the families the study predicts from a catalog model (``catalog.published.FAMILIES``), and
the published check per GPU generation and per model family.

A published encoder (BERT-large, at its own sequence length and head) is predicted from the catalog's
RoBERTa-large: the study's measured free-lunch step of RoBERTa-large without sharding or offloading (the method
the published runs used: one GPU, or plain data parallelism) is carried to the published GPU and count by the
transfer model (``transfer.predict``) at the published micro-batch (in RoBERTa-large sequences of as many model
FLOPs, ``carried_micro_batch``), and its sequences per second per GPU are scaled by the model FLOPs of a
RoBERTa-large sequence (``estimate.flops_per_sample``) over those of the published sequence (the same blocks,
its own head and length, ``estimate.stats.dense_flops_terms``): the published point is assumed to reach the MFU
that the carried step reaches. Nothing is fitted to a published point.

Vision points (timm's RTX 3090 benchmark in fp16 autocast) are predicted from the study's 16-bit rows of ViT-L/16
and ConvNeXt-XL (``published_vision``): the paper's recipe trains them in fp32 (TF32), and the transfer model
carries a step between GPUs, not between precisions, so a point is predicted only where such rows exist, and the
reason stands beside it where none does. State-space points (``ssm``: Mamba-2 hybrids) are not predicted
(``STATE_SPACE_WHY``).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import pandas as pd

from ..catalog.hardware import UnknownGPUError, get_gpu
from .published_vision import vision_point
from .transfer import Prediction

# The catalog model a published family is carried from by model FLOPs: the encoders' (the vision points are carried
# from rows of the same architecture only, ``published_vision.SAME_ARCHITECTURE``).
FAMILY_MODEL = {"encoder": "roberta-large"}
# Heads of the published encoders: the output width of the matrix product on top of the blocks (BERT's
# bert_config.json vocabulary for the masked-LM head; the start and end logits of SQuAD's head).
ENCODER_HEAD = {"BERT-large (pre-training)": 30522, "BERT-large (SQuAD fine-tuning)": 2}
# The GPU generations in order (data/gpus.csv's ``architecture``), for the distance between two GPUs.
GENERATIONS = ("volta", "turing", "ampere", "ada", "hopper", "blackwell")
# How many generations each architecture is from Volta: Ada (GeForce and workstation cards) and Hopper (data
# centre) are the one generation after Ampere, announced the same year, and Blackwell follows both. The order
# above alone would put Hopper two generations from Ampere.
GENERATION_STEP = {"volta": 0, "turing": 1, "ampere": 2, "ada": 3, "hopper": 3, "blackwell": 4}
# Why a published state-space model is not predicted. The study's state-space evidence is the catalog's Mamba-2.8B
# (Mamba-1's selective scan, no attention, no experts); a config.json decoder is predicted by the work of its
# attention and MLP (``predict.decoder_work``), which counts no scan (``catalog.models.refusals.STATE_SPACE``).
STATE_SPACE_WHY = ("not predictable: a state-space hybrid (Mamba-2 layers beside attention and mixture-of-experts "
                   "layers); the study predicts a decoder from its config.json by the work of its attention and MLP, "
                   "which counts no state-space scan, and its one state-space model, mamba-2.8b, is a Mamba-1 stack "
                   "without attention or experts")
LENGTH_VARIES_WHY = ("not predictable: its sequences are padded only to the longest of their batch, so the length of a "
                     "counted sequence is not stated, where the study charges each sequence the full length "
                     "(data/published_throughput.csv: figure samples_per_s_varying_length; its notes say how its "
                     "source batched them)")
TARGET_MEDIAN = (0.90, 1.10)
TARGET_WORST = (0.75, 1.33)
MIN_POINTS = 3


@dataclass(frozen=True)
class MissReason:
    """Why the points of one source on one GPU fall outside ``TARGET_WORST``: a few words for the table and the
    evidence (the source's own files and lines, and what the prediction assumed instead)."""

    short: str
    evidence: str
    n_gpus: int | None = None  # the GPU count the reason speaks for, where it is one count's alone


def miss_reason(source: str, gpu: str, n_gpus: int) -> MissReason | None:
    """The reason known for a point of ``source`` on ``n_gpus`` x ``gpu`` (``MISS_REASONS``), if any."""
    why = MISS_REASONS.get((source, gpu))
    return why if why is not None and why.n_gpus in (None, int(n_gpus)) else None


_LLM_FOUNDRY_H100 = "llm-foundry MPT training benchmarks, H100 80GB BF16"
_TINYLLAMA = "whyNLP/tinyllama README, Benchmark"
_TINYLLAMA_DS = "whyNLP/tinyllama README, Deepspeed Results"
_LAMBDA = "Lambda deeplearning-benchmark PyTorch, bert_large_squad FP16"
# Why a point misses, where the evidence is known, by (source, GPU): set beside the point in the table, never used
# to change a prediction. Every key names a source and a GPU of data/published_throughput.csv (tested).
MISS_REASONS: dict[tuple[str, str], MissReason] = {
    (_LLM_FOUNDRY_H100, "h100-80gb"): MissReason(
        "Triton FlashAttention of 2022 on Hopper",
        "Attention ran llm-foundry's Triton FlashAttention: attn_impl 'triton' is submit_benchmarks.py's default "
        "('--attn_impl', type=str, default='triton') at commit b2a43a1, which added this table and installed "
        "llm-foundry v0.3.0, whose llmfoundry/models/layers/flash_attn_triton.py says 'Tested with "
        "triton==2.0.0.dev20221202' and 'This implementation has only been tested on A100', built by a pre-MLIR "
        "Triton (setup.py: 'triton-pre-mlir@git+https://github.com/vchiley/triton.git@triton_pre_mlir_sm90'). The "
        "study's H100 step runs PyTorch's SDPA attention. The points outside are small models at long sequences, "
        "where attention's share of the model FLOPs is largest, and the ratio falls as that share grows; the same "
        "shapes in the README's A100 tables, made with the same script and default, are inside the range."),
    # lambdal/deeplearning-benchmark, pytorch/pytorch-train-throughput-fp16.csv at commit 0551cb7, and
    # zzc0721/torch-performance-test-data, database.md at commit 9d82827.
    (_LAMBDA, "rtx6000-ada"): MissReason(
        "the benchmark's RTX 6000 Ada runs slower than its RTX 4090",
        "Published slower than predicted. In the same table the row 'RTX 6000 Ada' reads 79.0 BERT-large "
        "sequences/s (batch 64) and the row 'RTX 4090' 93.0 (batch 28): the workstation card is the slower one, "
        "and slower in the row's other columns too (bert_base_squad 255.0 against 297.0, resnet50 1146.0 against "
        "1301.0), where data/gpus.csv gives it 2.2 times the RTX 4090's fp16 tensor rate (364.2 against 165.2 "
        "TFLOP/s). That rate is derived, not read: the card's datasheet gives only a sparse FP8 figure, of which "
        "data/gpus.csv takes a quarter, the ratio of the L40S datasheet, at 300 W where the L40S draws 350 W. "
        "The L40S, a data-centre card of the same AD102 chip rated with full-rate fp32 accumulation (the "
        "RTX 4090, also AD102, is rated at half that rate and reaches all of it), reaches less of its datasheet "
        "than the H100 the prediction is carried from: in one timing script's table of torch.matmul rates "
        "(zzc0721/torch-performance-test-data, "
        "database.md at commit 9d82827, its bf16 column) the row 'NVIDIA L40S' reaches 269.15 TFLOP/s of its "
        "362.05 and the row 'NVIDIA H100 80GB HBM3' 797.51 of its 989.4 (0.74 of the datasheet against 0.81), "
        "which accounts for a part of the gap only. No matrix-product rate of the RTX 6000 Ada itself was found, "
        "and the study measured no Ada workstation card."),
    (_TINYLLAMA_DS, "a100-80gb"): MissReason(
        "the README's DeepSpeed runs are slower than its own others",
        "A run of the README's first, DeepSpeed version (commit 7b8c83c: run_clm.sh launches 'deepspeed' with "
        "ds_config.json's ZeRO stage 2; requirements.txt names 'deepspeed' without a version). The same README's "
        "later runs under accelerate are faster on the same GPUs: LLaMA-7B on 8*A100-80G at micro-batch 1 "
        "'22.4k' tokens/s against '18k' under DeepSpeed at micro-batch 4, TinyLlama on 4*A6000 at micro-batch 8 "
        "'40.4k' against '35k'. The study prices ZeRO-2 by its own measured sharding and predicts the larger "
        "micro-batch faster; what made that DeepSpeed version slower is not in it. The README does not say whether "
        "its A100-80G were SXM cards joined by NVLink, as the catalog's are, or PCIe cards."),
    # lambdal/deeplearning-benchmark, pytorch/pytorch-train-throughput-fp16.csv at commit 0551cb7.
    (_LAMBDA, "h100-80gb"): MissReason(
        "the benchmark's 8 x H100 run keeps 0.90 of eight single GPUs",
        "Published slower than predicted on 8 GPUs only. The same table's one-GPU row reads 301.0 BERT-large "
        "sequences/s ('H100 80GB SXM5,1.0,700.0,36718.75,782.0,812.0,301.0,...') and the eight-GPU row 2167.0 "
        "('8x H100 80GB SXM5,8.0,5600.0,293750.0,6206.0,9176.0,2167.0,...'), at the same 112 sequences per GPU: "
        "0.90 of eight times one GPU, where the 2- and 4-GPU rows keep 0.98 and 0.97 (592.0 and 1171.0). The study "
        "charges plain data parallelism its gradients' all-reduce over NVLink, overlapped with the backward pass. "
        "What costs the eight-GPU run the rest (its data loading, apex's DDP, the all-reduce's overlap in that run) "
        "is not in the source.", n_gpus=8),
    # lambdal/deeplearning-benchmark, pytorch/pytorch-train-throughput-v2-fp16.csv at commit 200af3b (which added
    # the B200 rows) and the run folders' benchmark.para files beside it.
    ("Lambda deeplearning-benchmark PyTorch v2, bert_large_squad FP16, B200", "b200"): MissReason(
        "the benchmark's B200 reaches less of its datasheet rate than its H200",
        "Published slower than predicted. The same v2 table's H200 row 'LambdaBM_ENG04_1xH200_140GB_SXM_h200_v2' "
        "reads 350.0 BERT-large sequences/s (batch 192, its benchmark.para: 'GLOBAL_BATCH 192') against the "
        "1 x B200 row's 523.0 (batch 256): 1.49 times as fast, where the datasheet bf16 tensor rates (data/gpus.csv: "
        "2250 against 989.4 TFLOP/s) are 2.27 times; its 8 x B200 row (4620.0) against 8 x H200 (2674.0) is 1.73 "
        "times. The transfer model carries the study's H200 step by the rates of plain matrix products on the two GPUs "
        "(data/matmul_rates.csv: 1627.64 against 759.40 TFLOP/s in fp16, 2.14 times), which this benchmark's apex "
        "amp O2 run of DeepLearningExamples' run_squad.py (its log: 'apex.amp is deprecated') does not reach on "
        "the B200. The study measured no B200."),
    # NVIDIA-NeMo/Automodel, branch blog/transformers-v5-automodel: bench_v5.py and benchmark_results.md.
    ("NeMo AutoModel blog benchmark, Transformers v5 (FSDP2, no expert parallelism)", "h100-80gb"): MissReason(
        "eager transformers, unbalanced routing",
        "Published slower than predicted: transformers runs eagerly there (no torch.compile, where the study "
        "predicts free-lunch's compiled step) and its pretrained router sees random tokens with no balanced "
        "routing forced (an earlier run of the same script spread from 2,476 to 3,817 tokens/s per GPU over its "
        "timed steps), where the study charges each expert the tokens balanced routing sends it."),
    # NVIDIA-NeMo/Automodel examples/benchmark/configs/qwen3_moe_30b_te_deepep.yaml at the commits the rows cite;
    # components/moe/layers.py's FakeBalancedGate at 01926a5c.
    ("NeMo AutoModel performance summary, Pre-Training, DGX-H100 BF16", "h100-80gb"): MissReason(
        "a gate that keeps each token's experts on one GPU, under a recomputed forward (not measured apart)",
        "Published faster than predicted. Its config (examples/benchmark/configs/qwen3_moe_30b_te_deepep.yaml at the "
        "commit each row cites) recomputes every decoder block's forward ('activation_checkpointing: true': "
        "components/moe/parallelizer.py's apply_ac wraps each block in checkpoint_wrapper), which the prediction "
        "charges, and runs 4 sequences a micro-step over 16 accumulation steps where the blog's run of the same "
        "library (TransformerEngine, DeepEP, expert parallelism 8), within the target, runs one and none. Both use "
        "'fake_balanced_gate: true', whose FakeBalancedGate (components/moe/layers.py) routes token t to experts "
        "'torch.arange(x.size(0) * a_exp, device=x.device).view(-1, a_exp) % available_experts', eight consecutive "
        "experts, which lie on one GPU, since each GPU holds a run of consecutive experts (layers.py: "
        "'experts_start_idx = ep_rank * n_local_experts'): each token's all-to-all reaches at most one other GPU, "
        "where the prediction charges the GPUs uniformly routed experts would reach "
        "(predict/expert_parallel.py), a charge repeated in the recompute. Which of the two makes the gap is not "
        "measured."),
}


def generation(gpu: str) -> str:
    """The architecture of a published point's GPU (data/gpus.csv), or ``not in the catalog``."""
    try:
        return get_gpu(gpu).architecture
    except UnknownGPUError:
        return "not in the catalog"


def distance(source_gpu: str, target_gpu: str) -> str:
    """How far a prediction carries: ``same GPU``, ``same architecture``, ``one generation``, ``two or more
    generations`` or ``another vendor`` (an architecture outside NVIDIA's ``GENERATIONS``)."""
    if source_gpu == target_gpu:
        return "same GPU"
    a, b = generation(source_gpu), generation(target_gpu)
    if a not in GENERATIONS or b not in GENERATIONS:
        return "another vendor"
    if a == b:
        return "same architecture"
    gap = max(1, abs(GENERATION_STEP[a] - GENERATION_STEP[b]))  # Ada beside Hopper: another line, one step
    return "one generation" if gap == 1 else "two or more generations"


def encoder_flops_per_sequence(model: str, seq_len: int) -> float:
    """Model FLOPs (forward and backward) of one sequence of a published encoder: RoBERTa-large's blocks with the
    published head (``ENCODER_HEAD``) at ``seq_len``, by the study's dense convention."""
    from ..estimate import model_stats
    from ..estimate.stats import dense_flops_terms

    st = model_stats(FAMILY_MODEL["encoder"])
    layers = len(st.block_params)
    # As ``estimate.flops_per_sample`` counts the catalog's RoBERTa-large, with the published head for its own.
    matmul = st.params - st.input_embedding + ENCODER_HEAD[model] * st.hidden
    fixed, per_position = dense_flops_terms(matmul, layers, st.attention_width)
    return (fixed + per_position * seq_len) * seq_len


def source_row(model: str, gpu: str, root: str | None = None) -> pd.Series | None:
    """The measured free-lunch configuration of ``model`` without sharding, offloading or checkpointing (complete
    search), on the setup whose GPU is nearest the target (same GPU, same architecture, nearest memory)."""
    from .transfer_validation import configurations

    c = configurations(root)
    if c.empty:
        return None
    mine = c[(c["model"] == model) & (c["methods_label"] == "free-lunch") & (c["n_gpus"] == 1)]
    if mine.empty:
        return None
    target = get_gpu(gpu)
    return min((r for _, r in mine.iterrows()),
               key=lambda r: (r["gpu"] != target.key, get_gpu(r["gpu"]).architecture != target.architecture,
                              abs(get_gpu(r["gpu"]).memory_gb - target.memory_gb), str(r["setup"])))


def published_unit(family: str) -> str:
    """The unit of a published point's ``published`` figure, per GPU (``predict_family_point``; a decoder's and a
    state-space model's, ``answer.published_check.predict_point``): tokens, an encoder's sequences, a vision model's
    images, per second."""
    return {"encoder": "sequences/s", "vit": "images/s", "convnext": "images/s"}.get(family, "tokens/s")


def predict_family_point(row: pd.Series, out: dict, root: str | os.PathLike | None = None,
                         vision_profiles: pd.DataFrame | None = None) -> dict:
    """A published point of a family other than the decoders beside the study's prediction (``out``: the
    point's ``POINT_COLUMNS`` so far, published in samples per second per GPU). ``vision_profiles``: what a vision
    point's step is split by (``published_vision.vision_profiles``), read where needed if not given."""
    family, gpu, n = str(row["family"]), str(row["gpu"]), int(row["n_gpus"])
    if family == "ssm":  # published in tokens per second per GPU, as the decoders are
        return {**out, "why_not": STATE_SPACE_WHY}
    out = {**out, "published": float(row["samples_per_s_per_gpu"])}
    if row.get("length_varies", False):
        return {**out, "why_not": LENGTH_VARIES_WHY}
    try:
        get_gpu(gpu)
    except UnknownGPUError:
        return {**out, "why_not": f"GPU {gpu!r} is not in data/gpus.csv"}
    if family != "encoder":
        return {**out, **vision_point(row, out["published"], root, vision_profiles)}
    if str(row["model"]) not in ENCODER_HEAD:
        return {**out, "why_not": f"no head of {row['model']!r} in ENCODER_HEAD"}
    if str(row["method"]) not in ("none", "ddp"):
        return {**out, "why_not": f"{row['method']!r}: an encoder is predicted for one GPU or plain data parallelism"}
    carried = carried_encoder(gpu, n, encoder_flops_per_sequence(str(row["model"]), int(row["seq_len"])), root,
                              micro_batch=int(row["micro_batch"]))
    if isinstance(carried, str):
        return {**out, "kind": "none", "why_not": carried}
    predicted = carried.sequences_per_s_per_gpu
    return {**out, "predicted": predicted, "ratio": out["published"] / predicted, "kind": "predicted",
            "by": carried.by, "source_gpu": str(carried.source["gpu"]), "predicted_mfu": carried.carried.mfu,
            "published_mfu": carried.carried.mfu * out["published"] / predicted}


@dataclass(frozen=True)
class CarriedEncoder:
    """An encoder's training rate predicted from RoBERTa-large's measured step (``carried_encoder``)."""

    sequences_per_s_per_gpu: float
    carried: Prediction  # RoBERTa-large's step carried to the target GPU and count
    source: pd.Series  # the measured configuration it was carried from (``source_row``)
    by: str


def carried_encoder(gpu: str, n_gpus: int, flops_per_sequence: float, root: str | os.PathLike | None = None,
                    micro_batch: int | None = None) -> CarriedEncoder | str:
    """Sequences per second per GPU of an encoder whose sequence costs ``flops_per_sequence`` model FLOPs, on
    ``n_gpus`` x ``gpu``: RoBERTa-large's measured free-lunch step without sharding or offloading carried there by
    the transfer model, its sequences per second scaled by RoBERTa-large's FLOPs per sequence over the encoder's
    (the encoder is assumed to reach the MFU the carried step reaches); or why not, in words.

    ``micro_batch``: the encoder's sequences per micro-step where they are known (a published run's, an answer's
    settings). RoBERTa-large's step is then carried at the micro-batch of as many model FLOPs (``carried_micro_batch``),
    from its measured step at the nearest micro-batch where there are several (``prediction_of``: a small
    micro-batch runs its kernels less efficiently and keeps the GPU waiting longer), the transfer model charging the
    GPU's idle time per micro-step for the rest; without it, at the memory model's."""
    from ..catalog.models import get_model
    from ..estimate import flops_per_sample
    from .transfer_validation import prediction_of, measured

    model = FAMILY_MODEL["encoder"]
    where = None if root is None else str(root)
    src = source_row(model, gpu, where)
    if src is None:
        return f"no complete free-lunch measurement of {model}"
    mbs = None if micro_batch is None else carried_micro_batch(micro_batch, flops_per_sequence)
    p = prediction_of(src, measured(where)[1], gpu, n_gpus, where, micro_batch=mbs)[0]
    if p.step_time_s is None:
        return p.basis
    per_gpu = get_model(model).recipe.global_batch / (n_gpus * p.step_time_s)  # RoBERTa-large's sequences
    return CarriedEncoder(per_gpu * flops_per_sample(model) / flops_per_sequence, p, src,
                          f"transfer model from {src['setup']} ({model}, free-lunch), by model FLOPs per sequence")


def carried_micro_batch(micro_batch: int, flops_per_sequence: float) -> int:
    """The micro-batch of RoBERTa-large sequences whose model FLOPs are nearest those of ``micro_batch`` sequences
    of ``flops_per_sequence`` each (at least one): the micro-step of the same work."""
    from ..estimate import flops_per_sample

    return max(1, round(micro_batch * flops_per_sequence / flops_per_sample(FAMILY_MODEL["encoder"])))


TABLE_COLUMNS = ["by", "group", "points", "predicted", "median", "low", "high", "target", "outside"]


def target_verdict(ratios: pd.Series, median: tuple[float, float], worst: tuple[float, float],
                   min_points: int = MIN_POINTS) -> str:
    """Whether predicted/published ``ratios`` meet a target: their median within ``median`` and every ratio
    within ``worst`` ("met" or "missed"), or "fewer than N points" below ``min_points``."""
    if len(ratios) < min_points:
        return f"fewer than {min_points} points"
    held = (median[0] <= ratios.median() <= median[1] and worst[0] <= ratios.min() and ratios.max() <= worst[1])
    return "met" if held else "missed"


def _summary(by: str, group: str, g: pd.DataFrame) -> dict:
    from ..analysis import gpu_label  # the GPU as the book names it ("H100 80GB SXM"): these words end up in a table

    r = g[g["ratio"].notna()]
    ratios = r["ratio"].astype(float)
    target = target_verdict(ratios, TARGET_MEDIAN, TARGET_WORST)
    outside = r[(ratios < TARGET_WORST[0]) | (ratios > TARGET_WORST[1])]
    words = [f"{o.model} on {o.n_gpus} x {gpu_label(o.gpu)} ({o.ratio:.2f}"
             + (f": {why.short}" if (why := miss_reason(o.source, o.gpu, o.n_gpus)) else "") + ")"
             for o in outside.itertuples()]
    # Points outside TARGET_WORST each with a reason in the book: the median half of the target held, said apart
    # from "met", since a reason names what differs between the runs, not always what it costs.
    with_reason = all(miss_reason(o.source, o.gpu, o.n_gpus) for o in outside.itertuples())
    if target == "missed" and TARGET_MEDIAN[0] <= ratios.median() <= TARGET_MEDIAN[1] and with_reason:
        target = (f"median met; {len(outside)} of {len(r)} outside {TARGET_WORST[0]} – {TARGET_WORST[1]}, "
                  "each with a reason")
    return {"by": by, "group": group, "points": len(g), "predicted": len(r),
            "median": float(ratios.median()) if len(r) else math.nan,
            "low": float(ratios.min()) if len(r) else math.nan, "high": float(ratios.max()) if len(r) else math.nan,
            "target": target, "outside": "; ".join(words)}


def by_generation_and_family(frame: pd.DataFrame) -> pd.DataFrame:
    """The published check (``published_check.published_check``) per GPU generation and per model family
    (``TABLE_COLUMNS``): points, points predicted, the median predicted/published ratio (``ratio``: the predicted
    time per sample over the published one), its lowest and highest, whether the target holds (median within
    ``TARGET_MEDIAN``, every point within ``TARGET_WORST``, for groups of ``MIN_POINTS`` or more predicted points)
    and the points outside ``TARGET_WORST`` with their reason where known (``MISS_REASONS``)."""
    f = frame.assign(generation=frame["gpu"].map(generation))
    order = {g: i for i, g in enumerate(GENERATIONS)}
    rows = [_summary("generation", gen, g) for gen, g in
            sorted(f.groupby("generation"), key=lambda kv: order.get(kv[0], len(order)))]
    rows += [_summary("family", fam, g) for fam, g in f.groupby("family", sort=False)]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


MISS_COLUMNS = ["source", "gpu", "points", "reason", "evidence"]


def explained_misses(frame: pd.DataFrame) -> pd.DataFrame:
    """The predicted published points outside ``TARGET_WORST`` (``published_check.published_check``), one row per
    source, GPU and reason (``MISS_COLUMNS``; a reason may speak for one GPU count alone, ``miss_reason``): the
    points, and the reason with its evidence (``MISS_REASONS``), or ``no reason found`` where none is known."""
    r = frame[frame["ratio"].notna()]
    outside = r[(r["ratio"] < TARGET_WORST[0]) | (r["ratio"] > TARGET_WORST[1])]
    why_of = {i: miss_reason(o.source, o.gpu, o.n_gpus) for i, o in zip(outside.index, outside.itertuples())}
    outside = outside.assign(reason=[why.short if why else "" for why in why_of.values()])
    rows = []
    for (source, gpu, _), g in outside.groupby(["source", "gpu", "reason"], sort=False):
        why = why_of[g.index[0]]
        rows.append({"source": source, "gpu": gpu,
                     "points": "; ".join(f"{o.model} on {o.n_gpus} GPU{'s' if o.n_gpus > 1 else ''} at "
                                         f"{o.seq_len:.0f} tokens ({o.ratio:.2f})"
                                         for o in g.itertuples()),
                     "reason": why.short if why else "no reason found", "evidence": why.evidence if why else ""})
    return pd.DataFrame(rows, columns=MISS_COLUMNS)


def by_distance(frame: pd.DataFrame) -> pd.DataFrame:
    """The predicted published points per distance from the GPU their prediction was carried from
    (``distance``): points, the median ratio and its lowest and highest, and the generations they are on."""
    r = frame[frame["ratio"].notna() & frame["source_gpu"].astype(str).ne("")]
    r = r.assign(distance=[distance(s, g) for s, g in zip(r["source_gpu"], r["gpu"])],
                 generation=r["gpu"].map(generation))
    out = r.groupby("distance").agg(points=("ratio", "size"), median=("ratio", "median"), low=("ratio", "min"),
                                    high=("ratio", "max"),
                                    generations=("generation", lambda s: ", ".join(sorted(set(s)))))
    return out.reset_index()
