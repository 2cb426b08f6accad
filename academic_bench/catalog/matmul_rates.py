"""The rates at which GPUs ran large matrix products, as others measured them (``data/matmul_rates.csv``).

A datasheet's dense peak is not what a GPU's matrix products reach, and the fraction reached differs between GPUs:
in the table below a GeForce card runs bf16 and fp16 products at about its datasheet rate with fp32 accumulation, an
H100 SXM or an L40S well below its own. The file keeps, per catalog GPU and precision, the ``torch.matmul`` rates of
one public benchmark (zzc0721/torch-performance-test-data): its ``test.py`` times 30 products of square matrices at
each of five sizes from 1,024 to 10,240 after a warm-up, with CUDA synchronisation (CUDA events since October 2025),
in PyTorch's default fp32 accumulation, and reports the best size's TFLOP/s (on a power-limited card such as the L4
a small size's short burst). A row cites either ``database.md`` at a pinned commit or the issue in which a run of
``test.py`` posted its row (the script writes that issue's text; such rows were later merged into the table), each
with the line as written. Only the cards the catalog holds are kept (the table's modified 48 GB RTX 4090s and 22 GB
RTX 2080 Ti, laptop parts, V100S, A10G and PCIe A100s are other cards). The V100 SXM2 32GB takes the rows measured
on the 16GB: the same GV100 at the same clocks and board power (data/gpus.csv), only the memory differs; its rows name
the card that ran. Every row of the pinned table for a catalog card is kept, and so are the runs posted for catalog cards
it lacks (V100 SXM2 16GB, RTX 2080 Ti, TITAN RTX, A40), by one rule, the TITAN RTX's (issue 127) too, though its
sizes ran from 40 to 66 TFLOP/s in no order (the RTX 2080 Ti's from 26 to 57); runs posted for cards the table
already holds are not added. Not kept are the bf16 columns of the V100, the T4 and the Turing cards (they have no bf16 tensor cores: the figure times
an emulation). The transfer model scales a step's matrix products between two GPUs by these rates where both have
them (``predict.gpu_ratios.flop_ratio``). The study measured none of these rows; its own GEMM sweeps
(``results.gemm``) time the H100 and H200 it trains on.
"""
from __future__ import annotations

import csv
import io
import statistics
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def _rates() -> dict[tuple[str, str], float]:
    text = resources.files("academic_bench").joinpath("data/matmul_rates.csv").read_text(encoding="utf-8")
    rows: dict[tuple[str, str], list[float]] = {}
    for r in csv.DictReader(io.StringIO(text)):
        rows.setdefault((r["gpu"], r["precision"]), []).append(float(r["tflops"]))
    return {k: statistics.median(v) for k, v in rows.items()}


def matmul_tflops(gpu: str, precision: str) -> float | None:
    """The median over the table's rows of ``gpu`` (a catalog key) of its ``precision`` column (bf16 or fp16), in
    TFLOP/s; None where it has none."""
    return _rates().get((gpu, precision))
