"""The result row's schema: the keys every row carries, the values they may take, the engine revision that
made it, and a complete row for a configuration."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

from ..catalog.config import run_name
from ..catalog.env import REPO_ROOT, capture_env

SCHEMA = 1
# The revision of the timing engine that made a row (its ``engine`` key; a row without one is revision 1). A
# correction of the engine bumps it, and ``set_aside_reason`` names the older rows it invalidates, so that every
# reader sets them aside while the evidence files keep them as they were written. What each revision changed (the
# book's changelog reads it):
ENGINE_REVISIONS = {
    1: "DeepSpeed counted its own accumulation boundary (engine built with 2 accumulation steps, timed phases of 2 "
       "accumulating micro-steps, a boundary one and an optimizer step), which drifted against the phases.",
    2: "Every micro-step's boundary is set explicitly; DeepSpeed's engine has the real accumulation count.",
    3: "Each phase ends when the device has finished the work of every stream (host work between phases counts), "
       "and the first accumulating micro-step after an optimizer step is a phase of its own (under DeepSpeed's "
       "offload it copies gradients out where the later ones add to them, so averaging them under-counted).",
    4: "DeepSpeed ZeRO-3 with offload times its steady micro-steps as one block of a real step's whole run "
       "(measure.timing.steady_block): timed one at a time they under-counted its full accumulation.",
    5: "The timed phases read their micro-batches through the sustained run's data path (a DataLoader over a small "
       "pinned dataset, measure.data.micro_batches), so that the host's work for the data counts in both.",
    6: "The timed phases take batches pinned in advance again (revision 5's DataLoader, inside synchronized "
       "phases, exposed host work that a training run overlaps); the sustained run's DataLoader prepares its "
       "batches in worker processes, as a training run does, rather than on the main thread that drives the GPU.",
}
# Not a revision: the sustained run feeds an image model uint8 images normalised on the GPU (``measure.data``), where
# it fed fp32 images. The timed phases, and so every measured figure, did not change; only a validation's sustained
# steps did, and each validation row says how its images came (``validate.images``; ``measure.images``), so that a
# reader tells the two apart without setting any measured row aside.
ENGINE_REVISION = max(ENGINE_REVISIONS)
# How a configuration's attempt ended. "not run": a time budget was spent before it started, so nothing was
# measured and nothing failed (rows written before this outcome existed say "timeout" with a reason starting
# ``NOT_RUN_PREFIX``; ``status_of`` reads both the same way).
OUTCOMES = ("ok", "oom", "invalid", "error", "timeout", "unsupported", "not run")
# What a sweep may be asked to measure again (a "not run" row always is).
RETRY_OUTCOMES = ("ok", "oom", "invalid", "error", "timeout", "unsupported")
# What a sweep's ``retry`` may name: those outcomes, and "uncommitted": rows whose environment names no commit, so
# that the code which made them cannot be named (``state.is_uncommitted``; ``check-run`` reports them).
UNCOMMITTED = "uncommitted"
# And "predicted-stop": measured rows whose micro-batch search stopped on the memory model's prediction, never
# trying twice the size it chose though the batch allowed it (``state.stopped_on_prediction``); the search now
# stops only at a measured out of memory, so measured again they may find a larger micro-batch.
PREDICTED_STOP = "predicted-stop"
# And "memory-wall": measured rows made before the engine counted the caching allocator's retries, whose peak
# reservation came near the GPU's capacity (``state.unchecked_at_wall``); measured again, a size timed at the wall
# is checked against half of it (``measure.worker.time_below_the_wall``).
MEMORY_WALL = "memory-wall"
# And "unvalidated": measured rows made by an older engine revision that never validated their method class on
# their setup, so no reader counts them (``analysis.counted.unvalidated_rows``); measured again, the current
# revision's validation speaks for them.
UNVALIDATED = "unvalidated"
# And "all": a search run again from scratch, as in an empty store: every configuration it plans is decided again
# (a smart search's rules from what this run measures alone; an invalid combination keeps the row its rule gave),
# and its rows and skips are added beside the old ones,
# so that the store's latest word on each configuration is this run's. A rule changed since the store's search
# ran is judged by what it now costs, not by what the old rules measured. ``remeasure`` selects rows; this is none.
ALL = "all"
RETRY_CHOICES = (*RETRY_OUTCOMES, UNCOMMITTED, PREDICTED_STOP, MEMORY_WALL, UNVALIDATED, ALL)
# What ``remeasure`` may select rows by: every choice but a search run from scratch.
REMEASURE_CHOICES = tuple(c for c in RETRY_CHOICES if c != ALL)
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
# ``STATUSES``; older rows have none and are read through ``status_of``). "wall_breakdown" (seconds of
# ``duration_s`` per phase of the configuration's launch, ``measure.wall.PHASES``; rows made before it was recorded
# have none: it adds a record and changes no measured figure, so the engine revision stays).
OPTIONAL_KEYS = ("log", "engine", "status", "wall_breakdown")
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


def run_label(row: Mapping) -> str:
    """How every output names the run a row records (``catalog.config.run_name``, as ``bench`` prints it):
    'pythia-1b on 1 x h100-80gb'; a tiny variant as a workshop run on the device it ran on (``env.device``, where
    the launcher recorded it), never with the name of the GPU its configuration names."""
    c = row.get("config") or {}
    return run_name(c.get("model"), c.get("gpu"), c.get("n_gpus"), bool(c.get("tiny")),
                    (row.get("env") or {}).get("device"))


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


def check_row(row: Any, where: str = "row") -> None:
    problems = row_problems(row)
    if problems:
        raise RowError(f"{where}: " + "; ".join(problems))
