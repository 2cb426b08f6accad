"""What a launch's files say happened: the worker's result merged into the row, or the failure read from the ranks'
error files and the log (the first rank's exception, a signal that killed a worker, a time limit)."""
from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import psutil

from ..catalog.config import Config
from ..catalog.units import days_for

TAIL_LINES = 30
# Fields of the row that the parent owns; a worker's result never overrides them. "wall": the worker's record of
# where its launch's time went, which the launcher sums into the row's "wall_breakdown" (``measure.wall``).
PARENT_KEYS = ("schema", "config_id", "config", "setup", "timing", "mode", "search", "env", "started_at",
               "duration_s", "log", "wall", "wall_breakdown")


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


def _killed_reason(signum: int, who: str = "a worker") -> str:
    reason = f"{who} was killed by signal {signum}"
    if signum == signal.SIGKILL:
        host_gb = psutil.virtual_memory().total / 1e9
        reason += (" (SIGKILL) from outside the run, not by its time limit: most likely the host's "
                   f"out-of-memory killer (this machine has {host_gb:.0f} GB of memory)")
    return reason


def first_error(folder: Path | None) -> str | None:
    """The first failure the ranks' error files record (``measure.worker.main`` is decorated with torch's
    ``record``, which writes the exception that ended a rank to its ``TORCHELASTIC_ERROR_FILE``; torchrun puts one
    per rank under its ``--log-dir``, ``<folder>/<run>/attempt_0/<local rank>/error.json``; one process writes
    ``<folder>/error.json``): the earliest, as torchrun's own post-mortem picks its root cause, with the files'
    write times to order failures within the same second (torchrun's timestamp is in whole seconds and it then
    takes the lowest rank). A rank that failed only because another had (a collective whose peer died) fails
    later. None when no rank wrote one (a signal, or an error before the worker's ``main`` ran)."""
    if folder is None or not folder.is_dir():
        return None
    found = []
    for path in folder.rglob("error.json"):
        try:
            data = json.loads(path.read_text())
            message = data["message"]
            text, stamp = ((message["message"], message["extraInfo"]["timestamp"]) if isinstance(message, dict)
                           else (message, data.get("timestamp", 0)))
            found.append((int(stamp), path.stat().st_mtime_ns, path.parent.name, str(text)))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a file cut short by the kill that followed: the others still speak
    if not found:
        return None
    _, _, rank, text = min(found)
    where = f" (on rank {rank}, the first to fail)" if rank.isdigit() else ""
    return text.strip()[:500] + where


def failure_cause(path: Path, errors: Path | None = None) -> str | None:
    """What ended the workers: a SIGKILL torchrun reports for one (sent from outside, as by the host's
    out-of-memory killer: it writes no error file, and the other ranks' errors follow from it); else the first
    failure of the ranks' error files under ``errors`` (``first_error``); else another signal torchrun reports (an
    abort or a crash in native code writes no error file either: a rank whose peer failed first can end so, so
    it comes after the files); else, for an error before the worker's entry point ran (an import), the last
    exception line the log holds, e.g. 'ModuleNotFoundError: ...'."""
    text = _read_tail(path)
    cut = next((i for i, line in enumerate(text) if _AGENT_REPORT.search(line)), len(text))
    signals = [int(m.group(1)) for line in text[cut:] if (m := _KILLED.search(line))]
    if signal.SIGKILL in signals:
        return _killed_reason(signal.SIGKILL)
    first = first_error(errors)
    if first:
        return first
    if signals:
        return _killed_reason(signals[-1])
    causes = [m.group(1) for line in text[:cut] if (m := _CAUSE.match(line.strip()))]
    return causes[-1][:500] if causes else None


# What a worker prints when this machine cannot run GPU work at all, whatever the configuration: each further
# configuration would fail the same way, seconds each (a notebook without a GPU wrote 48 such rows in 4 min).
_NO_DEVICE = re.compile(r"Found no NVIDIA driver|No CUDA GPUs are available|no CUDA-capable device|"
                        r"Torch not compiled with CUDA enabled|CUDA driver version is insufficient")


def machine_cannot_run(row: dict) -> str | None:
    """The line of a failed row that says this machine can run no configuration (no driver, no GPU), or None."""
    if row.get("outcome") != "error":
        return None
    return next((line.strip() for line in str(row.get("reason") or "").splitlines() if _NO_DEVICE.search(line)),
                None)


def _merge(row: dict, result: dict) -> None:
    for key, value in result.items():
        if key not in PARENT_KEYS:
            row[key] = value


def fill_derived(row: dict, config: Config) -> None:
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


def _recover_timing(row: dict, timed: Path | None, what: str) -> bool:
    """The timing a worker kept before it was killed or stopped (``measure.worker.keep_timing``), merged into
    the row with a note of what ended the run after it; False when there is none."""
    try:
        data = json.loads(timed.read_text()) if timed is not None and timed.exists() else None
    except (OSError, json.JSONDecodeError):
        data = None
    if not isinstance(data, dict) or data.get("outcome") != "ok":
        return False
    _merge(row, data)
    row["ran"] = {**(row.get("ran") or {}), "recovered": True, "notes": [
        f"recovered from the timing the worker kept: the run ended after it ({what}), so its peak memory and any "
        "validation are not recorded"]}
    return True


def classify(row: dict, proc_rc: int | None, timed_out: bool, result: Path, log: Path,
             timeout_s: float, timed: Path | None = None, torchrun: bool = False, errors: Path | None = None) -> None:
    """The row's outcome from the launch's exit status and files; a timing kept before a kill is recovered.
    ``torchrun``: the launched process was torchrun's agent (``processes.uses_torchrun``), so an exit status
    that names a signal is the agent's own death, not a worker's (which torchrun reports in its post-mortem).
    ``errors``: the folder of the ranks' error files (``first_error``)."""
    if timed_out:
        if not result.exists() and _recover_timing(row, timed, f"killed at the time limit of {timeout_s:g} s"):
            return
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
        # A one-process worker that a signal ended says so in its exit status; torchrun's does for torchrun itself
        # (its workers' deaths are in its post-mortem).
        killed = proc_rc is not None and proc_rc < 0
        what = ("ended by a signal" if killed else f"exit status {proc_rc}") + ("" if data else ", no result file")
        agent = "torchrun, which started and watched the workers,"
        cause = _killed_reason(-proc_rc, agent if torchrun else "a worker") if killed else failure_cause(log, errors)
        if data is None and _recover_timing(row, timed, f"{what}: {cause}" if cause else what):
            return
        row.update(outcome="error", reason=f"{what}" + (f": {cause}" if cause else "")
                   + f". Last lines of the log:\n{log_tail(log)}")
        return
    _merge(row, data)


