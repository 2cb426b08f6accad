"""Result rows: their schema (``schema``), their run state (``state``: the one reader of a row's status) and the
append-only stores that keep them (``store``). Every public name is importable from here."""
from __future__ import annotations

from .schema import (DEFAULT_RUNS, ENGINE_REVISION, ENGINE_REVISIONS, MODES, NEEDS_REASON, NUMBER_KEYS, OPTIONAL_KEYS, OUTCOMES,
                     RETRY_CHOICES, RETRY_OUTCOMES, ROW_KEYS, SCHEMA, SEARCHES, STATUSES, TIMINGS, UNCOMMITTED, RowError, check_row, make_row,
                     now_iso, row_problems, written_status)
from .state import (AVERAGED_FIRST_MICRO_STEP, EXPOSED_DATA_PATH, MISALIGNED_DEEPSPEED, NOT_RUN_PREFIX, SET_ASIDE,
                    SHORT_PATTERN_ZERO3_OFFLOAD, engine_revision, fastest_row, is_not_run, is_settled, is_uncommitted, latest_rows,
                    latest_skips, rows_to_read, set_aside_reason, skip_is_latest, skip_key, state_of, status_of, synced_micro_batches,
                    validation_class_of)
from .store import (PLANNED_COLUMNS, PLANNED_FILE, PROFILES_FILE, ResultStore, append_line, append_profile, json_safe,
                    load_planned, load_profiles, load_runs, load_skipped, read_lines, skipped_path)

__all__ = ["AVERAGED_FIRST_MICRO_STEP", "DEFAULT_RUNS", "ENGINE_REVISION", "ENGINE_REVISIONS", "EXPOSED_DATA_PATH",
           "MISALIGNED_DEEPSPEED", "MODES", "NEEDS_REASON", "NOT_RUN_PREFIX", "NUMBER_KEYS", "OPTIONAL_KEYS",
           "OUTCOMES", "PLANNED_COLUMNS", "PLANNED_FILE", "PROFILES_FILE", "RETRY_CHOICES", "RETRY_OUTCOMES", "ROW_KEYS",
           "ResultStore", "RowError", "SCHEMA", "SEARCHES", "SET_ASIDE", "SHORT_PATTERN_ZERO3_OFFLOAD", "STATUSES",
           "TIMINGS", "UNCOMMITTED", "append_line", "append_profile", "check_row", "engine_revision", "fastest_row", "is_not_run",
           "is_settled", "is_uncommitted", "json_safe", "latest_rows", "latest_skips", "load_planned", "load_profiles", "load_runs",
           "load_skipped", "make_row", "now_iso", "read_lines", "row_problems", "rows_to_read", "set_aside_reason", "skip_is_latest",
           "skip_key", "skipped_path", "state_of", "status_of", "synced_micro_batches", "validation_class_of", "written_status"]
