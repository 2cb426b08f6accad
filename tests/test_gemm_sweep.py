"""The matrix-product sweep's plan (``scripts/offline-gpu/gemm_sweep.py``), read on the CPU: what a GPU run of it
times, without timing anything."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _sweep():
    spec = importlib.util.spec_from_file_location("gemm_sweep", ROOT / "scripts" / "offline-gpu" / "gemm_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_output_layer_sweep_sets_each_unaligned_vocabulary_beside_its_padded_twin():
    """``output-layer`` times each unaligned vocabulary (no multiple of 8: the kernels it gets are not the
    Tensor Cores' aligned ones) beside the same vocabulary padded to a multiple of 64, at the same hidden size
    and tokens, so that the pair measures the cost of the alignment alone; the linear sweep keeps aligned sizes."""
    sweep = _sweep()
    pairs = sweep.shapes("output-layer")
    unaligned = [(m, k, n) for m, k, n in pairs if n % 8]
    assert unaligned and len(pairs) == 2 * len(unaligned)
    for m, k, n in unaligned:
        padded = -(-n // 64) * 64
        assert (m, k, padded) in pairs and padded - n < 64
    assert (8192, 768, 50257) in pairs and (8192, 768, 50304) in pairs, "GPT-2's output layer and nanoGPT's padding"
    assert all(n % 64 == 0 for _, _, n in sweep.shapes("linear"))
    with pytest.raises(SystemExit, match="linear, output-layer or memory"):
        sweep.shapes("attention")


def test_the_memory_sweep_runs_each_memory_bound_kernel_on_the_shapes_it_names():
    """``memory`` times each op at every (tokens, features) it plans; each kernel runs (here on the CPU) on tensors
    of that shape and gives one of the same shape, so the bytes a line counts are the bytes the kernel moved."""
    import torch

    sweep = _sweep()
    plan = sweep.memory_plan()
    assert {op for op, _, _ in plan} == set(sweep.MEMORY_OPS) and len(plan) == len(set(plan))
    assert len(plan) == len(sweep.MEMORY_OPS) * len(sweep.MEMORY_TOKENS) * len(sweep.MEMORY_WIDTHS)
    for op in sweep.MEMORY_OPS:
        out = sweep.memory_kernel(op, 4, 8, torch.device("cpu"))()
        assert out.shape == (4, 8) and out.dtype == torch.bfloat16, op
    with pytest.raises(ValueError, match="unknown op"):
        sweep.memory_kernel("matmul", 4, 8, torch.device("cpu"))


def test_small_products_are_timed_from_a_cuda_graph_on_operands_that_have_left_the_l2_cache():
    """A product whose operands fit in L2 is timed by ``do_bench_cudagraph`` (no launch interval between calls),
    rotating through copies of its operands that fill at least twice the L2, so each copy has left the cache when
    it comes round again; a larger one by ``do_bench`` on one copy (it empties L2 before each call)."""
    sweep = _sweep()
    l2 = 50 * 2**20
    small, large = sweep.layer_bytes(2048, 512, 512), sweep.layer_bytes(32768, 8192, 32768)
    assert small < l2 < large
    assert sweep.timer_for(small, l2) == "do_bench_cudagraph" and sweep.timer_for(large, l2) == "do_bench"
    sets = sweep.operand_sets(small, l2)
    assert sets * small >= 2 * l2 and (sets - 1) * small < 2 * l2
    assert sweep.operand_sets(large, l2) == 1
    assert sweep.operand_sets(1, l2) == sweep.MAX_OPERAND_SETS  # a tiny kernel's copies stay bounded
    calls = sweep.rotating([lambda i=i: i for i in range(3)])
    assert [calls() for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0], "each call on the next copy, in turn"


def test_a_layers_products_run_on_the_shapes_of_its_line():
    """The three products of a layer give the shapes a line's FLOPs count: (M x N), (M x K), (K x N)."""
    import torch

    sweep = _sweep()
    m, k, n = 6, 4, 8
    out = {name: fn() for name, fn in sweep.layer_products(m, k, n, torch.device("cpu")).items()}
    assert {name: tuple(t.shape) for name, t in out.items()} == {"forward": (m, n), "input grad": (m, k),
                                                                "weight grad": (k, n)}
    line = sweep.gemm_line(m, k, n, "forward", 1e-3, {"timer": "do_bench", "operand_sets": 1}, {"gpu": "x"})
    assert line["tflops"] == pytest.approx(2 * m * k * n / 1e-3 / 1e12) and line["timer"] == "do_bench"


def _layers(timer: str | None) -> "pd.DataFrame":
    """Lines of a sweep whose products take a fixed launch interval plus their FLOPs at one rate: by the earlier
    timing the smallest layers' times are the launch interval, by ``triton.testing`` they are their own."""
    import pandas as pd

    sweep, rows = _sweep(), []
    for m, k, n in [(2048, 512, 512), (2048, 1024, 1024), (8192, 4096, 4096), (32768, 8192, 8192)]:
        flops = 2 * m * k * n
        seconds = max(flops / 400e12, 20e-6) if timer is None else flops / 400e12
        how = {} if timer is None else {"timer": timer, "operand_sets": 1}
        rows += [sweep.gemm_line(m, k, n, p, seconds, how, {"gpu": "NVIDIA H100 80GB HBM3"})
                 for p in ("forward", "input grad", "weight grad")]
    return pd.DataFrame(rows)


def test_the_rate_by_size_keeps_small_layers_timed_by_triton_and_leaves_out_launch_bound_ones_timed_before():
    """The work model needs the small products: a sweep by ``triton.testing`` keeps every layer; one timed back to
    back from Python (no ``timer`` field, as the shipped sweeps) leaves out those whose time was the launch."""
    from academic_bench.results.gemm import gemm_curve

    before = gemm_curve(_layers(None), "h100-80gb", "before")
    after = gemm_curve(_layers("do_bench_cudagraph"), "h100-80gb", "after")
    smallest = 2.0 * 2048 * 512 * 512
    assert smallest not in before.flops and smallest in after.flops
    assert len(after.flops) == 4 and after.rate(smallest) == pytest.approx(400e12)
