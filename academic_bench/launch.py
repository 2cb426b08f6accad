"""Run one configuration in fresh processes (torchrun) under a time limit, and classify what happened.

    run_config(config, setup="h100x1") -> result row   (outcome ok | oom | invalid | error | timeout | unsupported)

Each configuration gets new processes, so a crash, an NCCL error, a CUDA fault or a hang in one cannot leak into
the next: the parent only waits, reads the result file the worker writes (``measure/worker.py``), keeps the
log, and kills everything on timeout. The default executor runs torchrun here; ``slurm`` submits the same
call as a SLURM job through submitit (``submitit-local`` runs that path with submitit's local executor, for
tests and for machines without SLURM).
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from .config import Config
from .env import REPO_ROOT
from .units import days_for
from .results import make_row

WORKER_MODULE = "academic_bench.measure.worker"
DEFAULT_TIMEOUT_S = 1800.0
DEFAULT_WARMUP, DEFAULT_REPS = 3, 10
DEADLINE_RESERVE_S = 15  # of a configuration's time limit, kept after the timing for memory gathers and exit
EXECUTORS = ("local", "slurm", "submitit-local")
TAIL_LINES = 30
# Opt-in for machines whose NVLink multicast (NVLS/SHARP) cannot be used, e.g. GPUs shared through a
# virtualisation layer: there NCCL/NVSHMEM multicast set-up hung or failed (the study's shared multi-GPU
# machines, whose ``scripts/offline-gpu/gpu_prelude.sh`` exports it). ACADEMIC_BENCH_NO_NVLS=1 switches
# multicast off for the workers. Without it NCCL's own defaults stand, since switching NVLS off slows all-reduce
# on an NVSwitch machine that has it and would bias its multi-GPU timings; variables the user exported pass through.
NO_NVLS_OPT_IN = "ACADEMIC_BENCH_NO_NVLS"
NO_NVLS_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
# The variables a row's ``env["launch"]`` records as the workers got them (None: unset, the library's default).
LAUNCH_ENV_KEYS = (NO_NVLS_OPT_IN, *NO_NVLS_ENV)
# Fields of the row that the parent owns; a worker's result never overrides them.
PARENT_KEYS = ("schema", "config_id", "config", "setup", "timing", "mode", "search", "env", "started_at",
               "duration_s", "log")
# Linux only: torchrun gets SIGTERM when this process dies (even by SIGKILL), and then stops its workers.
_PDEATHSIG_EXEC = ("import ctypes,os,sys;"
                   "ctypes.CDLL(None).prctl(1,15);"  # 1 = PR_SET_PDEATHSIG
                   "os.getppid()!=int(sys.argv[1]) and sys.exit(143);"  # the parent died before prctl
                   "os.execv(sys.executable,[sys.executable]+sys.argv[2:])")


@dataclass(frozen=True)
class Rendezvous:
    """torchrun's multi-node options for this node (the same endpoint on every node; node 0 writes the row)."""

    nnodes: int
    node_rank: int
    endpoint: str  # host:port reachable from every node

    def args(self, run_id: str) -> list[str]:
        return ["--nnodes", str(self.nnodes), "--node_rank", str(self.node_rank),
                "--rdzv_endpoint", self.endpoint, "--rdzv_id", run_id]


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def build_request(config: Config, *, timing: str = "synced", validate: int = 0, device: str = "cuda",
                  warmup: int = DEFAULT_WARMUP, reps: int = DEFAULT_REPS) -> dict:
    """The worker's REQ.json."""
    if warmup < 2 or reps < 5:
        raise ValueError(f"warm-up must be >= 2 and repetitions >= 5 (got {warmup}, {reps})")
    return {"config": config.to_dict(), "timing": timing, "validate_steps": int(validate), "warmup": warmup,
            "reps": reps, "device": device}


def torchrun_command(config: Config, request: Path, result: Path, *, rdzv: Rendezvous | None = None,
                     worker: str = WORKER_MODULE) -> list[str]:
    nproc = config.n_gpus // config.nodes
    where = rdzv.args(config.id) if rdzv else ["--standalone"]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), *where,
           "--max_restarts", "0", "-m", worker, "--request", str(request), "--result", str(result)]
    return cmd


def _with_parent_death_signal(cmd: list[str]) -> list[str]:
    """Start ``cmd`` (a python command) so that it gets SIGTERM if this process dies (Linux)."""
    if sys.platform != "linux" or cmd[0] != sys.executable:
        return cmd
    return [sys.executable, "-c", _PDEATHSIG_EXEC, str(os.getpid()), *cmd[1:]]


def no_nvls_requested(environ: dict[str, str] | None = None) -> bool:
    """Whether ``ACADEMIC_BENCH_NO_NVLS`` (in ``environ``, default the process's) asks to switch multicast off."""
    value = (os.environ if environ is None else environ).get(NO_NVLS_OPT_IN, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def launch_env_record(env: dict[str, str]) -> dict[str, str | None]:
    """What a row records of the workers' environment: the multicast switches and the opt-in, as set."""
    return {key: env.get(key) for key in LAUNCH_ENV_KEYS}


def child_env(config: Config, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of torchrun and its workers (multicast switched off only on ``ACADEMIC_BENCH_NO_NVLS=1``)."""
    env = dict(os.environ)
    # torchrun sets OMP_NUM_THREADS=1 when it is unset, which leaves CPU offloading's optimizer on one core
    # (the paper's handicap); give each rank its share of the cores instead.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    env["OMP_NUM_THREADS"] = str(max(1, cores // (config.n_gpus // config.nodes)))
    if no_nvls_requested({**env, **(extra or {})}):
        env.update(NO_NVLS_ENV)
    # Fewer fragmentation failures near the memory limit (torchtitan's default too); a user's choice stands.
    env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    env["PYTHONUNBUFFERED"] = "1"  # the log's tail must hold the last words of a crash
    if (REPO_ROOT / "pyproject.toml").exists():  # a source checkout need not be pip-installed on a GPU node
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def _read_tail(path: Path, max_bytes: int = 256 * 1024) -> list[str]:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - max_bytes))
            return f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return []


# torchrun's own post-mortem (its traceback and a "Root Cause" box) follows the workers' output; the workers'
# last lines are what explains the failure.
_AGENT_REPORT = re.compile(r"torch/distributed/elastic/.*failed \(exitcode")
_CAUSE = re.compile(r"^(?:\[rank\d+\]:\s*)?([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)\b.*)$")


def log_tail(path: Path, lines: int = TAIL_LINES, max_chars: int = 6000) -> str:
    """The last lines of the workers' output (torchrun's post-mortem cut off), or '(empty log)'."""
    text = _read_tail(path)
    cut = next((i for i, line in enumerate(text) if _AGENT_REPORT.search(line)), len(text))
    tail = "\n".join(text[:cut][-lines:] or text[-lines:])
    return tail[-max_chars:] or "(empty log)"


# torchrun's post-mortem names a worker that a signal ended: "exitcode: -9" / "Signal 9 (SIGKILL) received".
_KILLED = re.compile(r"exitcode\s*:\s*-(\d+)")


def _killed_reason(signum: int) -> str:
    reason = f"a worker was killed by signal {signum}"
    if signum == signal.SIGKILL:
        host_gb = psutil.virtual_memory().total / 1e9
        reason += (" (SIGKILL) from outside the run, not by its time limit: most likely the host's "
                   f"out-of-memory killer (this machine has {host_gb:.0f} GB of memory)")
    return reason


def failure_cause(path: Path) -> str | None:
    """What ended the workers: the signal torchrun says killed one (a kill prints no exception), else the last
    exception line the workers printed, e.g. 'RuntimeError: NCCL error ...'."""
    text = _read_tail(path)
    cut = next((i for i, line in enumerate(text) if _AGENT_REPORT.search(line)), len(text))
    signals = [int(m.group(1)) for line in text[cut:] if (m := _KILLED.search(line))]
    if signals:
        return _killed_reason(signals[-1])
    causes = [m.group(1) for line in text[:cut] if (m := _CAUSE.match(line.strip()))]
    return causes[-1][:500] if causes else None


def _tree(root: psutil.Process) -> set[psutil.Process]:
    try:
        return {root, *root.children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def kill_tree(proc: subprocess.Popen) -> None:
    """Kill torchrun, its process group and every descendant.

    torchrun starts each worker in a session of its own, so killing torchrun's process group alone would
    leave the workers running (and holding the GPUs). The tree is frozen first so nothing forks meanwhile.
    """
    try:
        root = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        root = None
    members: set[psutil.Process] = set()
    for _ in range(5):
        found = _tree(root) if root else set()
        for p in list(members):
            try:
                found |= {p, *p.children(recursive=True)}
            except psutil.NoSuchProcess:
                pass
        new = found - members
        for p in new:
            try:
                p.suspend()
            except psutil.NoSuchProcess:
                pass
        members |= found
        if not new:
            break
    groups = {proc.pid}
    for p in members:
        try:
            groups.add(os.getpgid(p.pid))
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    groups.discard(os.getpgrp())  # never our own group
    for g in groups:
        try:
            os.killpg(g, 9)
        except (ProcessLookupError, PermissionError):
            pass
    for p in members:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(list(members), timeout=10)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _merge(row: dict, result: dict) -> None:
    for key, value in result.items():
        if key not in PARENT_KEYS:
            row[key] = value


def _fill_derived(row: dict, config: Config) -> None:
    """Fields that follow from the measurement, when the worker left them out."""
    r = config.recipe
    row["throughput_unit"] = row.get("throughput_unit") or f"{r.unit}/s"
    step = row.get("step_time_s")
    if row["outcome"] == "ok" and isinstance(step, (int, float)) and step > 0:
        if row.get("days") is None:
            row["days"] = days_for(r.steps, step)
        if row.get("gpu_days") is None:
            row["gpu_days"] = row["days"] * config.n_gpus
    if row["outcome"] == "oom" and not row.get("reason"):
        row["reason"] = "even the smallest micro-batch does not fit in memory"


def _classify(row: dict, proc_rc: int | None, timed_out: bool, result: Path, log: Path,
              timeout_s: float) -> None:
    if timed_out:
        row.update(outcome="timeout", reason=f"no result within the time limit of {timeout_s:g} s; every process "
                   f"of the run was killed. Last lines of the log:\n{log_tail(log)}")
        return
    data = None
    if result.exists():
        try:
            data = json.loads(result.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            row.update(outcome="error", reason=f"unreadable result file ({exc}). Last lines of the log:\n"
                       f"{log_tail(log)}")
            return
    if proc_rc != 0 or not isinstance(data, dict) or data.get("outcome") not in ("ok", "oom", "unsupported"):
        what = f"exit status {proc_rc}" + ("" if data else ", no result file")
        cause = failure_cause(log)
        row.update(outcome="error", reason=f"{what}" + (f": {cause}" if cause else "")
                   + f". Last lines of the log:\n{log_tail(log)}")
        return
    _merge(row, data)


def _searched(result: Path) -> dict | None:
    """The search's result when it found a micro-batch; None when it did not or the file is unreadable."""
    try:
        found = json.loads(result.read_text())
    except (OSError, json.JSONDecodeError):
        return None  # _classify reports the unreadable result as an error
    ok = isinstance(found, dict) and found.get("outcome") == "ok" and found.get("micro_batch")
    return found if ok else None


SEARCH_ATTEMPTS = 3  # a search that went out of step is tried again below the size that split the ranks


def _out_of_step(trials: Path, world: int) -> tuple[dict | None, list[dict] | None]:
    """What a search that died with its ranks out of step established, from each rank's own notes
    (``worker.note_trial``): the sizes every rank ran, and those at which some rank ran out of memory (the
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


def run_config(config: Config, *, setup: str, search: str = "single", timing: str = "synced",
               validate: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, device: str | None = None,
               log_path: str | os.PathLike | None = None, rdzv: Rendezvous | None = None,
               warmup: int = DEFAULT_WARMUP, reps: int = DEFAULT_REPS,
               extra_env: dict[str, str] | None = None, worker: str = WORKER_MODULE,
               micro_batch: int | None = None) -> dict | None:
    """Measure one configuration in fresh processes; always returns a row (None on nodes other than 0).

    ``micro_batch``: the size an earlier search of this same configuration found (e.g. its synced twin's, for
    an unsynced timing); the search is skipped and the row keeps the configuration's id.

    Never raises for what happens inside the run (crash, NCCL error, out of memory, hang): those become the
    row's outcome. Ctrl-C or SIGTERM kill the run's processes and propagate.
    """
    mode = "validate" if validate else "step"
    t0 = time.monotonic()
    row = make_row(config, setup=setup, outcome="error", timing=timing, mode=mode, search=search)
    try:
        config.check()
    except ValueError as exc:
        row.update(outcome="invalid", reason=str(exc))
        return row
    device = device or default_device()
    tmp = Path(tempfile.mkdtemp(prefix=f"academic-bench-{config.id}-"))
    request, result = tmp / "request.json", tmp / "result.json"
    log = Path(log_path) if log_path else tmp / "run.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    req = build_request(config, timing=timing, validate=validate, device=device, warmup=warmup, reps=reps)
    if micro_batch:
        req.update(micro_batch=int(micro_batch), mbs_search=None)
    env = child_env(config, extra_env)
    # A copy: ``capture_env`` is cached, and the launch environment is this run's (which rows had NVLS off).
    row["env"] = {**row["env"], "launch": launch_env_record(env)}
    procs: list[subprocess.Popen] = []  # the one still running is killed if we are interrupted

    def launch(request_obj: dict, phase: str, logf) -> tuple[int | None, bool]:
        """One torchrun of the worker; (exit status, timed out) within what is left of ``timeout_s``."""
        left = timeout_s - (time.monotonic() - t0)
        # The timing stops early rather than be killed (``worker.time_phases``), leaving time to tear down.
        request_obj = {**request_obj, "deadline": time.time() + left - max(DEADLINE_RESERVE_S, 0.1 * left)}
        request.write_text(json.dumps(request_obj, indent=1))
        cmd = torchrun_command(config, request, result, rdzv=rdzv, worker=worker)
        # Each phase's start and end in seconds of the time limit: a timed-out log then says where the time went.
        logf.write(f"# {config.id} {config.methods.label()} ({phase}) starts at {time.monotonic() - t0:.0f} s of "
                   f"the {timeout_s:g} s limit\n# {' '.join(cmd)}\n".encode())
        logf.flush()
        procs.append(subprocess.Popen(_with_parent_death_signal(cmd), stdout=logf, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env, start_new_session=True))
        try:
            rc, timed_out = procs[-1].wait(timeout=max(1.0, timeout_s - (time.monotonic() - t0))), False
        except subprocess.TimeoutExpired:
            kill_tree(procs[-1])
            rc, timed_out = None, True
        logf.write(f"# ({phase}) {'killed at the time limit' if timed_out else f'exit status {rc}'} at "
                   f"{time.monotonic() - t0:.0f} s\n".encode())
        return rc, timed_out

    try:
        with open(log, "wb") as logf:
            measure, found = True, None
            if config.micro_batch is None and not micro_batch and config.n_gpus == 1:
                # One process: the search's stepper is timed in place when no trial ran out of memory; after
                # one, the timed run starts from a clean GPU in fresh processes (``worker.measure``).
                rc, timed_out = launch({**req, "in_place": True}, "search and measure", logf)
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
        _classify(row, rc, timed_out, result, log, timeout_s)
        _fill_derived(row, config)
    finally:
        if procs and procs[-1].poll() is None:  # interrupted: leave nothing running
            kill_tree(procs[-1])
        if log_path:
            row["log"] = str(log)
        shutil.rmtree(tmp, ignore_errors=True)
        row["duration_s"] = round(time.monotonic() - t0, 3)
    return row


# --- SLURM (and submitit's local executor) ----------------------------------------------------------------

def _job(config_dict: dict, kwargs: dict) -> dict | None:
    """What a submitit job runs: the same run_config, on the job's node(s)."""
    import submitit

    config = Config.from_dict(config_dict)
    if config.nodes > 1:
        env = submitit.JobEnvironment()
        kwargs["rdzv"] = Rendezvous(config.nodes, env.node, f"{env.hostnames[0]}:{kwargs.pop('port', 29500)}")
    return run_config(config, **kwargs)


def make_executor(kind: str, folder: str | os.PathLike, config: Config, timeout_s: float,
                  slurm_params: dict[str, Any] | None = None, device: str | None = None):
    """A submitit executor for one configuration: ``slurm`` or ``submitit-local``."""
    import submitit

    if kind not in ("slurm", "submitit-local"):
        raise ValueError(f"unknown submitit executor {kind!r}; choose one of: slurm, submitit-local")
    ex = submitit.AutoExecutor(folder=folder, cluster="slurm" if kind == "slurm" else "local")
    per_node = config.n_gpus // config.nodes
    # GPUs only for GPU runs: submitit's local executor hides every GPU from a job that asks for none.
    gpus = 0 if device == "cpu" else per_node
    params: dict[str, Any] = {"timeout_min": int(math.ceil(timeout_s / 60)) + 5, "tasks_per_node": 1,
                              "gpus_per_node": gpus, "name": f"academic-bench-{config.model}"}
    if kind == "slurm":
        slurm_params = dict(slurm_params or {})
        # Enough cores for CPU offloading's optimizer (8 per rank unless the user says otherwise).
        params.update(nodes=config.nodes, cpus_per_task=int(slurm_params.pop("slurm_cpus_per_task", 8 * per_node)))
        params.update(slurm_params)
    ex.update_parameters(**params)
    return ex


def run_config_submitit(config: Config, *, executor: str, folder: str | os.PathLike, setup: str,
                        timeout_s: float = DEFAULT_TIMEOUT_S, slurm_params: dict[str, Any] | None = None,
                        **kwargs: Any) -> dict:
    """run_config as a submitit job; a job that dies or is cancelled still yields an error/timeout row."""
    t0 = time.monotonic()
    kwargs.update(setup=setup, timeout_s=timeout_s)
    ex = make_executor(executor, folder, config, timeout_s, slurm_params, device=kwargs.get("device"))
    job = ex.submit(_job, config.to_dict(), kwargs)
    try:
        rows = [r for r in job.results() if r is not None]
        if rows:
            return rows[0]
        outcome, reason = "error", "the job returned no row"
    except KeyboardInterrupt:
        job.cancel(check=False)
        raise
    except Exception as exc:  # noqa: BLE001  (any job failure is this configuration's outcome)
        state = str(getattr(job, "state", "")).upper()
        outcome = "timeout" if "TIMEOUT" in state else "error"
        reason = f"job {job.job_id} ended in state {state or 'unknown'}: {str(exc)[-3000:]}"
    row = make_row(config, setup=setup, outcome=outcome, reason=reason, timing=kwargs.get("timing", "synced"),
                   mode="validate" if kwargs.get("validate") else "step", search=kwargs.get("search", "single"))
    row["duration_s"] = round(time.monotonic() - t0, 3)
    return row


def run(config: Config, *, executor: str = "local", folder: str | os.PathLike | None = None,
        slurm_params: dict[str, Any] | None = None, **kwargs: Any) -> dict | None:
    """run_config through the chosen executor (``local``, ``slurm``, ``submitit-local``)."""
    if executor == "local":
        return run_config(config, **kwargs)
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    folder = folder or Path(tempfile.gettempdir()) / "academic-bench-submitit"
    return run_config_submitit(config, executor=executor, folder=folder, slurm_params=slurm_params, **kwargs)


__all__ = ["EXECUTORS", "NO_NVLS_ENV", "NO_NVLS_OPT_IN", "Rendezvous", "build_request", "child_env", "kill_tree",
           "launch_env_record", "no_nvls_requested", "run", "run_config", "run_config_submitit", "torchrun_command"]
