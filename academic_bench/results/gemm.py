"""The matrix-product rate by size that a GPU's sweep measured (``scripts/offline-gpu/gemm_sweep.py`` into
``<setup>/evidence/gemm/gemm.jsonl``): a linear layer's three training products (forward, input gradient, weight
gradient) as a function of one product's FLOPs (``GemmCurve``). The work model (``predict.work_evidence``) counts a
small product's slowness with it; the smart search (``search.smart``) reads its plateau as the most a training
step's matrix products can run at (``step_ceiling``). Beside it, ``gemm_sweep.py output-layer``
(``evidence/gemm/gemm-output-layer.jsonl``) times output layers whose vocabulary is no multiple of 8 beside their
padded twins: how much longer per FLOP such a layer takes (``unaligned_slowness``) goes with the curve.
``gemm_sweep.py memory`` (``evidence/gemm/gemm-memory.jsonl``) times a step's memory-bound kernels: two GPUs' times
for the same kernels (``memory_time_ratio``) scale a step's memory-bound part between them (``predict.transfer``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from ..catalog.hardware import get_gpu, match_name
from ..catalog.models.from_config import is_unaligned, padded_size

GEMM_FILE = "evidence/gemm/gemm.jsonl"
OUTPUT_LAYER_FILE = "evidence/gemm/gemm-output-layer.jsonl"
MEMORY_FILE = "evidence/gemm/gemm-memory.jsonl"
# The same sweeps timed by triton.testing (every shape, the small ones included), beside the launch-timed ones,
# which stay as they were made. A setup's matrix-product curve and output-layer slowness read these where they
# exist. The memory-bound sweeps are read as a ratio between two GPUs, so both must be timed alike: they stay on
# ``MEMORY_FILE`` until every GPU's sweep has been made again.
TRITON_DIR = "evidence/gemm-triton"
if TYPE_CHECKING:
    import pandas as pd

LAUNCH_BOUND = 1.5  # a product within this factor of the sweep's shortest time measured the launch (gemm_curve)


def launch_timed(lines: pd.DataFrame) -> pd.Series:
    """Which lines were timed the earlier way, back to back from Python on the same operands (no ``timer`` field):
    their shortest times are the host's launch interval. Lines by ``triton.testing`` (``timer``: ``do_bench``, or
    ``do_bench_cudagraph`` with rotated operands) time the kernel itself at every size."""
    if "timer" not in lines:
        return lines["seconds"].notna()
    return lines["timer"].isna()


@dataclass(frozen=True)
class GemmCurve:
    """A GPU's matrix-product rate as a function of one product's FLOPs (``gemm_curve``), interpolated linearly in
    log FLOPs and held at the ends."""

    gpu: str  # catalog key of the GPU that ran the sweep
    flops: tuple[float, ...]  # one product's FLOPs, ascending
    rates: tuple[float, ...]  # FLOP/s of a layer's three products at those FLOPs
    source: str  # the file it was read from
    # How many times longer per FLOP a layer runs with an unaligned dimension than its padded twin (``unaligned_slowness``); 1.0 where no output-layer sweep was made beside the curve's.
    unaligned: float = 1.0

    def rate(self, flops: float) -> float:
        """FLOP/s of a product of ``flops`` FLOPs."""
        import numpy as np

        return float(np.interp(math.log(flops), [math.log(f) for f in self.flops], self.rates))

    @property
    def plateau(self) -> float:
        """The rate of the largest products swept: the reference a product's slowness is counted against."""
        return self.rates[-1]

    def slowness(self, flops: float) -> float:
        """How many times longer than at ``plateau`` a product of ``flops`` FLOPs takes, per FLOP."""
        return self.plateau / self.rate(flops)


def gemm_curve(lines: pd.DataFrame, gpu: str, source: str) -> GemmCurve:
    """The ``GemmCurve`` of a sweep's lines (``gemm_sweep.py``: m, k, n, product, seconds; bf16): each linear layer's
    rate (its three products' FLOPs over their summed seconds), made non-decreasing in FLOPs (pooled adjacent
    violators, each FLOP count weighted by its shapes): a larger product is never slower per FLOP, so one shape's
    dip (a library's choice of kernel for it) is averaged with its neighbours instead of taken as a law of size.

    A sweep timed the earlier way (``launch_timed``) launched its products one by one from Python, so it timed each
    as the longer of its kernel and the host's launch interval, which its shortest product shows. Of its layers one
    whose fastest product took less than ``LAUNCH_BOUND`` times that is left out: its time is the host's, not the
    GPU's (in training the profiles count such gaps as idle time, a kind of their own). In the H100 sweep those
    layers took 1.0-1.2 times the shortest time and every other at least 1.57 times. A sweep by ``triton.testing``
    keeps every layer, the small ones included."""
    d = lines[lines["dtype"] == "bf16"].assign(flops=lambda x: 2.0 * x["m"] * x["k"] * x["n"],
                                               by_launch=lambda x: launch_timed(x))
    layers = d.groupby(["m", "k", "n"]).agg(flops=("flops", "first"), seconds=("seconds", "sum"),
                                            fastest=("seconds", "min"), products=("product", "nunique"),
                                            by_launch=("by_launch", "any"))
    # A layer whose three products were all timed, each clearly longer than a launch where a launch was timed.
    shortest = d.loc[d["by_launch"], "seconds"].min() if d["by_launch"].any() else 0.0
    layers = layers[(layers["products"] == 3)
                    & (~layers["by_launch"] | (layers["fastest"] >= LAUNCH_BOUND * shortest))]
    layers["rate"] = 3 * layers["flops"] / layers["seconds"]
    by_size = layers.groupby("flops")["rate"].agg(["mean", "size"]).sort_index()
    blocks: list[list[float]] = []  # [rate, weight, how many FLOP counts]
    for rate, weight in zip(by_size["mean"], by_size["size"]):
        blocks.append([float(rate), float(weight), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (r2, w2, n2), (r1, w1, n1) = blocks.pop(), blocks.pop()
            blocks.append([(r1 * w1 + r2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    rates = [r for r, _, n in blocks for _ in range(n)]
    return GemmCurve(gpu, tuple(float(f) for f in by_size.index), tuple(rates), source)


def unaligned_slowness(lines: pd.DataFrame) -> float:
    """How many times longer per FLOP an output layer whose vocabulary is unaligned (``is_unaligned``) takes than
    its padded twin (the same tokens and inputs, the vocabulary rounded up by ``padded_size``):
    each layer's three products' seconds per output column, unaligned over padded, the median over the layers the
    sweep (``gemm_sweep.py output-layer``) timed both ways; 1.0 with none."""
    import statistics

    d = lines[lines["dtype"] == "bf16"]
    per_column = {key: seconds / key[2] for key, seconds in d.groupby(["m", "k", "n"])["seconds"].sum().items()}
    ratios = []
    for (m, k, n), unaligned in per_column.items():
        padded = (m, k, padded_size(n))
        if is_unaligned(n) and padded in per_column:
            ratios.append(unaligned / per_column[padded])
    return float(statistics.median(ratios)) if ratios else 1.0


def sweep_file(setup: Path, name: str) -> Path:
    """A setup folder's sweep ``name`` (``GEMM_FILE`` or ``OUTPUT_LAYER_FILE``): the one timed by triton.testing
    (``TRITON_DIR``) where the setup has it, else the launch-timed one."""
    triton = setup / TRITON_DIR / Path(name).name
    return triton if triton.exists() else setup / name


def gemm_curves(runs: Path) -> dict[str, GemmCurve]:
    """Every setup's GEMM sweep under the runs folder ``runs`` (``sweep_file``: by triton.testing where made), by the
    catalog key of the GPU that ran it (the lines name the device), with the output-layer sweep beside it where
    one was made (``unaligned_slowness``); where two setups swept one GPU, the first setup's in name order."""
    import dataclasses

    import pandas as pd

    out: dict[str, GemmCurve] = {}
    setups = sorted({p.parents[2] for p in Path(runs).glob(f"*/{GEMM_FILE}")}
                    | {p.parents[2] for p in Path(runs).glob(f"*/{TRITON_DIR}/{Path(GEMM_FILE).name}")})
    for setup in setups:
        path = sweep_file(setup, GEMM_FILE)
        lines = pd.read_json(path, lines=True) if path.exists() else pd.DataFrame()
        if lines.empty:
            continue
        gpu = match_name(str(lines["gpu"].iloc[0]))
        if gpu is not None and gpu.key not in out:
            curve = gemm_curve(lines, gpu.key, str(path.relative_to(runs)))
            beside = sweep_file(setup, OUTPUT_LAYER_FILE)
            if beside.exists():
                curve = dataclasses.replace(curve, unaligned=unaligned_slowness(pd.read_json(beside, lines=True)))
            out[gpu.key] = curve
    return out


def curve_for(curves: Mapping[str, GemmCurve], gpu: str) -> GemmCurve | None:
    """The sweep of ``gpu`` itself, else of a GPU of the same architecture (H200 has H100's chip: the same SMs
    and peak), else None."""
    if gpu in curves:
        return curves[gpu]
    arch = get_gpu(gpu).architecture
    same = sorted(k for k in curves if get_gpu(k).architecture == arch)
    return curves[same[0]] if same else None


def step_ceiling(gpu: str, runs: Path) -> float | None:
    """The fastest rate, in FLOP/s, at which ``gpu`` runs bf16 matrix products: the plateau of the GEMM sweep of
    ``gpu`` (or of a GPU of its architecture, the same chip) under ``runs``; None without a sweep. A training
    step's hardware FLOPs cannot run faster than its largest matrix products (nor, in fp32 or TF32, than bf16's;
    FP8's run faster, and the smart search's rule that reads this leaves FP8 out)."""
    curve = curve_for(gemm_curves(runs), gpu)
    return None if curve is None else curve.plateau


def memory_sweeps(runs: Path) -> dict[str, pd.DataFrame]:
    """Every setup's sweep of memory-bound kernels under the runs folder ``runs`` (``<setup>/MEMORY_FILE``: op, m,
    k, seconds), by the catalog key of the GPU that ran it; where two setups swept one GPU, the first in name
    order."""
    import pandas as pd

    out: dict[str, pd.DataFrame] = {}
    for path in sorted(Path(runs).glob(f"*/{MEMORY_FILE}")):
        lines = pd.read_json(path, lines=True)
        gpu = match_name(str(lines["gpu"].iloc[0])) if len(lines) else None
        if gpu is not None and gpu.key not in out:
            out[gpu.key] = lines
    return out


STREAMING_OPS = ("add", "cast")  # the memory sweep's kernels that only stream their operands (no reduction)
STREAMING_BYTES = 256 * 2**20  # kernels this large run at the GPU's sustained bandwidth, however they were timed


def streaming_bandwidth(lines: pd.DataFrame) -> float | None:
    """The bytes per second at which a GPU streams large tensors: the median over the memory sweep's (``lines``)
    element-wise adds and casts of ``STREAMING_BYTES`` or more (each reads and writes every element once, as a
    weight's cast or a gradient's accumulation does). None where the sweep has none."""
    big = lines[lines["op"].isin(STREAMING_OPS) & (lines["bytes"] >= STREAMING_BYTES)]
    return float((big["bytes"] / big["seconds"]).median()) if len(big) else None


def memory_time_ratio(source: pd.DataFrame, target: pd.DataFrame) -> float | None:
    """How many times as long the same memory-bound kernels took on the GPU of ``target``'s sweep as on that of
    ``source``'s (``memory_sweeps``): the median over the (op, m, k) both timed of target seconds over source
    seconds; None where they share none. As in ``gemm_curve``, in a sweep timed the earlier way (``launch_timed``)
    a kernel that took less than ``LAUNCH_BOUND`` times its sweep's shortest is left out: its time is the host's
    launch interval; a sweep by ``triton.testing`` keeps every kernel."""
    import statistics

    keys = ["op", "m", "k"]

    def timed(lines: pd.DataFrame) -> pd.Series:
        seconds = lines.groupby(keys)["seconds"].median()
        if not launch_timed(lines).any():
            return seconds
        return seconds[seconds >= LAUNCH_BOUND * seconds.min()]

    both = timed(source).to_frame("source").join(timed(target).to_frame("target"), how="inner")
    return float(statistics.median(both["target"] / both["source"])) if len(both) else None
