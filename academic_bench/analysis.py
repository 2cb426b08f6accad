"""Turning result rows into the book's tables: best settings, speed-ups, honesty checks, the paper beside ours.

Everything starts from ``runs_frame()``: one row per result row of every shipped run
(``notebooks/runs/<setup>/results.jsonl``), flattened into columns. Every function here works on an empty
frame too (no runs yet) and then returns an empty frame with its usual columns, so the book builds and says
plainly that a setup has no data.

Rows timed without synchronising with the GPU (``timing == "unsynced"``) exist only for the honesty
comparison (``sync_pairs``); every result table uses synced step-mode rows.

Paper MFU: ``model FLOPs of the whole recipe / (days x 86400 x GPUs x dense peak)``. The FLOPs follow the
project's convention where it covers the model (``estimate.model_flops_per_step``), and otherwise the paper's
own total (Figure 9(a)); the peak is the dense spec
rate of the recipe's precision (fp32 recipes at the TF32 rate in optimised runs, at the fp32 rate in naive ones).
"""
from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from .env import REPO_ROOT
from .units import SECONDS_PER_DAY
from .hardware import catalog as gpu_catalog
from .methods import Methods, exclusion_reason
from .results import SET_ASIDE, engine_revision, set_aside_reason, state_of, status_of, validation_class_of

if TYPE_CHECKING:  # imported where used: config loads torch, which the book's pages need not wait for
    from .config import Config

MFU_IMPLAUSIBLE = 0.75  # above this fraction of the dense spec peak, a timing is a measurement error
SETTING = ["model", "gpu", "n_gpus"]
METHOD_COLUMNS = ["compile", "kernels", "tf32", "checkpointing", "sharding", "offload"]
METHOD_CLASSES = ("naive", "free-lunch", "memory-saving")
PHASES = ("accumulate_first", "accumulate", "boundary", "optimizer")
COLUMNS = [
    "setup", "config_id", "model", "gpu", "n_gpus", "nodes", "tiny", "methods_label", "method_class",
    *METHOD_COLUMNS, "search", "timing", "mode", "status", "outcome", "reason", "micro_batch", "gas",
    "step_time_s", "step_lo_s", "step_hi_s", "throughput", "throughput_unit", "model_flops_per_step",
    "peak_flops", "mfu", "peak_memory_gb", "peak_reserved_gb", "predicted_memory_gb", "days", "gpu_days",
    *[f"{p}_{s}" for p in PHASES for s in ("median_s", "min_s", "max_s", "n")],
    "validate_steps", "sustained_step_s", "predicted_step_s", "validate_rel_error",
    "attention", "compiled", "parallel", "kernels_ran", "gpu_name", "torch", "started_at", "duration_s",
    "mbs_search", "engine", "validation_class",
]


# --- loading ---------------------------------------------------------------------------------------------

def _flat(row: dict) -> dict:
    status = status_of(row)
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
        **{c: getattr(m, c) for c in METHOD_COLUMNS},
        **{k: row.get(k) for k in ("search", "timing", "mode", "outcome", "reason", "micro_batch", "gas",
                                   "step_time_s", "throughput", "throughput_unit", "model_flops_per_step",
                                   "peak_flops", "mfu", "predicted_memory_gb", "days", "gpu_days",
                                   "started_at", "duration_s")},
        "step_lo_s": spread[0], "step_hi_s": spread[1], "peak_memory_gb": max(peaks) if peaks else None,
        "peak_reserved_gb": max(reserved) if reserved else None,
        "validate_steps": val.get("steps"), "sustained_step_s": val.get("sustained_step_s"),
        "predicted_step_s": val.get("predicted_step_s"), "validate_rel_error": val.get("rel_error"),
        "attention": ran.get("attention"), "compiled": ran.get("compiled"), "parallel": ran.get("parallel"),
        "kernels_ran": ", ".join(ran.get("kernels") or []) or None,
        "gpu_name": env.get("gpu_name"), "torch": env.get("torch"), "mbs_search": row.get("mbs_search") or None,
        "engine": engine_revision(row), "validation_class": validation_class_of(row), "status": status,
        # A row set aside stays in the frame, so that coverage and counts say what was set aside and why (never a
        # result); an older row a budget never started was stored as a timeout, but nothing timed out.
        "outcome": state_of(row, status),
    }
    if status == SET_ASIDE:
        out["reason"] = set_aside_reason(row)
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


def frame_from_rows(rows: list[dict]) -> pd.DataFrame:
    """The flat frame for result rows (dicts in the shared row schema)."""
    df = pd.DataFrame([_flat(r) for r in rows], columns=COLUMNS)
    for col in ("n_gpus", "micro_batch", "gas", "nodes"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
    numeric = ["step_time_s", "step_lo_s", "step_hi_s", "throughput", "model_flops_per_step", "peak_flops", "mfu",
               "peak_memory_gb", "predicted_memory_gb", "days", "gpu_days", "sustained_step_s",
               "predicted_step_s", "validate_rel_error", "duration_s",
               *[f"{p}_{s}" for p in PHASES for s in ("median_s", "min_s", "max_s")]]
    for col in numeric:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    return df


RUNS_ENV = "ACADEMIC_BENCH_RUNS"  # another folder of runs to read instead (previewing the book with other data)


def runs_root(root: str | Path | None = None) -> Path:
    """The folder of runs: ``root``, else $ACADEMIC_BENCH_RUNS, else the shipped ``notebooks/runs``."""
    from .results import DEFAULT_RUNS

    return Path(root or os.environ.get(RUNS_ENV) or DEFAULT_RUNS)


def runs_frame(root: str | Path | None = None) -> pd.DataFrame:
    """One row per configuration, timing and mode of every shipped run (validated on load; the latest row
    where a configuration was measured again); empty with all columns when none exist."""
    from .results import latest_rows, load_runs

    return frame_from_rows(latest_rows(load_runs(runs_root(root))))


def setups(df: pd.DataFrame) -> pd.DataFrame:
    """Per hardware setup: the GPU it reported, how many rows, how many ok, and when it ran."""
    cols = ["setup", "gpu_name", "rows", "ok", "models", "first", "last"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    g = df.groupby("setup", sort=True)
    out = pd.DataFrame({
        "gpu_name": g["gpu_name"].agg(lambda s: ", ".join(sorted({str(x) for x in s.dropna()}))),
        "rows": g.size(), "ok": g["outcome"].agg(lambda s: int((s == "ok").sum())),
        "models": g["model"].agg(lambda s: ", ".join(sorted(set(s.dropna())))),
        "first": g["started_at"].min(), "last": g["started_at"].max()}).reset_index()
    return out[cols]


# --- results ---------------------------------------------------------------------------------------------

def _measured(df: pd.DataFrame) -> pd.DataFrame:
    """Synchronised step-mode measurements with days (set-aside rows are not ``ok``), tiny models left out."""
    if df.empty:
        return df.copy()
    keep = (df["timing"] == "synced") & (df["mode"] == "step") & (df["outcome"] == "ok") & df["days"].notna()
    return df[keep & ~df["tiny"].astype(bool)].copy()


def results(df: pd.DataFrame) -> pd.DataFrame:
    """Rows that count as results: synchronised step-mode measurements (``_measured``) of a method class whose
    latest validation on the setup, if any, is within ``VALIDATION_TOLERANCE`` (``missed_validation``)."""
    r = _measured(df)
    missed = missed_validation(df)
    if r.empty or not missed:
        return r
    return r[[key not in missed for key in zip(r["setup"], r["validation_class"])]].copy()


def fastest(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """The row with the fewest days per group of ``by`` (ties broken by configuration id), sorted by ``by``."""
    if df.empty:
        return df.iloc[0:0].copy()
    idx = df.sort_values(["days", "config_id"]).groupby(by, sort=True).head(1).index
    return df.loc[idx].sort_values(by).reset_index(drop=True)


def best_per_setting(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, GPU, count): the synced ok step row with the fewest days, across every search."""
    return fastest(results(df), SETTING)


BREAKDOWN_COLUMNS = [*SETTING, "setup", "methods_label", "micro_batch", "gas", "step_time_s", "mfu",
                     "micro_steps_share", "sync_overhead", "optimizer_share"]


def step_breakdown(df: pd.DataFrame) -> pd.DataFrame:
    """Where the best configuration of each setting spends its step: ``micro_steps_share`` (every forward and
    backward, the synchronising one included), ``optimizer_share`` (the optimizer step), and
    ``sync_overhead``, how much slower the micro-step that synchronises gradients is than the others
    (boundary / accumulate - 1: the gradient all-reduce's exposed cost on several GPUs; with two micro-steps a
    step only the first accumulating one was timed, and stands for the others)."""
    best = best_per_setting(df)
    if best.empty:
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    best = best.assign(accumulate_median_s=best["accumulate_median_s"].fillna(best["accumulate_first_median_s"]))
    b = best.dropna(subset=["accumulate_median_s", "boundary_median_s", "optimizer_median_s"]).copy()
    b["optimizer_share"] = b["optimizer_median_s"] / b["step_time_s"]
    b["micro_steps_share"] = 1 - b["optimizer_share"]
    b["sync_overhead"] = b["boundary_median_s"] / b["accumulate_median_s"] - 1
    return b[BREAKDOWN_COLUMNS].reset_index(drop=True)


PROFILE_COLUMNS = [*SETTING, "setup", "config_id", "methods_label", "micro_batch", "gas", "kind", "seconds", "share",
                   "busy_s", "busy_share", "step_wall_s", "timer", "tiny", "at"]


def _kinds_now(profile: dict) -> dict[str, float]:
    """Seconds per kind of work, sorted with today's patterns (``measure.profile.KINDS``): the kernels the line
    names (``top``) move to the kind their name has now; the unnamed rest keeps the kind it was given."""
    from .measure.profile import KIND_NAMES, kind_of

    seconds = dict.fromkeys(KIND_NAMES, 0.0)
    for k in profile["kinds"]:
        seconds[k["kind"]] = seconds.get(k["kind"], 0.0) + k["seconds"]
    for t in profile["top"]:
        seconds[t["kind"]] -= t["seconds"]
        seconds[kind_of(t["name"])] += t["seconds"]
    return {k: max(0.0, v) for k, v in seconds.items()}  # a rounding's -1e-15 is none


def _latest_profiles(root: str | Path | None) -> list[dict]:
    """Each configuration's latest profile line (``results.load_profiles``), per setup."""
    from .results import load_profiles

    return list({(p["setup"], p["config_id"]): p for p in load_profiles(runs_root(root))}.values())


def profiles(root: str | Path | None = None) -> pd.DataFrame:
    """One row per profiled configuration and kind of work (``measure.profile``): the seconds of one training
    step the device spent on it, its ``share`` of the device's busy time, and ``busy_share``, the share of the
    step's wall time the device was busy at all. The latest profile of each configuration counts, its kernels
    sorted with today's patterns (``_kinds_now``)."""
    from .methods import Methods

    rows = [{"model": p["config"]["model"], "gpu": p["config"]["gpu"], "n_gpus": p["config"]["n_gpus"],
             "setup": p["setup"], "config_id": p["config_id"],
             "methods_label": Methods.from_dict(p["config"]["methods"]).label(), "micro_batch": p["micro_batch"],
             "gas": p["gas"], "kind": kind, "seconds": t, "share": t / p["busy_s"] if p["busy_s"] else 0.0,
             "busy_s": p["busy_s"], "busy_share": p["busy_share"], "step_wall_s": p["step_wall_s"],
             "timer": p["timer"], "tiny": bool(p["config"].get("tiny")), "at": p["at"]}
            for p in _latest_profiles(root) for kind, t in _kinds_now(p).items()]
    return pd.DataFrame(rows, columns=PROFILE_COLUMNS)


def largest_kernels(root: str | Path | None = None) -> pd.DataFrame:
    """The single kernel (or operator) that takes the most of each profiled configuration's busy time: its
    name, today's kind of work for it, and its share. The latest profile of each configuration counts."""
    from .measure.profile import kind_of

    cols = ["setup", "config_id", "model", "methods_label", "micro_batch", "timer", "tiny", "name", "kind", "share"]
    rows = [{"setup": p["setup"], "config_id": p["config_id"], "model": p["config"]["model"],
             "methods_label": Methods.from_dict(p["config"]["methods"]).label(),
             "micro_batch": p["micro_batch"], "timer": p["timer"], "tiny": bool(p["config"].get("tiny")),
             "name": p["top"][0]["name"], "kind": kind_of(p["top"][0]["name"]),
             "share": p["top"][0]["seconds"] / p["busy_s"]}
            for p in _latest_profiles(root) if p["top"] and p["busy_s"]]
    return pd.DataFrame(rows, columns=cols)


def mfu_factors(df: pd.DataFrame, prof: pd.DataFrame) -> pd.DataFrame:
    """What holds each profiled configuration's MFU below 1, as three factors whose product is its MFU (times
    the measured over the profiled step time, near 1): the share of the step the device is busy, the share of
    that busy time in the kernels that do the counted FLOPs (``measure.profile.FLOP_KINDS``), and the rate
    those kernels reach, as a share of the GPU's peak. Only profiles at the micro-batch of a measured result
    (the synced step row of the same configuration) count; GPU profiles only."""
    from .measure.profile import FLOP_KINDS

    cols = [*SETTING, "setup", "methods_label", "micro_batch", "mfu", "busy_share", "flop_share", "flop_rate",
            "other_kind", "other_share", "step_time_s", "step_wall_s", "peak_flops"]
    gpu = prof[~prof["tiny"] & (prof["timer"] == "gpu kernels")]
    if gpu.empty or df.empty:
        return pd.DataFrame(columns=cols)
    key = ["setup", "config_id", "micro_batch"]
    flop = gpu["kind"].isin(FLOP_KINDS)
    per = gpu.assign(flop_s=gpu["seconds"].where(flop, 0.0)).groupby(key, sort=False).agg(
        busy_s=("busy_s", "first"), busy_share=("busy_share", "first"), step_wall_s=("step_wall_s", "first"),
        flop_s=("flop_s", "sum")).reset_index()
    others = gpu[~flop]
    largest = others.loc[others.groupby(key)["seconds"].idxmax()]
    per = per.merge(largest[[*key, "kind", "share"]].rename(columns={"kind": "other_kind", "share": "other_share"}),
                    on=key)
    rows = results(df)[["setup", "config_id", "micro_batch", *SETTING, "methods_label", "mfu", "step_time_s",
                        "peak_flops"]]
    out = per.merge(rows.astype({"micro_batch": "int64"}), on=key)
    out["flop_share"] = out["flop_s"] / out["busy_s"]
    # The counted FLOPs over the time in the FLOP kernels, as a share of the peak: mfu x step time is the
    # step's FLOPs divided by the peak rate.
    out["flop_rate"] = out["mfu"] * out["step_time_s"] / out["flop_s"]
    return out[cols].sort_values(["setup", "model", "mfu"], ascending=[True, True, False]).reset_index(drop=True)


def matmul_check(setup: str, root: str | Path | None = None) -> dict[str, float]:
    """FLOP/s per precision of the dense 8192^3 matrix product measured on a setup's machine, from its
    ``evidence/matmul_peak_check.txt`` (lines like ``matmul 8192^3 bf16: 794.9 TFLOP/s``); empty without one."""
    path = runs_root(root) / setup / "evidence" / "matmul_peak_check.txt"
    if not path.exists():
        return {}
    found = re.findall(r"^matmul \S+ (\w+): ([\d.]+) TFLOP/s", path.read_text(), re.MULTILINE)
    return {precision: float(tflops) * 1e12 for precision, tflops in found}


def naive_per_setting(df: pd.DataFrame) -> pd.DataFrame:
    """Per (model, GPU, count): the fastest synced ok row of the naive setting (no efficient method)."""
    r = results(df)
    return fastest(r[r["method_class"] == "naive"] if not r.empty else r, SETTING)


def optimized_per_setting(df: pd.DataFrame) -> pd.DataFrame:
    """Per setting: the fastest row that used an efficient method. The paper's Table 1 is its optimum, so
    a setting where we only measured the naive baseline has nothing to set beside it."""
    r = results(df)
    return fastest(r[r["method_class"] != "naive"] if not r.empty else r, SETTING)


def free_lunch_per_setting(df: pd.DataFrame) -> pd.DataFrame:
    """Per setting: the fastest row with free-lunch methods only (no memory-saving method)."""
    r = results(df)
    return fastest(r[r["method_class"] == "free-lunch"] if not r.empty else r, SETTING)


FEASIBILITY_COLUMNS = [*SETTING, "naive", "free_lunch", "optimized", "attempted", "ok"]


def feasibility(df: pd.DataFrame) -> pd.DataFrame:
    """Per setting and method class: 'feasible', 'infeasible' (attempted, nothing ran) or 'not measured'."""
    r = df[(df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"].astype(bool)] if not df.empty else df
    if r.empty:
        return pd.DataFrame(columns=FEASIBILITY_COLUMNS)
    rows = []
    for key, g in r.groupby(SETTING, sort=True):
        def status(sub: pd.DataFrame) -> str:
            if sub.empty:
                return "not measured"
            return "feasible" if (sub["outcome"] == "ok").any() else "infeasible"
        rows.append({**dict(zip(SETTING, key)), "naive": status(g[g["method_class"] == "naive"]),
                     "free_lunch": status(g[g["method_class"] == "free-lunch"]), "optimized": status(g),
                     "attempted": len(g), "ok": int((g["outcome"] == "ok").sum())})
    return pd.DataFrame(rows, columns=FEASIBILITY_COLUMNS)


def outcome_counts(df: pd.DataFrame) -> pd.DataFrame:
    """How many configurations ended in each outcome, per setup (nothing is silently dropped)."""
    if df.empty:
        return pd.DataFrame(columns=["setup", "outcome", "rows"])
    return df.groupby(["setup", "outcome"]).size().rename("rows").reset_index()


COVERAGE_SEARCHES = ("naive", "smart", "exhaustive")
COVERAGE_STATUSES = ("complete", "measured, search unfinished", "no configuration fits", "failed", "not run yet")
COVERAGE_COLUMNS = ["setup", "model", "search", "status", "ok", "failed", "not_run"]


def planned_setups(root: str | Path | None = None) -> dict[str, dict]:
    """The study's planned hardware setups (``results.load_planned``): gpu, n_gpus and a note, by setup."""
    from .results import load_planned

    return load_planned(runs_root(root))


def unrun_setups(df: pd.DataFrame, planned: Iterable[str]) -> list[str]:
    """The planned setups with no row in ``df`` yet, in the plan's order."""
    have = set(df["setup"])
    return [s for s in planned if s not in have]


def coverage(df: pd.DataFrame, skipped: pd.DataFrame, planned: Iterable[str] = ()) -> pd.DataFrame:
    """What the shipped runs cover: per setup, model and search (naive, smart, exhaustive), the state of its
    synced step rows (``COVERAGE_STATUSES``). ``complete``: something measured and nothing a budget left;
    ``measured, search unfinished``: measured, with configurations still to run; ``no configuration fits``:
    every one that ran is out of memory or unsupported, or failed and a later smart search's memory model ruled
    it out (``_ruled_out``, ``results.skip_is_latest``); ``failed``: no result, with real timeouts or errors;
    ``not run yet``: no row, or only rows a budget left unstarted. Excluded combinations (``invalid``) do not
    count, nor does a smart search's row a budget left that a later smart search skipped (``skipped_frame``,
    ``results.skip_key``): an exhaustive search's stays unfinished. The exhaustive search has cells only for
    the models chosen for it (an exhaustive row in any setup): for the others it is no part of the plan, not
    work still to do. A ``planned`` setup with no row at all has every cell ``not run yet``."""
    if df.empty:
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    from .results import is_settled, latest_skips

    r = df[(df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"] & (df["outcome"] != "invalid")]
    decided = latest_skips(skipped.to_dict("records"))
    r = r[pd.Series([not is_settled(x, decided) for x in r.to_dict("records")], index=r.index, dtype=bool)]
    not_run = _not_run(r)
    ruled_out = _ruled_out(r, decided)
    chosen = set(r.loc[r["search"] == "exhaustive", "model"])
    out = []
    for setup in sorted(set(df["setup"]) | set(planned)):
        for model in _model_facts()["model"]:
            for search in COVERAGE_SEARCHES:
                if search == "exhaustive" and model not in chosen:
                    continue
                mine = (r["setup"] == setup) & (r["model"] == model) & (r["search"] == search)
                ok = int((mine & (r["outcome"] == "ok")).sum())
                left = int((mine & not_run).sum())
                fits_not = int((mine & (r["outcome"].isin(["oom", "unsupported"]) | ruled_out)).sum())
                failed = int((mine & ~not_run & ~ruled_out & r["outcome"].isin(["timeout", "error"])).sum())
                if ok:
                    status = "measured, search unfinished" if left else "complete"
                elif failed:
                    status = "failed"
                elif fits_not and not left:
                    status = "no configuration fits"
                else:
                    status = "not run yet"
                out.append({"setup": setup, "model": model, "search": search, "status": status, "ok": ok,
                            "failed": failed + fits_not, "not_run": left})
    return pd.DataFrame(out, columns=COVERAGE_COLUMNS)


# --- speed-ups (the paper's Figures 2, 4, 5 and 11) ---------------------------------------------------------

SPEEDUP_COLUMNS = [*SETTING, "baseline_days", "days", "speedup", "label"]


def _ratio(base: pd.DataFrame, better: pd.DataFrame, label: str) -> pd.DataFrame:
    if base.empty or better.empty:
        return pd.DataFrame(columns=SPEEDUP_COLUMNS)
    m = base[SETTING + ["days"]].merge(better[SETTING + ["days"]], on=SETTING, suffixes=("_base", ""))
    m = m.rename(columns={"days_base": "baseline_days"})
    m["speedup"] = m["baseline_days"] / m["days"]
    m["label"] = label
    return m[SPEEDUP_COLUMNS].reset_index(drop=True)


def optimized_speedup(df: pd.DataFrame) -> pd.DataFrame:
    """Naive days / optimized days, per setting where both ran (the paper's Figure 2)."""
    return _ratio(naive_per_setting(df), optimized_per_setting(df), "optimized over naive")


def free_lunch_speedup(df: pd.DataFrame) -> pd.DataFrame:
    """Naive days / free-lunch-only days, per setting where both ran."""
    return _ratio(naive_per_setting(df), free_lunch_per_setting(df), "free-lunch over naive")


def memory_saving_speedup(df: pd.DataFrame) -> pd.DataFrame:
    """Free-lunch-only days / best days (>= 1): what the best memory-saving combination adds (Figures 4, 11)."""
    return _ratio(free_lunch_per_setting(df), optimized_per_setting(df), "best memory-saving over free-lunch")


def combination_spread(df: pd.DataFrame) -> pd.DataFrame:
    """Per setting, the best, median and worst memory-saving combination as a speed-up over free-lunch only
    (the paper's Figure 5: picking a combination blindly can cost more than it saves)."""
    cols = [*SETTING, "free_lunch_days", "combinations", "best", "median", "worst"]
    r = results(df)
    fl = free_lunch_per_setting(df)
    if r.empty or fl.empty:
        return pd.DataFrame(columns=cols)
    # One time per combination (the fastest micro-batch of each methods label), free-lunch methods always on.
    r = r[r["method_class"] != "naive"]
    per_combo = r.groupby(SETTING + ["methods_label"], sort=True)["days"].min().reset_index()
    rows = []
    for f in fl.itertuples():
        sub = per_combo[(per_combo["model"] == f.model) & (per_combo["gpu"] == f.gpu)
                        & (per_combo["n_gpus"] == f.n_gpus)]
        speed = f.days / sub["days"]
        rows.append({"model": f.model, "gpu": f.gpu, "n_gpus": f.n_gpus, "free_lunch_days": f.days,
                     "combinations": len(sub), "best": speed.max(), "median": speed.median(), "worst": speed.min()})
    return pd.DataFrame(rows, columns=cols)


# --- how good is the smart search? --------------------------------------------------------------------------

SEARCH_COLUMNS = ["setup", *SETTING, "combinations", "exhaustive_measured", "exhaustive_complete", "exhaustive_best",
                  "exhaustive_days", "exhaustive_gpu_s", "smart_measured", "smart_skipped", "smart_complete",
                  "smart_best", "smart_days", "smart_gpu_s", "gap", "gpu_time_share"]


def skipped_frame(root: str | Path | None = None) -> pd.DataFrame:
    """One row per configuration a smart search skipped: setup, config_id, timing, mode, category, reason, and
    when (``at``)."""
    from .results import load_skipped

    cols = ["setup", "config_id", "search", "timing", "mode", "category", "reason", "at"]
    return pd.DataFrame([{k: s.get(k) for k in cols} for s in load_skipped(runs_root(root))], columns=cols)


class _SearchedSetting(NamedTuple):
    key: tuple  # setup, model, gpu, n_gpus
    valid: set[str]  # ids of the setting's valid combinations
    rows: pd.DataFrame  # the synced step rows measured of them (any search; 'not run' rows left out)
    skipped: set[str]  # ids a smart search skipped
    smart_ran: bool  # whether a smart search ran on the setting at all


def _ruled_out(df: pd.DataFrame, skips: Mapping[tuple, Mapping]) -> pd.Series:
    """Which failed rows (timeout, error) a smart search re-deciding the configuration later (a retry) skipped
    as unable to fit: its memory model says why the attempt failed (h100x1's Pythia-6.9B with ZeRO-Offload died
    without a log; the host-memory rule, added since, puts its offloaded states above the machine's memory)."""
    from .results import is_not_run, skip_is_latest, skip_key

    def ruled_out(row: dict) -> bool:
        skip = skips.get(skip_key(row))
        return (skip is not None and str(skip.get("category")).startswith("cannot fit")
                and row["outcome"] in ("timeout", "error") and not is_not_run(row) and skip_is_latest(skip, row))

    return pd.Series([ruled_out(x) for x in df.to_dict("records")], index=df.index, dtype=bool)


def _not_run(df: pd.DataFrame) -> pd.Series:
    """Which rows hold no measurement still to be used: a time budget never started them
    (``results.is_not_run``), or a correction of the engine set their measurement aside
    (``results.set_aside_reason``); either way the configuration is still to measure."""
    return df["status"].isin(["not run", SET_ASIDE]).astype(bool)


def _exhaustive_settings(df: pd.DataFrame, skipped: pd.DataFrame) -> Iterator[_SearchedSetting]:
    """Each setting with an exhaustive search, with what was measured of it and what smart skipped."""
    from .sweep import plan  # sweep imports the launcher: only load it when asked

    ex = df[(df["search"] == "exhaustive") & (df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"]]
    for key, _ in ex.groupby(["setup", *SETTING], sort=True):
        setup, model, gpu, n = key
        valid = {c.id for c in plan(model, gpu, int(n), "exhaustive") if exclusion_reason(c.methods, c.n_gpus) is None}
        rows = df[(df["setup"] == setup) & df["config_id"].isin(valid) & (df["timing"] == "synced")
                  & (df["mode"] == "step")]
        rows = rows[~_not_run(rows)]
        skip = skipped[(skipped["setup"] == setup) & (skipped["search"] == "smart") & skipped["config_id"].isin(valid)
                       & (skipped["timing"] == "synced") & (skipped["mode"] == "step")]
        yield _SearchedSetting(key, valid, rows, set(skip["config_id"]),
                               not skip.empty or bool((rows["search"] == "smart").any()))


def smart_vs_exhaustive(df: pd.DataFrame, skipped: pd.DataFrame) -> pd.DataFrame:
    """Per setting with an exhaustive search: the exhaustive optimum beside the smart search's best, and the GPU
    time each needed (the summed ``duration_s`` of the configurations it measured, whichever search measured
    them first). Smart measures every valid combination it did not skip. ``gap`` = smart days / exhaustive days
    - 1; ``gpu_time_share`` = smart GPU time / exhaustive GPU time. Until a search has measured all of its
    configurations (``*_complete``), its figures cover only those measured so far."""
    out = []
    for (setup, model, gpu, n), valid, rows, skip, smart_ran in _exhaustive_settings(df, skipped):
        smart_ids = valid - skip
        best_ex, best_sm = _fastest_row(rows), _fastest_row(rows[rows["config_id"].isin(smart_ids)])
        ex_s = rows["duration_s"].sum()
        sm_s = rows[rows["config_id"].isin(smart_ids)]["duration_s"].sum()
        out.append({
            "setup": setup, "model": model, "gpu": gpu, "n_gpus": n, "combinations": len(valid),
            "exhaustive_measured": len(rows), "exhaustive_complete": len(rows) == len(valid),
            "exhaustive_best": best_ex["methods_label"] if best_ex is not None else None,
            "exhaustive_days": best_ex["days"] if best_ex is not None else math.nan, "exhaustive_gpu_s": ex_s,
            "smart_measured": int(rows["config_id"].isin(smart_ids).sum()) if smart_ran else 0,
            "smart_skipped": len(skip), "smart_complete": smart_ran and smart_ids <= set(rows["config_id"]),
            "smart_best": best_sm["methods_label"] if smart_ran and best_sm is not None else None,
            "smart_days": best_sm["days"] if smart_ran and best_sm is not None else math.nan,
            "smart_gpu_s": sm_s if smart_ran else math.nan})
    res = pd.DataFrame(out, columns=SEARCH_COLUMNS)
    res["gap"] = res["smart_days"] / res["exhaustive_days"] - 1
    res["gpu_time_share"] = res["smart_gpu_s"] / res["exhaustive_gpu_s"]
    return res


COMBINATION_COLUMNS = ["setup", *SETTING, "config_id", "methods_label", "outcome", "micro_batch", "days",
                       "gpu_minutes", "smart", "best"]


def search_combinations(df: pd.DataFrame, skipped: pd.DataFrame) -> pd.DataFrame:
    """Every measured combination of each exhaustive search, one row each: its days, the GPU minutes its
    measurement took, what the smart search did with it (``smart``: "measured" or "skipped"; "not run" where
    no smart search ran on the setting) and whether it is the setting's optimum (``best``)."""
    out = []
    for (setup, model, gpu, n), _, rows, skip, smart_ran in _exhaustive_settings(df, skipped):
        best = _fastest_row(rows)
        for r in rows.itertuples():
            out.append({"setup": setup, "model": model, "gpu": gpu, "n_gpus": n, "config_id": r.config_id,
                        "methods_label": r.methods_label, "outcome": r.outcome, "micro_batch": r.micro_batch,
                        "days": r.days, "gpu_minutes": r.duration_s / 60,
                        "smart": ("skipped" if r.config_id in skip else "measured") if smart_ran else "not run",
                        "best": best is not None and r.config_id == best["config_id"]})
    return pd.DataFrame(out, columns=COMBINATION_COLUMNS)


def _fastest_row(rows: pd.DataFrame) -> pd.Series | None:
    ok = rows[(rows["outcome"] == "ok") & rows["days"].notna()]
    return None if ok.empty else ok.sort_values(["days", "config_id"]).iloc[0]


# --- measuring honestly ------------------------------------------------------------------------------------

SYNC_COLUMNS = [*SETTING, "setup", "config_id", "methods_label", "micro_batch", "step_synced_s", "step_unsynced_s",
                "days_synced", "days_unsynced", "mfu_synced", "mfu_unsynced", "undercount"]


def sync_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """The same configuration at the same micro-batch timed with and without GPU synchronisation, side by side.

    ``undercount`` = 1 - unsynced/synced step time: the share of the real step time that an unsynchronised
    host timer misses.
    """
    if df.empty:
        return pd.DataFrame(columns=SYNC_COLUMNS)
    ok = df[(df["mode"] == "step") & (df["outcome"] == "ok")]
    keys = ["setup", "config_id", "micro_batch"]  # the same work: an unsynced row at another size pairs with none
    cols = keys + SETTING + ["methods_label", "step_time_s", "days", "mfu", "started_at"]
    synced = ok[ok["timing"] == "synced"][cols].sort_values("started_at").groupby(keys).tail(1)
    unsynced = ok[ok["timing"] == "unsynced"][keys + ["step_time_s", "days", "mfu", "started_at"]]
    unsynced = unsynced.sort_values("started_at").groupby(keys).tail(1)
    m = synced.merge(unsynced, on=keys, suffixes=("_synced", "_unsynced"))
    if m.empty:
        return pd.DataFrame(columns=SYNC_COLUMNS)
    m = m.rename(columns={"step_time_s_synced": "step_synced_s", "step_time_s_unsynced": "step_unsynced_s"})
    m["undercount"] = 1 - m["step_unsynced_s"] / m["step_synced_s"]
    return m[SYNC_COLUMNS].sort_values(SETTING).reset_index(drop=True)


VALIDATION_COLUMNS = [*SETTING, "setup", "methods_label", "micro_batch", "validate_steps", "predicted_step_s",
                      "sustained_step_s", "validate_rel_error"]


def validation_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """Extrapolated step time next to a sustained run of real optimizer steps of the same configuration."""
    if df.empty:
        return pd.DataFrame(columns=VALIDATION_COLUMNS)
    v = df[df["sustained_step_s"].notna() & df["predicted_step_s"].notna() & (df["timing"] == "synced")
           & (df["outcome"] == "ok")]
    return v[VALIDATION_COLUMNS].sort_values(SETTING).reset_index(drop=True)


VALIDATION_TOLERANCE = 0.03  # the study's rule: |extrapolated - sustained| / sustained within 3%
NET_COLUMNS = ["setup", "validation_class", "measured", "validated", "model", "methods_label", "micro_batch",
               "validate_rel_error", "within"]


def _latest_validations(df: pd.DataFrame) -> pd.DataFrame:
    """Per setup and method class, the latest validation (set-aside rows never count): it speaks for the engine
    that made the setup's results."""
    v = df[df["sustained_step_s"].notna() & (df["outcome"] == "ok") & (df["timing"] == "synced")
           & ~df["tiny"].astype(bool)] if not df.empty else df
    if v.empty:
        return v.assign(within=pd.Series(dtype=bool))
    v = v.assign(within=v["validate_rel_error"].abs() <= VALIDATION_TOLERANCE)
    # A stable sort: validations of the same second keep the order the store has them in.
    return v.sort_values("started_at", kind="stable").groupby(["setup", "validation_class"]).tail(1)


def missed_validation(df: pd.DataFrame) -> set[tuple[str, str]]:
    """(setup, method class) pairs whose latest validation is outside ``VALIDATION_TOLERANCE``: the study uses
    no number of theirs (``results``) until the method is fixed and validated again."""
    v = _latest_validations(df)
    return set(zip(v.loc[~v["within"].astype(bool), "setup"], v.loc[~v["within"].astype(bool), "validation_class"]))


def validation_net(df: pd.DataFrame) -> pd.DataFrame:
    """Per setup and method class (``methods.validation_class``) that has measurements or validations: how many
    synced step measurements it has (set-aside ones do not count), whether a configuration of it was validated
    against sustained training, and the latest validation's error; ``within``: inside ``VALIDATION_TOLERANCE``.
    A class that ran but was never validated shows ``validated`` False, so the book says so."""
    measured = _measured(df)
    val = _latest_validations(df)
    keys = sorted(set(zip(measured["setup"], measured["validation_class"])) | set(zip(val["setup"],
                                                                                       val["validation_class"])))
    out = []
    for setup, cls in keys:
        n = int(((measured["setup"] == setup) & (measured["validation_class"] == cls)).sum())
        v = val[(val["setup"] == setup) & (val["validation_class"] == cls)]
        row = {"setup": setup, "validation_class": cls, "measured": n, "validated": not v.empty}
        if not v.empty:
            last = v.iloc[-1]
            row.update(model=last["model"], methods_label=last["methods_label"], micro_batch=last["micro_batch"],
                       validate_rel_error=last["validate_rel_error"], within=bool(last["within"]))
        out.append(row)
    return pd.DataFrame(out, columns=NET_COLUMNS)


ENGINE_COST_COLUMNS = ["setup", "model", "methods_label", "engine", "micro_batch", "step_time_s", "duration_s",
                       "launches", "search_s", "timing_s"]


def engine_cost(root: str | Path | None = None) -> pd.DataFrame:
    """What one configuration costs the engine, per revision, on the same configurations: the rows of each
    setup's ``evidence/engine/results-revision<N>.jsonl`` (made by ``scripts/offline-gpu/jobs/*-engine-check.sh``,
    outside the setup's results). ``launches``: 1 when the search's stepper was timed in place or no search ran
    (the micro-batch was given), else 2."""
    from .results import ResultStore

    rows = [r for path in sorted(runs_root(root).glob("*/evidence/engine/results-revision*.jsonl"))
            for r in ResultStore(path).rows()]
    if not rows:
        return pd.DataFrame(columns=ENGINE_COST_COLUMNS)
    df = frame_from_rows(rows)
    ran = [r.get("ran") or {} for r in rows]
    df["launches"] = [1 if x.get("in_place") or r["config"].get("micro_batch") else 2 for x, r in zip(ran, rows)]
    df["search_s"] = [x.get("search_s") for x in ran]
    df["timing_s"] = [x.get("timing_s") for x in ran]
    return df[ENGINE_COST_COLUMNS].sort_values(["setup", "model", "methods_label", "engine"]).reset_index(drop=True)


SET_ASIDE_COLUMNS = ["setup", "reason", "rows", "configurations"]


def set_aside(df: pd.DataFrame) -> pd.DataFrame:
    """The measurements a correction of the engine set aside, per setup and reason: how many and why (the
    evidence files keep them as written)."""
    a = df[df["outcome"] == SET_ASIDE] if not df.empty else df
    if a.empty:
        return pd.DataFrame(columns=SET_ASIDE_COLUMNS)
    g = a.groupby(["setup", "reason"], sort=True)
    return pd.DataFrame({"rows": g.size(), "configurations": g["config_id"].nunique()}).reset_index()[
        SET_ASIDE_COLUMNS]


VARIANCE_COLUMNS = [*SETTING, "setup", "methods_label", "step_time_s", "relative_spread", "trials", "trial_cv"]


def variance(df: pd.DataFrame) -> pd.DataFrame:
    """Within-run spread of step times ((max - min) / median) and, where a configuration ran more than once,
    the coefficient of variation of its step time across trials."""
    r = results(df)
    if r.empty:
        return pd.DataFrame(columns=VARIANCE_COLUMNS)
    r = r.assign(relative_spread=(r["step_hi_s"] - r["step_lo_s"]) / r["step_time_s"])
    trials = r.groupby(["setup", "config_id"])["step_time_s"].agg(["count", "mean", "std"]).reset_index()
    trials["trial_cv"] = trials["std"] / trials["mean"]
    r = r.merge(trials.rename(columns={"count": "trials"})[["setup", "config_id", "trials", "trial_cv"]],
                on=["setup", "config_id"])
    return r[VARIANCE_COLUMNS].sort_values(SETTING).reset_index(drop=True)


MEMORY_COLUMNS = [*SETTING, "setup", "methods_label", "micro_batch", "outcome", "predicted_memory_gb",
                  "predicted_at_run_gb", "peak_memory_gb", "gpu_memory_gb", "error"]


def _config(r) -> Config:
    from .config import Config

    methods = Methods(**{c: getattr(r, c) for c in METHOD_COLUMNS})
    return Config(r.model, r.gpu, int(r.n_gpus), int(r.nodes or 1), methods, None, bool(r.tiny))


def _predicted_gb(r, micro_batch: int) -> float:
    """The current memory model's prediction for a row's configuration (the rows keep the one made at run
    time, by whatever version of the model ran then)."""
    from .estimate import predict_memory

    try:
        return predict_memory(_config(r), int(micro_batch)).allocated / 1e9
    except (KeyError, ValueError):  # a model or GPU no longer in the catalogs
        return math.nan


def memory_model_error(df: pd.DataFrame) -> pd.DataFrame:
    """The memory model's prediction of peak allocated memory next to the measured peak (``error`` = predicted /
    measured - 1), recomputed with the current model (``predicted_at_run_gb``: the one stored at run time),
    plus out-of-memory rows with their prediction at micro-batch 1."""
    if df.empty:
        return pd.DataFrame(columns=MEMORY_COLUMNS)
    r = df[(df["timing"] == "synced") & (df["mode"] == "step") & df["outcome"].isin(["ok", "oom"])
           & ~df["tiny"]].copy()
    r = r[(r["outcome"] == "oom") | r["micro_batch"].notna()]
    r["predicted_at_run_gb"] = r["predicted_memory_gb"]
    r["predicted_memory_gb"] = [_predicted_gb(x, x.micro_batch if x.outcome == "ok" else 1) for x in r.itertuples()]
    r["gpu_memory_gb"] = r["gpu"].map(lambda g: gpu_catalog()[g].memory_gb if g in gpu_catalog() else math.nan)
    r["error"] = r["predicted_memory_gb"] / r["peak_memory_gb"] - 1
    return r[MEMORY_COLUMNS].sort_values(SETTING).reset_index(drop=True)


RESERVE_COLUMNS = [*SETTING, "setup", "methods_label", "mode", "micro_batch", "peak_memory_gb", "peak_reserved_gb",
                   "reserve"]


def allocator_reserve(df: pd.DataFrame) -> pd.DataFrame:
    """How much more the caching allocator reserved than the peak it allocated (``reserve`` = reserved /
    allocated - 1, the highest rank of each), on every ok row that records both: the measured side of the
    memory model's fragmentation allowance (``estimate.Coefficients.fragmentation``)."""
    if df.empty:
        return pd.DataFrame(columns=RESERVE_COLUMNS)
    r = df[(df["outcome"] == "ok") & ~df["tiny"] & df["peak_reserved_gb"].notna() & df["peak_memory_gb"].notna()]
    r = r.assign(reserve=r["peak_reserved_gb"] / r["peak_memory_gb"] - 1)
    return r[RESERVE_COLUMNS].sort_values([*SETTING, "methods_label"]).reset_index(drop=True)


FIT_COLUMNS = [*SETTING, "setup", "methods_label", "micro_batch", "measured", "predicted", "correct"]


def fit_predictions(df: pd.DataFrame) -> pd.DataFrame:
    """Every micro-batch a search tried ('fits' or 'oom', from the rows' ``mbs_search``) beside the memory
    model's verdict: predicted total (with context, workspace and fragmentation) within the usable memory."""
    from .estimate import predict_memory, usable_bytes

    out = []
    rows = df[(df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"] & df["mbs_search"].notna()]
    for r in rows.itertuples():
        config, usable = _config(r), usable_bytes(gpu_catalog()[r.gpu].memory_gb)
        for attempt in r.mbs_search:
            fits = predict_memory(config, attempt["micro_batch"]).total <= usable
            measured = attempt["outcome"] == "ok"
            out.append({"model": r.model, "gpu": r.gpu, "n_gpus": r.n_gpus, "setup": r.setup,
                        "methods_label": r.methods_label, "micro_batch": attempt["micro_batch"],
                        "measured": "fits" if measured else "oom", "predicted": "fits" if fits else "oom",
                        "correct": fits == measured})
    return pd.DataFrame(out, columns=FIT_COLUMNS)


def implausible(df: pd.DataFrame, column: str = "mfu") -> pd.DataFrame:
    """Rows whose MFU exceeds the plausibility threshold (0.75 of the dense spec peak)."""
    return df[df[column] > MFU_IMPLAUSIBLE] if not df.empty else df


# --- the paper beside ours ---------------------------------------------------------------------------------

PAPER_COLUMNS = [*SETTING, "days", "status", "source", "precision", "peak_basis", "peak_flops", "flops_total",
                 "flops_basis", "mfu", "mfu_min", "mfu_fig9", "implausible"]
# Families whose FLOPs are mostly convolutions: PyTorch lets cuDNN use TF32 for them by default, so even a
# naive fp32 run of these gets the TF32 rate (matrix multiplications stay at fp32 unless TF32 is switched on).
CONV_FAMILIES = ("convnext",)


CACHE_ENV = "ACADEMIC_BENCH_CACHE"  # set by the book build: a folder where slow, derived tables are kept
_FACTS_INPUTS = ("models/*.py", "estimate.py", "planning.py", "config.py", "data/paper_figure9_flops.csv")


def _facts_key() -> str:
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for pattern in _FACTS_INPUTS:
        for path in sorted(here.glob(pattern)):
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def _model_facts() -> pd.DataFrame:
    """Per catalog model: steps, precision, our-convention total FLOPs (or NaN) and the paper's Figure 9(a).

    Counting FLOPs builds every model on the meta device (seconds each); during a book build the table is
    kept in the build's cache folder, keyed by the code and data it depends on, so pages share one count.
    """
    folder = os.environ.get(CACHE_ENV)
    cached = Path(folder) / f"model-facts-{_facts_key()}.csv" if folder else None
    if cached is not None and cached.exists():
        return pd.read_csv(cached)
    df = _count_model_facts()
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        df.to_csv(tmp, index=False)
        tmp.replace(cached)
    return df


def _count_model_facts() -> pd.DataFrame:
    from . import paper
    from .models import CATALOG
    from .estimate import model_flops_per_step

    fig9 = paper.load_flops().set_index("model")["training_flops"]
    rows = []
    for key, spec in CATALOG.items():
        per_step = float(model_flops_per_step(key))
        rows.append({"model": key, "display": spec.display, "family": spec.family, "steps": spec.recipe.steps,
                     "precision": spec.recipe.precision,
                     "flops_ours": per_step * spec.recipe.steps if per_step else math.nan,
                     "flops_fig9": float(fig9.get(key, math.nan))})
    return pd.DataFrame(rows)


def model_facts() -> pd.DataFrame:
    return _model_facts().copy()


def _peak_basis(precision: str, family: str, optimized: bool) -> str:
    if precision != "fp32":
        return precision
    return "tf32" if optimized or family in CONV_FAMILIES else "fp32"


def paper_cells(table: str = "table1") -> pd.DataFrame:
    """The paper's Table 1 (optimal) or Table 4 (naive) in long form, with the MFU each cell implies.

    ``mfu`` uses our FLOPs convention where it covers the model, else the paper's Figure 9(a) total;
    ``mfu_fig9`` always uses Figure 9(a). The paper prints whole days, so ``mfu_min`` uses days + 0.5: the
    lowest MFU the printed number allows. A cell is ``implausible`` when even ``mfu_min`` exceeds 0.75.
    fp32 recipes are rated at the TF32 peak in optimised runs (the free-lunch methods switch TF32 on) and for
    convolutional models (cuDNN's default), otherwise at the fp32 peak.
    """
    from . import paper

    loaders = {"table1": (paper.load_table1, True), "table4": (paper.load_table4, False)}
    if table not in loaders:
        raise ValueError(f"unknown paper table {table!r}; choose one of: {', '.join(loaders)}")
    load, optimized = loaders[table]
    df = load().merge(model_facts(), on="model", how="left")
    df["n_gpus"] = df["n_gpus"].astype(int)
    df["peak_basis"] = [_peak_basis(p, f, optimized) for p, f in zip(df["precision"], df["family"])]
    df["peak_flops"] = [gpu_catalog()[g].peak_flops(b) for g, b in zip(df["gpu"], df["peak_basis"])]
    df["flops_total"] = df["flops_ours"].fillna(df["flops_fig9"])
    df["flops_basis"] = df["flops_ours"].notna().map({True: "our convention", False: "paper Figure 9(a)"})
    per_day = SECONDS_PER_DAY * df["n_gpus"] * df["peak_flops"]
    df["mfu"] = df["flops_total"] / (df["days"] * per_day)
    df["mfu_min"] = df["flops_total"] / ((df["days"] + 0.5) * per_day)
    df["mfu_fig9"] = df["flops_fig9"] / (df["days"] * per_day)
    df["implausible"] = df["mfu_min"] > MFU_IMPLAUSIBLE
    return df[PAPER_COLUMNS].reset_index(drop=True)


COMPARISON_COLUMNS = [*SETTING, "setup", "ours_days", "ours_mfu", "ours_methods", "ours_micro_batch",
                      "paper_days", "paper_mfu", "paper_status", "ratio"]


def paper_comparison(df: pd.DataFrame, table: str = "table1") -> pd.DataFrame:
    """Our optimized (or naive, for Table 4) days per setting beside the paper's cell for the same hardware.

    ``ratio`` = our days / the paper's days (above 1: the paper's number is faster than what we measured).
    Settings the paper did not measure (an H200, say) keep NaN in the paper's columns.
    """
    ours = optimized_per_setting(df) if table == "table1" else naive_per_setting(df)
    if ours.empty:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    p = paper_cells(table)[[*SETTING, "days", "mfu", "status"]].rename(
        columns={"days": "paper_days", "mfu": "paper_mfu", "status": "paper_status"})
    o = ours[[*SETTING, "setup", "days", "mfu", "methods_label", "micro_batch"]].rename(
        columns={"days": "ours_days", "mfu": "ours_mfu", "methods_label": "ours_methods",
                 "micro_batch": "ours_micro_batch"})
    o["n_gpus"] = o["n_gpus"].astype(int)
    m = o.merge(p, on=SETTING, how="left")
    m["ratio"] = m["ours_days"] / m["paper_days"]
    return m[COMPARISON_COLUMNS].reset_index(drop=True)


TABLE1_COLUMNS = [*SETTING, "paper_days", "paper_status", "paper_mfu", "paper_implausible", "ours_days",
                  "ours_mfu", "ours_setup", "ours_methods"]


def table1_long(df: pd.DataFrame, table: str = "table1") -> pd.DataFrame:
    """Every cell of the paper's table (Table 1, or Table 4 for naive) and every setting we measured, one row
    each: the paper's days and implied MFU beside our best (or naive) days and MFU where we have them."""
    paper = paper_cells(table).rename(columns={"days": "paper_days", "status": "paper_status", "mfu": "paper_mfu",
                                               "implausible": "paper_implausible"})
    ours = optimized_per_setting(df) if table == "table1" else naive_per_setting(df)
    ours = ours[[*SETTING, "days", "mfu", "setup", "methods_label"]].rename(columns={
        "days": "ours_days", "mfu": "ours_mfu", "setup": "ours_setup", "methods_label": "ours_methods"})
    ours["n_gpus"] = ours["n_gpus"].astype(int)
    m = paper[[*SETTING, "paper_days", "paper_status", "paper_mfu", "paper_implausible"]].merge(
        ours, on=SETTING, how="outer")
    return m[TABLE1_COLUMNS].reset_index(drop=True)


def settings_comparison(df: pd.DataFrame) -> pd.DataFrame:
    """Our best configuration per setting beside the paper's Appendix J setting for the same hardware."""
    from . import paper

    cols = [*SETTING, "ours_methods", "ours_micro_batch", "ours_gas", "ours_days",
            "paper_free_lunch", "paper_checkpointing", "paper_sharding", "paper_offloading", "paper_mbs", "paper_gas"]
    best = best_per_setting(df)
    if best.empty:
        return pd.DataFrame(columns=cols)
    j = paper.load_appendix_j().rename(columns={
        "free_lunch": "paper_free_lunch", "checkpointing": "paper_checkpointing", "sharding": "paper_sharding",
        "offloading": "paper_offloading", "mbs": "paper_mbs", "gas": "paper_gas"})
    j["n_gpus"] = j["n_gpus"].astype(int)
    o = best.rename(columns={"methods_label": "ours_methods", "micro_batch": "ours_micro_batch",
                             "gas": "ours_gas", "days": "ours_days"})
    o["n_gpus"] = o["n_gpus"].astype(int)
    m = o.merge(j, on=SETTING, how="left")
    return m[cols].reset_index(drop=True)


# --- labels for tables ---------------------------------------------------------------------------------------

def gpu_label(key: str) -> str:
    """A short display name for a GPU key ('h100-80gb' -> 'H100 80GB')."""
    g = gpu_catalog().get(key)
    return g.name.replace("NVIDIA ", "").replace("GeForce ", "") if g else str(key)


def model_label(key: str) -> str:
    facts = _model_facts().set_index("model")
    return str(facts["display"].get(key, key))


# --- provenance ---------------------------------------------------------------------------------------------

PROVENANCE_COLUMNS = ["file", "what", "rows", "produced_by"]
# How each kind of repository file the book reads came to be (no command: written or transcribed by hand).
_DATA_ORIGINS = (
    ("academic_bench/data/paper_", "transcribed by hand from the paper, cell by cell; each row names its table, "
     "row and column (`source`); loaded and checked by `academic_bench.paper` and tests/test_paper_data.py"),
    ("academic_bench/data/survey_", "transcribed by hand from the paper's Section 2, Figure 8 and Appendix A "
     "(`source` column / field); loaded by `academic_bench.survey`"),
    ("academic_bench/data/gpus.csv", "written by hand from vendor datasheets (`spec_source`) and the paper's "
     "Appendix H prices (`price_source`)"),
    ("academic_bench/data/cloud_prices.csv", "collected by hand from public on-demand price lists "
     "(`source_url`, `as_of`, `transcribed_in`)"),
    ("tests/fixtures/survey_example.csv", "written by hand: invented respondents for the survey pipeline's "
     "example and tests (not survey data)"),
    ("book/references.bib", "written by hand"),
    ("notebooks/runs/planned-setups.csv", "written by hand: the study's hardware setups, and why one has not run "
     "(read by `results.load_planned`)"),
)


def _rows_in(path: Path) -> int | None:
    """Data rows of a CSV (quoted newlines allowed, leading '#' comment lines skipped) or JSON-lines file."""
    import csv

    if path.suffix not in (".csv", ".jsonl"):
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    if path.suffix == ".jsonl":
        return sum(1 for ln in lines if ln.strip())
    return max(sum(1 for r in csv.reader(lines) if r) - 1, 0)


# What each file of a run folder is, and what wrote it when not the folder's notebook (None: the notebook).
_RUN_FILES = {
    "benchmark.ipynb": ("executed benchmark notebook", None),
    "results.jsonl": ("benchmark results", None),
    "results.skipped.jsonl": ("configurations a smart search skipped, with why", None),
    "profiles.jsonl": ("step profiles (torch.profiler, by kind of work)",
                       "`academic-bench profile --methods best` per model (the setup's `evidence/README.md` names the "
                       "calls)"),
}


def provenance(root: str | Path | None = None) -> pd.DataFrame:
    """Every repository file the book reads: what it is, how many rows, and what produced it."""
    from .notebook import command_for, notebook_parameters
    from .results import PLANNED_FILE

    rows = []
    files = sorted((REPO_ROOT / "academic_bench" / "data").glob("*")) + [
        REPO_ROOT / "tests" / "fixtures" / "survey_example.csv", REPO_ROOT / "book" / "references.bib",
        runs_root(root) / PLANNED_FILE]
    for path in files:
        if not path.is_file():
            continue
        rel = str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)
        origin = next((o for prefix, o in _DATA_ORIGINS if rel.startswith(prefix)), "not described yet")
        rows.append({"file": rel, "what": "data" if "data" in path.parts else "book input", "rows": _rows_in(path),
                     "produced_by": origin})
    for folder in sorted(p for p in runs_root(root).glob("*") if p.is_dir()):
        params = notebook_parameters(folder)
        cmd = (f"`{command_for(params)}` (papermill parameters saved in the notebook)"
               if params and {"setup", "models"} <= set(params) else "no executed notebook with parameters beside it")
        if (folder / "evidence" / "README.md").exists():  # a results file grows over many runs: name them all
            cmd = f"the runs listed in `{folder.name}/evidence/README.md`; the last: {cmd}"
        for path in sorted(folder.glob("*")):
            if path.suffix in (".jsonl", ".ipynb"):
                what, by = _RUN_FILES.get(path.name, ("benchmark results", None))
                rows.append({"file": str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path),
                             "what": what, "rows": _rows_in(path), "produced_by": by or cmd})
    df = pd.DataFrame(rows, columns=PROVENANCE_COLUMNS)
    df["rows"] = df["rows"].astype("Int64")
    return df
