"""Matrix-product rate as a function of the product's shape, on the GPU in hand: the evidence behind a work model
that takes matrix products at a rate that depends on their size (a decoder's linear layers at hidden 512-8192).

For each weight shape (K inputs, N outputs) and token count M it times the three products of one linear layer in
training, bf16, as PyTorch runs them: the forward (M x K) @ (K x N), the input gradient (M x N) @ (N x K) and the
weight gradient (K x M) @ (M x N). CUDA events around REPS back-to-back products after WARMUP, the median of
ROUNDS such rounds; one JSON line per (M, K, N, product) with seconds and TFLOP/s, and the machine in every line.

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

import json
import statistics
import sys
import time

import torch

from academic_bench.catalog.models.from_config import padded_size

HIDDEN = (512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 8192)
TOKENS = (2048, 8192, 32768)  # tokens in a micro-batch: micro-batch x sequence length
WIDEN = (1, 4)  # N = hidden (attention projections) and 4 x hidden (a plain MLP's first layer)
WARMUP, REPS, ROUNDS = 3, 10, 5
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


def memory_kernel(op: str, m: int, k: int, dev: torch.device):
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


def machine_fields() -> dict:
    """What every line names of the machine that timed it."""
    return {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
            "date": time.strftime("%Y-%m-%d")}


def memory_main(out: str) -> None:
    dev = torch.device("cuda")
    machine = machine_fields()
    with open(out, "a") as f:
        for op, m, k in memory_plan():
            s = timed(memory_kernel(op, m, k, dev))
            moved = MEMORY_OPS[op] * m * k
            line = {"op": op, "m": m, "k": k, "dtype": "bf16", "bytes": moved, "seconds": s,
                    "gbps": moved / s / 1e9, **machine}
            f.write(json.dumps(line) + "\n")
            print(json.dumps(line), flush=True)
            torch.cuda.empty_cache()


def timed(fn) -> float:
    for _ in range(WARMUP):
        fn()
    rounds = []
    for _ in range(ROUNDS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPS):
            fn()
        end.record()
        torch.cuda.synchronize()
        rounds.append(start.elapsed_time(end) / 1000 / REPS)
    return statistics.median(rounds)


def main(out: str, kind: str = "linear") -> None:
    if kind == "memory":
        return memory_main(out)
    plan = shapes(kind)
    dev = torch.device("cuda")
    machine = machine_fields()
    with open(out, "a") as f:
        for m, k, n in plan:
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            wt = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
            g = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
            products = {"forward": lambda: x @ wt, "input grad": lambda: g @ wt.t(), "weight grad": lambda: x.t() @ g}
            for name, fn in products.items():
                s = timed(fn)
                line = {"m": m, "k": k, "n": n, "product": name, "dtype": "bf16", "seconds": s,
                        "tflops": 2 * m * k * n / s / 1e12, **machine}
                f.write(json.dumps(line) + "\n")
                print(json.dumps(line), flush=True)
            del x, wt, g
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main(*sys.argv[1:3])
