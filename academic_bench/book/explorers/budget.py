"""The budget and cost explorers: which setups fit a budget and which is fastest; what one run costs, owned or
rented, with the prices as sliders. Each has an answer line the browser tests compare with ``budget_answer`` and
``cost_answer``, which compute the same in Python."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ...analysis import MFU_IMPLAUSIBLE, model_label
from ...cost import DAYS_PER_YEAR, Assumptions, cost_of, fastest_within_budget
from ..charts.narrow import NARROW_COLUMN, with_narrow
from .common import (DEFAULT_MODEL, SOURCE_KINDS, answer_text, explorer_setups, select_param, selected_answer,
                     setup_options, slider_param, wrapped_answer)

NARROW_WIDTH = NARROW_COLUMN - 80  # a phone's plot, beside its axis


# --- (1) budget: which setups fit, and the fastest of them -------------------------------------------------

def budget_chart(setups: pd.DataFrame | None = None, model: str = DEFAULT_MODEL,
                 budget_usd: float = 40_000) -> alt.VConcatChart:
    """Purchase cost vs days for one model; a budget slider marks what fits and names the fastest. On a phone:
    a narrower plot and the answer on several lines."""
    df = explorer_setups() if setups is None else setups
    return with_narrow(_budget(df, model, budget_usd, False), _budget(df, model, budget_usd, True))


def _budget(df: pd.DataFrame, model: str, budget_usd: float, narrow: bool) -> alt.VConcatChart:
    width = NARROW_WIDTH if narrow else 520
    from ...catalog.models import model_rank  # the catalog loads torch: only when a chart is drawn

    models = sorted(df["model"].unique(), key=model_rank)
    kinds = [k for k in SOURCE_KINDS if k in set(df["kind"])]
    p_model = select_param("budget_model", models, model, "Model ", [model_label(m) for m in models])
    p_budget = slider_param("budget_usd", budget_usd, 1_000, 260_000, 1_000, "Budget (USD) ")
    p_kind = select_param("budget_days_from", kinds, kinds[0], "Days from ", [SOURCE_KINDS[k] for k in kinds])
    base = alt.Chart(df).transform_filter("datum.model == budget_model && datum.kind == budget_days_from")
    points = base.transform_calculate(
        fits="datum.implausible ? 'implausible days (MFU above " + f"{MFU_IMPLAUSIBLE:.2f}" + "): never picked' : "
             "(datum.purchase_usd <= budget_usd ? 'within budget' : 'over budget')"
    ).mark_circle(size=90, opacity=0.85).encode(
        x=alt.X("purchase_usd:Q", title="purchase cost (USD, log scale)", scale=alt.Scale(type="log"),
                axis=alt.Axis(format="$,.0f")),
        y=alt.Y("days:Q", title="training days (log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("fits:N", title=None, scale=alt.Scale(
            domain=["within budget", "over budget", f"implausible days (MFU above {MFU_IMPLAUSIBLE:.2f}): never picked"],
            range=["#2ca02c", "#bbbbbb", "#d62728"])),
        shape=alt.condition("datum.implausible", alt.value("cross"), alt.value("circle")),
        tooltip=["setup:N", alt.Tooltip("days:Q", format=",.1f"), "days_source:N",
                 alt.Tooltip("implied_mfu:Q", format=".2f", title="implied MFU"),
                 alt.Tooltip("purchase_usd:Q", format="$,.0f", title="purchase")])
    rule = alt.Chart(pd.DataFrame({"one": [1]})).transform_calculate(b="budget_usd").mark_rule(
        color="#2ca02c", strokeDash=[5, 4]).encode(x="b:Q")
    # The answer: fitting setups first (fastest, then cheapest), else the cheapest of all.
    answer = answer_text(df, width, narrow).transform_filter("datum.model == budget_model && datum.kind == budget_days_from"
                                                    " && !datum.implausible").transform_calculate(
        fits="datum.purchase_usd <= budget_usd ? 0 : 1",
        key="datum.purchase_usd <= budget_usd ? datum.days : datum.purchase_usd",
    ).transform_window(rank="row_number()", sort=[alt.SortField("fits"), alt.SortField("key"),
                                                  alt.SortField("purchase_usd")]
                       ).transform_filter("datum.rank == 1").transform_calculate(
        label="datum.fits == 0 ? 'Fastest within ' + format(budget_usd, '$,.0f') + ': ' + datum.setup + ', ' + "
              "format(datum.days, ',.1f') + ' days (' + format(datum.purchase_usd, '$,.0f') + ')' : "
              "'Nothing fits ' + format(budget_usd, '$,.0f') + '; the cheapest is ' + datum.setup + ' at ' + "
              "format(datum.purchase_usd, '$,.0f')")
    ring = answer.mark_point(size=320, strokeWidth=2, color="#222").encode(
        x="purchase_usd:Q", y="days:Q", text=alt.Undefined)
    plot = alt.layer(rule, points, ring).properties(width=width, height=260 if narrow else 300)
    return alt.vconcat(wrapped_answer(answer) if narrow else answer, plot).add_params(p_model, p_budget, p_kind).properties(title=alt.Title(
        "Which setups fit a budget, and which is fastest",
        subtitle=["Purchase = GPUs + the machine that holds them (paper Appendix H). Hover a point for its setup.",
                  f"Red crosses: days implying an MFU above {MFU_IMPLAUSIBLE:.2f}, too fast to be real; never recommended."]))


def budget_answer(setups: pd.DataFrame, model: str, kind: str, budget_usd: float) -> str:
    """The budget chart's answer line, computed in Python (the browser tests compare the two)."""
    df = setups[(setups["model"] == model) & (setups["kind"] == kind) & ~setups["implausible"].astype(bool)]
    fits = fastest_within_budget(df, budget_usd, plausible_only=True)
    if len(fits):
        r = fits.iloc[0]
        return f"Fastest within ${budget_usd:,.0f}: {r['setup']}, {r['days']:,.1f} days (${r['purchase_usd']:,.0f})"
    r = df.sort_values(["purchase_usd", "days"]).iloc[0]
    return f"Nothing fits ${budget_usd:,.0f}; the cheapest is {r['setup']} at ${r['purchase_usd']:,.0f}"


# --- (2) cost per experiment: owning vs renting, with the prices as sliders ----------------------------------

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
    phone: each setup's name above its bars, shorter names of the implausible setups, the answer on several lines."""
    df = explorer_setups() if setups is None else setups
    df = df.assign(key=df["n_gpus"].astype(str) + " x " + df["gpu"])
    return with_narrow(_cost(df, model, setup, False), _cost(df, model, setup, True))


def _cost(df: pd.DataFrame, model: str, setup: str, narrow: bool) -> alt.VConcatChart:
    width = NARROW_COLUMN if narrow else 520
    implausible = ("' (implausible)'" if narrow else f"' (implausible: MFU above {MFU_IMPLAUSIBLE:.2f})'")
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
    shown = f"datum.implausible ? datum.setup + {implausible} : datum.setup"
    # On a phone each setup's name is written above its two bars, not beside them, so the bars take the width.
    y = alt.Y("shown:N", title=None, sort=alt.EncodingSortField("days", op="max", order="descending"),
              axis=None if narrow else alt.Axis())
    offset = alt.YOffset("how:N", scale=alt.Scale(domain=(["name"] if narrow else []) + hows))
    bars = base.transform_fold(["owned", "cloud"], as_=["how", "usd"]).transform_calculate(
        how=f"datum.how == 'owned' ? '{hows[0]}' : '{hows[1]}'", shown=shown,
    ).mark_bar().encode(
        y=y, x=alt.X("usd:Q", title="USD per training run", axis=alt.Axis(format="$,.0f")), yOffset=offset,
        color=alt.Color("how:N", title=None, scale=alt.Scale(domain=hows, range=["#1f77b4", "#ff7f0e"])),
        opacity=alt.condition("datum.key == cost_setup", alt.value(1.0), alt.value(0.45)),
        tooltip=["setup:N", "how:N", alt.Tooltip("usd:Q", format="$,.0f"), alt.Tooltip("days:Q", format=",.1f"),
                 "days_source:N", alt.Tooltip("implied_mfu:Q", format=".2f", title="implied MFU")]
    ).properties(width=width, height=alt.Step(13 if narrow else 9))
    if narrow:
        names = base.transform_calculate(how="'name'", shown=shown).mark_text(
            align="left", baseline="middle", fontSize=11).encode(y=y, yOffset=offset, x=alt.value(0), text="shown:N")
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
        + ([f"Implausible: the days imply an MFU above {MFU_IMPLAUSIBLE:.2f}."] if narrow else [])))


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
