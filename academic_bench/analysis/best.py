"""What counts as a result, and the best of it: measured rows of validated method classes, the fastest
configuration per setting, per method class, feasibility, search coverage and the speed-ups of the paper's
Figures 2, 4, 5 and 11."""
from __future__ import annotations

import re

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .counted import results
from .facts import model_facts
from .frame import SETTING, runs_root
from .search import not_run_mask, ruled_out_mask


# --- results ---------------------------------------------------------------------------------------------

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
    from ..results import load_planned

    return load_planned(runs_root(root))


def setup_names(df: pd.DataFrame | None = None, root: str | Path | None = None) -> dict[str, str]:
    """Each hardware setup's folder name as a reader sees it ('h100x1' -> '1 x H100 80GB SXM'): its GPU and count,
    from the planned setups and from the runs in ``df``. A folder name is how a run is filed, not prose."""
    from .facts import setup_label

    names = {s: setup_label(p["gpu"], int(p["n_gpus"])) for s, p in planned_setups(root).items()}
    if df is not None and not df.empty:
        for s, g, n in df[["setup", "gpu", "n_gpus"]].drop_duplicates("setup").itertuples(index=False):
            names.setdefault(s, setup_label(g, int(n)))
    return names


def setups_in_words(text: str, names: dict[str, str]) -> str:
    """``text`` with each run folder's name given as its hardware (``names``: ``setup_names``)."""
    for key, name in names.items():
        text = re.sub(rf"(?<![\w-]){re.escape(key)}(?![\w-])", name, text)  # not h200x1 inside h200x1-tiny
    return text


def gpus_in_words(text: str) -> str:
    """``text`` with each GPU catalog key given as the GPU's name (h100-80gb -> H100 80GB SXM): the refusal of an
    answer that fits nothing names the setup that would by its key, which a command line takes
    (``answer.compute.smallest_fitting``); a reader of a table reads the GPU's name there."""
    from ..catalog.hardware import every_gpu
    from .facts import gpu_label

    keys = sorted(map(re.escape, every_gpu()), key=len, reverse=True)  # the longest first: h100-80gb before h100
    return re.sub(r"(?<![\w-])(" + "|".join(keys) + r")(?![\w-])", lambda m: gpu_label(m.group(1)), text)


def unrun_setups(df: pd.DataFrame, planned: Iterable[str]) -> list[str]:
    """The planned setups with no row in ``df`` yet, in the plan's order."""
    have = set(df["setup"])
    return [s for s in planned if s not in have]


def coverage(df: pd.DataFrame, skipped: pd.DataFrame, planned: Iterable[str] = ()) -> pd.DataFrame:
    """What the shipped runs cover: per setup, model and search (naive, smart, exhaustive), the state of its
    synced step rows (``COVERAGE_STATUSES``). ``complete``: something measured and nothing a budget left;
    ``measured, search unfinished``: measured, with configurations still to run; ``no configuration fits``:
    every one that ran is out of memory or unsupported, or failed and a later smart search's memory model ruled
    it out (``ruled_out_mask``, ``results.skip_is_latest``); ``failed``: no result, with real timeouts or errors;
    ``not run yet``: no row, or only rows a budget left unstarted. Excluded combinations (``invalid``) do not
    count, nor does a smart search's row a budget left that a later smart search skipped (``skipped_frame``,
    ``results.skip_key``): an exhaustive search's stays unfinished. The exhaustive search has cells only for
    the models chosen for it (an exhaustive row in any setup): for the others it is no part of the plan, not
    work still to do. A ``planned`` setup with no row at all has every cell ``not run yet``."""
    if df.empty:
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    from ..results import is_settled, latest_skips

    r = df[(df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"] & (df["outcome"] != "invalid")]
    decided = latest_skips(skipped.to_dict("records"))
    r = r[pd.Series([not is_settled(x, decided) for x in r.to_dict("records")], index=r.index, dtype=bool)]
    not_run = not_run_mask(r)
    ruled_out = ruled_out_mask(r, decided)
    chosen = set(r.loc[r["search"] == "exhaustive", "model"])
    out = []
    for setup in sorted(set(df["setup"]) | set(planned)):
        for model in model_facts()["model"]:
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


def without_optimum(df: pd.DataFrame, skipped: pd.DataFrame) -> set[tuple[str, str]]:
    """(setup, model) settings whose fastest measured row is no optimum yet (``coverage``): naive only (the smart
    search has not run, the naive one has) or with a smart search still unfinished. ``answers`` calls them "naive
    only" and "search unfinished"; neither the days of ``cost`` nor the planner's MFU points use them."""
    cov = coverage(df, skipped).set_index(["setup", "model", "search"])["status"]
    out = set()
    for setup, model in {(s, m) for s, m, _ in cov.index}:
        smart = cov.get((setup, model, "smart"), "not run yet")
        naive = cov.get((setup, model, "naive"), "not run yet")
        if smart == "measured, search unfinished" or (smart == "not run yet" and naive != "not run yet"):
            out.add((setup, model))
    return out


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
