"""Timing the phases of a training step, and the sustained run of real optimizer steps that validates their
extrapolation.

Synchronized (ours): the GPU is synchronized (every stream) at the end of each timed phase on every rank, and
the slowest rank counts. Unsynchronized (the paper's released method, for comparison only): wall clock around
host-side enqueueing, never waiting for the GPU, rank 0 only.
"""
from __future__ import annotations

import itertools
import logging
import statistics
import time
from typing import Callable, Iterator

import torch
import torch.distributed as dist

from ..catalog.config import Config
from .data import host_batches, micro_batches
from .stepper import Stepper
from .wall import WARMUP_BOOKED, phase, recount

log = logging.getLogger(__name__)


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], None], device: str, synced: bool) -> float:
    """Seconds that ``fn`` takes; with ``synced`` the GPU has finished its work when the clock stops."""
    if synced:
        synchronize(device)
    t0 = time.perf_counter()
    fn()
    if synced:
        synchronize(device)
    return time.perf_counter() - t0


def time_chain(phases: list[tuple[str, Callable[[], None]]], device: str) -> list[tuple[str, float]]:
    """Run phases back to back and time each from the end of the one before to the moment the device has
    finished all of its work, on every stream: work a library puts on a side stream (DeepSpeed's reductions and
    offload copies) and host work between phases both count, as they do in a sustained run."""
    synchronize(device)
    out, t = [], time.perf_counter()
    for name, fn in phases:
        fn()
        synchronize(device)
        now = time.perf_counter()
        out.append((name, now - t))
        t = now
    return out


def several_ranks() -> bool:
    """Whether ranks must agree; a single process makes no collective at all (so no NCCL buffers)."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def any_rank(flag: bool, device: str) -> bool:
    """Whether ``flag`` holds on any rank: how ranks agree on a decision (out of memory, time to stop), so
    that they take the same path and no collective waits for a rank that left."""
    if not several_ranks():
        return flag
    t = torch.tensor([1 if flag else 0], device="cuda" if device == "cuda" else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def slowest_rank(samples: dict[str, list[float]], device: str) -> dict[str, list[float]]:
    """Element-wise maximum over ranks of each phase's samples (every rank must pass the same shapes)."""
    if not several_ranks():
        return samples
    names = sorted(samples)
    flat = torch.tensor([v for n in names for v in samples[n]], dtype=torch.float64,
                        device="cuda" if device == "cuda" else "cpu")
    dist.all_reduce(flat, op=dist.ReduceOp.MAX)
    out, i = {}, 0
    for n in names:
        out[n] = flat[i:i + len(samples[n])].tolist()
        i += len(samples[n])
    return out


def summary(values: list[float]) -> dict:
    """Median and spread of repeated measurements, and the measurements themselves, repetition by repetition (on
    several ranks the slowest rank's; for a block of micro-steps, per micro-step): how many repetitions a
    configuration needs is then read from the rows themselves (``analysis.launches.fewer_reps``)."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values),
            "mean": statistics.fmean(values), "samples": list(values)}


# --- the phases of a step, timed ---------------------------------------------------------------------------

MIN_REPS = 5  # the fewest timed repetitions a measurement keeps when a time limit is near (fewer only if they settle)
DEADLINE_MARGIN = 1.5  # how much longer than its estimate work may take, when judging if it ends in time


def would_pass(deadline: float | None, seconds: float, device: str) -> bool:
    """Whether work of about ``seconds``, started now, could end past ``deadline`` (a ``time.time()``); the
    ranks agree, so that they all take the same path."""
    return any_rank(deadline is not None and time.time() + DEADLINE_MARGIN * seconds > deadline, device)


def note(stepper: Stepper, text: str) -> None:
    """A note in the row's record of what ran, and in the run's log."""
    stepper.ran.notes.append(text)
    log.info("%s", text)


# DeepSpeed ZeRO-3 with offload is host-bound: each micro-step fetches every module's weights from host memory.
# Its micro-steps cost more over a whole accumulation than in a short pattern (one process, three rounds: the
# extrapolation from single micro-steps was 2.4-6.5% under the sustained step, from blocks of 8 still 2.5-5.5%;
# notebooks/runs/h100x1/evidence/engine/drift-*.json), so its steady phase is the whole run of them, as one block.
# Repetitions of a whole-accumulation block, each already averaging GAS - 2 micro-steps: every such row that kept
# three moved by far less than 1% when rebuilt from its first two (``analysis.launches.fewer_reps`` over the
# exhaustive searches in notebooks/runs/h200x1/evidence/engine/; ``tests/test_trust.py`` holds it to that), and
# each repetition costs a whole step, the largest share of an exhaustive search's time. Three blocks against two,
# measured in turn on one machine: notebooks/runs/h200x1/evidence/engine-cost/blocks/.
BLOCK_REPS = 2


def steady_block(cfg: Config, gas: int) -> int:
    """How many consecutive accumulating micro-steps the steady phase times as one: 1, or for DeepSpeed ZeRO-3
    with offload the whole steady run of a real step (GAS - 2)."""
    m = cfg.methods
    return max(gas - 2, 1) if m.sharding == "zero3" and m.offload else 1


def step_phases(stepper: Stepper, batches: Iterator[dict], block: int = 1) -> list[tuple[str, Callable[[], None]]]:
    """The head of a real training step, phase by phase: the first accumulating micro-step after an optimizer
    step (where libraries start their accumulation: DeepSpeed's offload copies gradients out rather than adding
    to them), ``block`` more (the steady state the other GAS - 2 repeat; timed together), the boundary micro-step
    and the optimizer step; fewer accumulating ones when GAS is smaller. Each micro-step takes the next of
    ``batches`` (pinned in advance) and copies it to the device inside its phase."""
    gas = stepper.gas

    def steady() -> None:
        for _ in range(block):
            stepper.micro_step(next(batches), sync=False)

    accumulating = [("accumulate_first", lambda: stepper.micro_step(next(batches), sync=False))] if gas >= 2 else []
    if gas >= 3:
        accumulating.append(("accumulate", steady))
    return accumulating + [("boundary", lambda: stepper.micro_step(next(batches), sync=True)),
                           ("optimizer", stepper.optimizer_step)]


# Repetitions stop early when they already settle the step. The median of five samples lies between the least and
# the most of any three of them (two more can shift it by at most one place each way), and the step is a sum of
# phases counted with weights of at least zero (``extrapolation.rebuilt_step``); so once the steps rebuilt from each
# phase's minimum and maximum over ``AGREED_REPS`` repetitions differ by at most ``AGREED_SPREAD``, the step of the
# five repetitions asked for by default could not move further than that. Asked for more than
# ``2 * AGREED_REPS - 1``, the median could leave that range, and all of them are timed.
AGREED_REPS, AGREED_SPREAD = 3, 0.01


def settled(chains: list[list[tuple[str, float]]], step: Callable[[dict[str, float]], float], device: str) -> bool:
    """Whether the repetitions so far (``chains``, the slowest rank's) bound the step within ``AGREED_SPREAD``:
    the step from each phase's maximum at most that far above the step from each phase's minimum."""
    samples = per_phase(chains, 1, device)  # the same numbers on every rank: they all take the same path
    low, high = step({k: min(v) for k, v in samples.items()}), step({k: max(v) for k, v in samples.items()})
    return low > 0 and high - low <= AGREED_SPREAD * low


# The warm-up block is a whole step too. On a stepper that already ran the search's steps at this size, it came out
# as long as the timed blocks (the logs of notebooks/runs/h200x1/evidence/engine*/: the timing's whole time less its
# timed repetitions), so it counts as a repetition when its step agrees with the first timed one's within this;
# else it is left out and another block is timed. Counted, it moves the row's step by at most half of this (with two
# repetitions each phase's median is their mean, and so the step is the mean of their two steps), though a single
# phase may differ by more.
WARMUP_AGREES = 0.01


def warmup_agrees(warm_s: float, first_s: float, device: str) -> bool:
    """Whether the warm-up repetition's whole chain (``warm_s``) took within ``WARMUP_AGREES`` of the first timed
    one's, on every rank (so that they all take the same path)."""
    return not any_rank(not (first_s > 0 and abs(warm_s / first_s - 1) <= WARMUP_AGREES), device)


def time_phases(stepper: Stepper, cfg: Config, device: str, warmup: int, reps: int,
                deadline: float | None = None,
                step: Callable[[dict[str, float]], float] | None = None) -> dict[str, list[float]]:
    """Per-phase times (``step_phases``) over ``reps`` repetitions after ``warmup`` untimed ones, each phase
    ending with the device synchronized (``timing.time_chain``); the slowest rank counts. ``deadline`` (a
    ``time.time()``): after ``MIN_REPS`` repetitions, stop before one that would end past it, and say so in
    the notes of what ran, so that a slow configuration is measured with fewer samples rather than killed.
    A steady block of several micro-steps (``steady_block``) is timed ``BLOCK_REPS`` times after one warm-up, and
    its samples are per micro-step; the warm-up block counts as the first of them when it agrees with the next
    (``warmup_agrees``), and the notes say which it was. ``step`` (a step's time from one time per phase): with it,
    single micro-steps stop after ``AGREED_REPS`` repetitions that settle the step (``settled``), saying so, where
    no more than ``2 * AGREED_REPS - 1`` were asked for."""
    block = steady_block(cfg, stepper.gas)
    if block > 1:
        warmup, reps = 1, BLOCK_REPS
        note(stepper, f"steady phase: the whole run of {block} accumulating micro-steps timed as one block "
                       f"({BLOCK_REPS} repetitions; per micro-step in the times)")
    fewest = 1 if block > 1 else MIN_REPS  # a block already averages GAS - 2 micro-steps
    phases = step_phases(stepper, itertools.cycle(host_batches(cfg, stepper.mbs, 2, seed=1)), block)
    t_start = time.perf_counter()
    warm = None
    with phase("warmup"):  # where a configuration's time goes (``measure.wall``)
        for _ in range(warmup):
            warm = time_chain(phases, device)
    timed_reps: list[list[tuple[str, float]]] = []  # the timed repetitions' chains, in the order they ran
    counted = False
    while len(timed_reps) < reps:
        t0 = time.time()
        with phase("timed"):
            chain = time_chain(phases, device)
        timed_reps.append(chain)
        if block > 1 and warm is not None and len(timed_reps) == 1 and reps >= 2:
            w, c = sum(s for _, s in warm), sum(s for _, s in chain)
            counted = warmup_agrees(w, c, device)
            if counted:
                timed_reps.insert(0, warm)
                recount(w, "warmup", "timed")  # a sample of the step: timed work in the row's wall_breakdown
            off = f" ({w / c - 1:+.2%})" if c > 0 else ""
            note(stepper, f"the warm-up block took {w:.4g} s, the first timed one {c:.4g} s{off}: "
                           + (WARMUP_BOOKED if counted else "it is left out"))
        done = len(timed_reps)
        if (step is not None and block == 1 and done == AGREED_REPS < reps <= 2 * AGREED_REPS - 1
                and settled(timed_reps, step, device)):
            note(stepper, f"timing stopped after {done} of {reps} repetitions: the steps from each phase's fastest "
                           f"and slowest repetition differ by at most {AGREED_SPREAD:.0%}")
            break
        if fewest <= done < reps and would_pass(deadline, time.time() - t0, device):  # one more repetition
            note(stepper, f"timing stopped after {done} of {reps} repetitions to end within the time limit")
            break
    log.info("timed %d repetitions after %d warm-up in %.1f s%s", len(timed_reps), warmup,
             time.perf_counter() - t_start, " (the warm-up one of them)" if counted else "")
    return per_phase(timed_reps, block, device)


def per_phase(chains: list[list[tuple[str, float]]], block: int, device: str) -> dict[str, list[float]]:
    """Each phase's samples from timed chains, in the order they ran, the slowest rank's; the steady phase's per
    micro-step of its ``block``."""
    samples: dict[str, list[float]] = {}
    for chain in chains:
        for name, seconds in chain:
            samples.setdefault(name, []).append(seconds / block if name == "accumulate" else seconds)
    return slowest_rank(samples, device)


def time_unsynced(stepper: Stepper, cfg: Config, device: str) -> dict[str, list[float]]:
    """The paper's released method: 1 warm-up, 3 micro-steps that each synchronize gradients and 3
    optimizer steps, wall clock without waiting for the GPU, batch copied before the timer, rank 0 only."""
    batch = host_batches(cfg, stepper.mbs, 1, seed=1)[0]
    samples: dict[str, list[float]] = {"boundary": [], "optimizer": []}
    for i in range(1 + 3):
        on_device = {k: v.to(device) for k, v in batch.items()}
        t_bnd = timed(lambda: stepper.micro_step(on_device, sync=True), device, False)
        t_opt = timed(stepper.optimizer_step, device, False)
        if i >= 1:
            samples["boundary"].append(t_bnd)
            samples["optimizer"].append(t_opt)
    synchronize(device)
    return samples


def validation_fits(stepper: Stepper, steps: int, step_s: float, deadline: float | None, device: str) -> bool:
    """Whether ``steps`` validation steps (and their warm-up step) of about ``step_s`` each end before
    ``deadline``; if not, the validation is skipped and the notes say so, so that the measured row is written
    rather than killed with it."""
    if would_pass(deadline, (steps + 1) * step_s, device):
        note(stepper, f"validation skipped: {steps} real steps of about {step_s:.3g} s would not end within the "
                       "time limit")
        return False
    return True


def validate(stepper: Stepper, cfg: Config, device: str, steps: int,
             batches: Iterator[dict] | None = None) -> list[float]:
    """Sustained time of real optimizer steps: real accumulation, batches from a DataLoader with worker
    processes (``micro_batches``; ``batches``, another stream, to tell its cost apart), one warm-up step."""
    gas = cfg.per_gpu_batch // stepper.mbs
    stepper.set_gas(gas)
    batches = micro_batches(cfg, stepper.mbs, device, seed=2) if batches is None else batches

    def one_step():
        for j in range(gas):
            stepper.micro_step(next(batches), sync=j == gas - 1)
        stepper.optimizer_step()

    times = [timed(one_step, device, True) for _ in range(steps + 1)][1:]
    return slowest_rank({"step": times}, device)["step"]
