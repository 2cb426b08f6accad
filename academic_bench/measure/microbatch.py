"""The micro-batch search: the largest power-of-two micro-batch that runs a full step, established by trial. The
memory model chooses where the search starts, never where it stops: it stops only at a size that ran out of
memory, or at the per-GPU batch (the largest power of two dividing it). Every rank agrees on each trial, and
writes its own outcome down first."""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from ..catalog.config import Config
from .data import host_batches
from .stepper import Stepper, free_after_oom, is_oom
from .timing import any_rank, synchronize
from .wall import phase

log = logging.getLogger(__name__)


def note_trial(folder: str | None, mbs: int, ok: bool, peak: float | None) -> None:
    """Write down this rank's own outcome of one trial before the ranks agree on it, so that the launcher can
    still tell which micro-batch ran out of memory if the agreement never comes (see ``init``)."""
    if not folder:
        return
    rank = dist.get_rank() if dist.is_initialized() else 0
    line = json.dumps({"rank": rank, "micro_batch": mbs, "ok": ok, "peak_memory_gb": peak})
    with open(Path(folder) / f"trials-rank{rank}.jsonl", "a") as f:
        f.write(line + "\n")


def peak_memory_gb(device: str) -> float | None:
    return torch.cuda.max_memory_allocated() / 1e9 if device == "cuda" else None


def alloc_retries(device: str) -> int:
    """How often the caching allocator has found no free block, freed its whole cache and asked CUDA again: each
    time a device-wide synchronize and a round of cudaFree/cudaMalloc inside the step. A timed run that counts
    any ran at the memory wall, where the largest micro-batch that fits can be slower per step than half of it."""
    return int(torch.cuda.memory_stats().get("num_alloc_retries", 0)) if device == "cuda" else 0


def try_micro_batch(cfg: Config, mbs: int, device: str, trials: str | None = None, keep: bool = False,
                    reuse: Stepper | None = None) -> tuple[bool, float | None, Stepper | None]:
    """Run one full step pattern at ``mbs``; (fits, peak GB, the stepper when ``keep``: warm, compiled, ready to be
    timed in this process when it fit, or, when it did not, ready for a smaller size where its model survives
    the out-of-memory). ``reuse``: a stepper of another size to resize rather than build a model again
    (``Stepper.resize``). Every rank must agree to stay in step."""
    stepper, ok = reuse, True
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    built = None
    try:
        gas = cfg.per_gpu_batch // mbs
        if stepper is not None:
            stepper.resize(mbs, gas)
        else:
            stepper = Stepper(cfg, mbs, gas, device)
            built = time.perf_counter() - t0
        batch = host_batches(cfg, mbs, 1, seed=0)[0]
        for _ in range(2):  # the second step shows the steady state, with optimizer states allocated
            if gas > 1:
                stepper.micro_step(batch, sync=False)
            stepper.micro_step(batch, sync=True)
            stepper.optimizer_step()
        synchronize(device)
    except Exception as exc:  # noqa: BLE001  (only out-of-memory is expected here)
        if not is_oom(exc):
            raise
        ok = False
    peak = peak_memory_gb(device)
    log.info("micro-batch %d: %s, peak %s GB (%.1f s%s)", mbs, "fits" if ok else "out of memory", peak,
             time.perf_counter() - t0, f", of which {built:.1f} s building the model" if built is not None else
             ", on the model of the size before")
    note_trial(trials, mbs, ok, peak)
    ok = not any_rank(not ok, device)  # a rank that ran out of memory decides for all
    if ok and stepper is not None:
        stepper.sizes_fit.add(mbs)
    if keep and stepper is not None and (ok or stepper.survives_oom):
        if not ok:
            stepper.drop_step()
        return ok, peak, stepper
    free_after_oom(stepper, device)
    return ok, peak, None


def start_guess(cfg: Config) -> int:
    """The memory model's largest predicted micro-batch, to save attempts below it. Only a start: the search
    goes on above it until a trial runs out of memory (the model over-predicts by up to about half on some
    decoders, and one that said "no" at 16 stopped searches at 8 that fit 16)."""
    if cfg.tiny:
        return 1
    try:
        from ..estimate import max_micro_batch
        from ..catalog.hardware import get_gpu

        guess = max_micro_batch(cfg, get_gpu(cfg.gpu).memory_gb)
    except Exception:  # noqa: BLE001  (the estimate is only a starting point)
        return 1
    smallest = cfg.smallest_micro_batch
    return max(smallest, min(guess or 1, cfg.per_gpu_batch))


@dataclass
class Search:
    """What the micro-batch search found: the largest size that ran a full step (None: not even 1), each size's
    outcome, notes and, when asked to keep it, a stepper of that size to time in place: the last one tried, or
    the model of every size tried resized back to it (``Stepper.resize``). ``warm``: that stepper already ran the
    trial's two full steps at this size (compiled, optimizer state allocated). ``after_oom``: a trial ran out of
    memory in this process before."""

    micro_batch: int | None
    log: list[dict]
    notes: list[str] = field(default_factory=list)
    stepper: Stepper | None = None
    after_oom: bool = False
    warm: bool = False


def first_size(guess: int, cfg: Config, keep: bool) -> int:
    """Where the search starts. Searching to time in place (``keep``), it starts one size above the memory model's
    guess: when the guess is right, that size runs out of memory and the guess, tried next, fits and is kept warm
    for the timing (two trials; a DeepSpeed engine, built once per size, is built twice); starting at the guess
    would try it, then the size above, then come back to the guess (three trials, three DeepSpeed builds).
    Otherwise the order saves nothing, and it starts at the guess."""
    above = 2 * guess
    return above if keep and above <= cfg.per_gpu_batch and cfg.per_gpu_batch % above == 0 else guess


def find_micro_batch(cfg: Config, device: str, trials: str | None = None, known: list[dict] | None = None,
                     keep: bool = False, fresh_after_oom: bool = False) -> Search:
    """Largest power-of-two micro-batch (dividing the per-GPU batch) that runs a full step. It starts at the
    memory model's prediction, goes down while trials run out of memory and up while they fit, and stops only
    at a size that ran out of memory (with the size below it fitting) or at the per-GPU batch: never on a
    prediction. ``trials``: a folder where each rank writes down its own outcome of every trial
    (``note_trial``). ``known``: outcomes of an earlier search of the same configuration (entries of its log),
    not tried again; the search starts above the largest size known to fit and below the smallest known not to.
    ``keep``: every size is tried on one model where the model takes other sizes (``reusable``), else on a model
    built for it; the stepper of the size found is returned to be timed in this process when it was the last
    tried or its model can be resized back to it (with ``fresh_after_oom``, only when no trial ran out of memory
    before it). Sizes below ``cfg.smallest_micro_batch`` (FP8's 16-token multiple) are never tried."""
    known = known or []
    tried: dict[int, tuple[bool, float | None]] = {
        k["micro_batch"]: (k["outcome"] == "ok", k.get("peak_memory_gb")) for k in known}
    held: Stepper | None = None
    oomed = False  # whether an out-of-memory trial came before the timing in this process
    mbs = max([first_size(start_guess(cfg), cfg, keep), *(m for m, (ok, _) in tried.items() if ok)])
    too_big = [m for m, (ok, _) in tried.items() if not ok]
    smallest = cfg.smallest_micro_batch
    if too_big:
        mbs = min(mbs, min(too_big) // 2)
    while mbs >= smallest:
        if mbs not in tried:
            if held is not None and not reusable(held):  # another size needs the memory this one holds
                free_after_oom(held, device)
                held = None
            with phase("trials"):  # the model built for a trial counts as ``build`` (``measure.wall``)
                ok, peak, held = try_micro_batch(cfg, mbs, device, trials, keep, reuse=held)
            tried[mbs] = (ok, peak)
            oomed = oomed or not ok
        ok, _ = tried[mbs]
        bigger = mbs * 2
        if ok and bigger <= cfg.per_gpu_batch and cfg.per_gpu_batch % bigger == 0 and bigger not in tried:
            mbs = bigger
        elif not ok and mbs // 2 >= smallest and mbs // 2 not in tried:
            mbs //= 2
        else:
            break
    fits = [m for m, (ok, _) in tried.items() if ok]
    given = {k["micro_batch"]: k for k in known}  # kept as they came (with their notes)
    log = [given.get(m) or {"micro_batch": m, "outcome": "ok" if ok else "oom", "peak_memory_gb": p}
           for m, (ok, p) in sorted(tried.items())]
    best = max(fits) if fits else None
    if held is not None and held.mbs != best and best is not None and reusable(held):
        held.resize(best, cfg.per_gpu_batch // best)  # back to the size found, whose code is compiled already
    if held is not None and (held.mbs != best or (oomed and fresh_after_oom)):
        free_after_oom(held, device)
        held = None
    return Search(best, log, stepper=held, after_oom=oomed, warm=held is not None and best in held.sizes_fit)


def reusable(stepper: Stepper) -> bool:
    """Whether the search's next size can run on ``stepper``'s model: one that takes other sizes, whose last
    trial fit or that goes on after an out-of-memory one."""
    return stepper.resizable and (stepper.mbs in stepper.sizes_fit or stepper.survives_oom)
