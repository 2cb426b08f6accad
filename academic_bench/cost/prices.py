"""Dated purchase prices: the paper's 2024 quotes and today's, side by side, never one overwriting the other.

Two files hold them:

- ``data/gpus.csv`` (``price_usd``, ``price_source``, ``price_date``): the cost model's default price of each GPU,
  the paper's Appendix H quotes of 2024-09-21 for the four GPUs it priced;
- ``data/purchase_prices.csv``: prices published since, each with its date, page and quoted line, for one card
  (``what`` = card) or a whole machine of ``n_gpus`` (``what`` = machine, which replaces cards plus chassis).

``dated_prices`` is both as one table; ``today_purchase`` and ``paper_purchase`` price a machine at each. *Today's* prices are those dated from ``TODAY_FROM`` on, the newest per GPU
(``today_card_prices``): a GPU with only a 2024 quote has no price of today and is left out of the 2026 budget
questions rather than priced at a two-year-old quote. The machine that holds the cards stays the paper's desktop or
server (Appendix H Tables 6-7, 2024): no later quote of such a chassis was found, and ``price_basis`` says so
for every setup.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import pandas as pd

from ..catalog.hardware import every_gpu
from .model import Assumptions, check_gpus, gpu_key, purchase_cost

TODAY_FROM = "2025"  # prices dated from 2025 on are today's (ISO dates compare as text)
PRICE_COLUMNS = ["gpu", "what", "n_gpus", "usd", "low_usd", "high_usd", "condition", "date", "source", "quoted"]


@lru_cache(maxsize=1)
def _purchase_rows() -> tuple[dict, ...]:
    text = resources.files("academic_bench").joinpath("data/purchase_prices.csv").read_text(encoding="utf-8")
    return tuple(csv.DictReader(text.splitlines()))


def dated_prices() -> pd.DataFrame:
    """Every dated purchase price: data/gpus.csv's (the paper's 2024 quotes, and the few it dates later) and
    data/purchase_prices.csv's, with ``PRICE_COLUMNS`` (``source``: the page and what it says; ``quoted``: its
    line, where one was transcribed), oldest first per GPU."""
    rows = [{"gpu": g.key, "what": "card", "n_gpus": 1, "usd": g.price_usd, "low_usd": None, "high_usd": None,
             "condition": "", "date": g.price_date, "source": f"data/gpus.csv: {g.price_source}", "quoted": ""}
            for g in every_gpu().values() if g.price_usd is not None]
    for r in _purchase_rows():
        rows.append({"gpu": r["gpu"], "what": r["what"], "n_gpus": int(r["n_gpus"]), "usd": float(r["usd"]),
                     "low_usd": float(r["low_usd"]) if r["low_usd"] else None,
                     "high_usd": float(r["high_usd"]) if r["high_usd"] else None, "condition": r["condition"],
                     "date": r["date"], "source": f"{r['source_url']} ({r['note']})", "quoted": r["quoted"]})
    df = pd.DataFrame(rows, columns=PRICE_COLUMNS)
    return df.sort_values(["gpu", "what", "date"], kind="stable").reset_index(drop=True)


@lru_cache(maxsize=2)
def _today(what: str) -> pd.DataFrame:
    df = dated_prices()
    df = df[(df["what"] == what) & (df["date"].astype(str) >= TODAY_FROM)]
    return df.groupby(["gpu", "n_gpus"], sort=False).tail(1)  # the newest (dated_prices sorts by date)


def today_card_prices() -> dict[str, dict]:
    """Per GPU, its newest card price dated from ``TODAY_FROM`` on (a row of ``dated_prices`` as a dict)."""
    return _card_prices()


@lru_cache(maxsize=1)
def _card_prices() -> dict[str, dict]:  # asked once per setup of a table: kept
    return {r["gpu"]: r for r in _today("card").to_dict("records")}


def today_machine_prices() -> dict[tuple[str, int], dict]:
    """Per (GPU, count), the newest price of a whole machine dated from ``TODAY_FROM`` on."""
    return _machine_prices()


@lru_cache(maxsize=1)
def _machine_prices() -> dict[tuple[str, int], dict]:
    return {(r["gpu"], int(r["n_gpus"])): r for r in _today("machine").to_dict("records")}


@dataclass(frozen=True)
class Purchase:
    """What buying ``n_gpus`` x ``gpu`` costs at today's prices, and what that rests on in words."""

    gpu: str
    n_gpus: int
    usd: float
    basis: str


def today_purchase(gpu: str, n_gpus: int, assumptions: Assumptions | None = None) -> Purchase | None:
    """``n_gpus`` x ``gpu`` at today's prices: a whole machine's quote where one is published, else the cards at
    their newest price plus the paper's chassis (``assumptions.machine_cost``, Appendix H 2024); None where the GPU
    has no price of today."""
    a = assumptions or Assumptions()
    n = check_gpus(n_gpus)
    machine = today_machine_prices().get((gpu, n))
    if machine is not None:
        return Purchase(gpu, n, float(machine["usd"]), f"whole machine ${machine['usd']:,.0f} ({machine['date']})")
    card = today_card_prices().get(gpu)
    if card is None:
        return None
    kind = f"{card['condition']} " if card["condition"] else ""
    return _cards_in_chassis(gpu, n, float(card["usd"]), f"{kind}card, {card['date']}", a)


def _cards_in_chassis(gpu: str, n: int, card_usd: float, card_words: str, a: Assumptions) -> Purchase:
    """``n`` cards at ``card_usd`` each (``card_words``: whose price) in the paper's machine for them (Appendix H,
    Tables 6-7), priced by Section 4.1's arithmetic (``model.purchase_cost``)."""
    size = a.machine_size(n)
    return Purchase(gpu, n, purchase_cost(gpu, n, a.with_overrides(gpu_price_usd={gpu_key(gpu): card_usd})),
                    f"{n} x ${card_usd:,.0f} ({card_words}) + ${a.machine_cost(n):,.0f} "
                    f"{'desktop' if size <= 2 else 'server'} (paper, {_chassis_date(size)})")


@lru_cache(maxsize=None)
def _chassis_date(size: int) -> str:
    """The date of the paper's quote of the machine for ``size`` GPUs (Appendix H, Tables 6-7)."""
    from ..catalog.paper import load_machine_costs

    df = load_machine_costs()
    return str(df.loc[df["n_gpus"] == size, "date"].iloc[0])


def paper_purchase(gpu: str, n_gpus: int, assumptions: Assumptions | None = None) -> Purchase | None:
    """``n_gpus`` x ``gpu`` at the paper's prices of September 2024: its Appendix H Table 5 quote per card plus its
    chassis (Tables 6-7), Section 4.1's arithmetic; None for a GPU the paper did not price."""
    from ..catalog.paper import load_prices

    a = assumptions or Assumptions()
    n = check_gpus(n_gpus)
    quotes = load_prices().set_index("gpu")
    if gpu not in quotes.index:
        return None
    return _cards_in_chassis(gpu, n, float(quotes.loc[gpu, "price_usd"]), f"paper Table 5, {quotes.loc[gpu, 'date']}",
                             a)
