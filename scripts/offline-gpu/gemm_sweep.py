"""Matrix-product rate as a function of the product's shape, on the GPU in hand: the evidence behind a work model
that takes matrix products at a rate that depends on their size (a decoder's linear layers at hidden 512-8192).

For each weight shape (K inputs, N outputs) and token count M it times the three products of one linear layer in
training, bf16, as PyTorch runs them: the forward (M x K) @ (K x N), the input gradient (M x N) @ (N x K) and the
weight gradient (K x M) @ (M x N). CUDA events around REPS back-to-back products after WARMUP, the median of
ROUNDS such rounds; one JSON line per (M, K, N, product) with seconds and TFLOP/s, and the machine in every line.

    python3 scripts/offline-gpu/gemm_sweep.py OUT.jsonl [linear|output-layer]

``linear`` (the default) sweeps the linear layers' aligned sizes, the work model's rate by size (``gemm.jsonl``).
``output-layer`` times the output layer's products at vocabularies that are no multiple of 8 beside the same
vocabulary padded to a multiple of 64 (GPT-2's 50,257 and 50,304), so that the cost of an unaligned vocabulary
is measured apart from any decoder's step; it goes to its own file (``gemm-output-layer.jsonl``), which the rate by
size does not read.
"""
from __future__ import annotations

import json
import statistics
import sys
import time

import torch

HIDDEN = (512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 8192)
TOKENS = (2048, 8192, 32768)  # tokens in a micro-batch: micro-batch x sequence length
WIDEN = (1, 4)  # N = hidden (attention projections) and 4 x hidden (a plain MLP's first layer)
WARMUP, REPS, ROUNDS = 3, 10, 5
# The output layer: (hidden, vocabulary) of decoders whose vocabulary is no multiple of 8, each beside its padded
# twin, and the tokens of a micro-batch.
OUTPUT_LAYERS = ((768, 50257), (2048, 50257), (2048, 32001), (2048, 151655))
OUTPUT_TOKENS = (8192, 65536)
PAD_TO = 64


def shapes(kind: str) -> list[tuple[int, int, int]]:
    """The (M tokens, K inputs, N outputs) of each linear layer the sweep times."""
    if kind == "linear":
        return [(m, k, k * w) for m in TOKENS for k in HIDDEN for w in WIDEN]
    if kind == "output-layer":
        return [(m, k, n) for m in OUTPUT_TOKENS for k, v in OUTPUT_LAYERS for n in (v, -(-v // PAD_TO) * PAD_TO)]
    raise SystemExit(f"unknown sweep {kind!r}: choose linear or output-layer")


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
    plan = shapes(kind)
    dev = torch.device("cuda")
    machine = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
               "date": time.strftime("%Y-%m-%d")}
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
