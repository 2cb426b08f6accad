"""The analytic estimates: FLOPs against the paper's Figure 9(a), the memory model's properties, days.

Everything runs on the meta device (no GPU, no weights). Paper values come from
``academic_bench/data/paper_figure9_flops.csv`` (Appendix E, Figure 9(a), one row per model).
"""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from academic_bench import estimate as est
from academic_bench.catalog import paper
from academic_bench.catalog.config import Config
from academic_bench.catalog.hardware import get_gpu
from academic_bench.catalog.methods import SHARDINGS, parse_methods
from academic_bench.catalog.models import CATALOG, get_model, loss_of

PYTHIA = [k for k in CATALOG if k.startswith("pythia")]
SHARDED = [s for s in SHARDINGS if s != "none"]


def cfg(model: str, spec: str = "free-lunch", n: int = 1, gpu: str = "h100-80gb", tiny: bool = False) -> Config:
    return Config(model, gpu, n, methods=parse_methods(spec), tiny=tiny)


def total_gib(c: Config, mbs: int = 1) -> float:
    return est.predict_memory(c, mbs).total / est.GIB


# --- FLOPs -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def figure9() -> dict[str, float]:
    df = paper.load_flops()
    return dict(zip(df["model"], df["training_flops"]))


@pytest.mark.parametrize("model", PYTHIA)
def test_pythia_total_flops_match_figure_9a(model: str, figure9: dict[str, float]) -> None:
    ours = est.total_flops(model)
    assert ours == pytest.approx(figure9[model], rel=0.15), (model, ours, figure9[model])


@pytest.mark.parametrize("model", ["roberta-large", "vit-large"])
def test_roberta_and_vit_flops_match_figure_9a(model: str, figure9: dict[str, float]) -> None:
    # RoBERTa: the transformer formula with the tied MLM decoder added back; ViT: FlopCounterMode.
    assert est.total_flops(model) == pytest.approx(figure9[model], rel=0.15)


def test_transformer_formula_counts_tied_decoder_but_not_input_tables() -> None:
    st = est.model_stats("roberta-large")
    assert st.tied_output > 0  # the MLM decoder shares the word-embedding table
    assert est.model_stats("pythia-160m").tied_output == 0  # Pythia's output projection is its own matrix
    layers, _ = get_model("pythia-160m").transformer_shape(False)
    r = get_model("pythia-160m").recipe
    st = est.model_stats("pythia-160m")
    per_token = 6 * (st.params - st.input_embedding) + 12 * layers * st.attention_width * r.seq_len
    assert est.flops_per_sample("pythia-160m") == per_token * r.seq_len
    assert est.model_flops_per_step(get_model("pythia-160m")) == per_token * r.seq_len * r.global_batch


def _forward_flops(model: str, tiny: bool) -> int:
    spec = get_model(model)
    with torch.device("meta"):
        net = spec.build(tiny).train()
    counter = FlopCounterMode(display=False)
    with counter:
        loss_of(net, est.meta_batch(spec, tiny))
    return counter.get_total_flops()


def test_depthwise_convolution_backward_is_not_overcounted() -> None:
    # Forward + backward of matmuls and convolutions is 3x forward (less the first layer's input gradient);
    # torch's own formula gave ConvNeXt 8.9x, counting depthwise weight gradients channels-times over.
    ratio = est.counted_flops("convnext-xlarge", tiny=True) / _forward_flops("convnext-xlarge", tiny=True)
    assert 2.5 < ratio <= 3.0


def test_mamba_counts_per_token_and_scales_to_the_sequence() -> None:
    spec = get_model("mamba-2.8b")
    r = spec.tiny_recipe
    per_token = est.flops_per_sample(spec, tiny=True) / r.seq_len
    # every matmul weight is used once per token (the LM head is the tied embedding): about 6 x params
    assert per_token == pytest.approx(6 * est.model_stats(spec, tiny=True).params, rel=0.10)
    assert est.counted_flops(spec, True, 16) / 16 == pytest.approx(per_token, rel=0.02)


# --- memory ----------------------------------------------------------------------------------------------

def _per_stage(model: str, n: int) -> dict[str, est.MemoryEstimate]:
    return {s: est.predict_memory(cfg(model, "free-lunch" + (f"+{s}" if s != "none" else ""), n), 1)
            for s in SHARDINGS}


@pytest.mark.parametrize("model", ["pythia-1b", "pythia-2.8b", "pythia-6.9b", "mamba-2.8b"])
@pytest.mark.parametrize("n", [2, 8])
def test_zero_stages_order_per_gpu(model: str, n: int) -> None:
    m = {s: e.total for s, e in _per_stage(model, n).items()}
    assert m["zero3"] < m["zero2"] < m["zero1"] < m["none"], m
    assert m["fsdp_full_shard"] < m["fsdp_shard_grad_op"] < m["none"], m


@pytest.mark.parametrize("model", list(CATALOG))
def test_each_stage_shards_its_state(model: str) -> None:
    # Stage 1 shards optimizer states, stage 2 also gradients, stage 3 also weights. (For models smaller
    # than DeepSpeed's stage3_max_live_parameters the gathered weights stay resident, and the default
    # gradient buckets can outweigh the savings, so totals are compared above for the larger models only.)
    m = _per_stage(model, 8)
    assert m["zero1"].optimizer_states < m["none"].optimizer_states
    assert m["zero2"].gradients < m["zero1"].gradients
    assert m["zero3"].gradients == m["zero2"].gradients
    big = _per_stage("pythia-6.9b", 8)
    assert big["zero3"].weights < big["zero2"].weights == big["zero1"].weights


@pytest.mark.parametrize("model", list(CATALOG))
def test_checkpointing_reduces_activations(model: str) -> None:
    tiny = model == "mamba-2.8b"  # Mamba's reference path (no kernels) is profiled; the tiny one is quick
    for spec in ("free-lunch", "naive") if not tiny else ("naive",):
        plain = est.predict_memory(cfg(model, spec, tiny=tiny), 2)
        ckpt = est.predict_memory(cfg(model, spec + "+ckpt", tiny=tiny), 2)
        assert ckpt.activations < plain.activations
        assert ckpt.weights == plain.weights and ckpt.optimizer_states == plain.optimizer_states


def test_fused_attention_reduces_transformer_activations() -> None:
    eager = est.predict_memory(cfg("pythia-410m", "naive"), 1).activations
    fused = est.predict_memory(cfg("pythia-410m", "kernels"), 1).activations
    assert fused < eager


@pytest.mark.parametrize("sharding", SHARDED)
@pytest.mark.parametrize("n", [1, 2])
def test_offload_reduces_gpu_memory_and_moves_it_to_the_cpu(sharding: str, n: int) -> None:
    on = est.predict_memory(cfg("pythia-1b", f"free-lunch+{sharding}+offload", n), 1)
    assert on.cpu > 0
    if n > 1:
        off = est.predict_memory(cfg("pythia-1b", f"free-lunch+{sharding}", n), 1)
        assert on.total < off.total
    assert on.total < est.predict_memory(cfg("pythia-1b", "free-lunch"), 1).total


@pytest.mark.parametrize("sharding", SHARDED)
def test_more_gpus_reduce_sharded_memory(sharding: str) -> None:
    totals = [total_gib(cfg("pythia-2.8b", f"free-lunch+{sharding}", n)) for n in (2, 4, 8)]
    assert totals[0] > totals[1] > totals[2]


def test_unsharded_memory_does_not_change_with_gpu_count_except_ddp_buckets_and_nccl() -> None:
    one, two, four = (est.predict_memory(cfg("pythia-410m", "free-lunch", n), 4) for n in (1, 2, 4))
    assert (one.weights, one.gradients, one.optimizer_states) == (two.weights, two.gradients, two.optimizer_states)
    # DDP's fp32 buckets sit beside the gradients the accumulating micro-steps allocate: 4 B/param, any GPU count.
    params = est.model_stats("pythia-410m").params
    assert (one.buffers, two.buffers, four.buffers) == (0.0, 4.0 * params, 4.0 * params)


def test_mixed_precision_keeps_fp32_weights_grads_and_adam_states() -> None:
    st = est.model_stats("pythia-410m")
    m = est.predict_memory(cfg("pythia-410m", "free-lunch"), 1)  # fp16 under autocast: 4 + 2-byte copy
    assert (m.weights, m.gradients, m.optimizer_states) == (6 * st.params, 4 * st.params, 8 * st.params)
    vit = est.predict_memory(cfg("vit-large", "free-lunch"), 1)  # fp32: no 16-bit copy
    assert vit.weights == 4 * est.model_stats("vit-large").params


def test_activations_scale_linearly_with_micro_batch() -> None:
    c = cfg("roberta-large")
    assert est.predict_memory(c, 8).activations == pytest.approx(8 * est.predict_memory(c, 1).activations)


def test_korthikanti_formula_agrees_with_what_autograd_saves() -> None:
    # Pythia-160M's eager layers (the naive settings): the published per-layer formula against the bytes this
    # transformers version saves for backward on the meta device (a 16-bit model), within 25%. Compiled layers
    # with fused attention are counted from their shape (test_memory_fused).
    formula = est.activation_profile("pythia-160m", False, kernels=False)
    saved = est.saved_tensor_profile("pythia-160m", False, "eager", "fp16")
    assert sum(saved.blocks) == pytest.approx(sum(formula.blocks), rel=0.25)
    assert saved.block_inputs == pytest.approx(formula.block_inputs)


def test_coefficients_calibrate_the_prediction() -> None:
    c = cfg("pythia-1b")
    base = est.predict_memory(c, 4)
    doubled = est.predict_memory(c, 4, replace(est.COEFFICIENTS, activation_scale=2.0))
    assert doubled.activations == pytest.approx(2 * base.activations)
    assert doubled.weights == base.weights


def test_predict_memory_rejects_a_micro_batch_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        est.predict_memory(cfg("pythia-160m"), 0)


# --- max micro-batch -------------------------------------------------------------------------------------

@pytest.mark.parametrize("model,spec,n", [("pythia-1b", "free-lunch", 1), ("pythia-6.9b", "free-lunch+zero3", 8),
                                          ("vit-large", "naive", 2), ("roberta-large", "free-lunch+ckpt", 1)])
def test_max_micro_batch_is_monotone_in_gpu_memory(model: str, spec: str, n: int) -> None:
    c = cfg(model, spec, n)
    found = [est.max_micro_batch(c, gb) for gb in (1, 8, 16, 24, 48, 80, 141, 400, 10_000)]
    as_int = [0 if f is None else f for f in found]
    assert as_int == sorted(as_int)
    assert found[0] is None  # nothing fits in 1 GB
    assert found[-1] == c.per_gpu_batch  # everything fits in 10 TB


def test_max_micro_batch_fits_and_the_next_power_of_two_does_not() -> None:
    c = cfg("pythia-1b")
    gpu = get_gpu("h100-80gb")
    mbs = est.max_micro_batch(c, gpu.memory_gb)
    assert mbs is not None and mbs & (mbs - 1) == 0 and c.per_gpu_batch % mbs == 0
    capacity = est.usable_bytes(gpu.memory_gb)
    assert est.predict_memory(c, mbs).total <= capacity < est.predict_memory(c, 2 * mbs).total


def test_max_micro_batch_is_none_when_even_one_does_not_fit() -> None:
    assert est.max_micro_batch(cfg("pythia-6.9b"), get_gpu("rtx3090").memory_gb) is None


# --- days ------------------------------------------------------------------------------------------------

def test_analytic_days_follow_from_flops_peak_and_mfu() -> None:
    gpu = get_gpu("a100-80gb")
    days = est.analytic_days("pythia-1b", "a100-80gb", 4, mfu=0.5)
    expected = est.total_flops("pythia-1b") / (4 * gpu.peak_flops("bf16") * 0.5) / 86_400
    assert days == pytest.approx(expected)
    assert est.analytic_days("pythia-1b", "a100-80gb", 8, mfu=0.5) == pytest.approx(days / 2)
    assert est.analytic_days("pythia-1b", "a100-80gb", 4, mfu=1.0) == pytest.approx(days / 2)


def test_fp32_recipes_use_the_tf32_peak_only_when_tf32_is_on() -> None:
    on = est.analytic_days("vit-large", "h100-80gb", 1, 1.0, tf32=True)
    off = est.analytic_days("vit-large", "h100-80gb", 1, 1.0, tf32=False)
    gpu = get_gpu("h100-80gb")
    assert off / on == pytest.approx(gpu.peak_tflops["tf32"] / gpu.peak_tflops["fp32"])


@pytest.mark.parametrize("mfu", [0, -0.1, 1.5, math.nan])
def test_analytic_days_reject_impossible_mfu(mfu: float) -> None:
    with pytest.raises(ValueError, match="MFU"):
        est.analytic_days("pythia-160m", "h100-80gb", 1, mfu)


def test_host_memory_need_holds_every_offloaded_state_per_node() -> None:
    """Offloading keeps fp32 weights, gradients and Adam's two moments (16 bytes a parameter) on the host,
    split over a node's ranks, with DeepSpeed's buffer factor on top."""
    params = est.model_stats("pythia-1b").params

    def need(methods: str, n: int = 1, nodes: int = 1) -> float:
        return est.host_memory_need(Config("pythia-1b", "h100-80gb", n, nodes=nodes, methods=parse_methods(methods)))
    assert need("free-lunch") == 0.0 and need("free-lunch+zero2", 2) == 0.0
    for methods in ("free-lunch+zero1+offload", "free-lunch+zero2+offload", "free-lunch+fsdp_full_shard+offload"):
        assert need(methods) == pytest.approx(16 * params * est.HOST_BUFFER_FACTOR, rel=1e-6), methods
        assert need(methods, 4) == pytest.approx(need(methods))  # split over a node's ranks, same node total
        assert need(methods, 4, nodes=2) == pytest.approx(need(methods) / 2)
    assert need("free-lunch+zero3+offload") > need("free-lunch+zero2+offload")  # the 16-bit weights too


# --- the kept facts --------------------------------------------------------------------------------------

def test_the_shipped_model_facts_are_current_and_equal_a_fresh_computation() -> None:
    """``academic_bench/data/model_facts.json`` holds what a meta-device build of every catalog model gives today
    under the installed libraries (``make book`` rewrites it when a model file or the counting changes)."""
    import json

    from academic_bench.estimate import facts, kept

    assert kept.shipped_is_current(), "run `make book` (or academic_bench.estimate.kept.write_shipped()) and commit"
    shipped = json.loads(facts.SHIPPED.read_text())["facts"]
    assert kept.fresh() == shipped


def test_an_estimate_of_a_catalog_model_reads_the_kept_facts_without_torch() -> None:
    """The question asked twenty times while planning: a catalog model's estimate (memory, micro-batch, FLOPs,
    offloading's host memory, the alternatives that fit) builds no model and never loads torch."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\nfrom academic_bench.cli import main\n"
            "for model in ('pythia-6.9b', 'vit-large', 'mamba-2.8b', 'convnext-xlarge'):\n"
            "    assert main(['estimate', '--model', model, '--gpu', 'rtx3090', '--gpus', '2', '--json']) == 0\n"
            "    assert main(['estimate', '--model', model, '--gpu', 'a100-80gb', '--gpus', '4', '--methods',\n"
            "                 'free-lunch+ckpt+zero3+offload', '--json']) == 0\n"
            "print(sorted(m for m in ('torch', 'transformers', 'timm') if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr.strip().splitlines()[-1] == "[]"
