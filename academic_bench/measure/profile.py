"""Where a step's time goes: one configuration's micro-steps and optimizer step under ``torch.profiler``, the
kernel time grouped into kinds of work (matrix multiplications, attention, normalisation, ...).

The timing says how long a step takes and so what MFU it reaches; it cannot say what holds the MFU below
the GPU's peak. The kernels can: only the matrix multiplications (and convolutions, and attention) do the
FLOPs the MFU counts, so the GPU time spent in the other kinds, and the time the GPU waits for the host,
are what is left to win. The micro-steps that accumulate and the boundary micro-step with the optimizer step
are profiled apart and weighted as one training step runs them: (GAS - 1) of the first, one of the second.

One process, one device: the configurations the study profiles (a setting's fastest on one GPU) shard
nothing. A profiler adds host-side overhead to every operator, so the GPU's busy share it reports is a lower
bound for a run without it.
"""
from __future__ import annotations

import time
from collections import defaultdict

from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from ..catalog.config import Config
from ..catalog.kernels import KIND_NAMES, kind_of
from .data import host_batches
from .stepper import Stepper
from .timing import synchronize

# Every name with at least this share of the busy time is kept, by name, in the profile's line (at most
# TOP_KERNELS): enough to sort a profile again when the patterns improve (``analysis.profiles`` does).
TOP_MIN_SHARE = 0.001
TOP_KERNELS = 80


class ProfileError(ValueError):
    """A configuration the profiler cannot take (it names why and what would do)."""


def profilable(cfg: Config) -> bool:
    """One process on one device: sharding and offloading need a process group per GPU (``bench`` measures
    them; the profile is for a setting's fastest configuration on one GPU)."""
    return cfg.n_gpus == 1 and cfg.nodes == 1 and cfg.methods.sharding == "none" and not cfg.methods.offload


def check_profilable(cfg: Config) -> None:
    """``profilable``, or a ``ProfileError`` that says what would do."""
    m = cfg.methods
    if not profilable(cfg):
        raise ProfileError(f"the profiler runs one process on one GPU, without sharding or offloading; got "
                           f"{cfg.n_gpus} GPU(s) on {cfg.nodes} node(s) with {m.label()}. Choose --gpus 1 and "
                           "methods such as naive, free-lunch or free-lunch+ckpt")


def _busy_times(prof: profile, on_gpu: bool) -> dict[str, float]:
    """Seconds per kernel name (GPU) or per operator's own time (CPU), over the whole profile."""
    out: dict[str, float] = defaultdict(float)
    for e in prof.events():
        if on_gpu:
            # A record_function range (torch.compile's "## Call CompiledFxGraph ##") is also drawn on the GPU's
            # timeline, spanning the kernels it launched: counted, it would count them twice.
            if e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False):
                out[e.name] += e.device_time_total / 1e6
        elif e.device_type == DeviceType.CPU and not e.is_async:
            out[e.name] += e.self_cpu_time_total / 1e6
    return out


def _profiled(run, device: str, reps: int) -> tuple[dict[str, float], float]:
    """Per-name seconds and wall seconds of ``reps`` calls of ``run``, both per call."""
    on_gpu = device == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    synchronize(device)
    with profile(activities=activities) as prof:
        t0 = time.perf_counter()
        for _ in range(reps):
            run()
        synchronize(device)
        wall = time.perf_counter() - t0
    return {k: v / reps for k, v in _busy_times(prof, on_gpu).items()}, wall / reps


def profile_step(cfg: Config, micro_batch: int, device: str, reps: int = 3, warmup: int = 2) -> dict:
    """The profile of one training step of ``cfg`` at ``micro_batch``: seconds per kind of work and the top
    kernels, weighted as a step runs them, and the share of the step's wall time the device was busy."""
    check_profilable(cfg)
    if micro_batch < 1 or cfg.per_gpu_batch % micro_batch:
        raise ProfileError(f"micro-batch {micro_batch} does not divide the per-GPU batch {cfg.per_gpu_batch}")
    gas = cfg.per_gpu_batch // micro_batch
    stepper = Stepper(cfg, micro_batch, gas, device)
    batches = host_batches(cfg, micro_batch, 2, seed=3)
    # Every accumulating micro-step is profiled alike: a profile gives shares of kinds of work; the step time,
    # which tells the first accumulating micro-step after an optimizer step apart, is the worker's.
    accumulate = lambda: stepper.micro_step(batches[0], sync=False)  # noqa: E731

    def boundary_and_optimizer() -> None:
        stepper.micro_step(batches[1], sync=True)
        stepper.optimizer_step()

    try:
        for _ in range(warmup):  # compiles, allocates the optimizer's states
            accumulate()
            boundary_and_optimizer()
        # The optimizer step left no gradients: this micro-step assigns them, so that each profiled accumulating one
        # adds into them (the fp32 accumulation over every weight) as a step's micro-steps after its first do.
        # (The boundary phase still starts from none after each repetition's optimizer step.)
        if gas > 1:
            accumulate()
        parts = [(gas - 1, *_profiled(accumulate, device, reps))] if gas > 1 else []
        parts.append((1, *_profiled(boundary_and_optimizer, device, reps)))
        ran = dict(vars(stepper.ran))
    finally:  # also after an out of memory, so that a smaller micro-batch can be tried in this process
        stepper.close()
    return {"micro_batch": micro_batch, "gas": gas, "reps": reps, "device": device,
            "timer": "gpu kernels" if device == "cuda" else "cpu operators (self time)",
            **_one_step(parts), "ran": ran}


def _one_step(parts: list[tuple[int, dict[str, float], float]]) -> dict:
    """(weight, seconds per name, wall seconds) per phase -> one step's busy time by kind and top names."""
    per_name: dict[str, float] = defaultdict(float)
    wall = 0.0
    for weight, names, seconds in parts:
        wall += weight * seconds
        for name, t in names.items():
            per_name[name] += weight * t
    busy = sum(per_name.values())
    kinds = {k: 0.0 for k in KIND_NAMES}
    for name, t in per_name.items():
        kinds[kind_of(name)] += t
    top = [(n, t) for n, t in sorted(per_name.items(), key=lambda kv: -kv[1])[:TOP_KERNELS]
           if t >= TOP_MIN_SHARE * busy]
    # The profiler's clock is not perf_counter's, and kernels on several streams may overlap: a share a few
    # percent over 1 means "busy all the time" (busy_s and step_wall_s stay as measured).
    return {"step_wall_s": wall, "busy_s": busy, "busy_share": min(1.0, busy / wall) if wall else None,
            "kinds": [{"kind": k, "seconds": t, "share": t / busy if busy else 0.0} for k, t in kinds.items()],
            "top": [{"name": n[:160], "kind": kind_of(n), "seconds": t} for n, t in top]}
