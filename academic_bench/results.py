"""The result row schema and the append-only store (one JSON object per line).

Each append writes the whole line with a single ``os.write`` on an ``O_APPEND`` descriptor and fsyncs it, under
an exclusive lock, so a reader never sees half a row from a live writer and a crash or kill mid-sweep loses at
most the row being written. A line torn anyway (a killed writer on a file system without atomic appends, a
full disk) can only be the last line: loading ignores it with a warning, and the next append removes it
first, so it never glues itself to a good row. Any other malformed line stops the load with an error naming
the file and line: the store holds evidence, and a silently skipped row is a lost measurement.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Container, Iterable, Mapping

from .env import REPO_ROOT, capture_env

SCHEMA = 1
# The revision of the timing engine that made a row (its ``engine`` key; a row without one is revision 1). A
# correction of the engine bumps it, and ``set_aside_reason`` names the older rows it invalidates, so that every
# reader sets them aside while the evidence files keep them as they were written.
#   1: DeepSpeed counted its own accumulation boundary (engine built with 2 accumulation steps, timed phases
#      of 2 accumulating micro-steps, a boundary one and an optimizer step), which drifted against the phases.
#   2: every micro-step's boundary is set explicitly; DeepSpeed's engine has the real accumulation count.
#   3: each phase ends when the device has finished the work of every stream (host work between phases counts),
#      and the first accumulating micro-step after an optimizer step is a phase of its own (under DeepSpeed's
#      offload it copies gradients out where the later ones add to them, so averaging them under-counted).
#   4: DeepSpeed ZeRO-3 with offload times its steady micro-steps as one block of a real step's whole run
#      (``measure.worker.steady_block``): timed one at a time they under-counted its full accumulation.
#   5: the timed phases read their micro-batches through the sustained run's data path (a DataLoader over a small
#      pinned dataset, ``measure.worker.micro_batches``), so that the host's work for the data counts in both.
#   6: the timed phases take batches pinned in advance again (revision 5's DataLoader, inside synchronized phases,
#      exposed host work that a training run overlaps); the sustained run's DataLoader prepares its batches in
#      worker processes, as a training run does, rather than on the main thread that drives the GPU.
ENGINE_REVISION = 6
# How a configuration's attempt ended. "not run": a time budget was spent before it started, so nothing was
# measured and nothing failed (rows written before this outcome existed say "timeout" with a reason starting
# ``NOT_RUN_PREFIX``; ``status_of`` reads both the same way).
OUTCOMES = ("ok", "oom", "invalid", "error", "timeout", "unsupported", "not run")
# What a sweep may be asked to measure again (a "not run" row always is).
RETRY_OUTCOMES = ("ok", "oom", "invalid", "error", "timeout", "unsupported")
# A row's run state, the one thing readers ask of it (``status_of``): "measured" (a result, outcome ok),
# "failed" (its outcome names the kind: oom, error, timeout, unsupported), "not run", "invalid" (an excluded
# combination, classified by its rule without running), or "set aside" (a measurement a later correction of the
# engine invalidated, decided on reading: ``set_aside_reason``). A smart search's skips, with their rule, are
# kept beside the rows in ``results.skipped.jsonl``.
STATUSES = ("measured", "failed", "not run", "invalid", "set aside")
TIMINGS = ("synced", "unsynced")
MODES = ("step", "validate")
SEARCHES = ("naive", "free-lunch", "exhaustive", "smart", "single")
# Every row carries every key (None when not measured), so readers never guess which keys exist.
ROW_KEYS = ("schema", "config_id", "config", "setup", "timing", "mode", "search", "outcome", "reason",
            "micro_batch", "gas", "times", "step_time_s", "step_time_spread", "throughput", "throughput_unit",
            "model_flops_per_step", "peak_flops", "mfu", "peak_memory_gb", "predicted_memory_gb", "days",
            "gpu_days", "validate", "mbs_search", "ran", "env", "started_at", "duration_s")
# Optional keys a row may also carry: "log" (path of the configuration's full log, relative to the store).
# "engine" (``ENGINE_REVISION`` of the code that made the row). "status" (the run state when written,
# ``STATUSES``; older rows have none and are read through ``status_of``).
OPTIONAL_KEYS = ("log", "engine", "status")
NEEDS_REASON = ("invalid", "error", "timeout", "unsupported", "not run")
NUMBER_KEYS = ("step_time_s", "throughput", "model_flops_per_step", "peak_flops", "mfu", "predicted_memory_gb",
               "days", "gpu_days", "duration_s")
DEFAULT_RUNS = REPO_ROOT / "notebooks" / "runs"


class RowError(ValueError):
    """A row that does not follow the schema (the message names the file and line when loading)."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def make_row(config, *, setup: str, outcome: str, reason: str | None = None, timing: str = "synced",
             mode: str = "step", search: str = "single", **fields: Any) -> dict:
    """A complete row for ``config`` (a ``Config``): every schema key present, unmeasured ones None."""
    row: dict[str, Any] = {k: None for k in ROW_KEYS}
    row.update(schema=SCHEMA, config_id=config.id, config=config.to_dict(), setup=setup, timing=timing,
               mode=mode, search=search, outcome=outcome, reason=reason, env=capture_env(),
               started_at=now_iso(), duration_s=0.0, engine=ENGINE_REVISION)
    row.update(fields)
    return row


def written_status(outcome: str) -> str:
    """The run state a row is written with, from its outcome (``STATUSES``; "set aside" is only ever read)."""
    return {"ok": "measured", "invalid": "invalid", "not run": "not run"}.get(outcome, "failed")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def row_problems(row: Any) -> list[str]:
    """What is wrong with a row (empty when it follows the schema)."""
    if not isinstance(row, dict):
        return [f"a row must be a JSON object, got {type(row).__name__}"]
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        return [f"missing keys: {', '.join(missing)}"]
    problems = []
    if row["schema"] != SCHEMA:
        problems.append(f"schema {row['schema']!r} is not {SCHEMA}")
    for key, allowed in (("outcome", OUTCOMES), ("timing", TIMINGS), ("mode", MODES), ("search", SEARCHES)):
        if row[key] not in allowed:
            problems.append(f"{key} {row[key]!r} is not one of: {', '.join(allowed)}")
    if not isinstance(row["config_id"], str) or not row["config_id"]:
        problems.append("config_id must be a non-empty string")
    cfg = row["config"]
    if not isinstance(cfg, dict) or not {"model", "gpu", "n_gpus", "methods"} <= set(cfg):
        problems.append("config must be an object with model, gpu, n_gpus and methods")
    if not isinstance(row["setup"], str) or not row["setup"]:
        problems.append("setup must be a non-empty string")
    if row["outcome"] in NEEDS_REASON and not (isinstance(row["reason"], str) and row["reason"]):
        problems.append(f"an {row['outcome']!r} row needs a reason")
    for key in NUMBER_KEYS:
        if row[key] is not None and not _is_number(row[key]):
            problems.append(f"{key} must be a number or null, got {row[key]!r}")
    if row["outcome"] == "ok":
        if not (_is_number(row["step_time_s"]) and row["step_time_s"] > 0):
            problems.append("an 'ok' row needs a positive step_time_s")
        if not (_is_count(row["micro_batch"]) and _is_count(row["gas"])):
            problems.append("an 'ok' row needs micro_batch and gas (integers >= 1)")
    if not isinstance(row["env"], dict):
        problems.append("env must be an object")
    if "status" in row and row["outcome"] in OUTCOMES and row["status"] != written_status(row["outcome"]):
        problems.append(f"status {row['status']!r} does not match outcome {row['outcome']!r} (expected "
                        f"{written_status(row['outcome'])!r})")
    return problems


def engine_revision(row: Mapping) -> int:
    """The ``ENGINE_REVISION`` that made a row (1 for rows written before revisions were recorded)."""
    return int(row.get("engine") or 1)


SET_ASIDE = "set aside"  # how readers show a row whose measurement a later correction invalidated
MISALIGNED_DEEPSPEED = ("set aside: DeepSpeed's own accumulation boundary drifted against the timed phases "
                        "(engine revision 1), so its step time is not this configuration's")
AVERAGED_FIRST_MICRO_STEP = ("set aside: DeepSpeed's first accumulating micro-step after an optimizer step was "
                             "averaged with the later ones, and its side streams ended outside the timed phases "
                             "(engine revision 2)")
SHORT_PATTERN_ZERO3_OFFLOAD = ("set aside: DeepSpeed ZeRO-3 with offload timed its steady micro-steps one at a time, "
                               "which under-counts its whole accumulation (engine revision 3)")
EXPOSED_DATA_PATH = ("set aside: its timed phases collated and pinned each batch on the main thread inside "
                     "synchronized phases, host work that a training run overlaps and that offload's busy host "
                     "makes slow (engine revision 5)")


def set_aside_reason(row: Mapping) -> str | None:
    """Why a measured row must not be used as a result (None when it may): a DeepSpeed ZeRO measurement made
    before engine revision 3, a ZeRO-3 + offload one made before revision 4 with more than 3 accumulation steps
    (revision 4 times the same work below that: ``measure.worker.steady_block``), or a synchronized one with
    offload made by revision 5 (``ENGINE_REVISION``). Its
    micro-batch search ran whole aligned steps, so failures (out of memory) and the micro-batch stand; only its
    timings are void. The other methods' timings passed the check against sustained training under revisions 1
    and 2 (the validation net), so they stand; so do the unsynchronized timings of revision 2 on (the paper's
    method, which the corrections left as it was)."""
    methods = (row.get("config") or {}).get("methods") or {}
    sharding = str(methods.get("sharding") or "")
    revision = engine_revision(row)
    if row.get("outcome") == "ok" and revision == 5 and methods.get("offload") and row.get("timing") != "unsynced":
        return EXPOSED_DATA_PATH
    if row.get("outcome") != "ok" or not sharding.startswith("zero"):
        return None
    if revision >= 2 and row.get("timing") == "unsynced":
        return None
    if revision == 3 and sharding == "zero3" and methods.get("offload") and (row.get("gas") or 0) > 3:
        return SHORT_PATTERN_ZERO3_OFFLOAD
    return {1: MISALIGNED_DEEPSPEED, 2: AVERAGED_FIRST_MICRO_STEP}.get(revision)


def fastest_row(rows: Iterable[dict], keep: Callable[[dict], bool] = lambda r: True) -> dict | None:
    """Among the measured rows (``status_of``) that ``keep`` accepts, the one with the shortest step (ties: the
    lower configuration id); None when there is none. The one definition of "the fastest row" over stored
    rows (frames use ``analysis.fastest``)."""
    measured = [r for r in rows if status_of(r) == "measured" and keep(r)]
    return min(measured, key=lambda r: (r["step_time_s"], r["config_id"]), default=None)


def validation_class_of(row: Mapping) -> str:
    """The ``methods.validation_class`` of a row's configuration."""
    from .methods import Methods, validation_class

    return validation_class(Methods.from_dict(row["config"]["methods"]), row["config"]["n_gpus"])


def check_row(row: Any, where: str = "row") -> None:
    problems = row_problems(row)
    if problems:
        raise RowError(f"{where}: " + "; ".join(problems))


def _clean(value: Any) -> Any:
    """NaN and infinities become null: the store is strict JSON that any reader can parse."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _parse_object(data: bytes) -> dict | None:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def _seal_torn_tail(fd: int, path: Path) -> None:
    """Make the file end at a line boundary before appending (a torn fragment would corrupt the next row)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = max(0, size - (1 << 20))
    chunk = os.pread(fd, size - start, start)
    cut = start + chunk.rfind(b"\n") + 1 if b"\n" in chunk else 0
    fragment = os.pread(fd, size - cut, cut)
    if _parse_object(fragment) is not None:
        os.write(fd, b"\n")  # a whole row that lost only its newline
        return
    warnings.warn(f"{path}: removing a torn last line ({len(fragment)} bytes) left by an interrupted write",
                  stacklevel=3)
    os.ftruncate(fd, cut)


def append_line(path: str | os.PathLike, data: bytes) -> None:
    """Append one complete line atomically (single write on O_APPEND, fsync, exclusive lock)."""
    path = Path(path)
    if not data.endswith(b"\n") or b"\n" in data[:-1]:
        raise ValueError("append_line writes exactly one line ending in a newline")
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)  # read: to find a torn tail
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _seal_torn_tail(fd, path)
        written = os.write(fd, data)
        if written != len(data):  # only on a full disk or similar; the next append seals the fragment
            raise OSError(f"{path}: short write ({written} of {len(data)} bytes)")
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock
    if created:  # make the new file's directory entry durable too
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def read_lines(path: str | os.PathLike) -> Iterable[tuple[int, dict]]:
    """(line number, object) for each line; a torn last line is skipped with a warning, other bad lines raise."""
    path = Path(path)
    data = path.read_bytes()
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        obj = _parse_object(line)
        if obj is None:
            raise RowError(f"{path}:{lineno}: not a JSON object: {line[:120].decode('utf-8', 'replace')!r}")
        yield lineno, obj
    if torn.strip():
        obj = _parse_object(torn)
        if obj is None:
            warnings.warn(f"{path}:{len(lines) + 1}: ignoring a torn last line ({len(torn)} bytes) left by an "
                          "interrupted write", stacklevel=2)
        else:
            yield len(lines) + 1, obj


class ResultStore:
    """Append-only JSON-lines file of result rows, validated on write and on load."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def append(self, row: dict) -> None:
        """Validate and append ``row``, with its run state written from its final outcome (``written_status``)."""
        if row.get("outcome") in OUTCOMES:
            row = {**row, "status": written_status(row["outcome"])}
        check_row(row, where=f"refusing to append to {self.path}")
        line = json.dumps(_clean(row), allow_nan=False, separators=(",", ":"), default=str) + "\n"
        append_line(self.path, line.encode("utf-8"))

    def rows(self) -> list[dict]:
        if not self.path.exists():
            return []
        rows = []
        for lineno, row in read_lines(self.path):
            check_row(row, where=f"{self.path}:{lineno}")
            rows.append(row)
        return rows

    def done_ids(self, timing: str | None = None, mode: str | None = None) -> set[str]:
        """Ids of configurations with a row (of this timing and mode when given) whose latest row is not set
        aside: what a resumed sweep skips."""
        return {r["config_id"] for r in latest_rows(self.rows())
                if (timing is None or r["timing"] == timing) and (mode is None or r["mode"] == mode)
                and not set_aside_reason(r)}

    def __len__(self) -> int:
        return len(self.rows())

    def __repr__(self) -> str:
        return f"ResultStore({str(self.path)!r})"


NOT_RUN_PREFIX = "not run:"


def status_of(row: Mapping) -> str:
    """A row's run state (``STATUSES``): the one place that reads it. Rows written before ``status`` existed are
    upgraded here (a "timeout" whose reason starts ``NOT_RUN_PREFIX`` is "not run"); the files stay as written."""
    outcome = row["outcome"]
    if outcome == "timeout" and str(row.get("reason") or "").startswith(NOT_RUN_PREFIX):
        return "not run"
    status = written_status(outcome)
    if status == "measured" and set_aside_reason(row):
        return SET_ASIDE
    return status


def state_of(row: Mapping, status: str | None = None) -> str:
    """The row's outcome for people: its run state where that is no measurement and no failure ('not run',
    'set aside'), else the outcome itself ('ok', or the kind of failure). ``status``: ``status_of(row)``, when
    the caller already has it."""
    status = status or status_of(row)
    return status if status in ("not run", SET_ASIDE) else row["outcome"]


def is_not_run(row: Mapping) -> bool:
    """A row recording that a time budget was spent before the configuration started: nothing was measured,
    so every later sweep launches it again."""
    return status_of(row) == "not run"


def skip_key(obj: Mapping) -> tuple:
    """What ties a smart search's skip (``results.skipped.jsonl``) to a 'not run' row it settles: setup,
    configuration, search, timing and mode. The search matters: a configuration smart skipped is one an
    exhaustive search must still measure, so the exhaustive row a budget left stays unfinished."""
    return (obj.get("setup"), obj["config_id"], obj.get("search") or "smart", obj["timing"], obj["mode"])


def latest_skips(entries: Iterable[Mapping]) -> dict[tuple, Mapping]:
    """Each configuration's latest smart-search skip (entries of ``results.skipped.jsonl``), by ``skip_key``."""
    return {skip_key(s): s for s in entries}


def is_settled(row: Mapping, skipped: Container[tuple]) -> bool:
    """A 'not run' row whose configuration a smart search then skipped (``skipped``: the ``skip_key`` of each
    entry of ``results.skipped.jsonl``, or ``latest_skips``): nothing is left to run."""
    return is_not_run(row) and skip_key(row) in skipped


def skip_is_latest(skip: Mapping, row: Mapping | None) -> bool:
    """Whether a smart search's skip is the latest word on its configuration: it has no row, only a 'not run'
    row, or a row that started before the skip (a retry the search then decided against)."""
    return row is None or is_not_run(row) or str(skip.get("at") or "") > str(row.get("started_at") or "")


def latest_rows(rows: Iterable[dict]) -> list[dict]:
    """The last row per (setup, configuration, timing, mode): the store is append-only, so a re-measurement
    (a retried failure, a 'not run' row of a spent time budget) supersedes the earlier row, and a row a correction
    of the engine set aside supersedes it too: the configuration is measured again by the current engine."""
    last = {(r.get("setup"), r["config_id"], r["timing"], r["mode"]): r for r in rows}
    return list(last.values())


def synced_micro_batches(rows: Iterable[dict]) -> dict[str, int]:
    """The micro-batch each configuration ran at in its latest synced measurement. An unsynced timing of the
    same configuration runs at it, so that the two timings compare the same work (and no search repeats)."""
    return {r["config_id"]: r["micro_batch"] for r in latest_rows(rows)
            if r["timing"] == "synced" and r["mode"] == "step" and r["outcome"] == "ok" and r["micro_batch"]}


PROFILES_FILE = "profiles.jsonl"


def append_profile(path: str | os.PathLike, config, profile: dict, *, setup: str) -> dict:
    """Append one ``measure.profile.profile_step`` result, with its configuration, setup, machine and time."""
    entry = {"schema": SCHEMA, "config_id": config.id, "config": config.to_dict(), "setup": setup, **profile,
             "env": capture_env(), "at": now_iso()}
    append_line(path, (json.dumps(entry, separators=(",", ":"), default=str) + "\n").encode())
    return entry


def _every_setup(root: str | os.PathLike | None, name: str) -> list[dict]:
    """The lines of ``<root>/<setup>/<name>`` for every setup (root: notebooks/runs), setups in name order."""
    root = Path(root) if root is not None else DEFAULT_RUNS
    return [obj for path in sorted(root.glob(f"*/{name}")) for _, obj in read_lines(path)]


def load_profiles(root: str | os.PathLike | None = None) -> list[dict]:
    """Every profile of the shipped runs: ``<root>/<setup>/profiles.jsonl``."""
    return _every_setup(root, PROFILES_FILE)


def load_skipped(root: str | os.PathLike | None = None) -> list[dict]:
    """What the smart searches of every shipped run skipped, and why: ``<root>/<setup>/results.skipped.jsonl``."""
    return _every_setup(root, "results.skipped.jsonl")


PLANNED_FILE = "planned-setups.csv"
PLANNED_COLUMNS = ("setup", "gpu", "n_gpus", "note")


def load_planned(root: str | os.PathLike | None = None) -> dict[str, dict]:
    """The study's planned hardware setups, ``<root>/planned-setups.csv`` (setup, gpu, n_gpus, note), by setup:
    a planned setup with no run yet is shown as missing, not left out. Empty without the file; a malformed
    file stops with its name, line and the valid choices."""
    import csv

    from .hardware import catalog

    path = (Path(root) if root is not None else DEFAULT_RUNS) / PLANNED_FILE
    if not path.exists():
        return {}
    gpus = sorted(catalog())
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != PLANNED_COLUMNS:
            raise ValueError(f"{path}: the header must be {','.join(PLANNED_COLUMNS)}, not "
                             f"{','.join(reader.fieldnames or ()) or 'empty'}")
        planned: dict[str, dict] = {}
        for line, rec in enumerate(reader, start=2):
            if rec["gpu"] not in gpus:
                raise ValueError(f"{path}, line {line}: unknown GPU {rec['gpu']!r}; valid: {', '.join(gpus)}")
            if not (rec["n_gpus"] or "").isdigit() or int(rec["n_gpus"]) < 1:
                raise ValueError(f"{path}, line {line}: n_gpus must be a whole number of at least 1, "
                                 f"not {rec['n_gpus']!r}")
            if not rec["setup"] or rec["setup"] in planned:
                raise ValueError(f"{path}, line {line}: each setup needs a name of its own, not {rec['setup']!r}")
            planned[rec["setup"]] = {"gpu": rec["gpu"], "n_gpus": int(rec["n_gpus"]), "note": rec["note"] or ""}
    return planned


def load_runs(root: str | os.PathLike | None = None) -> list[dict]:
    """Validated rows of every shipped run: ``<root>/<setup>/results.jsonl`` (root: notebooks/runs)."""
    root = Path(root) if root is not None else DEFAULT_RUNS
    rows: list[dict] = []
    for path in sorted(root.glob("*/results.jsonl")):
        rows.extend(ResultStore(path).rows())
    return rows
