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
