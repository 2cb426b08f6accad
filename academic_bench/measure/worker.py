"""Entry point run in every rank: measure one configuration and write its result (rank 0).

    python -m torch.distributed.run --nproc_per_node N -m academic_bench.measure.worker \
        --request REQ.json --result RES.json
    RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 python -m academic_bench.measure.worker ...   (one GPU: no torchrun)

Reads like nanoGPT's bench.py: set up, find the micro-batch, warm up, time each phase with the GPU
synchronized, optionally run real optimizer steps to validate the extrapolation, write the numbers.
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from ..catalog.config import Config
from ..catalog.models.from_config import decoder_spec
from .apply import Ran, Unsupported
from .data import host_batches, images_fed
from .extrapolation import extrapolate, predicted_memory_gb, rebuilt_step, relative_error
from .routing import expert_token_counts
from .microbatch import alloc_retries, find_micro_batch, peak_memory_gb
from .stepper import Stepper, free_after_oom, is_oom
from . import wall
from .timing import (MIN_REPS, any_rank, several_ranks, time_phases, time_unsynced, validate, validation_fits,
                     would_pass)

log = logging.getLogger(__name__)

# How long a collective may wait for the other ranks before the process group gives up. The micro-batch
# search uses a short one: when only some ranks run out of memory at a micro-batch (at the very edge of the
# GPU's memory), the others wait in a collective the failed rank never joins, and only this timeout ends
# the search (whose trials each rank has already written down, see ``microbatch.note_trial``).
COLLECTIVE_TIMEOUT_S = 300
ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"  # where torch's ``record`` writes the exception that ended this rank
SEARCH_COLLECTIVE_TIMEOUT_S = 90


def init(device: str, timeout_s: float = COLLECTIVE_TIMEOUT_S) -> tuple[int, int]:
    """Join the process group (gloo on CPU, NCCL on GPUs): the one torchrun set up (``MASTER_ADDR``), or, for the one
    process the launcher starts itself (``WORLD_SIZE`` 1), a group of one on an in-process store, as FSDP and
    DeepSpeed need one. Returns (rank, world size)."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    backend, timeout = "nccl" if device == "cuda" else "gloo", datetime.timedelta(seconds=timeout_s)
    if "MASTER_ADDR" in os.environ and not dist.is_initialized():
        dist.init_process_group(backend, timeout=timeout)
        if several_ranks():
            # NCCL builds its communicator, and takes its buffers' GPU memory, at the first collective. Made
            # here, every micro-batch trial and every timed run sees the same memory; made lazily after a
            # timed run, when the caching allocator held nearly the whole GPU, NCCL's CUDA calls failed and
            # the finished measurement was lost (one H100: Pythia-2.8B; one H200: Pythia-6.9B).
            dist.all_reduce(torch.zeros(1, device="cuda" if device == "cuda" else "cpu"))
    elif os.environ.get("WORLD_SIZE") == "1" and not dist.is_initialized():
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, timeout=timeout)
    return rank, world


def collective_timeout_s(req: dict) -> float:
    """The search's short collective timeout, the measurement's long one."""
    return SEARCH_COLLECTIVE_TIMEOUT_S if req.get("search_only") else COLLECTIVE_TIMEOUT_S


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


def measure(req: dict, device: str, rank: int) -> dict:
    """One configuration: find its micro-batch (unless given), time its phases, optionally validate.

    With ``in_place`` (one process), the size the search found is timed in this process: on the model that ran its
    trial when the search kept it (``find_micro_batch(keep=True)``: the last size tried, or one model for every
    size), else on one built again here, after the out-of-memory trial above it freed its memory. No second
    launch, no second import of the libraries. With
    ``fresh_after_oom`` (the engine before one launch, kept to check that memory an out-of-memory trial left
    behind does not skew the timing), and whenever the timed run in place runs out of memory, the result says
    ``searched_only`` and the launcher times that size in fresh processes, as it does after a ``search_only``
    request."""
    if req.get("model_config"):  # a decoder from its config.json: registered here as in the launching process
        decoder_spec(**req["model_config"])
    cfg = Config.from_dict(req["config"])
    t_start = time.perf_counter()
    mbs_log, notes, stepper = req.get("mbs_search"), list(req.get("search_notes") or []), None
    mbs = cfg.micro_batch or req.get("micro_batch")
    state = Place(fresh_after_oom=bool(req.get("fresh_after_oom")))
    if not mbs:
        state = replace(state, in_place=bool(req.get("in_place")))
        found = find_micro_batch(cfg, device, req.get("trials"), req.get("known"), keep=state.in_place,
                                 fresh_after_oom=state.fresh_after_oom)
        mbs, mbs_log, notes, stepper = found.micro_batch, found.log, notes + found.notes, found.stepper
        state = replace(state, after_oom=found.after_oom, warm=found.warm)
        if mbs is None:
            return {"outcome": "oom", "reason": f"even micro-batch {cfg.smallest_micro_batch} does not fit"
                    + (" (FP8 training's smallest for this sequence length)" if cfg.smallest_micro_batch > 1 else ""),
                    "mbs_search": mbs_log}
        if req.get("search_only") or state.hands_over:
            return searched_only(mbs, mbs_log, notes)
    t_searched = time.perf_counter()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    try:
        stepper = stepper or Stepper(cfg, mbs, cfg.per_gpu_batch // mbs, device)
        t_ready = time.perf_counter()
        timed = timed_run(stepper, cfg, mbs, req, device, state.warm)
        if checks_the_wall(cfg, mbs, req) and timed.retries > 0:
            timed, mbs_log = time_below_the_wall(stepper, timed, cfg, mbs, req, device, mbs_log,
                                                 spent_s=time.perf_counter() - t_searched)
    except Exception as exc:  # noqa: BLE001  (only out of memory in place is handled here; ``main`` the rest)
        if not (state.in_place and is_oom(exc)):
            raise
        free_after_oom(stepper, device)  # fresh processes will say whether it really does not fit
        return searched_only(mbs, mbs_log, notes)
    row = timed.row
    row["mbs_search"] = mbs_log
    row["ran"] = vars(timed.ran)
    row["ran"]["notes"] = notes + row["ran"]["notes"]
    row["ran"].update(setup_s=t_ready - t_start, search_s=t_searched - t_start, in_place=state.in_place,
                      kept_warm=state.warm and timed.row["micro_batch"] == mbs, after_oom=state.after_oom,
                      peak_reserved_gb=timed.reserved, alloc_retries=timed.retries, memory_wall=timed.wall)
    return row


@dataclass(frozen=True)
class Place:
    """Where the size the search found is timed, as the search left it: ``in_place``, in this process (one GPU,
    asked by the launcher); ``after_oom``, a trial above that size ran out of memory; ``warm``, the stepper the
    search kept ran its two steps at that size (``warmup_reps``); ``fresh_after_oom``, the request's wish that a
    size found after an out-of-memory trial be timed in fresh processes instead (the two-launch engine)."""

    in_place: bool = False
    after_oom: bool = False
    warm: bool = False
    fresh_after_oom: bool = False

    @property
    def hands_over(self) -> bool:
        """The size found goes back to the launcher, to be timed in fresh processes."""
        return self.in_place and self.after_oom and self.fresh_after_oom


@dataclass
class Timed:
    """One timed size: its row so far, what ran, the peak reservation per rank, the allocator retries counted
    while it was timed (warm-up and validation included; the most of any rank), and, where the size found ran at
    the memory wall, both sizes' step times."""

    row: dict
    ran: Ran
    reserved: list[float] | None
    retries: int
    wall: dict | None = None


def timed_run(stepper: Stepper, cfg: Config, mbs: int, req: dict, device: str, warm: bool = False) -> Timed:
    """``time_and_validate`` at ``mbs``, with the peak reservation per rank and the allocator retries it counted."""
    before = alloc_retries(device)
    row = time_and_validate(stepper, cfg, mbs, req, device, warm=warm)
    return Timed(row, stepper.ran, gather_memory(peak_reserved_gb(device), device),
                 retries_on_any_rank(alloc_retries(device) - before, device))


def retries_on_any_rank(count: int, device: str) -> int:
    """The most allocator retries any rank counted: one rank at the wall slows every rank's step."""
    if not several_ranks():
        return count
    t = torch.tensor([count], dtype=torch.int64, device="cuda" if device == "cuda" else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def checks_the_wall(cfg: Config, mbs: int, req: dict) -> bool:
    """Whether a timed run at the memory wall is checked against half its micro-batch: only a size the search
    chose (a micro-batch the configuration fixes is timed as asked), only synchronized timing (the paper's clock is
    kept for comparison as it was), and only where half the size may run."""
    return cfg.micro_batch is None and req.get("timing", "synced") == "synced" and mbs // 2 >= cfg.smallest_micro_batch


def time_below_the_wall(stepper: Stepper, timed: Timed, cfg: Config, mbs: int, req: dict, device: str,
                        log: list[dict] | None, spent_s: float) -> tuple[Timed, list[dict] | None]:
    """The size found ran at the memory wall (allocator retries counted while it was timed): time half the size
    too and keep it if it is faster than every timed repetition of the larger one (a difference inside their
    spread is no evidence, and the larger size is the paper's rule), saying so in the row. "The largest
    micro-batch that fits" is the fastest only below the wall: there each step of the larger size also frees and
    refills the allocator's cache. The larger size's measurement is never lost: the half is skipped when it would
    not end within the time limit (``spent_s``: what the larger size took), and kept out when it runs out of
    memory. Returns the kept size's ``Timed`` and the search log with the half size in it."""
    half, step = mbs // 2, timed.row["step_time_s"]
    wall = {"micro_batch": mbs, "alloc_retries": timed.retries, "step_time_s": step, "below_micro_batch": half,
            "below_step_time_s": None, "kept": mbs}
    said = f"micro-batch {mbs} ran at the memory wall ({timed.retries} allocator retries, {step:.4g} s/step)"
    timed.wall = wall
    if would_pass(req.get("deadline"), spent_s, device):
        timed.ran.notes.append(f"{said}; micro-batch {half} not timed: it would not end within the time limit")
        return timed, log
    free_after_oom(stepper, device)  # the half size needs the memory the larger one holds (and resets the peaks)
    below = None
    try:
        below = Stepper(cfg, half, cfg.per_gpu_batch // half, device)
        below_timed = timed_run(below, cfg, half, {**req, "timed_result": None}, device)  # the larger's stays kept
        oom = False
    except Exception as exc:  # noqa: BLE001  (only out of memory is expected here)
        if not is_oom(exc):
            raise
        oom = True
    if any_rank(oom, device):
        free_after_oom(below, device)
        timed.ran.notes.append(f"{said}; micro-batch {half} ran out of memory when timed: {mbs} kept")
        return timed, log
    row = below_timed.row
    below_step = row["step_time_s"]
    chosen = below_timed if below_step < min(timed.row.get("step_time_spread") or [step]) else timed
    chosen.wall = {**wall, "below_step_time_s": below_step, "kept": chosen.row["micro_batch"]}
    chosen.ran.notes.append(f"{said}; micro-batch {half} timed too ({below_step:.4g} s/step): "
                            f"{chosen.row['micro_batch']} kept" + (", the faster" if chosen is below_timed else
                                                                  ", the half no faster than its repetitions"))
    keep_timing(req, chosen.row)
    if chosen is timed:
        free_after_oom(below, device)
    if all(t.get("micro_batch") != half for t in log or []):
        peak = (row.get("peak_memory_gb") or [None])[0]
        log = sorted([*(log or []), {"micro_batch": half, "outcome": "ok", "peak_memory_gb": peak}],
                     key=lambda t: t["micro_batch"])
    return chosen, log


def searched_only(mbs: int, log: list[dict], notes: list[str]) -> dict:
    """The search's answer alone, for the launcher to time in fresh processes."""
    return {"outcome": "ok", "micro_batch": mbs, "mbs_search": log, "search_notes": notes, "searched_only": True}


def warmup_reps(req: dict, warm: bool) -> int:
    """Untimed repetitions before the timed ones: the request's (at least 2). On a ``warm`` stepper, which ran the
    search's two full steps at this size (compiled, optimizer state allocated), those steps count, and one
    repetition is left to refill the allocator's cache that a larger trial may have emptied."""
    asked = max(2, req.get("warmup", 2))
    return max(1, asked - 2) if warm else asked


def time_and_validate(stepper: Stepper, cfg: Config, mbs: int, req: dict, device: str, warm: bool = False) -> dict:
    """Time the phases (synced or the paper's way), extrapolate, and run the validation if asked and in time.
    ``warm``: the stepper ran the search's two steps at this size (``warmup_reps``)."""
    t0 = time.perf_counter()
    timing = req.get("timing", "synced")
    if timing == "unsynced":
        with wall.phase("timed"):  # the paper's one warm-up step among them
            phases = time_unsynced(stepper, cfg, device)
    else:
        stepper.ran.warmup_reps = warmup_reps(req, warm)
        phases = time_phases(stepper, cfg, device, stepper.ran.warmup_reps, max(MIN_REPS, req.get("reps", 5)),
                             deadline=req.get("deadline"), step=lambda t: rebuilt_step(t, stepper.gas, timing))
    t1 = time.perf_counter()
    row = {"outcome": "ok", "reason": None, **extrapolate(cfg, mbs, phases, timing)}
    keep_timing(req, row)
    row["peak_memory_gb"] = gather_memory(peak_memory_gb(device), device)
    row["predicted_memory_gb"] = predicted_memory_gb(cfg, mbs)
    k = int(req.get("validate_steps") or 0)
    if k and timing == "synced" and validation_fits(stepper, k, row["step_time_s"], req.get("deadline"), device):
        with wall.phase("validation"):
            sustained = statistics.median(validate(stepper, cfg, device, k))
        predicted = row["step_time_s"]
        row["validate"] = {"steps": k, "sustained_step_s": sustained, "predicted_step_s": predicted,
                           "rel_error": relative_error(predicted, sustained)}
        if images_fed(cfg):  # rows validated before images came as uint8 have no such key: fp32 images
            row["validate"]["images"] = images_fed(cfg)
    stepper.ran.timing_s, stepper.ran.validate_s = t1 - t0, time.perf_counter() - t1
    if stepper.ran.experts != "n/a":  # a mixture of experts: the routing its timed steps saw (``routing``)
        stepper.ran.expert_tokens = expert_token_counts(stepper.model, host_batches(cfg, mbs, 1, seed=1)[0], device)
    return row


def keep_timing(req: dict, row: dict) -> None:
    """Rank 0 writes the timing as soon as it has it, where the launcher asked (``timed_result``): a worker killed
    after it (the memory gathers, the validation, the process group's teardown) leaves the timing to recover
    rather than lose (``launch.outcome.classify``)."""
    if req.get("timed_result") and (not dist.is_initialized() or dist.get_rank() == 0):
        write_atomic(Path(req["timed_result"]), row)


def write_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)


def stamp_elapsed(record: logging.LogRecord) -> bool:
    """Give a log record ``elapsed``: "[  12.3 s]", seconds since the logging module was loaded (one of the
    worker's first imports, before torch's)."""
    record.elapsed = f"[{record.relativeCreated / 1000:6.1f} s]"
    return True


@record  # the exception that ends this rank goes to its error file, where the launcher reads the first failure
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--request", required=True, type=Path)
    ap.add_argument("--result", required=True, type=Path)
    entered = time.time()
    wall.restart()
    args = ap.parse_args(argv)
    # The run's log is this process's output: the launcher keeps it and reads a failure's cause from its tail.
    # Each line says when, in seconds since the worker started: where a configuration's time goes is read from it.
    logging.basicConfig(level=logging.INFO, format="%(elapsed)s %(message)s", stream=sys.stdout, force=True)
    for handler in logging.getLogger().handlers:
        handler.addFilter(stamp_elapsed)
    with wall.phase("setup"):
        req = json.loads(args.request.read_text())
        if req.get("error_file"):  # one process, started without torchrun (which gives each rank its own file)
            os.environ.setdefault(ERROR_FILE_ENV, req["error_file"])
        log.info("imports done; measuring %s", req["config"].get("model"))
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
        # Where this launch's time went (``measure.wall``); the launcher adds what it saw around the process.
        row["wall"] = wall.worker_record(entered)
        write_atomic(args.result, row)
        log.info("result written")
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


def exit_now(code: int) -> None:
    """End the worker once its result is written, without the interpreter's teardown: Inductor's compile workers,
    the release of the GPU memory the caching allocator holds, every module's finalizers. The launcher waits for
    the process, so that teardown was part of every configuration's time."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
