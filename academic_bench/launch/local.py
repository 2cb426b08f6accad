"""One configuration in fresh processes on this machine (the worker itself on one GPU, torchrun's workers on
several), under a time limit: the micro-batch search (in place on one GPU, in processes of its own on several), the
timed run, and the row that says what happened."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

from ..catalog.config import Config
from ..catalog.models.from_config import made_with
from ..results import make_row
from .forked import ForkedWorker, PreloadError, preload_wanted, running_for, start_forked
from .outcome import classify, fill_derived
from .processes import (WORKER_MODULE, Rendezvous, child_env, default_device, kill_strays, kill_tree,
                        launch_env_record, one_process, uses_torchrun, with_parent_death_signal, worker_command)

DEFAULT_TIMEOUT_S = 1800.0
# Five timed repetitions of each phase (``measure.timing.MIN_REPS``): every shipped row that kept ten moved by
# less than 1% when rebuilt from its first five (``analysis.launches.fewer_reps``; ``tests/test_trust.py`` holds
# the default to that), and the timing is a large share of a configuration's GPU time
# (``analysis.launches.timing_share``). Three are kept where they already settle the step (``measure.timing.settled``).
DEFAULT_WARMUP, DEFAULT_REPS = 3, 5
DEADLINE_RESERVE_S = 15  # of a configuration's time limit, kept after the timing for memory gathers and exit


def build_request(config: Config, *, timing: str = "synced", validate: int = 0, device: str = "cuda",
                  warmup: int = DEFAULT_WARMUP, reps: int = DEFAULT_REPS) -> dict:
    """The worker's REQ.json."""
    if warmup < 2 or reps < 5:
        raise ValueError(f"warm-up must be >= 2 and repetitions >= 5 (got {warmup}, {reps})")
    return {"config": config.to_dict(), "timing": timing, "validate_steps": int(validate), "warmup": warmup,
            "reps": reps, "device": device, "model_config": made_with(config.model)}


def _searched(result: Path) -> dict | None:
    """The search's result when it found a micro-batch; None when it did not or the file is unreadable."""
    try:
        found = json.loads(result.read_text())
    except (OSError, json.JSONDecodeError):
        return None  # classify reports the unreadable result as an error
    ok = isinstance(found, dict) and found.get("outcome") == "ok" and found.get("micro_batch")
    return found if ok else None


SEARCH_ATTEMPTS = 3  # a search that went out of step is tried again below the size that split the ranks


def _out_of_step(trials: Path, world: int) -> tuple[dict | None, list[dict] | None]:
    """What a search that died with its ranks out of step established, from each rank's own notes
    (``measure.microbatch.note_trial``): the sizes every rank ran, and those at which some rank ran out of memory (the
    verdict the ranks would have agreed on: one rank out of memory decides for all). Returns (found, known):
    ``found`` when the largest size every rank ran has an out-of-memory size at twice it (the search's
    boundary); otherwise ``known``, the outcomes to search again with, or None when no rank ran out of
    memory (nothing to search below)."""
    by_mbs: dict[int, dict[int, dict]] = {}
    for f in trials.glob("trials-rank*.jsonl"):
        for line in f.read_text().splitlines():
            t = json.loads(line)
            by_mbs.setdefault(t["micro_batch"], {})[t["rank"]] = t
    fits = [m for m, ranks in by_mbs.items() if len(ranks) == world and all(t["ok"] for t in ranks.values())]
    log = []
    for m, ranks in sorted(by_mbs.items()):
        if m not in fits and all(t["ok"] for t in ranks.values()):
            continue  # a try that no rank saw fail and not every rank finished: it says nothing
        entry = {"micro_batch": m, "outcome": "ok" if m in fits else "oom",
                 "peak_memory_gb": (ranks.get(0) or next(iter(ranks.values())))["peak_memory_gb"]}
        if m not in fits and len(ranks) < world:
            failed = sorted(r for r, t in ranks.items() if not t["ok"])
            entry["note"] = (f"out of memory on rank {', '.join(map(str, failed))} only; the other ranks waited "
                             "in a collective it never joined, until the search's collective timeout ended it")
        log.append(entry)
    oom = {e["micro_batch"] for e in log if e["outcome"] == "oom"}
    if fits and 2 * max(fits) in oom:
        return {"micro_batch": max(fits), "mbs_search": log}, None
    return None, (log if oom else None)


def _search(launch, req: dict, tmp: Path, result: Path, world: int,
            logf) -> tuple[dict | None, int | None, bool]:
    """The micro-batch search in its own processes: (what it found, its exit status, whether it timed out).
    On several GPUs a search whose ranks went out of step (``_out_of_step``) is settled from the ranks' notes,
    or searched again below the size that split them."""
    known = None
    for _ in range(SEARCH_ATTEMPTS):
        rc, timed_out = launch({**req, "search_only": True, "trials": str(tmp), "known": known}, "search", logf)
        if rc == 0 and not timed_out:
            return _searched(result), rc, timed_out
        if timed_out or world == 1:
            break
        found, known = _out_of_step(tmp, world)
        if found:
            logf.write(f"# the search's ranks went out of step at micro-batch {2 * found['micro_batch']} (see above); "
                       f"measuring at micro-batch {found['micro_batch']}, which every rank ran\n".encode())
            return found, rc, timed_out
        if not known:
            break
        logf.write(b"# the search's ranks went out of step (see above); searching again below that size\n")
    return None, rc, timed_out


TIMED_OOM_NOTE = "fit in the search, out of memory when timed"


def _halve_after_timed_oom(req: dict, result: Path, per_gpu_batch: int, logf) -> bool:
    """After the timed run ran out of memory at the micro-batch its search found to fit (seen with Pythia-2.8B
    on one H100, a few GB under the limit), set the request to half that size and say so; False when there is
    nothing smaller or the run did not fail that way. The search's log keeps the size that failed when timed."""
    try:
        data = json.loads(result.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    mbs = req.get("micro_batch") or 0
    if data.get("outcome") != "oom" or data.get("micro_batch") != mbs or mbs < 2 or per_gpu_batch % (mbs // 2):
        return False
    note = {"micro_batch": mbs, "outcome": "oom", "note": TIMED_OOM_NOTE}
    req.update(micro_batch=mbs // 2, mbs_search=[*(req.get("mbs_search") or []), note])
    result.unlink(missing_ok=True)
    logf.write(f"# micro-batch {mbs} fit in the search but ran out of memory when timed; measuring again at "
               f"{mbs // 2}\n".encode())
    return True


def start_worker(config: Config, cmd: list[str], req: dict, paths: tuple[Path, Path, Path], logf: BinaryIO,
                 env: dict[str, str], torchrun: bool, worker: str, left_s: float,
                 preload: bool = False) -> subprocess.Popen | ForkedWorker:
    """Start one launch's worker: on one GPU, with ``preload`` or where this launcher's preloading process already
    runs, forked from that process (``launch.forked``), which imported the libraries once for the whole sweep;
    otherwise, under torchrun, or when preloading is switched off or fails (the log says why), as ``cmd`` in a
    fresh process. Either way its output goes to the log. ``paths``: the request, result and log files; ``left_s``:
    what is left of the time limit, which starting the preloading process counts in."""
    if (preload or running_for(env)) and not torchrun and preload_wanted(env):
        request, result, log = paths
        try:
            started = start_forked(config, worker, ["--request", str(request), "--result", str(result)], log, env,
                                   req.get("model_config"), req["device"], timeout=left_s)
            logf.write(f"# run as the command above, forked from the preloading process as pid {started.pid}\n"
                       .encode())
            logf.flush()
            return started
        except PreloadError as exc:
            logf.write(f"# {exc}: the worker starts afresh\n".encode())
            logf.flush()
    return subprocess.Popen(with_parent_death_signal(cmd), stdout=logf, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def run_config(config: Config, *, setup: str, search: str = "single", timing: str = "synced",
               validate: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, device: str | None = None,
               log_path: str | os.PathLike | None = None, rdzv: Rendezvous | None = None,
               warmup: int = DEFAULT_WARMUP, reps: int = DEFAULT_REPS,
               extra_env: dict[str, str] | None = None, worker: str = WORKER_MODULE,
               micro_batch: int | None = None, fresh_after_oom: bool = False, preload: bool = False) -> dict | None:
    """Measure one configuration in fresh processes; always returns a row (None on nodes other than 0).

    ``micro_batch``: the size an earlier search of this same configuration found (e.g. its synced twin's, for
    an unsynced timing); the search is skipped and the row keeps the configuration's id. ``fresh_after_oom``: on
    one GPU, time the size found in fresh processes when a search trial ran out of memory (the two-launch engine,
    kept to check the one-launch engine against). ``preload``: fork one-GPU workers from the launcher's preloading
    process (``launch.forked``), which a sweep asks for when it has several configurations to run: its start, the
    imports it runs once and their checks, take longer than one worker's imports, so one configuration alone is
    started afresh, unless that process runs already (``start_worker``).

    Never raises for what happens inside the run (crash, NCCL error, out of memory, hang): those become the
    row's outcome. Ctrl-C or SIGTERM kill the run's processes and propagate.
    """
    mode = "validate" if validate else "step"
    t0 = time.monotonic()
    row = make_row(config, setup=setup, outcome="error", timing=timing, mode=mode, search=search)
    refused = config.refusal()
    if refused:
        row.update(outcome="invalid", reason=refused)
        return row
    device = device or default_device()
    if log_path:  # a log folder that cannot be made stops here, before a temporary folder exists to be left behind
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"academic-bench-{config.id}-"))
    request, result, timed = tmp / "request.json", tmp / "result.json", tmp / "timed.json"
    log = Path(log_path) if log_path else tmp / "run.log"
    req = build_request(config, timing=timing, validate=validate, device=device, warmup=warmup, reps=reps)
    req["timed_result"] = str(timed)  # the timing, kept as soon as it is taken (``measure.worker.keep_timing``)
    if micro_batch:
        req.update(micro_batch=int(micro_batch), mbs_search=None)
    env = child_env(config, extra_env)
    # A copy: ``capture_env`` is cached, and the launch environment is this run's (which rows had NVLS off); the
    # device it ran on names a tiny run where it ran (``results.run_label``), never by the GPU its config names.
    row["env"] = {**row["env"], "device": device, "launch": launch_env_record(env)}
    procs: list[subprocess.Popen] = []  # the one still running is killed if we are interrupted

    def launch(request_obj: dict, phase: str, logf) -> tuple[int | None, bool]:
        """One launch of the worker; (exit status, timed out) within what is left of ``timeout_s``."""
        left = timeout_s - (time.monotonic() - t0)
        # The timing stops early rather than be killed (``measure.timing.time_phases``), leaving time to tear down.
        request_obj = {**request_obj, "deadline": time.time() + left - max(DEADLINE_RESERVE_S, 0.1 * left)}
        request.write_text(json.dumps(request_obj, indent=1))
        timed.unlink(missing_ok=True)  # only this launch's timing may be recovered
        cmd = worker_command(config, request, result, rdzv=rdzv, worker=worker)
        # Each phase's start and end in seconds of the time limit: a timed-out log then says where the time went.
        logf.write(f"# {config.id} {config.methods.label()} ({phase}) starts at {time.monotonic() - t0:.1f} s of "
                   f"the {timeout_s:g} s limit\n# {' '.join(cmd)}\n".encode())
        logf.flush()
        procs.append(start_worker(config, cmd, request_obj, (request, result, log), logf, env,
                                  uses_torchrun(config, rdzv), worker, left, preload))
        try:
            rc, timed_out = procs[-1].wait(timeout=max(1.0, timeout_s - (time.monotonic() - t0))), False
        except subprocess.TimeoutExpired:
            kill_tree(procs[-1])
            rc, timed_out = None, True
        # The workers of a torchrun that was killed outlive it (a lone worker leaves none: it is the whole launch).
        strays = kill_strays(str(tmp)) if rc and uses_torchrun(config, rdzv) else 0
        if strays:
            logf.write(f"# ({phase}) {strays} process(es) of this launch outlived it and were killed\n".encode())
        logf.write(f"# ({phase}) {'killed at the time limit' if timed_out else f'exit status {rc}'} at "
                   f"{time.monotonic() - t0:.1f} s\n".encode())
        return rc, timed_out

    try:
        log.write_bytes(b"")
        with open(log, "ab") as logf:  # appended to: a forked worker writes into the same file (``start_worker``)
            measure, found = True, None
            if config.micro_batch is None and not micro_batch and one_process(config):
                # One process searches and times (``worker.measure``): fresh processes time the size found only
                # when the timed run in place ran out of memory, or ``fresh_after_oom`` asks for them.
                rc, timed_out = launch({**req, "in_place": True, "fresh_after_oom": fresh_after_oom},
                                       "search and measure", logf)
                found = _searched(result) if rc == 0 and not timed_out else None
                measure = bool(found and found.get("searched_only"))
            elif config.micro_batch is None and not micro_batch:
                # The search runs in its own processes first, so that the timed run starts from a clean GPU
                # (memory left fragmented by out-of-memory trials would skew or break it), and so that ranks
                # it leaves out of step cannot hang the timing (``_search``).
                found, rc, timed_out = _search(launch, req, tmp, result, config.n_gpus, logf)
                measure = found is not None  # otherwise the search's result (or its absence) is the row
            if measure and found:
                req.update(micro_batch=found["micro_batch"], mbs_search=found.get("mbs_search"),
                           search_notes=found.get("search_notes") or [])
                result.unlink(missing_ok=True)
            if measure:
                rc, timed_out = launch(req, "measure", logf)
                while found and not timed_out and _halve_after_timed_oom(req, result, config.per_gpu_batch, logf):
                    rc, timed_out = launch(req, "measure", logf)
        if rdzv is not None and rdzv.node_rank != 0:
            return None
        classify(row, rc, timed_out, result, log, timeout_s, timed, torchrun=uses_torchrun(config, rdzv))
        fill_derived(row, config)
    finally:
        if procs and procs[-1].poll() is None:  # interrupted: leave nothing running
            kill_tree(procs[-1])
        if log_path:
            row["log"] = str(log)
        shutil.rmtree(tmp, ignore_errors=True)
        row["duration_s"] = round(time.monotonic() - t0, 3)
    return row


