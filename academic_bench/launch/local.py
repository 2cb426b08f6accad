"""One configuration in fresh processes on this machine (the worker itself on one GPU, torchrun's workers on
several), under a time limit, by one of three engines: search and time in one process (one GPU), search then time
afresh (several GPUs), or time a fixed size afresh; a searched size timed afresh is halved where it runs out of
memory when timed (the memory wall the search did not see). And the row that says what happened."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..catalog.config import Config
from ..catalog.models.from_config import made_with
from ..measure.wall import add_launch, breakdown
from ..results import make_row
from .outcome import classify, fill_derived
from .processes import (WORKER_MODULE, Rendezvous, child_env, default_device, kill_strays, kill_tree,
                        error_folder, launch_env_record, one_process, uses_torchrun, with_parent_death_signal,
                        worker_command)

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


def _search(launch: "Launch", req: dict, world: int) -> tuple[dict | None, "Ended"]:
    """The micro-batch search in its own processes: (what it found, how its last launch ended).
    On several GPUs a search whose ranks went out of step (``_out_of_step``) is settled from the ranks' notes,
    or searched again below the size that split them."""
    known = None
    for _ in range(SEARCH_ATTEMPTS):
        ended = launch({**req, "search_only": True, "trials": str(launch.tmp), "known": known}, "search")
        if ended.rc == 0 and not ended.timed_out:
            return _searched(launch.result), ended
        if ended.timed_out or world == 1:
            break
        found, known = _out_of_step(launch.tmp, world)
        if found:
            launch.say(f"the search's ranks went out of step at micro-batch {2 * found['micro_batch']} (see above); "
                       f"measuring at micro-batch {found['micro_batch']}, which every rank ran")
            return found, ended
        if not known:
            break
        launch.say("the search's ranks went out of step (see above); searching again below that size")
    return None, ended


TIMED_OOM_NOTE = "fit in the search, out of memory when timed"


def _halve_after_timed_oom(req: dict, result: Path, per_gpu_batch: int, launch: "Launch") -> bool:
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
    launch.say(f"micro-batch {mbs} fit in the search but ran out of memory when timed; measuring again at {mbs // 2}")
    return True


@dataclass
class Ended:
    """How one launch ended: the exit status of its process (None when killed at the time limit)."""

    rc: int | None
    timed_out: bool


@dataclass
class Launch:
    """The launches of one configuration: their files in ``tmp`` (request, result, the timing kept early, the ranks'
    error files), the log they append to, the workers' environment and what is left of the time limit."""

    config: Config
    tmp: Path
    log: Path
    env: dict[str, str]
    timeout_s: float
    rdzv: Rendezvous | None = None
    worker: str = WORKER_MODULE
    t0: float = field(default_factory=time.monotonic)
    logf: BinaryIO | None = None
    running: subprocess.Popen | None = None  # killed if we are interrupted
    spent: dict[str, float] = field(default_factory=dict)  # seconds per phase over the launches (``measure.wall``)

    request = property(lambda self: self.tmp / "request.json")
    result = property(lambda self: self.tmp / "result.json")
    timed = property(lambda self: self.tmp / "timed.json")
    errors = property(lambda self: error_folder(self.request))

    @property
    def torchrun(self) -> bool:
        return uses_torchrun(self.config, self.rdzv)

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def say(self, line: str) -> None:
        """A line of the launcher's own in the log (``#``), between the workers' output."""
        self.logf.write(f"# {line}\n".encode())
        self.logf.flush()

    def __call__(self, request_obj: dict, phase: str) -> Ended:
        """One launch of the worker, within what is left of ``timeout_s``."""
        left = self.timeout_s - self.elapsed()
        # The timing stops early rather than be killed (``measure.timing.time_phases``), leaving time to tear down.
        request_obj = {**request_obj, "deadline": time.time() + left - max(DEADLINE_RESERVE_S, 0.1 * left)}
        self.request.write_text(json.dumps(request_obj, indent=1))
        self.timed.unlink(missing_ok=True)  # only this launch's timing may be recovered
        shutil.rmtree(self.errors, ignore_errors=True)  # and only this launch's errors read
        self.errors.mkdir()
        cmd = worker_command(self.config, self.request, self.result, rdzv=self.rdzv, worker=self.worker)
        # Each phase's start and end in seconds of the time limit: a timed-out log then says where the time went.
        self.say(f"{self.config.id} {self.config.methods.label()} ({phase}) starts at {self.elapsed():.1f} s of "
                 f"the {self.timeout_s:g} s limit\n# {' '.join(cmd)}")
        launched_at = time.time()
        self.running = subprocess.Popen(with_parent_death_signal(cmd), stdout=self.logf, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=self.env, start_new_session=True)
        try:
            ended = Ended(self.running.wait(timeout=max(1.0, self.timeout_s - self.elapsed())), False)
        except subprocess.TimeoutExpired:
            kill_tree(self.running)
            ended = Ended(None, True)
        self._add_spent(launched_at, time.time())
        # The workers of a torchrun that was killed outlive it (a lone worker leaves none: it is the whole launch).
        strays = kill_strays(str(self.tmp)) if ended.rc and self.torchrun else 0
        if strays:
            self.say(f"({phase}) {strays} process(es) of this launch outlived it and were killed")
        self.say(f"({phase}) {'killed at the time limit' if ended.timed_out else f'exit status {ended.rc}'} at "
                 f"{self.elapsed():.1f} s")
        return ended

    def _add_spent(self, launched_at: float, ended_at: float) -> None:
        """Add this launch's phases, as its worker recorded them with its result, to ``spent``; a result left by
        an earlier launch is not this one's."""
        try:
            fresh = self.result.stat().st_mtime >= launched_at
            data = json.loads(self.result.read_text()) if fresh else None
        except (OSError, json.JSONDecodeError):
            return
        add_launch(self.spent, data.get("wall") if isinstance(data, dict) else None, launched_at, ended_at)

    def stop(self) -> None:
        """Leave nothing running (after an interruption)."""
        if self.running is not None and self.running.poll() is None:
            kill_tree(self.running)


def time_afresh(launch: Launch, req: dict, found: dict | None = None) -> Ended:
    """Time in fresh processes: the size a search ``found`` (halved while the timed run runs out of memory at a
    size the search saw fit: ``_halve_after_timed_oom``), or the size the request fixes."""
    if found:
        req.update(micro_batch=found["micro_batch"], mbs_search=found.get("mbs_search"),
                   search_notes=found.get("search_notes") or [])
        launch.result.unlink(missing_ok=True)
    ended = launch(req, "measure")
    while found and not ended.timed_out and _halve_after_timed_oom(req, launch.result, launch.config.per_gpu_batch,
                                                                   launch):
        ended = launch(req, "measure")
    return ended


def search_and_time_in_one_process(launch: Launch, req: dict, fresh_after_oom: bool = False) -> Ended:
    """One GPU: one process searches and times (``measure.worker.measure``). The size found is timed afresh
    (``time_afresh``) only when the timed run in place ran out of memory, or ``fresh_after_oom`` asks for it after
    an out-of-memory trial (the two-launch engine, kept to check this one against)."""
    ended = launch({**req, "in_place": True, "fresh_after_oom": fresh_after_oom}, "search and measure")
    found = _searched(launch.result) if ended.rc == 0 and not ended.timed_out else None
    return time_afresh(launch, req, found) if found and found.get("searched_only") else ended


def search_then_time_afresh(launch: Launch, req: dict) -> Ended:
    """Several GPUs: the search runs in its own processes first, so that the timed run starts from a clean GPU
    (memory left fragmented by out-of-memory trials would skew or break it), and so that ranks it leaves out of
    step cannot hang the timing (``_search``); without a size found, the search's result (or its absence) is the
    row."""
    found, ended = _search(launch, req, launch.config.n_gpus)
    return time_afresh(launch, req, found) if found is not None else ended


def run_config(config: Config, *, setup: str, search: str = "single", timing: str = "synced",
               validate: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, device: str | None = None,
               log_path: str | os.PathLike | None = None, rdzv: Rendezvous | None = None,
               warmup: int = DEFAULT_WARMUP, reps: int = DEFAULT_REPS,
               extra_env: dict[str, str] | None = None, worker: str = WORKER_MODULE,
               micro_batch: int | None = None, fresh_after_oom: bool = False) -> dict | None:
    """Measure one configuration in fresh processes; always returns a row (None on nodes other than 0).

    The engine follows from the configuration: a micro-batch it fixes, or ``micro_batch`` (the size an earlier
    search of this same configuration found, e.g. its synced twin's, for an unsynced timing; the row keeps the
    configuration's id), is timed afresh (``time_afresh``); otherwise one GPU searches and times in one process
    (``search_and_time_in_one_process``, ``fresh_after_oom`` passed on) and several search then time afresh
    (``search_then_time_afresh``).

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
    env = child_env(config, extra_env)
    launch = Launch(config, tmp, Path(log_path) if log_path else tmp / "run.log", env, timeout_s, rdzv, worker, t0)
    req = build_request(config, timing=timing, validate=validate, device=device, warmup=warmup, reps=reps)
    # The timing, kept as soon as it is taken (``measure.worker.keep_timing``); the error file of a worker started
    # without torchrun (torchrun gives each of its workers one under ``--log-dir``).
    req.update(timed_result=str(launch.timed), error_file=str(launch.errors / "error.json"))
    if micro_batch:
        req.update(micro_batch=int(micro_batch), mbs_search=None)
    # A copy: ``capture_env`` is cached, and the launch environment is this run's (which rows had NVLS off); the
    # device it ran on names a tiny run where it ran (``results.run_label``), never by the GPU its config names.
    row["env"] = {**row["env"], "device": device, "launch": launch_env_record(env)}
    try:
        with open(launch.log, "wb") as launch.logf:
            if config.micro_batch is not None or micro_batch:
                ended = time_afresh(launch, req)
            elif one_process(config):
                ended = search_and_time_in_one_process(launch, req, fresh_after_oom)
            else:
                ended = search_then_time_afresh(launch, req)
        if rdzv is not None and rdzv.node_rank != 0:
            return None
        classify(row, ended.rc, ended.timed_out, launch.result, launch.log, timeout_s, launch.timed,
                 torchrun=launch.torchrun, errors=launch.errors)
        fill_derived(row, config)
    finally:
        launch.stop()
        if log_path:
            row["log"] = str(launch.log)
        shutil.rmtree(tmp, ignore_errors=True)
        row["duration_s"] = round(time.monotonic() - t0, 3)
        row["wall_breakdown"] = breakdown(launch.spent, row["duration_s"])
    return row
