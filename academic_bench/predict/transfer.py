"""Step time and days on hardware the study did not measure, from a configuration it did measure.

A measured step is split into parts by the kind of work its GPU time went to (``analysis.profiles``), and each
part is scaled by the target GPU's capability that bounds it:

- **matrix products, attention, convolution** (``catalog.kernels.FLOP_KINDS``): by the ratio of the rates the two
  GPUs' large matrix products reached in a public table of ``torch.matmul`` rates
  (``catalog.matmul_rates``) where it has both GPUs at the precision that ran (``gpu_ratios.flop_ratio``): GPUs reach
  different fractions of their datasheets; else by the ratio of dense peak FLOP/s at that precision (fp32 at the
  TF32 rate where TF32 was on);
- **the state-space scan** (Mamba): by the ratio of fp32 (CUDA-core) peaks: its fused kernel keeps the state in
  on-chip memory and reads each input once (Gu & Dao 2023, Sec. 3.3.2), so its arithmetic, not the memory
  bandwidth, bounds it. This is the one choice made after a first comparison with the held-out H200 (which
  showed Mamba's step predicted too short with the scan counted as memory-bound);
- **memory-bound kernels** (elementwise, normalisation, loss and softmax, memory copies on the GPU): by how many
  times as long the same memory-bound kernels took on the two GPUs where both were swept apart from any training
  step (``results.gemm.memory_time_ratio``), else by the ratio of datasheet memory bandwidth (``gpu_ratios.memory_ratio``);
  the sweeps are read from the runs folder ``predict`` is given (default the shipped runs);
- **the GPU's idle time** within the micro-steps (host work, launches): per micro-step, so by the ratio of
  accumulation steps (the target's micro-batch from the memory model, ``estimate.max_micro_batch``, or the
  source's where it is known to fit: ``target_micro_batch``);
- **offloading's host copies in every micro-step** (``method_costs.micro_step_copy_s``: the bytes each
  micro-step moves over PCIe), where the phases show them exposed (``method_costs.COPIES_EXPOSED``): taken out
  of the source's micro-steps and charged for the target's accumulation steps, since a larger micro-batch copies
  as much per micro-step for more samples;
- **the optimizer step and the gradient synchronisation** (the row's own timings): with offloading, host-bound
  copies over PCIe (scaled by the PCIe ratio), else the GPU's optimizer kernels by the datasheet bandwidth ratio;
  on several GPUs, the sharding method's collectives over the link between the GPUs (``method_costs.ring_gbps``), estimated from the bytes each method sends
  (``method_costs.collective_s``).

Every GPU does ``source GPUs / target GPUs`` times the source's per-GPU work (the global batch never changes).
The model fits nothing: it uses the source row, the source setup's profile, datasheet numbers, kernel sweeps and a
public table of matrix-product rates that time no training step, so a held-out measurement on the target
(``validation``) tests it rather than tunes it.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Mapping

import pandas as pd

from ..catalog.hardware import GPU, get_gpu
from ..catalog.kernels import FLOP_KINDS
from .gpu_ratios import catalog_ratio, part_ratios
from .method_costs import COPIES_EXPOSED, collective_s, micro_step_copy_s, ring_gbps
from ..catalog.methods import Methods
from ..catalog.units import days_for

MFU_CAP = 0.75  # the study's plausibility threshold (analysis.MFU_IMPLAUSIBLE): no answer claims more
COMM_KIND = "communication"
SCAN_KIND = "state-space scan"
# The split assumed where no profile exists at all (no setup was profiled): an assumption, not a measurement. All
# of the step is taken to scale with the dense peak, and the range is the widest (WIDEN["default"]).
DEFAULT_SPLIT = {"flop": 1.0, "scan": 0.0, "memory": 0.0, "comm": 0.0, "idle": 0.0}
# How much wider the range is (each side, as a fraction of the step) when the split is not the configuration's
# own profile: another configuration of the same model on the source setup, the median split of the source
# setup's profiles of other models, the median split of every other setup's profiles, or DEFAULT_SPLIT.
WIDEN = {"configuration": 0.0, "work model": 0.0, "model": 0.05, "setup": 0.10, "others": 0.10, "default": 0.15}
SPLIT_WORDS = {"configuration": "its own profile", "work model": "the work model's split of the step",
               "model": "the profile of another configuration of the model",
               "setup": "the median profile of the setup", "others": "the median profile of the other setups",
               "default": "an assumed split (no profile at all)"}


@dataclass(frozen=True)
class Source:
    """A measured configuration: a best row's fields (``analysis.fastest``) and its setup's profile split."""

    setup: str
    model: str
    gpu: str
    n_gpus: int
    methods: Methods
    micro_batch: int
    gas: int
    step_time_s: float
    model_flops_per_step: float
    optimizer_s: float = 0.0  # the optimizer step (median), inside step_time_s
    sync_s: float = 0.0  # boundary - accumulating micro-step: the exposed gradient synchronisation or offload copy
    split: Mapping[str, float] | None = None  # share of the step: flop, scan, memory, comm, idle (sum 1)
    split_basis: str = "default"  # "configuration", "work model", "model", "setup", "others" or "default" (WIDEN)
    # A measured step holds offloading's per-micro-step host copies; the work model's step (decoder_work) does
    # not: it charges them on the target itself.
    copies_in_step: bool = True

    @property
    def methods_label(self) -> str:
        return self.methods.label()


@dataclass(frozen=True)
class Prediction:
    model: str
    source_setup: str
    gpu: str
    n_gpus: int
    micro_batch: int | None
    gas: int | None
    step_time_s: float | None
    step_low_s: float | None
    step_high_s: float | None
    days: float | None
    days_low: float | None
    days_high: float | None
    mfu: float | None
    capped: bool  # the scaled step implied an MFU above MFU_CAP: the step was raised to it (a lower bound)
    basis: str  # what it rests on, in words
    methods: Methods | None = None  # the methods the predicted configuration uses (the source's)
    optimizer_s: float | None = None  # the optimizer step on the GPU, inside step_time_s (where it is parted out)
    peak_flops: float | None = None  # the GPU's peak its MFU is rated on (the recipe's precision; TF32 or not)

    def to_dict(self) -> dict:
        return asdict(self)


def source_from_row(row: Mapping, profiles: pd.DataFrame | None = None, wall_from_step: bool = False) -> Source:
    """A ``Source`` from a results row (``analysis.fastest``/``best_per_setting``) and ``analysis.profiles()``:
    the configuration's own profile where one exists (same setup, model, methods and micro-batch), else the
    model's profile of another configuration on that setup, else the median split of the setup's profiles,
    else the median split of every other setup's profiles, else ``DEFAULT_SPLIT`` (``split_basis`` says which; the
    range widens by ``WIDEN``). ``wall_from_step``: the own profile's idle time is the row's measured step less its
    kernels' time (``split_of``'s ``step_s``), for a row timed at a small fixed micro-batch, where the profiler's
    host work lengthens the profiled step most; a search's row keeps the profiled wall, as the held-out checks
    validated it."""
    split, basis = None, "default"
    if profiles is not None and not profiles.empty:
        usable = profiles[~profiles["tiny"].astype(bool) & (profiles["timer"] == "gpu kernels")]
        setup = usable[usable["setup"] == row["setup"]]
        mine = setup[setup["model"] == row["model"]]
        own = mine[(mine["methods_label"] == row["methods_label"]) & (mine["micro_batch"] == int(row["micro_batch"]))]
        if not own.empty:
            step_s = (_num(row, "step_time_s") or None) if wall_from_step else None
            split, basis = split_of(own[own["config_id"] == own["config_id"].iloc[0]], step_s=step_s), "configuration"
        elif not mine.empty:
            # The model's profile at the micro-batch nearest the row's: its share of idle time per micro-step is
            # the nearest to the row's.
            far = [micro_batch_distance(int(m), int(row["micro_batch"])) for m in mine["micro_batch"]]
            first = mine.assign(far=far).sort_values(["far", "config_id"]).iloc[0]
            one = mine[(mine["config_id"] == first["config_id"]) & (mine["micro_batch"] == first["micro_batch"])]
            split, basis = split_of(one, int(row["gas"])), "model"
        elif not setup.empty:
            each = pd.DataFrame([split_of(g) for _, g in setup.groupby(["config_id", "micro_batch"])]).median()
            split, basis = (each / each.sum()).to_dict(), "setup"
        elif not usable.empty:
            groups = usable.groupby(["setup", "config_id", "micro_batch"])
            each = pd.DataFrame([split_of(g) for _, g in groups]).median()
            split, basis = (each / each.sum()).to_dict(), "others"

    accumulate = _num(row, "accumulate_median_s") or _num(row, "accumulate_first_median_s")
    sync = max(0.0, _num(row, "boundary_median_s") - accumulate) if accumulate else 0.0
    methods = methods_of_row(row)
    return Source(setup=str(row["setup"]), model=str(row["model"]), gpu=str(row["gpu"]), n_gpus=int(row["n_gpus"]),
                  methods=methods, micro_batch=int(row["micro_batch"]),
                  gas=int(row["gas"]), step_time_s=float(row["step_time_s"]),
                  model_flops_per_step=float(row["model_flops_per_step"]),
                  optimizer_s=_num(row, "optimizer_median_s"),
                  sync_s=sync, split=split, split_basis=basis)


def methods_of_row(row: Mapping) -> Methods:
    """The methods a results row (``analysis.runs_frame``'s columns) ran with, the switches beyond the paper
    included."""
    from ..analysis import METHOD_COLUMNS

    return Methods(**{c: row[c] if c in ("sharding", "fp8") else bool(row[c]) for c in METHOD_COLUMNS})


def part_of(kind: str) -> str:
    """The part of a step a kind of work (``catalog.kernels``) is scaled as: ``flop``, ``scan``, ``comm``,
    ``optimizer`` (timed apart, in the row) or ``memory`` (every other kind: memory-bound)."""
    if kind in FLOP_KINDS:
        return "flop"
    return {SCAN_KIND: "scan", COMM_KIND: "comm", "optimizer": "optimizer"}.get(kind, "memory")


def micro_batch_distance(micro_batch: int, other: int) -> float:
    """How far apart two micro-batches are, by their ratio: what a step's idle share per micro-step follows."""
    return abs(math.log(micro_batch / other))


def _num(row: Mapping, key: str) -> float:
    """A row's figure, 0.0 where it has none."""
    v = row.get(key)
    return float(v) if v is not None and not pd.isna(v) else 0.0


def split_of(profile: pd.DataFrame, gas: int | None = None, step_s: float | None = None) -> dict[str, float]:
    """One configuration's profile rows (kind, seconds, busy_s, step_wall_s, gas) as shares of its step wall
    time. The optimizer's kernels are left out: the row's own optimizer timing stands for them.

    ``gas``: the accumulation steps of the step the split is for, where the profile ran at another micro-batch.
    The kernels' seconds per optimizer step do the same work at any micro-batch (the global batch is fixed),
    but the GPU's idle time is paid per micro-step (host work, launches: ``predict`` scales it so), so the
    profile's idle time is taken per micro-step, times ``gas``, before the shares are formed: a profile at a
    micro-batch of 2 would otherwise lend its launch-bound idle share to a step of micro-batch 32.

    ``step_s``: the measured step of the configuration the profile is of. Its idle time is then that step less the
    profiled kernels' time: the profiler's own host work lengthens the profiled step, most at a small micro-batch
    (h100x1's profiles of RoBERTa-large at fixed micro-batches beside their timed rows), and would count as the
    GPU's idle time."""
    wall = float(profile["step_wall_s"].iloc[0]) if step_s is None else step_s
    sec = profile.groupby(profile["kind"].map(part_of))["seconds"].sum()
    flop, scan, memory, comm = (float(sec.get(k, 0.0)) for k in ("flop", "scan", "memory", "comm"))
    idle = max(0.0, wall - float(profile["busy_s"].iloc[0]))
    if gas is not None:
        idle *= gas / int(profile["gas"].iloc[0])
    parts = {"flop": flop, "scan": scan, "memory": memory, "comm": comm, "idle": idle}
    total = sum(parts.values())
    return {k: v / total for k, v in parts.items()}


def recipe_precision(model: str) -> str:
    """The precision catalog ``model``'s recipe trains in: the peak its MFU is rated on."""
    from ..catalog.models import get_model

    return get_model(model).recipe.precision


def _params(model: str) -> float:
    from ..estimate import model_stats

    return float(model_stats(model).params)


def target_micro_batch(src: Source, gpu: str, n_gpus: int) -> int | None:
    """The largest power-of-two micro-batch that fits the target (None: not even 1 fits): the memory model's, or
    the source's measured micro-batch where each target GPU holds no more than a source GPU did and has at least
    its memory. That holds at the source's count, and on several GPUs at any count for plain data parallelism
    (each holds it all) or at a larger count for sharding; from one GPU to several it does not, since data
    parallelism adds its gradient buckets. A measurement that fitted outranks the model that says it would not."""
    from ..catalog.config import Config
    from ..estimate import max_micro_batch

    target = get_gpu(gpu)
    modelled = max_micro_batch(Config(src.model, gpu, n_gpus, methods=src.methods), target.memory_gb)
    holds_no_more = n_gpus == src.n_gpus or (src.n_gpus > 1 and (src.methods.sharding == "none"
                                                                  or n_gpus >= src.n_gpus))
    known = src.micro_batch if holds_no_more and target.memory_gb >= get_gpu(src.gpu).memory_gb else None
    fits = [m for m in (modelled, known) if m is not None]
    return max(fits) if fits else None


def min_step_s(flops_per_step: float, gpu: GPU, n_gpus: int, precision: str, tf32: bool) -> float:
    """The shortest step any answer may claim: ``flops_per_step`` on ``n_gpus`` x ``gpu`` at ``MFU_CAP`` of the
    dense peak."""
    return flops_per_step / (n_gpus * gpu.peak_flops(precision, tf32) * MFU_CAP)


def accumulation(src: Source, n_gpus: int, micro_batch: int) -> tuple[int, int]:
    """The micro-batch and accumulation steps that run ``src``'s per-GPU batch on ``n_gpus`` GPUs at
    ``micro_batch`` (no larger than that batch)."""
    per_gpu = src.micro_batch * src.gas * src.n_gpus // n_gpus
    mbs = min(micro_batch, per_gpu)
    return mbs, max(1, per_gpu // mbs)


def predict(src: Source, gpu: str, n_gpus: int, steps: int | None = None, micro_batch: int | None = None,
            runs: str | None = None) -> Prediction:
    """Step time, days and MFU of ``src``'s configuration on ``n_gpus`` x ``gpu``, with a range.

    Each part of the source step (module docstring) is scaled to the target; the range adds up, per part, the
    fastest and slowest plausible scaling: FLOP kernels at 0.95..1.15 x the peak ratio where the architecture
    differs (an older GPU reaches less of its peak), 0.97..1.03 x where it is the same; memory-bound kernels
    between the memory ratio (``gpu_ratios.memory_ratio``: fully bandwidth-bound) and the peak ratio (latency- or
    compute-bound), taking the central estimate at the memory ratio; idle time 0.8..1.25 x; collectives
    0.5..2 x (overlap with the backward, the link's achieved bandwidth). Without the configuration's own profile the range widens by
    ``WIDEN`` of the step on each side.

    The MFU is **capped** at ``MFU_CAP``: a scaled step shorter than the one at 75% of the peak is raised to it
    and ``capped`` is set, because no measurement of the study (nor any credible one) reaches more; the days
    are then a lower bound. Raises ``hardware.UnknownGPUError`` for a GPU not in the catalog, ``ValueError`` for
    a count below 1. ``micro_batch`` is None (and no step) where no micro-batch fits (``target_micro_batch``);
    a caller that chose the target's micro-batch itself (a method's memory: ``decoder_work``) passes it.
    ``runs``: the runs folder whose sweeps of memory-bound kernels ``gpu_ratios.memory_ratio`` reads (default the shipped
    runs, or $ACADEMIC_BENCH_RUNS).
    """
    target, source = get_gpu(gpu), get_gpu(src.gpu)
    if int(n_gpus) != n_gpus or n_gpus < 1:
        raise ValueError(f"the GPU count must be at least 1, got {n_gpus!r}")
    n_gpus = int(n_gpus)
    precision = recipe_precision(src.model)
    ratios, bases = part_ratios(source, target, precision, src.methods.tf32, runs)
    p_ratio, b_ratio, cuda_ratio = ratios["flop"], ratios["memory"], ratios["scan"]
    share = src.n_gpus / n_gpus  # the target GPU's share of the source GPU's work
    mbs = target_micro_batch(src, target.key, n_gpus) if micro_batch is None else micro_batch
    basis = f"scaled from {src.setup} ({src.methods_label}; {SPLIT_WORDS[src.split_basis]})"
    if bases["memory"] == "sweep":
        basis += "; memory-bound kernels as the two GPUs' memory sweeps timed them"
    if bases["flop"] == "measured":
        basis += "; matrix products at the rates others measured on the two GPUs"
    if mbs is None:
        return Prediction(src.model, src.setup, target.key, n_gpus, None, None, None, None, None, None, None,
                          None, None, False, basis + "; no micro-batch fits the target's memory", src.methods)
    mbs, gas = accumulation(src, n_gpus, mbs)

    split = dict(src.split or DEFAULT_SPLIT)
    micro = max(0.0, src.step_time_s - src.optimizer_s - src.sync_s)
    # Offloading's host copies that repeat in every micro-step go with the accumulation steps, not the samples:
    # taken out of the source's micro-steps and charged for the target's steps over its link. Where the datasheet
    # rate makes them longer than the micro-steps measured, both sides are scaled down alike. What is left is
    # split by the profile's shares, the copies' own share of it (idle time, copy kernels) included.
    copies = [0.0, 0.0]
    if src.copies_in_step and src.methods.sharding in COPIES_EXPOSED:
        from ..estimate import BYTES

        params, width = _params(src.model), BYTES[precision]
        ours = micro_step_copy_s(src.methods, src.n_gpus, source, params, width, src.gas)
        scale = min(1.0, micro / ours) if ours else 1.0
        copies = [ours * scale, micro_step_copy_s(src.methods, n_gpus, target, params, width, gas) * scale]
    micro -= copies[0]
    flop, scan, memory, comm, idle = (micro * split.get(k, 0.0) for k in ("flop", "scan", "memory", "comm", "idle"))
    same_arch = source.architecture == target.architecture
    lo_f, hi_f = (0.97, 1.03) if same_arch else (0.95, 1.15)
    parts = [  # (central, low, high) seconds on the target
        tuple(flop * p_ratio * share * f for f in (1.0, lo_f, hi_f)),
        tuple(scan * cuda_ratio * share * f for f in (1.0, lo_f, hi_f)),
        (memory * b_ratio * share, memory * min(b_ratio, p_ratio) * share, memory * max(b_ratio, p_ratio) * share),
        tuple(idle * gas / src.gas * f for f in (1.0, 0.8, 1.25)),
        tuple(copies[1] * f for f in (1.0, 0.5, 2.0)),  # as decoder_work charges copies
    ]
    # The optimizer step: host Adam plus PCIe copies with offloading; GPU kernels (bandwidth-bound) without, by
    # the datasheets' bandwidth ratio: the sweep of memory-bound kernels times no optimizer, whose fused kernels
    # stream the weights and states at close to the datasheet rate.
    # ZeRO and FSDP shard it over the GPUs; plain data parallelism runs it whole on each.
    sharded = src.methods.sharding != "none"
    opt_share = share if sharded else 1.0
    pcie = catalog_ratio(source, target, "pcie_gbps")
    opt = src.optimizer_s * opt_share * (pcie if src.methods.offload
                                         else catalog_ratio(source, target, "memory_bandwidth_gbps"))
    parts.append((opt, opt * 0.8, opt * 1.25))
    # Communication: the source's measured collectives scaled by link and ring size, or, from one GPU to
    # several, the collectives estimated from bytes; an offload copy at the boundary scales with PCIe.
    link_t = ring_gbps(target, n_gpus)
    if src.n_gpus > 1 and n_gpus == 1:
        # No collectives on one GPU. The source's exposed boundary time holds its collectives and, with
        # offloading, the copy to the host together; all of it is taken as the copy (an upper bound).
        c = src.sync_s * pcie * share if src.methods.offload else 0.0
    elif src.n_gpus > 1 and link_t:
        link_s = ring_gbps(source, src.n_gpus) or link_t
        ring = ((n_gpus - 1) / n_gpus) / ((src.n_gpus - 1) / src.n_gpus) if n_gpus > 1 else 0.0
        c = (comm + src.sync_s) * link_s / link_t * ring
    else:
        c = comm + src.sync_s * (pcie * share if src.methods.offload else 0.0)
        if n_gpus > 1 and link_t:
            from ..estimate import BYTES

            c += collective_s(src.methods, n_gpus, target, _params(src.model), BYTES[precision], gas)
    parts.append((c, 0.5 * c, 2.0 * c))

    step, low, high = (sum(p[i] for p in parts) for i in range(3))
    widen = WIDEN[src.split_basis] * src.step_time_s * share
    low, high = max(low - widen, 0.0), high + widen
    floor = min_step_s(src.model_flops_per_step, target, n_gpus, precision, src.methods.tf32)
    capped = step < floor
    step, low, high = max(step, floor), max(low, floor), max(high, floor)
    if steps is None:
        from ..catalog.models import get_model

        steps = get_model(src.model).recipe.steps
    peak = target.peak_flops(precision, src.methods.tf32)
    mfu = src.model_flops_per_step / (step * n_gpus * peak)
    if capped:
        basis += f"; capped at {MFU_CAP:.0%} MFU (the scaled step was shorter: a lower bound)"
    return Prediction(src.model, src.setup, target.key, n_gpus, mbs, gas, step, low, high, days_for(steps, step),
                      days_for(steps, low), days_for(steps, high), mfu, capped, basis, src.methods, opt, peak)
