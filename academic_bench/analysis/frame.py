"""Loading the shipped runs into one frame: one row per result row, flattened into columns (``runs_frame``).

Every function of ``analysis`` starts from this frame and works on an empty one too (no runs yet), returning an
empty frame with its usual columns, so that the book builds and says plainly that a setup has no data.
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from ..catalog.config import run_name
from ..catalog.methods import Methods
from ..measure.images import FP32_IMAGES
from ..results import (MFU_IMPLAUSIBLE, SET_ASIDE, engine_revision, recounted, rejection, set_aside_reason, state_of,
                       status_of, validation_class_of)

SETTING = ["model", "gpu", "n_gpus"]
# The paper's switches, then those beyond the paper (``methods.BEYOND_SWITCHES``; ``beyond_paper`` says whether any is on).
METHOD_COLUMNS = ["compile", "kernels", "tf32", "checkpointing", "sharding", "offload", "bf16_weights", "fused_ce",
                  "fp8"]
METHOD_CLASSES = ("naive", "free-lunch", "memory-saving")
PHASES = ("accumulate_first", "accumulate", "boundary", "optimizer")
COLUMNS = [
    "setup", "config_id", "model", "gpu", "n_gpus", "nodes", "tiny", "methods_label", "method_class",
    *METHOD_COLUMNS, "beyond_paper", "search", "timing", "mode", "status", "outcome", "reason", "micro_batch", "gas",
    "step_time_s", "step_lo_s", "step_hi_s", "throughput", "throughput_unit", "model_flops_per_step",
    "peak_flops", "mfu", "peak_memory_gb", "peak_reserved_gb", "predicted_memory_gb", "days", "gpu_days",
    *[f"{p}_{s}" for p in PHASES for s in ("median_s", "min_s", "max_s", "n")],
    "validate_steps", "sustained_step_s", "predicted_step_s", "validate_rel_error", "validate_images",
    "attention", "compiled", "parallel", "kernels_ran", "gpu_name", "device", "torch", "started_at", "duration_s",
    "mbs_search", "engine", "validation_class",
]


# --- loading ---------------------------------------------------------------------------------------------

def _flat(row: dict, checked: bool = False) -> dict:
    status = status_of(row)
    # A measured row whose figures its phases do not give, with an implausible MFU or from another GPU is set
    # aside with what is wrong (``results.rejection``): shown as such, never a result.
    rejected = rejection(row) if checked and status == "measured" else None
    if rejected:
        status = SET_ASIDE
    cfg = row.get("config") or {}
    methods = cfg.get("methods") or {}
    m = Methods.from_dict(methods)
    spread = row.get("step_time_spread") or [None, None]
    peaks = [p for p in (row.get("peak_memory_gb") or []) if p is not None]
    val = row.get("validate") or {}
    ran = row.get("ran") or {}
    reserved = [p for p in (ran.get("peak_reserved_gb") or []) if p is not None]
    env = row.get("env") or {}
    out = {
        "setup": row.get("setup"), "config_id": row.get("config_id"), "model": cfg.get("model"),
        "gpu": cfg.get("gpu"), "n_gpus": cfg.get("n_gpus"), "nodes": cfg.get("nodes", 1),
        "tiny": bool(cfg.get("tiny", False)), "methods_label": m.label(), "method_class": method_class(m),
        **{c: getattr(m, c) for c in METHOD_COLUMNS}, "beyond_paper": m.beyond_paper,
        **{k: row.get(k) for k in ("search", "timing", "mode", "outcome", "reason", "micro_batch", "gas",
                                   "step_time_s", "throughput", "throughput_unit", "model_flops_per_step",
                                   "peak_flops", "mfu", "predicted_memory_gb", "days", "gpu_days",
                                   "started_at", "duration_s")},
        "step_lo_s": spread[0], "step_hi_s": spread[1], "peak_memory_gb": max(peaks) if peaks else None,
        "peak_reserved_gb": max(reserved) if reserved else None,
        "validate_steps": val.get("steps"), "sustained_step_s": val.get("sustained_step_s"),
        "predicted_step_s": val.get("predicted_step_s"), "validate_rel_error": val.get("rel_error"),
        "validate_images": _images_fed(row, val),
        "attention": ran.get("attention"), "compiled": ran.get("compiled"), "parallel": ran.get("parallel"),
        "kernels_ran": ", ".join(ran.get("kernels") or []) or None,
        "gpu_name": env.get("gpu_name"), "device": env.get("device"), "torch": env.get("torch"), "mbs_search": row.get("mbs_search") or None,
        "engine": engine_revision(row), "validation_class": validation_class_of(row), "status": status,
        # A row set aside stays in the frame, so that coverage and counts say what was set aside and why (never a
        # result); an older row a budget never started was stored as a timeout, but nothing timed out.
        "outcome": state_of(row, status),
    }
    # The model FLOPs and MFU of today's count of the model: a row keeps the count it was written with.
    out.update(recounted(row))
    if status == SET_ASIDE:
        out["reason"] = rejected or set_aside_reason(row)
    for phase in PHASES:
        t = (row.get("times") or {}).get(phase) or {}
        for stat in ("median", "min", "max"):
            out[f"{phase}_{stat}_s"] = t.get(stat)
        out[f"{phase}_n"] = t.get("n")
    return out


def method_class(m: Methods) -> str:
    """'naive' (nothing on), 'free-lunch' (only compile/kernels/TF32) or 'memory-saving' (any of the rest)."""
    if m.checkpointing or m.sharding != "none" or m.offload:
        return "memory-saving"
    return "free-lunch" if (m.compile or m.kernels or m.tf32) else "naive"


def frame_from_rows(rows: list[dict], checked: bool = False) -> pd.DataFrame:
    """The flat frame for result rows (dicts in the shared row schema). ``checked``: each measured row's figures
    are re-derived first, and a row that fails is set aside (``results.rejection``), as ``runs_frame`` does for
    the stored runs."""
    df = pd.DataFrame([_flat(r, checked) for r in rows], columns=COLUMNS)
    for col in ("n_gpus", "micro_batch", "gas", "nodes"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    numeric = ["step_time_s", "step_lo_s", "step_hi_s", "throughput", "model_flops_per_step", "peak_flops", "mfu",
               "peak_memory_gb", "predicted_memory_gb", "days", "gpu_days", "sustained_step_s",
               "predicted_step_s", "validate_rel_error", "duration_s",
               *[f"{p}_{s}" for p in PHASES for s in ("median_s", "min_s", "max_s")]]
    for col in numeric:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    return df


def _images_fed(row: dict, val: dict) -> str | None:
    """How a validation's sustained run fed an image model's images (``measure.data.images_fed``): as its row
    says, or fp32 for validations made before the row said it (the engine then fed fp32 images); None for a model
    of tokens or a row without a sustained run."""
    if not val.get("sustained_step_s") or row.get("throughput_unit") != "images/s":
        return None
    return val.get("images") or FP32_IMAGES


RUNS_ENV = "ACADEMIC_BENCH_RUNS"  # another folder of runs to read instead (previewing the book with other data)


def runs_root(root: str | Path | None = None) -> Path:
    """The folder of runs: ``root``, else $ACADEMIC_BENCH_RUNS, else the shipped ``notebooks/runs``."""
    from ..results import DEFAULT_RUNS

    return Path(root or os.environ.get(RUNS_ENV) or DEFAULT_RUNS)


def runs_frame(root: str | Path | None = None) -> pd.DataFrame:
    """One row per configuration, timing and mode of every shipped run (validated on load, each measured row's
    figures re-derived from its phases: ``frame_from_rows(checked=True)``; the latest row where a configuration
    was measured again, and each engine revision's latest validation: ``rows_to_read``); empty with all columns
    when none exist."""
    from ..results import load_runs, rows_to_read

    return frame_from_rows(rows_to_read(load_runs(runs_root(root))), checked=True)


def setups(df: pd.DataFrame, root: str | Path | None = None) -> pd.DataFrame:
    """Per hardware setup: the GPU it reported, the lines of its results file (``in_file``: every row ever
    appended), how many of them are the latest of their configuration, timing and mode (``rows``: what the tables
    read), how many of those ran to the end (``ok``), and when it ran. Tiny rows are workshop runs: their models
    are named as tiny and their machine as the device they ran on (``config.run_name``), never by a GPU's name."""
    cols = ["setup", "gpu_name", "in_file", "rows", "ok", "models", "first", "last"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    tiny = df["tiny"].astype(bool)
    machine = [run_name("models", g, n, True, d) for g, n, d in zip(df["gpu"], df["n_gpus"], df["device"])]
    df = df.assign(model=df["model"].where(~tiny, "tiny " + df["model"].astype(str)),
                   gpu_name=df["gpu_name"].where(~tiny, machine))
    # The frame holds the latest rows, then each configuration's earlier validations (``results.rows_to_read``).
    latest = df.drop_duplicates(["setup", "config_id", "timing", "mode"], keep="first")
    g = latest.groupby("setup", sort=True)
    out = pd.DataFrame({
        "gpu_name": g["gpu_name"].agg(lambda s: ", ".join(sorted({str(x) for x in s.dropna()}))),
        "rows": g.size(), "ok": g["outcome"].agg(lambda s: int((s == "ok").sum())),
        "models": g["model"].agg(lambda s: ", ".join(sorted(set(s.dropna())))),
        "first": df.groupby("setup")["started_at"].min(), "last": df.groupby("setup")["started_at"].max()}).reset_index()
    out["in_file"] = [_lines_in(runs_root(root) / s / "results.jsonl") for s in out["setup"]]
    return out[cols]


def _lines_in(path: Path) -> int | None:
    """The rows of a results file: its non-empty lines (None where the file is not there)."""
    return sum(1 for line in path.read_text().splitlines() if line.strip()) if path.is_file() else None
