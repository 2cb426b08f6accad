"""How many times as long each kind of GPU work takes on one GPU as on another (``transfer.predict`` scales each
part of a measured step by these): matrix products by measured matrix-product rates or the datasheets' dense peaks,
memory-bound kernels by the two GPUs' sweeps or their datasheet bandwidths, other links by catalog figures."""
from __future__ import annotations

import math
from functools import lru_cache

from ..catalog.hardware import GPU


def catalog_ratio(source: GPU, target: GPU, field: str) -> float:
    """source / target of a catalog figure; a GPU without it is named (data/gpus.csv)."""
    for gpu in (source, target):
        value = getattr(gpu, field)
        if not value or not math.isfinite(value):
            raise ValueError(f"the GPU catalog has no {field} for {gpu.key!r} (data/gpus.csv)")
    return getattr(source, field) / getattr(target, field)


def part_ratios(source: GPU, target: GPU, precision: str, tf32: bool, runs: str | None = None
                ) -> tuple[dict[str, float], dict[str, str]]:
    """How many times as long each part of a step (``transfer.part_of``) is taken to run on ``target`` as on ``source``:
    ``flop`` by ``flop_ratio`` (measured matrix-product rates, else the dense peaks), ``scan`` by the fp32
    peaks, ``memory`` by ``memory_ratio``; and what the ``flop`` and ``memory`` ratios rest on."""
    flop, flop_basis = flop_ratio(source, target, precision, tf32)
    memory, memory_basis = memory_ratio(source, target, runs)
    return ({"flop": flop, "scan": source.peak_flops("fp32") / target.peak_flops("fp32"), "memory": memory},
            {"flop": flop_basis, "memory": memory_basis})


def flop_ratio(source: GPU, target: GPU, precision: str, tf32: bool) -> tuple[float, str]:
    """How many times as long a matrix product takes on ``target`` as on ``source``, and what it rests on:
    ``"measured"``, the rates ``catalog.matmul_rates`` holds for both at ``precision`` (it has bf16 and fp16
    only): GPUs reach different fractions of their datasheets, within an architecture too (the table's H100 PCIe
    reaches less of its own than the H100 SXM); else ``"datasheet"``, the ratio of their
    dense peaks."""
    from ..catalog.matmul_rates import matmul_tflops

    if source.key != target.key:
        rates = matmul_tflops(source.key, precision), matmul_tflops(target.key, precision)
        if None not in rates:
            return rates[0] / rates[1], "measured"
    return source.peak_flops(precision, tf32) / target.peak_flops(precision, tf32), "datasheet"


def memory_ratio(source: GPU, target: GPU, runs: str | None = None) -> tuple[float, str]:
    """How many times as long a memory-bound kernel takes on ``target`` as on ``source``, and what it rests on:
    ``"sweep"``, the two GPUs' sweeps of memory-bound kernels under the runs ``runs`` (default the shipped runs;
    ``results.gemm.memory_time_ratio``) where both were swept; else ``"datasheet"``, the ratio of their datasheet
    memory bandwidths; ``"same GPU"`` for one GPU."""
    if source.key == target.key:
        return 1.0, "same GPU"
    from ..analysis import runs_root

    sweeps = _memory_sweeps(str(runs_root(runs)))
    if source.key in sweeps and target.key in sweeps:
        from ..results.gemm import memory_time_ratio

        measured = memory_time_ratio(sweeps[source.key], sweeps[target.key])
        if measured:
            return measured, "sweep"
    return catalog_ratio(source, target, "memory_bandwidth_gbps"), "datasheet"


@lru_cache(maxsize=4)
def _memory_sweeps(runs: str) -> dict:
    from pathlib import Path

    from ..results.gemm import memory_sweeps

    return memory_sweeps(Path(runs))
