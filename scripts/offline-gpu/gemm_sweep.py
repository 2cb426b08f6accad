"""Matrix-product rate as a function of the product's shape, on the GPU in hand: the evidence behind a work model
that takes matrix products at a rate that depends on their size (a decoder's linear layers at hidden 512-8192).

For each weight shape (K inputs, N outputs) and token count M it times the three products of one linear layer in
training, bf16, as PyTorch runs them: the forward (M x K) @ (K x N), the input gradient (M x N) @ (N x K) and the
weight gradient (K x M) @ (M x N). One JSON line per (M, K, N, product) with seconds and TFLOP/s, the timer that took
them and the machine in every line.

Timing (``time_kernel``), by ``triton.testing``, so that the small products the work model most needs are timed as
a training step runs them rather than as the host launches them: a product whose operands exceed the GPU's L2 cache
by ``do_bench`` (which empties L2 before each call and keeps the host's launches ahead of the GPU), a smaller one by
``do_bench_cudagraph`` (calls replayed from a CUDA graph: no launch interval between them), rotating through enough
copies of its operands (``operand_sets``) that none is still in L2 when it comes round again. The median of the
timer's samples. Lines by the earlier timing (CUDA events around back-to-back products on the same operands) have no
``timer`` field; ``results.gemm`` leaves out their launch-bound shapes, as before.

    python3 scripts/offline-gpu/gemm_sweep.py OUT.jsonl [linear|output-layer|memory]

``linear`` (the default) sweeps the linear layers' aligned sizes, the work model's rate by size (``gemm.jsonl``).
``output-layer`` times the output layer's products at vocabularies that are no multiple of 8 beside the same
vocabulary padded to a multiple of 64 (GPT-2's 50,257 and 50,304), so that the cost of an unaligned vocabulary
is measured apart from any decoder's step; it goes to its own file (``gemm-output-layer.jsonl``), which the rate by
size does not read.
``memory`` times the memory-bound kernels of a training step instead (an add, a GELU, a layer norm, a softmax and
an fp32-to-bf16 cast, as PyTorch runs them on M tokens x K features), one line per (op, M, K) with seconds and the
bytes they move: the ratio of two GPUs' times for the same kernels (``results.gemm.memory_time_ratio``) is how the
transfer model scales a step's memory-bound part from one to the other where both were swept, apart from any
training step (``gemm-memory.jsonl``).
"""
from __future__ import annotations

import itertools
import json
import math
import sys
import time
from typing import Callable, Sequence

import torch

from academic_bench.catalog.models.from_config import padded_size

HIDDEN = (512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 8192)
TOKENS = (2048, 8192, 32768)  # tokens in a micro-batch: micro-batch x sequence length
WIDEN = (1, 4)  # N = hidden (attention projections) and 4 x hidden (a plain MLP's first layer)
WARMUP_MS, REP_MS = 25, 100  # do_bench's warm-up and timed milliseconds (its defaults); do_bench_cudagraph's REP_MS
MAX_OPERAND_SETS = 64  # the most copies of a small product's operands a timing rotates through
# The output layer: (hidden, vocabulary) of decoders whose vocabulary is no multiple of 8, each beside its padded
# twin, and the tokens of a micro-batch.
OUTPUT_LAYERS = ((768, 50257), (2048, 50257), (2048, 32001), (2048, 151655))
OUTPUT_TOKENS = (8192, 65536)
# The memory-bound kernels: tokens, features (a hidden size up to a wide MLP's), and each op with the bytes it
# reads and writes per element (bf16 = 2 bytes, fp32 = 4).
MEMORY_TOKENS = (8192, 32768)
MEMORY_WIDTHS = (768, 2048, 4096, 8192, 16384)
MEMORY_OPS = {"add": 6, "gelu": 4, "layer norm": 4, "softmax": 4, "cast": 6}


def shapes(kind: str) -> list[tuple[int, int, int]]:
    """The (M tokens, K inputs, N outputs) of each linear layer the sweep times."""
    if kind == "linear":
        return [(m, k, k * w) for m in TOKENS for k in HIDDEN for w in WIDEN]
    if kind == "output-layer":
        return [(m, k, n) for m in OUTPUT_TOKENS for k, v in OUTPUT_LAYERS for n in (v, padded_size(v))]
    raise SystemExit(f"unknown sweep {kind!r}: choose linear, output-layer or memory")


def memory_plan() -> list[tuple[str, int, int]]:
    """The (op, M tokens, K features) of each memory-bound kernel the ``memory`` sweep times."""
    return [(op, m, k) for op in MEMORY_OPS for m in MEMORY_TOKENS for k in MEMORY_WIDTHS]


def memory_kernel(op: str, m: int, k: int, dev: torch.device) -> Callable[[], torch.Tensor]:
    """A function running ``op`` once on fresh (m, k) tensors, as a training step's kernels run it."""
    import torch.nn.functional as F

    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    if op == "add":
        y = torch.randn_like(x)
        return lambda: x + y
    if op == "gelu":
        return lambda: F.gelu(x, approximate="tanh")
    if op == "layer norm":
        w, b = torch.ones(k, device=dev, dtype=torch.bfloat16), torch.zeros(k, device=dev, dtype=torch.bfloat16)
        return lambda: F.layer_norm(x, (k,), w, b)
    if op == "softmax":
        return lambda: torch.softmax(x, dim=-1)
    if op == "cast":
        x32 = x.float()
        return lambda: x32.to(torch.bfloat16)
    raise ValueError(f"unknown op {op!r}")


def layer_products(m: int, k: int, n: int, dev: torch.device) -> dict[str, Callable[[], torch.Tensor]]:
    """A linear layer's three training products on fresh operands: forward, input gradient, weight gradient."""
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    wt = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
    g = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
    return {"forward": lambda: x @ wt, "input grad": lambda: g @ wt.t(), "weight grad": lambda: x.t() @ g}


def operand_sets(nbytes: int, l2_bytes: int) -> int:
    """How many copies of a kernel's operands (``nbytes`` in all) its timing rotates through: one where they exceed
    the L2 cache (``do_bench`` empties it before each call), else enough to fill twice the L2, so that each copy has
    left it before it is used again (at most ``MAX_OPERAND_SETS``)."""
    return 1 if nbytes >= l2_bytes else min(MAX_OPERAND_SETS, math.ceil(2 * l2_bytes / max(1, nbytes)))


def timer_for(nbytes: int, l2_bytes: int) -> str:
    """``do_bench`` for operands larger than the L2 cache, ``do_bench_cudagraph`` for smaller (launch-bound) ones."""
    return "do_bench" if nbytes >= l2_bytes else "do_bench_cudagraph"


def rotating(calls: Sequence[Callable[[], torch.Tensor]]) -> Callable[[], torch.Tensor]:
    """One function that runs the next of ``calls`` each time (the same kernel on the next copy of its operands); a
    CUDA graph captured over it replays the copies in turn."""
    cycle = itertools.cycle(calls)
    return lambda: next(cycle)()


def time_kernel(make: Callable[[], Callable[[], torch.Tensor]], nbytes: int, l2_bytes: int) -> tuple[float, dict]:
    """Seconds of one call of the kernel ``make()`` builds on fresh operands of ``nbytes``, by ``timer_for``'s timer
    over ``operand_sets`` copies, the median of its samples; and the fields that say how it was timed."""
    from triton.testing import do_bench, do_bench_cudagraph

    timer, sets = timer_for(nbytes, l2_bytes), operand_sets(nbytes, l2_bytes)
    fn = rotating([make() for _ in range(sets)])
    if timer == "do_bench":
        ms = do_bench(fn, warmup=WARMUP_MS, rep=REP_MS, return_mode="median")
    else:
        ms = do_bench_cudagraph(fn, rep=REP_MS, return_mode="median")
    return ms / 1e3, {"timer": timer, "operand_sets": sets}


def gemm_line(m: int, k: int, n: int, product: str, seconds: float, how: dict, machine: dict) -> dict:
    """One line of the ``linear`` and ``output-layer`` sweeps (``results.gemm.gemm_curve`` reads them)."""
    return {"m": m, "k": k, "n": n, "product": product, "dtype": "bf16", "seconds": seconds,
            "tflops": 2 * m * k * n / seconds / 1e12, **how, **machine}


def layer_bytes(m: int, k: int, n: int) -> int:
    """The bf16 operands of one layer's products (input, weight, output gradient), the same for all three."""
    return 2 * (m * k + k * n + m * n)


def machine_fields() -> dict:
    """What every line names of the machine that timed it."""
    return {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
            "date": time.strftime("%Y-%m-%d")}


def l2_bytes() -> int:
    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20))


def memory_main(out: str) -> None:
    dev, l2 = torch.device("cuda"), l2_bytes()
    machine = machine_fields()
    with open(out, "a") as f:
        for op, m, k in memory_plan():
            moved = MEMORY_OPS[op] * m * k
            s, how = time_kernel(lambda: memory_kernel(op, m, k, dev), moved, l2)
            line = {"op": op, "m": m, "k": k, "dtype": "bf16", "bytes": moved, "seconds": s,
                    "gbps": moved / s / 1e9, **how, **machine}
            f.write(json.dumps(line) + "\n")
            print(json.dumps(line), flush=True)
            torch.cuda.empty_cache()


def main(out: str, kind: str = "linear") -> None:
    if kind == "memory":
        return memory_main(out)
    plan = shapes(kind)
    dev, l2 = torch.device("cuda"), l2_bytes()
    machine = machine_fields()
    with open(out, "a") as f:
        for m, k, n in plan:
            for name in ("forward", "input grad", "weight grad"):
                s, how = time_kernel(lambda: layer_products(m, k, n, dev)[name], layer_bytes(m, k, n), l2)
                line = gemm_line(m, k, n, name, s, how, machine)
                f.write(json.dumps(line) + "\n")
                print(json.dumps(line), flush=True)
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main(*sys.argv[1:3])
