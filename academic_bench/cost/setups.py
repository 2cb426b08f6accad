"""Days for each setup (ours where a search is complete, else predicted from ours by the transfer model, else the
paper's Table 1, else analytic), every setup's costs, the budget and deadline questions, and the paper's worked examples (Section 4.1).

A setup whose days imply an MFU above ``analysis.MFU_IMPLAUSIBLE`` cannot be a real training run: ``plausibility``
marks it, and the questions that recommend a setup (``fastest_within_budget``, ``cheapest_within_deadline``,
``cheapest_plausible``) pass over such setups unless asked not to.
"""
from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from ..hardware import catalog as gpu_catalog
from .model import (DAYS_SOURCES, GPU_COUNTS, Assumptions, Cost, check_non_negative, check_gpus, cost_of, gpu_key,
                    model_key)

# --- days: ours, the paper's, or analytic --------------------------------------------------------------------

DAYS_COLUMNS = ["model", "gpu", "n_gpus", "days", "days_source"]


def implausible_paper_cells() -> pd.DataFrame:
    """The paper's Table 1 cells with days whose implied MFU is above ``analysis.MFU_IMPLAUSIBLE``
    (``analysis.paper_cells``): no answer anywhere, shown only as the paper's."""
    from ..analysis import MFU_IMPLAUSIBLE, paper_cells

    cells = paper_cells("table1")
    return cells[cells["days"].notna() & (cells["mfu"] > MFU_IMPLAUSIBLE)].reset_index(drop=True)


def paper_days(plausible_only: bool = False) -> pd.DataFrame:
    """The paper's Table 1 (optimal settings, days); infeasible settings are dropped, and with ``plausible_only``
    so are the ``implausible_paper_cells``."""
    from ..paper import load_table1

    df = load_table1()
    df = df[df["days"].notna()].copy()
    if plausible_only:
        bad = set(zip(*(implausible_paper_cells()[c] for c in ("model", "gpu", "n_gpus"))))
        df = df[[(m, g, int(n)) not in bad for m, g, n in zip(df["model"], df["gpu"], df["n_gpus"])]]
    df["days_source"] = "paper Table 1"
    return df[DAYS_COLUMNS].reset_index(drop=True)


def measured_days(root: str | None = None) -> pd.DataFrame:
    """Our fastest measured setting per (model, GPU, count), leaving out settings that are naive only or whose
    smart search is unfinished (``analysis.coverage``; ``answers`` calls them so); empty with the right columns
    when none exist."""
    from ..analysis import best_per_setting, runs_frame, skipped_frame, without_optimum

    runs = runs_frame(root)
    best = best_per_setting(runs)
    if best.empty:
        return pd.DataFrame(columns=DAYS_COLUMNS)
    left_out = without_optimum(runs, skipped_frame(root))  # no optimum yet: no days here
    best = best[[(s, m) not in left_out for s, m in zip(best["setup"], best["model"])]]
    df = best[best["days"].notna()].copy()
    df["days_source"] = "ours (" + df["setup"].astype(str) + ")"
    df["n_gpus"] = df["n_gpus"].astype(int)
    return df[DAYS_COLUMNS].reset_index(drop=True)




def days_table(models: Iterable[str] | None = None, gpus: Iterable[str] | None = None,
               counts: Iterable[int] = GPU_COUNTS, prefer: tuple[str, ...] = DAYS_SOURCES,
               root: str | None = None, predicted: pd.DataFrame | None = None,
               implausible_paper: bool = False) -> pd.DataFrame:
    """One row per (model, GPU, count) with the first source in ``prefer`` that has days for it. ``predicted``:
    the transfer model's days (``transfer_validation.predicted_days``, which rests on this package's answers, so
    the caller brings them); without them the source "predicted" has none. The paper's cells whose days imply an
    MFU above ``analysis.MFU_IMPLAUSIBLE`` are no answer and are left out, unless ``implausible_paper`` (a page that
    shows them as the paper's, flagged)."""
    from ..models import CATALOG

    models = [model_key(m) for m in (models or CATALOG)]
    gpus = [gpu_key(g) for g in (gpus or gpu_catalog())]
    for source in prefer:
        if source not in DAYS_SOURCES:
            raise ValueError(f"unknown days source {source!r}; choose from: {', '.join(DAYS_SOURCES)}")
    tables = {"ours": measured_days(root) if "ours" in prefer else None,
              "predicted": predicted if "predicted" in prefer else None,
              "paper": paper_days(plausible_only=not implausible_paper) if "paper" in prefer else None}
    index = {s: {(r.model, r.gpu, int(r.n_gpus)): (float(r.days), r.days_source) for r in t.itertuples()}
             for s, t in tables.items() if t is not None}
    rows = []
    for m in models:
        for g in gpus:
            for n in counts:
                found = _first_days((m, g, int(n)), prefer, index)
                if found:
                    rows.append({"model": m, "gpu": g, "n_gpus": int(n), "days": found[0], "days_source": found[1]})
    return pd.DataFrame(rows, columns=DAYS_COLUMNS)


def _first_days(key: tuple[str, str, int], prefer: tuple[str, ...], index: dict) -> tuple[float, str] | None:
    for source in prefer:
        if source == "analytic":
            # The paper's Section 3.1 method: 100% of the dense peak, a lower bound, never a forecast.
            from ..estimate import analytic_days

            return analytic_days(*key, mfu=1.0), "analytic (100% of peak: a lower bound)"
        elif key in index.get(source, {}):
            return index[source][key]
    return None


def days_for(model: str, gpu: str, n_gpus: int, prefer: tuple[str, ...] = DAYS_SOURCES,
             root: str | None = None, predicted: pd.DataFrame | None = None,
             implausible_paper: bool = False) -> tuple[float | None, str]:
    """(days, where they come from) for one setup; (None, reason) when no source has them."""
    df = days_table([model], [gpu], [check_gpus(n_gpus)], prefer, root, predicted, implausible_paper)
    if df.empty:
        return None, f"no days for {model} on {n_gpus} x {gpu} from: {', '.join(prefer)}"
    return float(df["days"].iloc[0]), str(df["days_source"].iloc[0])


def setup_label(gpu: str, n_gpus: int) -> str:
    """'4 x H100 80GB SXM': how tables and charts name a setup."""
    from ..analysis import gpu_label

    return f"{int(n_gpus)} x {gpu_label(gpu)}"


# --- setups, budget questions, Pareto fronts -------------------------------------------------------------

def setups_frame(days: pd.DataFrame, assumptions: Assumptions | None = None) -> pd.DataFrame:
    """``days`` (model, gpu, n_gpus, days, days_source) with every cost column added."""
    a = assumptions or Assumptions()
    rows = [cost_of(r.gpu, int(r.n_gpus), float(r.days), a, r.days_source, r.model).to_dict()
            for r in days.itertuples()]
    cols = [f for f in Cost.__dataclass_fields__ if f != "assumptions"]
    df = pd.DataFrame(rows, columns=[*cols, "assumptions"]).drop(columns="assumptions")
    if not df.empty:
        df["setup"] = [setup_label(g, n) for g, n in zip(df["gpu"], df["n_gpus"])]
    return df


def implied_mfu(setups: pd.DataFrame) -> pd.Series:
    """The MFU each setup's days imply (``analysis.paper_cells`` for the paper's days, the result's own for ours,
    the model's FLOPs at those days for the transfer model's predicted days), NaN for analytic days (their MFU
    is an assumption, not implied)."""
    from ..analysis import best_per_setting, paper_cells, runs_frame
    from ..estimate import analytic_days

    paper = {(r.model, r.gpu, int(r.n_gpus)): r.mfu for r in paper_cells("table1").itertuples()}
    ours = {(r.setup, r.model): r.mfu for r in best_per_setting(runs_frame()).itertuples()}
    out = []
    for r in setups.itertuples():
        source = str(getattr(r, "days_source", ""))
        if source.startswith("ours ("):
            out.append(ours.get((source[len("ours ("):-1], r.model), math.nan))
        elif source.startswith("paper"):
            out.append(paper.get((r.model, r.gpu, int(r.n_gpus)), math.nan))
        elif source.startswith("predicted") and r.days:
            out.append(analytic_days(r.model, r.gpu, int(r.n_gpus), mfu=1.0) / float(r.days))
        else:
            out.append(math.nan)
    return pd.Series(out, index=setups.index, dtype=float)


def plausibility(setups: pd.DataFrame) -> pd.DataFrame:
    """``setups`` with ``implied_mfu`` and ``implausible`` (MFU above ``analysis.MFU_IMPLAUSIBLE``: days no real
    training run achieves, so no question here recommends them)."""
    from ..analysis import MFU_IMPLAUSIBLE

    if setups.empty:
        return setups.assign(implied_mfu=pd.Series(dtype=float), implausible=pd.Series(dtype=bool))
    mfu = implied_mfu(setups) if "implied_mfu" not in setups.columns else setups["implied_mfu"]
    # A prediction capped at MFU_IMPLAUSIBLE implies it exactly: a rounding error must not make it implausible.
    return setups.assign(implied_mfu=mfu, implausible=mfu > MFU_IMPLAUSIBLE * (1 + 1e-9))


def _plausible(setups: pd.DataFrame) -> pd.DataFrame:
    return setups[~plausibility(setups)["implausible"].to_numpy(dtype=bool)]


def cheapest_plausible(setups: pd.DataFrame, cost: str = "per_experiment_usd", by: str = "model") -> pd.DataFrame:
    """Per ``by``, the setup with the lowest ``cost`` among those whose implied MFU is plausible."""
    return _plausible(setups).sort_values([cost, "days"]).groupby(by).head(1)


def fastest_within_budget(setups: pd.DataFrame, budget_usd: float, cost: str = "purchase_usd",
                          plausible_only: bool = False) -> pd.DataFrame:
    """Setups whose ``cost`` fits the budget, fastest first (ties: cheaper first); with ``plausible_only`` (the
    book's questions) setups with an implausible implied MFU are passed over."""
    check_non_negative("budget", budget_usd)
    setups = _plausible(setups) if plausible_only else setups
    fits = setups[setups[cost] <= budget_usd]
    return fits.sort_values(["days", cost, "n_gpus"]).reset_index(drop=True)


def cheapest_within_deadline(setups: pd.DataFrame, deadline_days: float, cost: str = "purchase_usd",
                             plausible_only: bool = False) -> pd.DataFrame:
    """Setups that finish within the deadline, cheapest first (ties: faster first); with ``plausible_only``,
    setups with an implausible implied MFU are passed over."""
    check_non_negative("deadline (days)", deadline_days)
    setups = _plausible(setups) if plausible_only else setups
    ok = setups[setups["days"] <= deadline_days]
    return ok.sort_values([cost, "days", "n_gpus"]).reset_index(drop=True)


def pareto_front(setups: pd.DataFrame, cost: str = "purchase_usd") -> pd.DataFrame:
    """Setups no other setup beats on both ``cost`` and days, cheapest first."""
    ordered = setups.sort_values([cost, "days"]).reset_index(drop=True)
    keep, best_days = [], math.inf
    for i, days in enumerate(ordered["days"]):
        if days < best_days:
            keep.append(i)
            best_days = days
    return ordered.loc[keep].reset_index(drop=True)


# --- the paper's worked examples (Section 4.1) ---------------------------------------------------------------

def paper_assumptions() -> Assumptions:
    """The paper's own prices (Appendix H Table 5 via paper.load_prices) and five-year lifespan."""
    from ..paper import load_prices

    df = load_prices()
    prices = dict(zip(df["gpu"], df["price_usd"].astype(float)))
    return Assumptions(gpu_price_usd=prices, lifespan_years=5.0)


def paper_worked_examples(model: str = "pythia-1b", budget_usd: float = 40_000,
                          days: pd.DataFrame | None = None) -> dict:
    """Section 4.1's examples, recomputed from a days table (the paper's Table 1 unless given)."""
    a = paper_assumptions()
    table = paper_days() if days is None else days
    setups = plausibility(setups_frame(table[table["model"] == model], a))
    if setups.empty:
        return {"model": model, "budget_usd": budget_usd, "fastest_within_budget": None, "a100x8": None,
                "h100x4": None, "fastest_overall": None, "fastest_plausible_within_budget": None}

    def pick(gpu: str, n: int) -> dict | None:
        row = setups[(setups["gpu"] == gpu) & (setups["n_gpus"] == n)]
        return row.iloc[0].to_dict() if len(row) else None

    within = fastest_within_budget(setups, budget_usd)
    return {
        "model": model, "budget_usd": budget_usd,
        "fastest_within_budget": within.iloc[0].to_dict() if len(within) else None,
        "fastest_plausible_within_budget": _first(fastest_within_budget(setups, budget_usd, plausible_only=True)),
        "a100x8": pick("a100-80gb", 8), "h100x4": pick("h100-80gb", 4),
        "fastest_overall": setups.sort_values(["days", "purchase_usd"]).iloc[0].to_dict(),
    }


def _first(df: pd.DataFrame) -> dict | None:
    return df.iloc[0].to_dict() if len(df) else None
