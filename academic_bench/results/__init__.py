"""Result rows: their schema (``schema``), their run state (``state``: the one reader of a row's status) and the
append-only stores that keep them (``store``); beside them, the matrix-product sweep's rate by size (``gemm``).
Every public name is importable from here."""
from __future__ import annotations

from .schema import (ALL, DEFAULT_RUNS, ENGINE_REVISION, ENGINE_REVISIONS, MODES, NEEDS_REASON, NUMBER_KEYS, OPTIONAL_KEYS,
                     MEMORY_WALL, OUTCOMES, PREDICTED_STOP, REMEASURE_CHOICES, RETRY_CHOICES, RETRY_OUTCOMES, ROW_KEYS, SCHEMA, SEARCHES, STATUSES, TIMINGS,
                     UNCOMMITTED, UNVALIDATED, RowError, check_row, make_row, now_iso, row_problems, run_label, written_status)
from .state import (AVERAGED_FIRST_MICRO_STEP, EXPOSED_DATA_PATH, MISALIGNED_DEEPSPEED, NOT_RUN_PREFIX, SET_ASIDE,
                    SHORT_PATTERN_ZERO3_OFFLOAD, SKIPPED, SKIP_FIELDS, engine_revision, fastest_row, is_not_run, is_settled, is_uncommitted, latest_rows,
                    latest_skips, rows_to_read, set_aside_reason, skip_is_latest, skip_key, state_of, status_of,
                    stopped_on_prediction, synced_micro_batches, unchecked_at_wall,
                    validation_class_of)
from .gemm import GEMM_FILE, GemmCurve, gemm_curve, gemm_curves, step_ceiling
from .spread import (STEP_KINDS, Spread, as_spread, faster_beyond_spread, machine_spread, repeated_measurements,
                     step_kind, step_spreads)
from .store import (PLANNED_COLUMNS, PLANNED_FILE, PROFILES_FILE, ResultStore, append_line, append_profile, json_safe,
                    jsonl_problem, load_planned, load_profiles, load_runs, load_skipped, read_lines, skipped_path)
from .trust import (MFU_IMPLAUSIBLE, REJECTED_PREFIX, Fault, device_fault, duplicates, recounted, rejection,
                    row_faults, setup_fault, setup_refusal)

__all__ = ["ALL", "GEMM_FILE", "GemmCurve", "gemm_curve", "gemm_curves", "step_ceiling",
           "MFU_IMPLAUSIBLE", "REJECTED_PREFIX", "Fault", "device_fault", "duplicates", "recounted", "rejection",
           "row_faults", "setup_fault", "setup_refusal",
           "AVERAGED_FIRST_MICRO_STEP", "DEFAULT_RUNS", "ENGINE_REVISION", "ENGINE_REVISIONS", "EXPOSED_DATA_PATH",
           "MEMORY_WALL", "MISALIGNED_DEEPSPEED", "MODES", "NEEDS_REASON", "NOT_RUN_PREFIX", "NUMBER_KEYS", "OPTIONAL_KEYS",
           "OUTCOMES", "PLANNED_COLUMNS", "PREDICTED_STOP", "PLANNED_FILE", "PROFILES_FILE", "REMEASURE_CHOICES", "RETRY_CHOICES", "RETRY_OUTCOMES", "ROW_KEYS",
           "ResultStore", "RowError", "SCHEMA", "SEARCHES", "SET_ASIDE", "SHORT_PATTERN_ZERO3_OFFLOAD", "SKIPPED", "SKIP_FIELDS", "STATUSES", "STEP_KINDS", "Spread", "as_spread", "step_kind", "step_spreads",
           "TIMINGS", "UNCOMMITTED", "UNVALIDATED", "append_line", "append_profile", "check_row", "engine_revision", "faster_beyond_spread", "fastest_row", "is_not_run",
           "is_settled", "is_uncommitted", "json_safe", "jsonl_problem", "latest_rows", "latest_skips", "load_planned", "load_profiles", "load_runs",
           "load_skipped", "machine_spread", "make_row", "now_iso", "read_lines", "repeated_measurements", "row_problems", "rows_to_read", "run_label", "set_aside_reason", "skip_is_latest",
           "skip_key", "skipped_path", "state_of", "status_of", "stopped_on_prediction", "synced_micro_batches", "unchecked_at_wall", "validation_class_of", "written_status"]
