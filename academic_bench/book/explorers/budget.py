"""The budget and cost explorers: which machines fit a budget or a deadline and which is fastest or cheapest, at
today's dated prices or the paper's 2024 quotes; what one run costs, owned or rented, with the prices as sliders.
Each has answer lines the browser tests compare with ``budget_answer``, ``deadline_answer`` and ``cost_answer``,
which compute the same in Python."""
from __future__ import annotations

import json

import altair as alt
import pandas as pd

from ...analysis import MFU_IMPLAUSIBLE, model_label
from ...cost import (DAYS_PER_YEAR, PAST_LIFE, TODAY_FROM, Assumptions, cheapest_within_deadline, cost_of,
                     fastest_within_budget, past_life, plausibility)
from ..charts.narrow import CHAR_PX, NARROW_COLUMN, with_narrow
from .common import (DEFAULT_MODEL, SOURCE_KINDS, answer_text, explorer_setups, select_param, selected_answer,
                     setup_options, slider_param, wrapped_answer)

NARROW_WIDTH = NARROW_COLUMN - 80  # a phone's plot, beside its axis
# Whose prices a machine is bought at (``answer.budget.PRICES``), today's the default.
PRICE_KINDS = {"today": f"today's (dated {TODAY_FROM} on)", "paper": "the paper's (September 2024)"}
FITS = ["within budget", "over budget", f"implausible days (MFU above {MFU_IMPLAUSIBLE:.2f}): never picked"]
BASES = ["measured", "predicted", "the paper's days"]  # what a machine's days rest on, as the legend says it
POINTS = "budget_machines"
BUDGET_COLUMNS = ["model", "prices", "days_from", "setup", "n_gpus", "label", "basis", "days", "days_low",
                  "days_high", "about", "purchase_usd", "price_basis", "implied_mfu", "implausible"]


# --- (1) budget: which machines fit a budget or a deadline, and the fastest or cheapest of them -------------

def budget_setups(root: str | None = None) -> pd.DataFrame:
    """Every machine the budget explorer shows: ``answer.budget.priced_setups`` for each kind of prices (today's,
    the paper's 2024 quotes) and of days (the study's answer, the paper's Table 1), so every catalog GPU with a
    dated price is in it; with ``BUDGET_COLUMNS`` (``setup`` in the short GPU names that fit a phone, ``basis``
    the label in a word, ``about`` the range and label as the answer lines say them)."""
    from ...answer.budget import DAYS, PRICES, priced_setups
    from ...answer.published_ranges import every_answer
    from .answer_grid import short_label

    answers = every_answer(root)
    parts = [priced_setups(p, d, root=root, answers=answers).assign(prices=p, days_from=d)
             for p in PRICES for d in DAYS]
    df = plausibility(pd.concat([p for p in parts if not p.empty], ignore_index=True))
    df["implausible"] = df["implausible"].astype(bool)
    df["setup"] = [f"{int(n)} x {short_label(g)}" for g, n in zip(df["gpu"], df["n_gpus"])]
    df["basis"] = [BASES[0] if k == "measured" else BASES[1] if k == "predicted" else BASES[2] for k in df["kind"]]
    df["about"] = [f"{b}, no range" if k == "paper" else f"{lo:,.1f}-{hi:,.1f}, {b}"
                   for k, b, lo, hi in zip(df["kind"], df["basis"], df["days_low"], df["days_high"])]
    return df[BUDGET_COLUMNS]


def budget_chart(setups: pd.DataFrame | None = None, model: str = DEFAULT_MODEL, budget_usd: float = 40_000,
                 deadline_days: float = 30) -> alt.VConcatChart:
    """Purchase cost vs days for one model; a budget slider names the fastest machine that fits and a deadline
    slider the cheapest that finishes in time, at today's prices or the paper's. On a phone: a narrower plot and
    the answers on several lines."""
    df = budget_setups() if setups is None else setups
    return with_narrow(_budget(df, model, budget_usd, deadline_days, False),
                       _budget(df, model, budget_usd, deadline_days, True))


CHOSEN = "datum.model == budget_model && datum.prices == budget_prices && datum.days_from == budget_days_from"


def _budget(df: pd.DataFrame, model: str, budget_usd: float, deadline_days: float,
            narrow: bool) -> alt.VConcatChart:
    width = NARROW_WIDTH if narrow else 520
    from ...catalog.models import model_rank  # the catalog loads torch: only when a chart is drawn

    models = sorted(df["model"].unique(), key=model_rank)
    prices = [k for k in PRICE_KINDS if k in set(df["prices"])]
    kinds = [k for k in SOURCE_KINDS if k in set(df["days_from"])]
    params = [select_param("budget_model", models, model, "Model ", [model_label(m) for m in models]),
              select_param("budget_prices", prices, prices[0], "Prices ", [PRICE_KINDS[k] for k in prices]),
              select_param("budget_days_from", kinds, kinds[0], "Days from ", [SOURCE_KINDS[k] for k in kinds]),
              slider_param("budget_usd", budget_usd, 1_000, 520_000, 1_000, "Budget (USD) "),
              slider_param("budget_deadline", deadline_days, 1, 365, 1, "Deadline (days) ")]
    base = alt.Chart(df).transform_filter(CHOSEN)
    tooltip = ["setup:N", alt.Tooltip("days:Q", format=",.1f"), alt.Tooltip("about:N", title="range, label"),
               alt.Tooltip("label:N", title="days from"), alt.Tooltip("purchase_usd:Q", format="$,.0f",
                                                                      title="purchase"),
               alt.Tooltip("price_basis:N", title="price rests on"),
               alt.Tooltip("implied_mfu:Q", format=".2f", title="implied MFU")]
    x = alt.X("purchase_usd:Q", title="purchase cost (USD, log scale)", scale=alt.Scale(type="log"),
              axis=alt.Axis(format="$,.0f"))
    days_title, log = "training days (log scale)", alt.Scale(type="log")
    y = alt.Y("days:Q", title=days_title, scale=log)
    # Each machine's range (a prediction's, as wide as the study's checks observed), under its point.
    ranges = base.mark_rule(color="#999", opacity=0.6).encode(
        x=x, y=alt.Y("days_low:Q", title=days_title, scale=log), y2="days_high:Q")
    points = base.transform_calculate(
        fits=f"datum.implausible ? '{FITS[2]}' : (datum.purchase_usd <= budget_usd ? '{FITS[0]}' : '{FITS[1]}')"
    ).mark_point(size=80, filled=True, opacity=0.85).encode(
        x=x, y=y, color=alt.Color("fits:N", title=None, scale=alt.Scale(
            domain=FITS, range=["#2ca02c", "#bbbbbb", "#d62728"])),
        shape=alt.Shape("basis:N", title="days", scale=alt.Scale(
            domain=BASES, range=["circle", "diamond", "square"])), tooltip=tooltip
    ).properties(name=POINTS)  # its marks' class names it (the browser tests count them)
    limits = alt.Chart(pd.DataFrame({"one": [1]})).transform_calculate(b="budget_usd", d="budget_deadline")
    rule = limits.mark_rule(color="#2ca02c", strokeDash=[5, 4]).encode(x="b:Q")
    deadline = limits.mark_rule(color="#ff7f0e", strokeDash=[5, 4]).encode(y="d:Q")
    within = _within_budget(answer_text(df, width, narrow))
    in_time = _within_deadline(answer_text(df, width, narrow))
    rings = [within.mark_point(size=320, strokeWidth=2, color="#222").encode(x=x, y=y, text=alt.Undefined),
             in_time.mark_square(size=420, strokeWidth=2, filled=False, color="#ff7f0e").encode(
                 x=x, y=y, text=alt.Undefined)]
    plot = alt.layer(ranges, rule, deadline, points, *rings).properties(width=width, height=260 if narrow else 300)
    lines = [wrapped_answer(within), wrapped_answer(in_time)] if narrow else [within, in_time]
    return alt.vconcat(*lines, plot).add_params(*params).properties(title=alt.Title(
        "What a budget buys, and what a deadline costs",
        subtitle=["Purchase = GPUs at the prices picked + the machine that holds them (paper Appendix H, 2024),",
                  "or a whole machine's quote. Bars: a machine's range. Hover a point for its label, range and price.",
                  f"Red: days implying an MFU above {MFU_IMPLAUSIBLE:.2f}, too fast to be real; never picked."]))


def _past_life_expression() -> str:
    """``cost.past_life`` as a Vega expression: '' or '; 19.6 years, longer than the GPUs' assumed 5-year life'
    (the cost model's lifespan; the budget explorer has no lifespan slider)."""
    life = Assumptions().lifespan_years
    return (f"(datum.days > {life * DAYS_PER_YEAR} ? '; ' + format(datum.days / {DAYS_PER_YEAR}, ',.1f') + "
            f"' years, ' + {json.dumps(PAST_LIFE.format(life=life))} : '')")


def _within_budget(answer: alt.Chart) -> alt.Chart:
    """The fastest plausible machine within the budget (ties: cheaper, fewer GPUs), else the cheapest of all;
    a machine whose days outlast the GPUs' life says so."""
    return _best(answer, "datum.purchase_usd <= budget_usd", "days", "purchase_usd",
                 "datum.fits == 0 ? 'Fastest within ' + format(budget_usd, '$,.0f') + ': ' + datum.setup + ', ' + "
                 "format(datum.days, ',.1f') + ' days (' + datum.about + '), ' + format(datum.purchase_usd, '$,.0f') + "
                 f"{_past_life_expression()} : "
                 "'Nothing fits ' + format(budget_usd, '$,.0f') + '; the cheapest is ' + datum.setup + ' at ' + "
                 "format(datum.purchase_usd, '$,.0f')")


def _within_deadline(answer: alt.Chart) -> alt.Chart:
    """The cheapest plausible machine that finishes within the deadline (ties: faster, fewer GPUs), else the
    fastest of all."""
    return _best(answer, "datum.days <= budget_deadline", "purchase_usd", "days",
                 "datum.fits == 0 ? 'Cheapest within ' + format(budget_deadline, ',.0f') + ' days: ' + datum.setup + "
                 "', ' + format(datum.purchase_usd, '$,.0f') + ', ' + format(datum.days, ',.1f') + ' days (' + "
                 "datum.about + ')' : 'Nothing finishes within ' + format(budget_deadline, ',.0f') + ' days; the "
                 "fastest is ' + datum.setup + ' at ' + format(datum.days, ',.1f') + ' days'")


def _best(answer: alt.Chart, fits: str, least: str, then: str, label: str) -> alt.Chart:
    """The one plausible machine for which ``fits`` holds with the least ``least`` (ties: the least ``then``, then
    fewer GPUs); where none fits, the one of least ``then`` of all. ``label`` (a Vega expression) says which."""
    return answer.transform_filter(CHOSEN + " && !datum.implausible").transform_calculate(
        fits=f"{fits} ? 0 : 1", key=f"{fits} ? datum.{least} : datum.{then}",
        then=f"{fits} ? datum.{then} : datum.{least}",
    ).transform_window(rank="row_number()", sort=[alt.SortField(f) for f in ("fits", "key", "then", "n_gpus")]
                       ).transform_filter("datum.rank == 1").transform_calculate(label=label)


def _chosen(setups: pd.DataFrame, model: str, prices: str, days_from: str) -> pd.DataFrame:
    return setups[(setups["model"] == model) & (setups["prices"] == prices) & (setups["days_from"] == days_from)
                  & ~setups["implausible"].astype(bool)]


def budget_answer(setups: pd.DataFrame, model: str, prices: str, days_from: str, budget_usd: float) -> str:
    """The budget line of the budget chart, from ``cost.fastest_within_budget`` (the question the 2026 budget
    table asks; the browser tests compare the two), and ``cost.past_life`` where the run outlasts the GPUs."""
    df = _chosen(setups, model, prices, days_from)
    fits = fastest_within_budget(df, budget_usd, plausible_only=True)
    if len(fits):
        r = fits.iloc[0]
        life = past_life(r["days"])
        return (f"Fastest within ${budget_usd:,.0f}: {r['setup']}, {r['days']:,.1f} days ({r['about']}), "
                f"${r['purchase_usd']:,.0f}" + (f"; {life}" if life else ""))
    r = df.sort_values(["purchase_usd", "days", "n_gpus"]).iloc[0]
    return f"Nothing fits ${budget_usd:,.0f}; the cheapest is {r['setup']} at ${r['purchase_usd']:,.0f}"


def deadline_answer(setups: pd.DataFrame, model: str, prices: str, days_from: str, deadline_days: float) -> str:
    """The deadline line of the budget chart, from ``cost.cheapest_within_deadline``."""
    df = _chosen(setups, model, prices, days_from)
    ok = cheapest_within_deadline(df, deadline_days, plausible_only=True)
    if len(ok):
        r = ok.iloc[0]
        return (f"Cheapest within {deadline_days:,.0f} days: {r['setup']}, ${r['purchase_usd']:,.0f}, "
                f"{r['days']:,.1f} days ({r['about']})")
    r = df.sort_values(["days", "purchase_usd", "n_gpus"]).iloc[0]
    return f"Nothing finishes within {deadline_days:,.0f} days; the fastest is {r['setup']} at {r['days']:,.1f} days"


# --- (2) cost per experiment: owning vs renting, with the prices as sliders ----------------------------------

PHONE_IMPLAUSIBLE = " ⚠"  # after a setup's name on a phone, where "(implausible: ...)" leaves the bars no room
COST_SLIDERS = {  # name: (default, lo, hi, step, label)
    "cost_gpu_pct": (100, 25, 200, 5, "GPU prices (% of quote) "),
    "cost_lifespan": (5, 1, 10, 0.5, "Lifespan (years) "),
    "cost_kwh": (Assumptions().kwh_price_usd, 0.0, 0.6, 0.0001, "Electricity (USD/kWh) "),
    "cost_pue": (Assumptions().pue, 1.0, 2.5, 0.02, "PUE "),
    "cost_cloud_pct": (100, 25, 200, 5, "Cloud prices (% of list) "),
}



def cost_chart(setups: pd.DataFrame | None = None, model: str = DEFAULT_MODEL,
               setup: str = "4 x h100-80gb") -> alt.VConcatChart:
    """Cost of one training run per setup, bought (hardware share + energy) or rented, with price sliders. On a
    phone: the setups' short names beside bars as tall as the wide chart's, a mark for the implausible ones, the
    answer on several lines."""
    from .answer_grid import short_label

    df = explorer_setups() if setups is None else setups
    df = df.assign(key=df["n_gpus"].astype(str) + " x " + df["gpu"],
                   short=[f"{int(n)} x {short_label(g)}" for g, n in zip(df["gpu"], df["n_gpus"])])
    return with_narrow(_cost(df, model, setup, False), _cost(df, model, setup, True))


def _cost(df: pd.DataFrame, model: str, setup: str, narrow: bool) -> alt.VConcatChart:
    width = NARROW_COLUMN if narrow else 520
    implausible = (f"'{PHONE_IMPLAUSIBLE}'" if narrow else f"' (implausible: MFU above {MFU_IMPLAUSIBLE:.2f})'")
    from ...catalog.models import model_rank  # the catalog loads torch: only when a chart is drawn

    models = sorted(df["model"].unique(), key=model_rank)
    kinds = [k for k in SOURCE_KINDS if k in set(df["kind"])]
    options, labels = setup_options(df)
    params = [select_param("cost_model", models, model, "Model ", [model_label(m) for m in models]),
              select_param("cost_days_from", kinds, kinds[0], "Days from ", [SOURCE_KINDS[k] for k in kinds]),
              select_param("cost_setup", options, setup if setup in options else options[0], "Setup ", labels)]
    params += [slider_param(n, *v) for n, v in COST_SLIDERS.items()]
    # The same arithmetic as cost.cost_of, written once more as Vega expressions for the browser.
    calc = dict(
        hardware="datum.n_gpus * datum.gpu_quote_usd * cost_gpu_pct / 100 + datum.machine_usd",
        per_run=f"datum.hardware * datum.days / (cost_lifespan * {DAYS_PER_YEAR})",
        energy="datum.board_power_w / 1000 * datum.n_gpus * datum.days * 24 * datum.utilisation * cost_pue * cost_kwh",
        owned="datum.per_run + datum.energy",
        cloud="datum.cloud_quote_usd * cost_cloud_pct / 100 * datum.n_gpus * datum.days * 24",
    )
    base = alt.Chart(df).transform_filter("datum.model == cost_model && datum.kind == cost_days_from")
    for k, v in calc.items():
        base = base.transform_calculate(**{k: v})
    # The paper's cells whose days imply an impossible MFU stay visible as the paper's, named as such on the axis.
    hows = ["owned: hardware share + energy", "rented on demand"]
    name = "datum.short" if narrow else "datum.setup"
    shown = f"datum.implausible ? {name} + {implausible} : {name}"
    # Two bars a setup, as thick on a phone as on a wide screen: the chart is as tall on both. On a phone the
    # short names are drawn inside the plot, left of where the bars start (an axis's labels would push the plot,
    # and the answer above it, past the column).
    names_px = int((df["short"].str.len().max() + len(PHONE_IMPLAUSIBLE)) * CHAR_PX) + 8
    y = alt.Y("shown:N", title=None, sort=alt.EncodingSortField("days", op="max", order="descending"),
              axis=None if narrow else alt.Axis())
    offset = alt.YOffset("how:N", scale=alt.Scale(domain=hows))
    x = alt.X("usd:Q", title="USD per training run", axis=alt.Axis(format="$,.0f"),
              scale=alt.Scale(range=[names_px, width]) if narrow else alt.Undefined)
    bars = base.transform_fold(["owned", "cloud"], as_=["how", "usd"]).transform_calculate(
        how=f"datum.how == 'owned' ? '{hows[0]}' : '{hows[1]}'", shown=shown,
    ).mark_bar().encode(
        y=y, x=x, yOffset=offset,
        color=alt.Color("how:N", title=None, scale=alt.Scale(domain=hows, range=["#1f77b4", "#ff7f0e"])),
        opacity=alt.condition("datum.key == cost_setup", alt.value(1.0), alt.value(0.45)),
        tooltip=["setup:N", "how:N", alt.Tooltip("usd:Q", format="$,.0f"), alt.Tooltip("days:Q", format=",.1f"),
                 "days_source:N", alt.Tooltip("implied_mfu:Q", format=".2f", title="implied MFU")]
    ).properties(width=width, height=alt.Step(9))
    if narrow:
        names = base.transform_calculate(shown=shown).mark_text(align="left", baseline="middle").encode(
            y=y, x=alt.value(0), text="shown:N")
        bars = alt.layer(bars, names)
    answer = answer_text(df, width, narrow)
    answer = answer.transform_filter("datum.model == cost_model && datum.kind == cost_days_from")
    answer = selected_answer(
        answer, calc, "cost_setup",
        "datum.sel == 0 ? datum.setup + ', ' + format(datum.days, ',.1f') + ' days: owned ' + "
        "format(datum.owned, '$,.0f') + ' per run (hardware ' + format(datum.per_run, '$,.0f') + "
        "' + energy ' + format(datum.energy, '$,.0f') + '), rented ' + format(datum.cloud, '$,.0f') + "
        "(datum.implausible ? '; warning: these days imply an MFU of ' + format(datum.implied_mfu, '.2f') + "
        "', too fast to be real' : '') : "
        "'No days for ' + cost_setup + ' and this model'")
    return alt.vconcat(wrapped_answer(answer) if narrow else answer, bars).add_params(*params).properties(title=alt.Title(
        "What one training run costs: owning the hardware or renting it",
        subtitle=["Owned: the purchase spread over the hardware's life, plus electricity (board power x PUE).",
                  "Rented: on-demand price per GPU-hour x GPU-hours (data/cloud_prices.csv)."]
        + ([f"{PHONE_IMPLAUSIBLE.strip()}: the days imply an MFU above {MFU_IMPLAUSIBLE:.2f}, too fast to be "
            "real."] if narrow else [])))


def cost_answer(setups: pd.DataFrame, model: str, kind: str, setup: str, gpu_pct: float = 100,
                lifespan: float = 5, kwh: float | None = None, pue: float | None = None,
                cloud_pct: float = 100) -> str:
    """The cost chart's answer line, from ``cost.cost_of`` (the browser tests compare the two)."""
    n, gpu = setup.split(" x ")
    row = setups[(setups["model"] == model) & (setups["kind"] == kind) & (setups["gpu"] == gpu)
                 & (setups["n_gpus"] == int(n))]
    if row.empty:
        return f"No days for {setup} and this model"
    r = row.iloc[0]
    base = Assumptions()
    a = base.with_overrides(lifespan_years=lifespan, kwh_price_usd=kwh, pue=pue,
                            gpu_price_usd={gpu: base.gpu_price(gpu) * gpu_pct / 100},
                            cloud_usd_per_gpu_hour={gpu: base.cloud_price(gpu) * cloud_pct / 100})
    c = cost_of(gpu, int(n), float(r["days"]), a)
    warn = (f"; warning: these days imply an MFU of {r['implied_mfu']:.2f}, too fast to be real"
            if bool(r["implausible"]) else "")
    return (f"{r['setup']}, {c.days:,.1f} days: owned ${c.owned_per_experiment_usd:,.0f} per run (hardware "
            f"${c.per_experiment_usd:,.0f} + energy ${c.energy_usd:,.0f}), rented ${c.cloud_usd:,.0f}{warn}")
