"""Entry point run in every rank by torchrun: measure one configuration and write its result (rank 0).

    python -m torch.distributed.run --nproc_per_node N -m academic_bench.measure.worker \
        --request REQ.json --result RES.json

Reads like nanoGPT's bench.py: set up, find the micro-batch, warm up, time each phase with the GPU
synchronized, optionally run real optimizer steps to validate the extrapolation, write the numbers.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import torch
import torch.distributed as dist

from ..config import Config
from ..units import days_for
from .apply import Unsupported
from .stepper import Stepper, free_after_oom, is_oom
from .timing import any_rank, several_ranks, slowest_rank, summary, synchronize, time_chain, timed


# How long a collective may wait for the other ranks before the process group gives up. The micro-batch
# search uses a short one: when only some ranks run out of memory at a micro-batch (at the very edge of the
# GPU's memory), the others wait in a collective the failed rank never joins, and only this timeout ends
# the search (whose trials each rank has already written down, see ``note_trial``).
COLLECTIVE_TIMEOUT_S = 300
SEARCH_COLLECTIVE_TIMEOUT_S = 90


def init(device: str, timeout_s: float = COLLECTIVE_TIMEOUT_S) -> tuple[int, int]:
    """Join the process group torchrun set up (gloo on CPU, NCCL on GPUs); returns (rank, world size)."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    if "MASTER_ADDR" in os.environ and not dist.is_initialized():
        dist.init_process_group("nccl" if device == "cuda" else "gloo",
                                timeout=datetime.timedelta(seconds=timeout_s))
        if several_ranks():
            # NCCL builds its communicator, and takes its buffers' GPU memory, at the first collective. Made
            # here, every micro-batch trial and every timed run sees the same memory; made lazily after a
            # timed run, when the caching allocator held nearly the whole GPU, NCCL's CUDA calls failed and
            # the finished measurement was lost (one H100: Pythia-2.8B; one H200: Pythia-6.9B).
            dist.all_reduce(torch.zeros(1, device="cuda" if device == "cuda" else "cpu"))
    return rank, world


def _rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def collective_timeout_s(req: dict) -> float:
    """The search's short collective timeout, the measurement's long one."""
    return SEARCH_COLLECTIVE_TIMEOUT_S if req.get("search_only") else COLLECTIVE_TIMEOUT_S


def note_trial(folder: str | None, mbs: int, ok: bool, peak: float | None) -> None:
    """Write down this rank's own outcome of one trial before the ranks agree on it, so that the launcher can
    still tell which micro-batch ran out of memory if the agreement never comes (see ``init``)."""
    if not folder:
        return
    rank = _rank()
    line = json.dumps({"rank": rank, "micro_batch": mbs, "ok": ok, "peak_memory_gb": peak})
    with open(Path(folder) / f"trials-rank{rank}.jsonl", "a") as f:
        f.write(line + "\n")


def host_batches(cfg: Config, mbs: int, n: int, seed: int) -> list[dict[str, torch.Tensor]]:
    """Pre-made random micro-batches in (pinned) host memory, copied to the GPU inside each step."""
    g = torch.Generator().manual_seed(seed)
    out = [cfg.spec.make_batch(mbs, tiny=cfg.tiny, generator=g) for _ in range(n)]
    if torch.cuda.is_available():
        out = [{k: v.pin_memory() for k, v in b.items()} for b in out]
    return out


STREAM_BATCHES = 8  # the sustained run's dataset, in micro-batches, cycled (the data are random anyway)
DATA_WORKERS = 2  # DataLoader worker processes that collate it


def micro_batches(cfg: Config, mbs: int, device: str, seed: int) -> Iterator[dict[str, torch.Tensor]]:
    """Micro-batches as a training run gets them: a DataLoader whose worker processes collate them and, on a
    GPU, a thread that pins them; each micro-step copies its batch to the device. Only the sustained run reads
    them: collated on the main thread, which drives the GPU and under offload the optimizer, they slowed
    host-bound configurations, and inside synchronized phases that work was exposed where a training run overlaps
    it (``results.ENGINE_REVISION`` 5 and 6). The stream loops over ``STREAM_BATCHES`` batches."""
    from torch.utils.data import DataLoader, TensorDataset

    pool = host_batches(cfg, mbs * STREAM_BATCHES, 1, seed)[0]
    keys = list(pool)
    loader = DataLoader(TensorDataset(*[pool[k] for k in keys]), batch_size=mbs, pin_memory=device == "cuda",
                        drop_last=True, num_workers=DATA_WORKERS, persistent_workers=True)
    while True:
        for tensors in loader:
            yield dict(zip(keys, tensors))


def peak_memory_gb(device: str) -> float | None:
    return torch.cuda.max_memory_allocated() / 1e9 if device == "cuda" else None


def peak_reserved_gb(device: str) -> float | None:
    """The caching allocator's peak reservation: how much the memory model's fragmentation term must cover."""
    return torch.cuda.max_memory_reserved() / 1e9 if device == "cuda" else None


def gather_memory(value: float | None, device: str) -> list[float] | None:
    if value is None:
        return None
    if not several_ranks():
        return [value]
    t = torch.zeros(dist.get_world_size(), dtype=torch.float64, device="cuda")
    t[dist.get_rank()] = value
    dist.all_reduce(t)
    return t.tolist()


# --- one micro-batch size: does it fit? ---------------------------------------------------------------

def try_micro_batch(cfg: Config, mbs: int, device: str, trials: str | None = None,
                    keep: bool = False) -> tuple[bool, float | None, Stepper | None]:
    """Run one full step pattern at ``mbs``; (fits, peak GB, the stepper when it fits and ``keep``: warm,
    compiled, ready to be timed in this process). Every rank must agree to stay in step."""
    stepper, ok = None, True
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    try:
        gas = cfg.per_gpu_batch // mbs
        stepper = Stepper(cfg, mbs, gas, device)
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
    print(f"micro-batch {mbs}: {'fits' if ok else 'out of memory'}, peak {peak} GB", flush=True)
    note_trial(trials, mbs, ok, peak)
    ok = not any_rank(not ok, device)  # a rank that ran out of memory decides for all
    if ok and keep:
        return ok, peak, stepper
    free_after_oom(stepper, device)
    return ok, peak, None


def start_guess(cfg: Config) -> int:
    """The memory model's largest predicted micro-batch, to save attempts (the search still verifies)."""
    if cfg.tiny:
        return 1
    try:
        from ..estimate import max_micro_batch
        from ..hardware import get_gpu

        guess = max_micro_batch(cfg, get_gpu(cfg.gpu).memory_gb)
    except Exception:  # noqa: BLE001  (the estimate is only a starting point)
        return 1
    return max(1, min(guess or 1, cfg.per_gpu_batch))


# The memory model's prediction over the usable memory above which a micro-batch is not tried: of the shipped
# searches, every size predicted at 1.16 or more ran out of memory and none above 1.10 fit, so 1.25 leaves a
# margin while sparing most searches a trial that can only fail (and the fresh processes that follow one).
PREDICTED_OVERFLOW = 1.25


def predicted_overflow(cfg: Config, mbs: int) -> str | None:
    """Why ``mbs`` is not worth trying (the memory model puts it far above the GPU's usable memory), or None.
    Tiny models and a model that cannot predict never skip."""
    if cfg.tiny:
        return None
    try:
        from ..estimate import predict_memory, usable_bytes
        from ..hardware import get_gpu

        need, usable = predict_memory(cfg, mbs).total, usable_bytes(get_gpu(cfg.gpu).memory_gb)
    except Exception:  # noqa: BLE001  (no prediction, no skip)
        return None
    if need <= PREDICTED_OVERFLOW * usable:
        return None
    return (f"micro-batch {mbs} not tried: the memory model predicts {need / 1e9:.1f} GB, more than "
            f"{PREDICTED_OVERFLOW:g} x the {usable / 1e9:.1f} GB usable")


@dataclass
class Search:
    """What the micro-batch search found: the largest size that ran a full step (None: not even 1), each size's
    outcome, notes (sizes the memory model ruled out) and, when asked to keep it, the stepper of that size if it
    was the last tried and no trial ran out of memory (its GPU memory is clean to time in place)."""

    micro_batch: int | None
    log: list[dict]
    notes: list[str] = field(default_factory=list)
    stepper: Stepper | None = None


def find_micro_batch(cfg: Config, device: str, trials: str | None = None, known: list[dict] | None = None,
                     keep: bool = False) -> Search:
    """Largest power-of-two micro-batch (dividing the per-GPU batch) that runs a full step, starting at the
    memory model's prediction. ``trials``: a folder where each rank writes down its own outcome of every trial
    (``note_trial``). ``known``: outcomes of an earlier search of the same configuration (entries of its log),
    not tried again; the search starts below the smallest size known not to fit. ``keep``: return the stepper
    of the size found when no trial ran out of memory."""
    known = known or []
    tried: dict[int, tuple[bool, float | None]] = {
        k["micro_batch"]: (k["outcome"] == "ok", k.get("peak_memory_gb")) for k in known}
    notes: list[str] = []
    kept: Stepper | None = None
    oomed = False  # memory an out-of-memory trial left fragmented would skew a timing in this process
    mbs = start_guess(cfg)
    too_big = [m for m, (ok, _) in tried.items() if not ok]
    if too_big:
        mbs = min(mbs, min(too_big) // 2)
    while mbs >= 1:
        if mbs not in tried:
            if kept is not None:  # a larger size needs the memory the smaller one holds
                free_after_oom(kept, device)
            ok, peak, kept = try_micro_batch(cfg, mbs, device, trials, keep)
            tried[mbs] = (ok, peak)
            oomed = oomed or not ok
        ok, _ = tried[mbs]
        bigger = mbs * 2
        if ok and bigger <= cfg.per_gpu_batch and cfg.per_gpu_batch % bigger == 0 and bigger not in tried:
            why = predicted_overflow(cfg, bigger)
            if why:
                notes.append(why)
                break
            mbs = bigger
        elif not ok and mbs > 1 and mbs // 2 not in tried:
            mbs //= 2
        else:
            break
    fits = [m for m, (ok, _) in tried.items() if ok]
    given = {k["micro_batch"]: k for k in known}  # kept as they came (with their notes)
    log = [given.get(m) or {"micro_batch": m, "outcome": "ok" if ok else "oom", "peak_memory_gb": p}
           for m, (ok, p) in sorted(tried.items())]
    best = max(fits) if fits else None
    if kept is not None and (kept.mbs != best or oomed):
        free_after_oom(kept, device)
        kept = None
    return Search(best, log, notes, kept)


# --- timing ---------------------------------------------------------------------------------------------

MIN_REPS = 5  # the fewest timed repetitions a measurement keeps, even when a time limit is near
DEADLINE_MARGIN = 1.5  # how much longer than its estimate work may take, when judging if it ends in time


def would_pass(deadline: float | None, seconds: float, device: str) -> bool:
    """Whether work of about ``seconds``, started now, could end past ``deadline`` (a ``time.time()``); the
    ranks agree, so that they all take the same path."""
    return any_rank(deadline is not None and time.time() + DEADLINE_MARGIN * seconds > deadline, device)


def _note(stepper: Stepper, text: str) -> None:
    """A note in the row's record of what ran, and in the run's log."""
    stepper.ran.notes.append(text)
    print(text, flush=True)


# DeepSpeed ZeRO-3 with offload is host-bound: each micro-step fetches every module's weights from host memory.
# Its micro-steps cost more over a whole accumulation than in a short pattern (one process, three rounds: the
# extrapolation from single micro-steps was 2.4-6.5% under the sustained step, from blocks of 8 still 2.5-5.5%;
# notebooks/runs/h100x1/evidence/engine/drift-*.json), so its steady phase is the whole run of them, as one block.
BLOCK_REPS = 3  # repetitions of a whole-accumulation block (each already averages GAS - 2 micro-steps)


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


def time_phases(stepper: Stepper, cfg: Config, device: str, warmup: int, reps: int,
                deadline: float | None = None) -> dict[str, list[float]]:
    """Per-phase times (``step_phases``) over ``reps`` repetitions after ``warmup`` untimed ones, each phase
    ending with the device synchronized (``timing.time_chain``); the slowest rank counts. ``deadline`` (a
    ``time.time()``): after ``MIN_REPS`` repetitions, stop before one that would end past it, and say so in
    the notes of what ran, so that a slow configuration is measured with fewer samples rather than killed.
    A steady block of several micro-steps (``steady_block``) is timed ``BLOCK_REPS`` times after one warm-up, and
    its samples are per micro-step."""
    block = steady_block(cfg, stepper.gas)
    if block > 1:
        warmup, reps = 1, BLOCK_REPS
        _note(stepper, f"steady phase: the whole run of {block} accumulating micro-steps timed as one block "
                       f"({BLOCK_REPS} repetitions; per micro-step in the times)")
    fewest = 1 if block > 1 else MIN_REPS  # a block already averages GAS - 2 micro-steps
    phases = step_phases(stepper, itertools.cycle(host_batches(cfg, stepper.mbs, 2, seed=1)), block)
    samples: dict[str, list[float]] = {name: [] for name, _ in phases}
    for i in range(warmup + reps):
        t0 = time.time()
        for name, seconds in time_chain(phases, device):
            if i >= warmup:
                samples[name].append(seconds / block if name == "accumulate" else seconds)
        done = i + 1 - warmup
        if fewest <= done < reps and would_pass(deadline, time.time() - t0, device):  # one more repetition
            _note(stepper, f"timing stopped after {done} of {reps} repetitions to end within the time limit")
            break
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
        _note(stepper, f"validation skipped: {steps} real steps of about {step_s:.3g} s would not end within the "
                       "time limit")
        return False
    return True


def validate(stepper: Stepper, cfg: Config, device: str, steps: int) -> list[float]:
    """Sustained time of real optimizer steps: real accumulation, batches from a DataLoader with worker
    processes (``micro_batches``), one warm-up step."""
    gas = cfg.per_gpu_batch // stepper.mbs
    stepper.set_gas(gas)
    batches = micro_batches(cfg, stepper.mbs, device, seed=2)

    def one_step():
        for j in range(gas):
            stepper.micro_step(next(batches), sync=j == gas - 1)
        stepper.optimizer_step()

    times = [timed(one_step, device, True) for _ in range(steps + 1)][1:]
    return slowest_rank({"step": times}, device)["step"]


# --- the result -------------------------------------------------------------------------------------------

def model_flops_per_step(cfg: Config) -> float | None:
    try:
        from ..estimate import model_flops_per_step as flops
    except ImportError:
        return None
    return flops(cfg.spec, tiny=cfg.tiny)


def peak_flops(cfg: Config) -> float | None:
    if cfg.tiny:
        return None
    from ..hardware import get_gpu

    return get_gpu(cfg.gpu).peak_flops(cfg.recipe.precision, tf32=cfg.methods.tf32)


def extrapolate(cfg: Config, mbs: int, phases: dict[str, list[float]], timing: str) -> dict:
    """Step time from phase medians, and what follows from it: throughput, MFU, days."""
    gas = cfg.per_gpu_batch // mbs
    med = {k: statistics.median(v) for k, v in phases.items() if v}
    if timing == "unsynced":  # the paper: every micro-step timed as a synchronizing one, means not medians
        mean = {k: statistics.fmean(v) for k, v in phases.items()}
        step = mean["boundary"] * gas + mean["optimizer"]
        spread = [min(phases["boundary"]) * gas + min(phases["optimizer"]),
                  max(phases["boundary"]) * gas + max(phases["optimizer"])]
    else:  # the first accumulating micro-step once, the steady one GAS - 2 times (``step_phases``)
        def rebuilt(t: dict[str, float]) -> float:
            return (t.get("accumulate_first", 0.0) + max(gas - 2, 0) * t.get("accumulate", 0.0) + t["boundary"]
                    + t["optimizer"])

        step = rebuilt(med)
        spread = [rebuilt({k: min(v) for k, v in phases.items() if v}),
                  rebuilt({k: max(v) for k, v in phases.items() if v})]
    r = cfg.recipe
    flops, peak = model_flops_per_step(cfg), peak_flops(cfg)
    mfu = flops / (step * cfg.n_gpus * peak) if flops and peak else None
    days = days_for(r.steps, step)
    return {"micro_batch": mbs, "gas": gas, "step_time_s": step, "step_time_spread": spread,
            "throughput": r.global_batch * r.items_per_sample / step, "throughput_unit": f"{r.unit}/s",
            "model_flops_per_step": flops, "peak_flops": peak, "mfu": mfu,
            "days": days, "gpu_days": days * cfg.n_gpus,
            "times": {k: summary(v) for k, v in phases.items() if v}}


def predicted_memory_gb(cfg: Config, mbs: int) -> float | None:
    """The memory model's prediction of peak allocated memory (comparable with max_memory_allocated)."""
    try:
        from ..estimate import predict_memory

        return predict_memory(cfg, mbs).allocated / 1e9
    except Exception:  # noqa: BLE001  (the prediction is reported beside the measurement, never required)
        return None


def measure(req: dict, device: str, rank: int) -> dict:
    """One configuration: find its micro-batch (unless given), time its phases, optionally validate.

    With ``in_place`` (one process), the search's stepper of the size it found is timed in this process when
    no trial ran out of memory (``find_micro_batch(keep=True)``): no second launch, no second build or compile.
    Otherwise, and when the timed run in place runs out of memory, the result says ``searched_only`` and the
    launcher times that size in fresh processes, as it does after a ``search_only`` request."""
    cfg = Config.from_dict(req["config"])
    t_start = time.perf_counter()
    mbs_log, notes, stepper = req.get("mbs_search"), list(req.get("search_notes") or []), None
    mbs = cfg.micro_batch or req.get("micro_batch")
    if not mbs:
        found = find_micro_batch(cfg, device, req.get("trials"), req.get("known"), keep=bool(req.get("in_place")))
        mbs, mbs_log, notes, stepper = found.micro_batch, found.log, notes + found.notes, found.stepper
        if mbs is None:
            return {"outcome": "oom", "reason": "even micro-batch 1 does not fit", "mbs_search": mbs_log}
        if req.get("search_only") or (req.get("in_place") and stepper is None):
            return searched_only(mbs, mbs_log, notes)
    t_searched = time.perf_counter()
    in_place = stepper is not None
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    try:
        stepper = stepper or Stepper(cfg, mbs, cfg.per_gpu_batch // mbs, device)
        t_ready = time.perf_counter()
        row = time_and_validate(stepper, cfg, mbs, req, device)
    except Exception as exc:  # noqa: BLE001  (only out of memory in place is handled here; ``main`` the rest)
        if not (in_place and is_oom(exc)):
            raise
        free_after_oom(stepper, device)  # fresh processes will say whether it really does not fit
        return searched_only(mbs, mbs_log, notes)
    row["mbs_search"] = mbs_log
    row["ran"] = vars(stepper.ran)
    row["ran"]["notes"] = notes + row["ran"]["notes"]
    row["ran"].update(setup_s=t_ready - t_start, search_s=t_searched - t_start, in_place=in_place,
                      peak_reserved_gb=gather_memory(peak_reserved_gb(device), device))
    return row


def searched_only(mbs: int, log: list[dict], notes: list[str]) -> dict:
    """The search's answer alone, for the launcher to time in fresh processes."""
    return {"outcome": "ok", "micro_batch": mbs, "mbs_search": log, "search_notes": notes, "searched_only": True}


def time_and_validate(stepper: Stepper, cfg: Config, mbs: int, req: dict, device: str) -> dict:
    """Time the phases (synced or the paper's way), extrapolate, and run the validation if asked and in time."""
    t0 = time.perf_counter()
    timing = req.get("timing", "synced")
    if timing == "unsynced":
        phases = time_unsynced(stepper, cfg, device)
    else:
        phases = time_phases(stepper, cfg, device, max(2, req.get("warmup", 2)), max(MIN_REPS, req.get("reps", 5)),
                             deadline=req.get("deadline"))
    t1 = time.perf_counter()
    row = {"outcome": "ok", "reason": None, **extrapolate(cfg, mbs, phases, timing)}
    row["peak_memory_gb"] = gather_memory(peak_memory_gb(device), device)
    row["predicted_memory_gb"] = predicted_memory_gb(cfg, mbs)
    k = int(req.get("validate_steps") or 0)
    if k and timing == "synced" and validation_fits(stepper, k, row["step_time_s"], req.get("deadline"), device):
        sustained = statistics.median(validate(stepper, cfg, device, k))
        predicted = row["step_time_s"]
        row["validate"] = {"steps": k, "sustained_step_s": sustained, "predicted_step_s": predicted,
                           "rel_error": (predicted - sustained) / sustained}
    stepper.ran.timing_s, stepper.ran.validate_s = t1 - t0, time.perf_counter() - t1
    return row


def write_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--request", required=True, type=Path)
    ap.add_argument("--result", required=True, type=Path)
    args = ap.parse_args(argv)
    req = json.loads(args.request.read_text())
    device = req.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
    rank, _ = init(device, collective_timeout_s(req))
    try:
        row = measure(req, device, rank)
    except Unsupported as exc:
        row = {"outcome": "unsupported", "reason": str(exc)}
    except Exception as exc:  # noqa: BLE001
        if not is_oom(exc):
            raise  # the parent records an error row with this traceback from the log
        row = {"outcome": "oom", "reason": f"out of memory at the chosen micro-batch: {str(exc)[:300]}",
               "micro_batch": req.get("micro_batch"), "mbs_search": req.get("mbs_search")}
    if rank == 0:
        write_atomic(args.result, row)
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
