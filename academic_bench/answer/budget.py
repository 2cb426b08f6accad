"""What a budget buys today: the paper's headline question (Section 4.1, "what $40K buys" with 2024 quotes) asked
again with today's GPUs and prices, for every catalog model.

Each candidate is a machine of 1, 2, 4 or 8 GPUs of a catalog GPU with a price of today (``cost.prices``), its
days the study's one answer on it (measured, predicted, or the paper's plausible cell; ``store.grid`` and
``store.other_gpus``, kept in answers.json so that the table computes in seconds). For each model the table names
the fastest machine within each budget and the cheapest machine that finishes within each deadline, with the
answer's label and range and what the price rests on. The same machines at the paper's 2024 quotes, and the paper's
own days at either prices, stay beside them (``priced_setups``, which the book's budget explorer shows).
"""
from __future__ import annotations

import os
from typing import Iterable

import pandas as pd

from .setups import days_source
from .types import Answer

BUDGETS_USD = (10_000, 40_000, 100_000, 250_000)
DEADLINES_DAYS = (30, 100)
PRICES = ("today", "paper")  # today's dated prices; the paper's Appendix H quotes of 2024 (``priced_setups``)
DAYS = ("answer", "paper")  # the study's one answer; the paper's Table 1, a comparison
SETUP_COLUMNS = ["model", "gpu", "n_gpus", "setup", "kind", "label", "days", "days_low", "days_high",
                 "implied_mfu", "purchase_usd", "price_basis", "rests_on"]
TABLE_COLUMNS = ["model", "question", "limit", "setup", "gpu", "n_gpus", "kind", "label", "days", "days_low",
                 "days_high", "purchase_usd", "price_basis", "why", "past_life"]


def today_setups(models: Iterable[str] | None = None, root: str | os.PathLike | None = None,
                 answers: Iterable[Answer] | None = None) -> pd.DataFrame:
    """Every answered (model, GPU, count) whose GPU has a price of today, bought at that price
    (``cost.today_purchase``): ``SETUP_COLUMNS``, one row each. ``answers`` default to every kept answer (the
    study's grid and the catalog's other GPUs)."""
    return priced_setups("today", "answer", models, root, answers)


def priced_setups(prices: str = "today", days: str = "answer", models: Iterable[str] | None = None,
                  root: str | os.PathLike | None = None, answers: Iterable[Answer] | None = None) -> pd.DataFrame:
    """Every machine with days whose GPU has a price of the kind asked: ``SETUP_COLUMNS``, one row each.

    ``prices``: "today" (``cost.today_purchase``: the newest price dated from ``cost.TODAY_FROM`` on) or "paper"
    (``cost.paper_purchase``: the paper's Appendix H quotes of 2024, for the GPUs it priced). ``days``: "answer"
    (the study's one answer, ``answers`` defaulting to every kept answer) or "paper" (the paper's Table 1 as a
    comparison, every cell with days, its implausible ones included: the questions pass over those)."""
    from ..analysis.facts import setup_label
    from ..cost import paper_days
    from ..cost.prices import paper_purchase, today_purchase

    if prices not in PRICES or days not in DAYS:
        raise ValueError(f"prices must be one of {', '.join(PRICES)} and days one of {', '.join(DAYS)}; "
                         f"got {prices!r}, {days!r}")
    buy = today_purchase if prices == "today" else paper_purchase
    wanted = None if models is None else set(models)
    rows = []
    for r in (_answer_days(root, answers) if days == "answer" else _paper_days(paper_days())):
        bought = buy(r["gpu"], r["n_gpus"]) if wanted is None or r["model"] in wanted else None
        if bought is not None:
            rows.append({**r, "setup": setup_label(r["gpu"], r["n_gpus"]), "purchase_usd": bought.usd,
                         "price_basis": bought.basis})
    return pd.DataFrame(rows, columns=SETUP_COLUMNS)


def _answer_days(root: str | os.PathLike | None, answers: Iterable[Answer] | None) -> list[dict]:
    from .published_ranges import every_answer

    chosen = every_answer(root) if answers is None else tuple(answers)  # as answer() gives them: ranges widened
    return [{"model": a.model, "gpu": a.gpu, "n_gpus": a.n_gpus, "kind": a.kind, "label": days_source(a),
             "days": a.days, "days_low": a.days_low if a.days_low is not None else a.days,
             "days_high": a.days_high if a.days_high is not None else a.days, "implied_mfu": a.mfu,
             "rests_on": a.rests_on} for a in chosen if a.answered]


def _paper_days(cells: pd.DataFrame) -> list[dict]:
    return [{"model": r.model, "gpu": r.gpu, "n_gpus": int(r.n_gpus), "kind": "paper", "label": r.days_source,
             "days": float(r.days), "days_low": float(r.days), "days_high": float(r.days),
             "implied_mfu": float(r.implied_mfu), "rests_on": "the paper's Table 1 (a comparison, not the study's answer)"}
            for r in cells.itertuples()]


def _pick(model: str, question: str, limit: float, found: pd.DataFrame, why: str, life: float | None) -> dict:
    from ..cost import past_life

    if found.empty:
        return {"model": model, "question": question, "limit": limit, "why": why, "past_life": ""}
    r = found.iloc[0]
    return {"model": model, "question": question, "limit": limit, **{c: r[c] for c in SETUP_COLUMNS if c in
            TABLE_COLUMNS}, "why": "", "past_life": past_life(r["days"], life)}


def budget_table(models: Iterable[str] | None = None, budgets: Iterable[float] = BUDGETS_USD,
                 deadlines: Iterable[float] = DEADLINES_DAYS, root: str | os.PathLike | None = None,
                 setups: pd.DataFrame | None = None, lifespan_years: float | None = None) -> pd.DataFrame:
    """Per model (catalog order), the fastest machine within each budget (ties: the cheaper) and the cheapest
    machine that finishes within each deadline in the answer's days (ties: the faster), among ``today_setups``:
    ``TABLE_COLUMNS``, ``question`` being "fastest within" (``limit`` in USD) or "cheapest within" (``limit`` in
    days); where no machine qualifies, ``setup`` is empty and ``why`` says so. ``past_life`` says where the
    machine's days are longer than the GPUs' life (``cost.past_life``; the cost model's lifespan unless given),
    else is empty: the fastest a small budget buys may be a run of decades."""
    from ..catalog.models import CATALOG
    from ..cost import cheapest_within_deadline, fastest_within_budget

    df = today_setups(models, root) if setups is None else setups
    rows = []
    for m in [k for k in CATALOG if (models is None or k in set(models))]:
        mine = df[df["model"] == m]
        cheapest = mine.sort_values(["purchase_usd", "days"]).head(1)
        fastest = mine.sort_values(["days", "purchase_usd"]).head(1)
        for b in budgets:
            why = ("no machine of today's prices is answered for this model" if mine.empty else
                   f"nothing answered costs ${b:,.0f} or less; the cheapest is {cheapest['setup'].iloc[0]} at "
                   f"${cheapest['purchase_usd'].iloc[0]:,.0f}")
            rows.append(_pick(m, "fastest within", float(b), fastest_within_budget(mine, b), why,
                              lifespan_years))
        for d in deadlines:
            why = ("no machine of today's prices is answered for this model" if mine.empty else
                   f"no machine answered finishes within {d:g} days; the fastest is {fastest['setup'].iloc[0]} "
                   f"at {fastest['days'].iloc[0]:,.1f} days")
            rows.append(_pick(m, "cheapest within", float(d), cheapest_within_deadline(mine, d), why,
                              lifespan_years))
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def question_words(question: str, limit: float) -> str:
    """'fastest within $10K', 'cheapest within 30 days'."""
    if question == "fastest within":
        return f"fastest within ${limit / 1000:,.0f}K" if limit >= 1000 else f"fastest within ${limit:,.0f}"
    return f"cheapest within {limit:g} days"


def format_budget_table(table: pd.DataFrame) -> str:
    """``budget_table`` as plain text, one block per model: the question, the machine, its days with their range
    and label, and its price at today's prices."""
    from ..analysis.facts import model_label

    width = max([len(s) for s in table["setup"] if isinstance(s, str)] or [0])
    lines = []
    for m, part in table.groupby("model", sort=False):
        lines.append(model_label(m))
        for r in part.itertuples():
            q = question_words(r.question, r.limit)
            if not isinstance(r.setup, str) or not r.setup:
                lines.append(f"  {q:<24} none: {r.why}")
                continue
            spread = ("the paper's days, no range" if r.kind == "paper" else
                      f"{r.days_low:,.1f}-{r.days_high:,.1f}")
            lines.append(f"  {q:<24} {r.setup:<{width}} ${r.purchase_usd:>9,.0f} {r.days:>8,.1f} days "
                         f"({spread}), {r.label}" + (f"; {r.past_life}" if r.past_life else ""))
    return "\n".join(lines)
