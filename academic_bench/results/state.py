"""A row's run state, read in one place (``status_of``): measured, failed, not run, invalid, or set aside by a
later correction of the engine; which row of a configuration is the latest; how a smart search's skips settle
rows a time budget never started."""
from __future__ import annotations

from typing import Callable, Container, Iterable, Mapping

from ..catalog.config import Config
from ..catalog.hardware import get_gpu
from .schema import written_status


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
    (revision 4 times the same work below that: ``measure.timing.steady_block``), or a synchronized one with
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
    from ..catalog.methods import Methods, validation_class

    return validation_class(Methods.from_dict(row["config"]["methods"]), row["config"]["n_gpus"])



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


def is_uncommitted(row: Mapping) -> bool:
    """A row whose environment records no commit: the code that made it cannot be named."""
    return not (row.get("env") or {}).get("git_commit")


def stopped_on_prediction(row: Mapping) -> bool:
    """A measured row whose micro-batch search ended without trying twice the size it chose, though that size
    divides the per-GPU batch: the search stopped on the memory model's prediction (searches before the search
    stopped only at a measured out of memory noted "micro-batch N not tried: the memory model predicts ..."),
    so a larger micro-batch may fit. Read from the search's log alone: a row timed at a given micro-batch (no
    search log) is not one; a row whose timed run fell back to half its size has the failed size in its log."""
    log, mbs, gas = row.get("mbs_search"), row.get("micro_batch"), row.get("gas")
    if row.get("outcome") != "ok" or not log or not mbs or not gas or (row.get("config") or {}).get("micro_batch"):
        return False
    return gas % 2 == 0 and not any(t.get("micro_batch") == 2 * mbs for t in log)


# The caching allocator retries (frees its whole cache and asks CUDA again) only once its reservation nears the
# device's capacity; a row that reserved this share of its GPU's memory or more may have been timed at the wall.
WALL_SHARE = 0.95


def gpu_capacity_gb(gpu: str) -> float | None:
    """A catalog GPU's memory in GB (10^9 bytes, as the rows' peaks are written); None for a GPU not in it."""
    try:
        return get_gpu(gpu).memory_gb * 2**30 / 1e9
    except (KeyError, ValueError):
        return None


def reserved_share(row: Mapping) -> float | None:
    """The row's highest peak reservation over its GPU's memory (None where either is unknown)."""
    reserved = [g for g in (row.get("ran") or {}).get("peak_reserved_gb") or [] if g is not None]
    capacity = gpu_capacity_gb((row.get("config") or {}).get("gpu") or "")
    return max(reserved) / capacity if reserved and capacity else None


def unchecked_at_wall(row: Mapping) -> bool:
    """A measured synced row whose micro-batch the search chose, made before the engine counted the allocator's
    retries while timing (its ``ran`` has no ``alloc_retries``), that reserved at least ``WALL_SHARE`` of its GPU's
    memory at a micro-batch whose half the engine could time: it may have been timed at the memory wall, where
    half the micro-batch can run faster, and was never checked."""
    config, mbs = row.get("config") or {}, row.get("micro_batch")
    if (row.get("outcome") != "ok" or row.get("timing") != "synced" or config.get("micro_batch") or not mbs
            or "alloc_retries" in (row.get("ran") or {}) or config.get("tiny")):
        return False
    share = reserved_share(row)
    return share is not None and share >= WALL_SHARE and mbs // 2 >= smallest_micro_batch(config)


def smallest_micro_batch(config: Mapping) -> int:
    """The smallest micro-batch the engine runs for this configuration (FP8's products need whole 16-token
    tiles: ``Config.smallest_micro_batch``)."""
    try:
        return Config.from_dict(dict(config)).smallest_micro_batch
    except Exception:  # noqa: BLE001  (a configuration this catalog cannot build: no rule to apply)
        return 1


def is_not_run(row: Mapping) -> bool:
    """A row recording that a time budget was spent before the configuration started: nothing was measured,
    so every later sweep launches it again."""
    return status_of(row) == "not run"


SKIPPED = "skipped"  # how readers show a 'not run' configuration a smart search then decided against (``is_settled``)
SKIP_FIELDS = ("config_id", "timing", "mode")  # what a skip must name for ``skip_key`` to tie it to its configuration


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


def rows_to_read(rows: Iterable[dict]) -> list[dict]:
    """What readers read: ``latest_rows``, plus each configuration's latest validation by every earlier engine
    revision. A validation speaks for the revision that made it, so a later row of the same configuration (a
    validation set aside, or one by a newer engine) must not hide it: a missed validation stays a miss. A validation
    a budget never started validated nothing and speaks for no revision: a later run of it replaces it."""
    rows = list(rows)
    latest = latest_rows(rows)
    kept = {id(r) for r in latest}
    last: dict[tuple, dict] = {}
    for r in rows:
        if r["mode"] == "validate" and status_of(r) != "not run":
            last[(r.get("setup"), r["config_id"], r["timing"], engine_revision(r))] = r
    shown = {(r.get("setup"), r["config_id"], r["timing"], engine_revision(r))
             for r in latest if r["mode"] == "validate"}
    return latest + [r for key, r in last.items() if key not in shown and id(r) not in kept]


def synced_micro_batches(rows: Iterable[dict]) -> dict[str, int]:
    """The micro-batch each configuration ran at in its latest synced measurement. An unsynced timing of the
    same configuration runs at it, so that the two timings compare the same work (and no search repeats)."""
    return {r["config_id"]: r["micro_batch"] for r in latest_rows(rows)
            if r["timing"] == "synced" and r["mode"] == "step" and r["outcome"] == "ok" and r["micro_batch"]}
