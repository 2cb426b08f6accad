"""Every setup's costs for its days (the study's answers, ``academic_bench.answer``, or the paper's Table 1 as a
comparison), the budget and deadline questions, and the paper's worked examples (Section 4.1).

A setup whose days imply an MFU above ``analysis.MFU_IMPLAUSIBLE`` cannot be a real training run: ``plausibility``
marks it, and the questions that recommend a setup (``fastest_within_budget``, ``cheapest_within_deadline``,
``cheapest_plausible``) pass over such setups unless asked not to.
"""
from __future__ import annotations

import math

import pandas as pd

from ..analysis.facts import setup_label  # noqa: F401 (how a setup is named, here and in every table)
from .model import Assumptions, Cost, check_non_negative, cost_of

# --- the paper's days --------------------------------------------------------------------

DAYS_COLUMNS = ["model", "gpu", "n_gpus", "days", "days_source"]


def implausible_paper_cells() -> pd.DataFrame:
    """The paper's Table 1 cells with days whose implied MFU is above ``analysis.MFU_IMPLAUSIBLE``
    (``analysis.paper_cells``): no answer anywhere, shown only as the paper's."""
    from ..analysis import MFU_IMPLAUSIBLE, paper_cells

    cells = paper_cells("table1")
    return cells[cells["days"].notna() & (cells["mfu"] > MFU_IMPLAUSIBLE)].reset_index(drop=True)


def paper_days(plausible_only: bool = False) -> pd.DataFrame:
    """The paper's Table 1 (optimal settings, days) with the MFU each cell implies (``analysis.paper_cells``);
    infeasible settings are dropped, and with ``plausible_only`` so are the ``implausible_paper_cells``. The
    paper's days are a comparison, never the study's answer (``academic_bench.answer``)."""
    from ..analysis import paper_cells

    df = paper_cells("table1")
    df = df[df["days"].notna()].copy()
    if plausible_only:
        bad = set(zip(*(implausible_paper_cells()[c] for c in ("model", "gpu", "n_gpus"))))
        df = df[[(m, g, int(n)) not in bad for m, g, n in zip(df["model"], df["gpu"], df["n_gpus"])]]
    df["days_source"] = "paper Table 1"
    df["n_gpus"] = df["n_gpus"].astype(int)
    return df[[*DAYS_COLUMNS, "mfu"]].rename(columns={"mfu": "implied_mfu"}).reset_index(drop=True)




# --- setups, budget questions, Pareto fronts -------------------------------------------------------------

def setups_frame(days: pd.DataFrame, assumptions: Assumptions | None = None) -> pd.DataFrame:
    """``days`` (model, gpu, n_gpus, days, days_source[, implied_mfu]) with every cost column added."""
    a = assumptions or Assumptions()
    rows = [cost_of(r.gpu, int(r.n_gpus), float(r.days), a, r.days_source, r.model).to_dict()
            for r in days.itertuples()]
    cols = [f for f in Cost.__dataclass_fields__ if f != "assumptions"]
    df = pd.DataFrame(rows, columns=[*cols, "assumptions"]).drop(columns="assumptions")
    if "implied_mfu" in days.columns:  # the paper's cells and the answers carry the MFU their days imply
        df["implied_mfu"] = days["implied_mfu"].to_numpy(dtype=float)
    if not df.empty:
        df["setup"] = [setup_label(g, n) for g, n in zip(df["gpu"], df["n_gpus"])]
    return df


def plausibility(setups: pd.DataFrame) -> pd.DataFrame:
    """``setups`` (with ``implied_mfu``: ``paper_days`` and the answers carry it) with ``implausible`` (MFU above
    ``analysis.MFU_IMPLAUSIBLE``: days no real training run achieves, so no question here recommends them)."""
    from ..analysis import MFU_IMPLAUSIBLE

    if setups.empty:
        return setups.assign(implied_mfu=pd.Series(dtype=float), implausible=pd.Series(dtype=bool))
    mfu = setups["implied_mfu"].astype(float)
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
    from ..catalog.paper import load_prices

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
