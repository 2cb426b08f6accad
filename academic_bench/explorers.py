"""Explorers of cost and training time: Altair charts for the book, ipywidgets for live notebooks.

The book's explorers are Altair charts whose controls are bound parameters: the data table is computed here in
Python (days, prices, MFU per setup) and the arithmetic that depends on a control runs in the browser as Vega
expressions, so they work with no kernel and no network. Each has a line of text that states its computed
answer, which the browser tests read back and compare with the same answer computed by ``cost``/``planning``.

The live explorers (``cost_explorer()``, ``plan_explorer()``) are ipywidgets around the same Python functions,
for JupyterLab, Voila and workshops; they need a running kernel.
"""
from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from .analysis import gpu_label, model_label
from .charts import count
from .cost import (DAYS_PER_YEAR, DEFAULT_SOURCES, GPU_COUNTS, Assumptions, cloud_price_table, cost_of,
                   days_for, default_machine_costs, fastest_within_budget, measured_days, paper_days, setup_label,
                   setups_frame)
from .hardware import catalog as gpu_catalog
from .units import SECONDS_PER_DAY
from .planning import decoder_flops_terms, interpolate_mfu, mfu_points, peak_flops, plan_decoder

SOURCE_KINDS = {"paper": "paper Table 1", "ours": "ours (measured)"}
DEFAULT_MODEL = "pythia-1b"


# --- data tables for the charts ----------------------------------------------------------------------------

def explorer_setups(root: str | None = None, assumptions: Assumptions | None = None) -> pd.DataFrame:
    """Every setup with days, from the paper's Table 1 and from our runs, with what the browser needs.

    Columns: model, gpu, n_gpus, setup, days, days_source, kind ("paper"/"ours"), gpu_quote_usd, machine_usd,
    board_power_w, cloud_quote_usd, utilisation, purchase_usd.
    """
    a = assumptions or Assumptions()
    parts = []
    for kind, days in (("paper", paper_days()), ("ours", measured_days(root))):
        if not days.empty:
            df = setups_frame(days, a)
            df["kind"] = kind
            parts.append(df)
    df = pd.concat(parts, ignore_index=True)
    df["gpu_quote_usd"] = df["gpu"].map(a.gpu_price)
    df["cloud_quote_usd"] = df["gpu"].map(a.cloud_price)
    df["board_power_w"] = df["gpu"].map(lambda g: gpu_catalog()[g].board_power_w)
    df["utilisation"] = a.utilisation
    cols = ["model", "gpu", "n_gpus", "setup", "days", "days_source", "kind", "gpu_quote_usd", "machine_usd",
            "board_power_w", "cloud_quote_usd", "utilisation", "purchase_usd"]
    return df[cols]


def _select(name: str, options: list, value: Any, label: str, labels: list[str] | None = None) -> alt.Parameter:
    return alt.param(name=name, value=value,
                     bind=alt.binding_select(options=options, labels=labels or [str(o) for o in options],
                                             name=label))


def _slider(name: str, value: float, lo: float, hi: float, step: float, label: str) -> alt.Parameter:
    return alt.param(name=name, value=value, bind=alt.binding_range(min=lo, max=hi, step=step, name=label))


def _answer_text(data: pd.DataFrame | alt.Chart, width: int) -> alt.Chart:
    """A one-line text chart; its ``label`` field is computed by the transforms the caller adds."""
    return alt.Chart(data).mark_text(align="left", baseline="middle", fontSize=13, fontWeight="bold",
                                     color="#222").encode(x=alt.value(0), y=alt.value(10), text="label:N"
                                                          ).properties(width=width, height=22,
                                                                       view=alt.ViewBackground(stroke=None))


def _selected_answer(answer: alt.Chart, calc: dict[str, str], param: str, label: str) -> alt.Chart:
    """Apply the explorer's calculations, keep the row of the setup picked in ``param`` (the fastest row
    stands in when that setup has none, so the label can say so) and compute its ``label``."""
    for k, v in calc.items():
        answer = answer.transform_calculate(**{k: v})
    return answer.transform_calculate(sel=f"datum.key == {param} ? 0 : 1").transform_window(
        rank="row_number()", sort=[alt.SortField("sel"), alt.SortField("days")]
    ).transform_filter("datum.rank == 1").transform_calculate(label=label)


def assumptions_table() -> pd.DataFrame:
    """The cost model's defaults with their sources (for the book)."""
    a = Assumptions()
    rows = [("hardware lifespan", f"{a.lifespan_years:g} years", DEFAULT_SOURCES["lifespan_years"]),
            ("electricity", f"${a.kwh_price_usd:g} per kWh", DEFAULT_SOURCES["kwh_price_usd"]),
            ("data-centre overhead (PUE)", f"{a.pue:g}", DEFAULT_SOURCES["pue"]),
            ("share of board power drawn", f"{a.utilisation:g}", DEFAULT_SOURCES["utilisation"])]
    rows += [(f"{g.name}", f"${g.price_usd:,.0f} per GPU, {g.board_power_w:g} W", g.price_source)
             for g in gpu_catalog().values() if g.price_usd is not None]
    rows += [(f"machine for {count(n, 'GPU')}", f"${usd:,.2f}", DEFAULT_SOURCES["machine_cost_usd"])
             for n, usd in sorted(default_machine_costs().items())]
    return pd.DataFrame(rows, columns=["assumption", "default", "source"])


def cloud_prices_table() -> pd.DataFrame:
    """data/cloud_prices.csv as shown in the book."""
    df = cloud_price_table()
    df = df.assign(gpu=df["gpu"].map(gpu_label))
    return df[["gpu", "usd_per_gpu_hour", "default", "provider", "product", "source_url", "as_of", "transcribed_in"]]


# --- (1) budget: which setups fit, and the fastest of them -------------------------------------------------

def budget_chart(setups: pd.DataFrame | None = None, model: str = DEFAULT_MODEL,
                 budget_usd: float = 40_000) -> alt.VConcatChart:
    """Purchase cost vs days for one model; a budget slider marks what fits and names the fastest."""
    df = explorer_setups() if setups is None else setups
    from .models import model_rank  # the catalog loads torch: only when a chart is drawn

    models = sorted(df["model"].unique(), key=model_rank)
    kinds = [k for k in SOURCE_KINDS if k in set(df["kind"])]
    p_model = _select("budget_model", models, model, "Model ", [model_label(m) for m in models])
    p_budget = _slider("budget_usd", budget_usd, 1_000, 260_000, 1_000, "Budget (USD) ")
    p_kind = _select("budget_days_from", kinds, kinds[0], "Days from ", [SOURCE_KINDS[k] for k in kinds])
    base = alt.Chart(df).transform_filter("datum.model == budget_model && datum.kind == budget_days_from")
    points = base.transform_calculate(fits="datum.purchase_usd <= budget_usd ? 'within budget' : 'over budget'"
                                      ).mark_circle(size=90, opacity=0.85).encode(
        x=alt.X("purchase_usd:Q", title="purchase cost (USD, log scale)", scale=alt.Scale(type="log"),
                axis=alt.Axis(format="$,.0f")),
        y=alt.Y("days:Q", title="training days (log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("fits:N", title=None, scale=alt.Scale(domain=["within budget", "over budget"],
                                                                range=["#2ca02c", "#bbbbbb"])),
        tooltip=["setup:N", alt.Tooltip("days:Q", format=",.1f"), "days_source:N",
                 alt.Tooltip("purchase_usd:Q", format="$,.0f", title="purchase")])
    rule = alt.Chart(pd.DataFrame({"one": [1]})).transform_calculate(b="budget_usd").mark_rule(
        color="#2ca02c", strokeDash=[5, 4]).encode(x="b:Q")
    # The answer: fitting setups first (fastest, then cheapest), else the cheapest of all.
    answer = _answer_text(df, 560).transform_filter("datum.model == budget_model && datum.kind == budget_days_from"
                                                    ).transform_calculate(
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
    plot = alt.layer(rule, points, ring).properties(width=560, height=320)
    return alt.vconcat(answer, plot).add_params(p_model, p_budget, p_kind).properties(title=alt.Title(
        "Which setups fit a budget, and which is fastest",
        subtitle="Purchase = GPUs + the machine that holds them (paper Appendix H). Hover a point for its setup."))


def budget_answer(setups: pd.DataFrame, model: str, kind: str, budget_usd: float) -> str:
    """The budget chart's answer line, computed in Python (the browser tests compare the two)."""
    df = setups[(setups["model"] == model) & (setups["kind"] == kind)]
    fits = fastest_within_budget(df, budget_usd)
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


def _setup_options(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The setups of ``df`` for a menu: their keys ("4 x h100-80gb", the values) and display labels."""
    keys = sorted({(g, int(n)) for g, n in zip(df["gpu"], df["n_gpus"])},
                  key=lambda k: (list(gpu_catalog()).index(k[0]), k[1]))
    return [f"{n} x {g}" for g, n in keys], [setup_label(g, n) for g, n in keys]


def cost_chart(setups: pd.DataFrame | None = None, model: str = DEFAULT_MODEL,
               setup: str = "4 x h100-80gb") -> alt.VConcatChart:
    """Cost of one training run per setup, bought (hardware share + energy) or rented, with price sliders."""
    df = explorer_setups() if setups is None else setups
    df = df.assign(key=df["n_gpus"].astype(str) + " x " + df["gpu"])
    from .models import model_rank  # the catalog loads torch: only when a chart is drawn

    models = sorted(df["model"].unique(), key=model_rank)
    kinds = [k for k in SOURCE_KINDS if k in set(df["kind"])]
    options, labels = _setup_options(df)
    params = [_select("cost_model", models, model, "Model ", [model_label(m) for m in models]),
              _select("cost_days_from", kinds, kinds[0], "Days from ", [SOURCE_KINDS[k] for k in kinds]),
              _select("cost_setup", options, setup if setup in options else options[0], "Setup ", labels)]
    params += [_slider(n, *v) for n, v in COST_SLIDERS.items()]
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
    bars = base.transform_fold(["owned", "cloud"], as_=["how", "usd"]).transform_calculate(
        how="datum.how == 'owned' ? 'owned: hardware share + energy' : 'rented on demand'"
    ).mark_bar().encode(
        y=alt.Y("setup:N", title=None, sort=alt.EncodingSortField("days", order="descending")),
        x=alt.X("usd:Q", title="USD per training run", axis=alt.Axis(format="$,.0f")),
        yOffset="how:N",
        color=alt.Color("how:N", title=None, scale=alt.Scale(range=["#1f77b4", "#ff7f0e"])),
        opacity=alt.condition("datum.key == cost_setup", alt.value(1.0), alt.value(0.45)),
        tooltip=["setup:N", "how:N", alt.Tooltip("usd:Q", format="$,.0f"), alt.Tooltip("days:Q", format=",.1f"),
                 "days_source:N"]).properties(width=560, height=alt.Step(9))
    answer = _answer_text(df, 560)
    answer = answer.transform_filter("datum.model == cost_model && datum.kind == cost_days_from")
    answer = _selected_answer(
        answer, calc, "cost_setup",
        "datum.sel == 0 ? datum.setup + ', ' + format(datum.days, ',.1f') + ' days: owned ' + "
        "format(datum.owned, '$,.0f') + ' per run (hardware ' + format(datum.per_run, '$,.0f') + "
        "' + energy ' + format(datum.energy, '$,.0f') + '), rented ' + format(datum.cloud, '$,.0f') : "
        "'No days for ' + cost_setup + ' and this model'")
    return alt.vconcat(answer, bars).add_params(*params).properties(title=alt.Title(
        "What one training run costs: owning the hardware or renting it",
        subtitle=["Owned: the purchase spread over the hardware's life, plus electricity (board power x PUE).",
                  "Rented: on-demand price per GPU-hour x GPU-hours (data/cloud_prices.csv)."]))


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
    return (f"{r['setup']}, {c.days:,.1f} days: owned ${c.owned_per_experiment_usd:,.0f} per run (hardware "
            f"${c.per_experiment_usd:,.0f} + energy ${c.energy_usd:,.0f}), rented ${c.cloud_usd:,.0f}")


# --- (3) planner: days for a decoder of any size, from the MFU we measured ----------------------------------

PLAN_PARAMS_B = np.round(np.arange(0.1, 10.0001, 0.1), 1)  # the slider's values, in billions of parameters


def plan_grid(root: str | None = None, params_b: np.ndarray = PLAN_PARAMS_B) -> pd.DataFrame:
    """Per setup and model size on the slider: MFU (estimate, low, high, source) and the FLOPs terms.

    The browser multiplies these out for the chosen tokens and sequence length (``planning.plan_decoder`` does
    the same in Python).
    """
    rows = []
    for g in gpu_catalog():
        for n in GPU_COUNTS:
            pts = mfu_points(g, n, root=root)
            if pts.empty:
                continue
            for pb in params_b:
                est = interpolate_mfu(pts, pb * 1e9)
                base, per_pos = decoder_flops_terms(pb * 1e9)
                rows.append({"gpu": g, "n_gpus": n, "key": f"{n} x {g}", "setup": setup_label(g, n),
                             "params_b": float(pb), "mfu": est.mfu, "mfu_low": est.low, "mfu_high": est.high,
                             "mfu_source": est.source, "flops_base": base, "flops_per_position": per_pos,
                             "peak_flops": peak_flops(g, "bf16")})
    df = pd.DataFrame(rows)
    # Six significant digits keep the page small and move the days by less than a millionth.
    for col in ("mfu", "mfu_low", "mfu_high"):
        df[col] = df[col].map(lambda v: float(f"{v:.6g}"))
    return df


def plan_chart(grid: pd.DataFrame | None = None, params_b: float = 1.0, tokens_b: float = 3000,
               seq_len: int = 2048, setup: str = "8 x h100-80gb") -> alt.VConcatChart:
    """Days (with the MFU range) for a custom decoder on every setup with an MFU, from sliders."""
    df = plan_grid() if grid is None else grid
    options, labels = _setup_options(df)
    params = [_slider("plan_params_b", params_b, float(PLAN_PARAMS_B[0]), float(PLAN_PARAMS_B[-1]), 0.1,
                      "Parameters (billions) "),
              _slider("plan_tokens_b", tokens_b, 10, 15_000, 10, "Training tokens (billions) "),
              _select("plan_seq", [512, 1024, 2048, 4096, 8192], seq_len, "Sequence length "),
              _select("plan_setup", options, setup if setup in options else options[0], "Setup ", labels)]
    calc = dict(
        at_peak=f"(datum.flops_base + datum.flops_per_position * plan_seq) * plan_tokens_b * 1e9 "
                f"/ (datum.n_gpus * datum.peak_flops) / {SECONDS_PER_DAY}",
        days="datum.at_peak / datum.mfu", days_low="datum.at_peak / datum.mfu_high",
        days_high="datum.at_peak / datum.mfu_low",
    )
    base = _plan_rows(df)
    for k, v in calc.items():
        base = base.transform_calculate(**{k: v})
    y = alt.Y("setup:N", title=None, sort=alt.EncodingSortField("days", order="descending"))
    color = alt.Color("mfu_source:N", title="MFU from")
    bars = base.mark_rule(strokeWidth=3).encode(
        y=y, x=alt.X("days_low:Q", title="training days (log scale; bar = range from the nearest MFUs)",
                     scale=alt.Scale(type="log")), x2="days_high:Q", color=color)
    dots = base.mark_circle(size=80).encode(
        y=y, x="days:Q", color=color,
        tooltip=["setup:N", alt.Tooltip("days:Q", format=",.1f"), alt.Tooltip("days_low:Q", format=",.1f"),
                 alt.Tooltip("days_high:Q", format=",.1f"), alt.Tooltip("mfu:Q", format=".0%"), "mfu_source:N"])
    answer = _plan_rows(df, _answer_text(df.iloc[:0], 600))
    answer = _selected_answer(
        answer, calc, "plan_setup",
        "datum.sel == 0 ? datum.setup + ': ' + format(datum.days, ',.1f') + ' days (' + "
        "format(datum.days_low, ',.1f') + '-' + format(datum.days_high, ',.1f') + '), MFU ' + "
        "format(datum.mfu, '.0%') + ' from ' + datum.mfu_source : 'No MFU for ' + plan_setup")
    plot = alt.layer(bars, dots).properties(width=600, height=alt.Step(16))
    return alt.vconcat(answer, plot).add_params(*params).properties(title=alt.Title(
        "How long would a decoder of this size take?",
        subtitle=["MFU: ours where we measured the setup, interpolated between Pythia sizes; else the MFU the",
                  "paper's days imply, which is too high (unsynchronised timing), so those days are too few."]))


def _plan_rows(grid: pd.DataFrame, chart: alt.Chart | None = None) -> alt.Chart:
    """The grid's rows for the chosen size, as three small tables joined in the browser (a smaller page)."""
    main = grid[["key", "params_b", "mfu", "mfu_low", "mfu_high"]]
    setups = grid[["key", "setup", "n_gpus", "peak_flops", "mfu_source"]].drop_duplicates("key")
    sizes = grid[["params_b", "flops_base", "flops_per_position"]].drop_duplicates("params_b")
    chart = alt.Chart(main) if chart is None else chart.properties(data=main)
    return chart.transform_filter("abs(datum.params_b - plan_params_b) < 0.05").transform_lookup(
        lookup="key", from_=alt.LookupData(setups, "key", ["setup", "n_gpus", "peak_flops", "mfu_source"])
    ).transform_lookup(
        lookup="params_b", from_=alt.LookupData(sizes, "params_b", ["flops_base", "flops_per_position"]))


def plan_answer(params_b: float, tokens_b: float, seq_len: int, setup: str, root: str | None = None) -> str:
    """The planner chart's answer line, from ``planning.plan_decoder`` (the browser tests compare the two)."""
    n, gpu = setup.split(" x ")
    p = plan_decoder(params_b * 1e9, tokens_b * 1e9, gpu, int(n), seq_len, root=root)
    if p.mfu is None:
        return f"No MFU for {setup}"
    return (f"{setup_label(gpu, int(n))}: {p.days:,.1f} days ({p.days_low:,.1f}-{p.days_high:,.1f}), "
            f"MFU {p.mfu.mfu:.0%} from {p.mfu.source}")


# --- live explorers (ipywidgets) ----------------------------------------------------------------------------

def _model_menu() -> list[tuple[str, str]]:
    """(display label, key) of every catalog model, in catalog order: a menu shows labels, its value is the key."""
    from .models import CATALOG, model_rank  # the catalog loads torch: only when a menu is built

    return [(model_label(k), k) for k in sorted(CATALOG, key=model_rank)]


def _gpu_menu() -> list[tuple[str, str]]:
    """(display name, key) of every GPU in the catalog."""
    return [(gpu_label(g), g) for g in gpu_catalog()]


class CostExplorer:
    """Dropdowns and sliders around ``cost.cost_of``; ``result`` holds the last ``Cost``, ``output`` its text."""

    def __init__(self, model: str = DEFAULT_MODEL, gpu: str = "h100-80gb", n_gpus: int = 4,
                 root: str | None = None) -> None:
        import ipywidgets as w

        self._root = root
        a = Assumptions()
        self.model = w.Dropdown(options=_model_menu(), value=model, description="Model")
        self.gpu = w.Dropdown(options=_gpu_menu(), value=gpu, description="GPU")
        self.n_gpus = w.Dropdown(options=list(GPU_COUNTS), value=n_gpus, description="GPUs")
        self.gpu_price = w.BoundedFloatText(value=a.gpu_price(gpu), min=0, max=1e7, step=100,
                                            description="GPU price $")
        self.cloud_price = w.BoundedFloatText(value=a.cloud_price(gpu), min=0, max=1e3, step=0.05,
                                              description="Cloud $/GPU-h")
        self.lifespan = w.FloatSlider(value=a.lifespan_years, min=0.5, max=10, step=0.5, description="Lifespan (y)")
        self.kwh = w.FloatSlider(value=a.kwh_price_usd, min=0, max=0.6, step=0.0001, readout_format=".4f",
                                 description="$/kWh")
        self.pue = w.FloatSlider(value=a.pue, min=1, max=2.5, step=0.01, description="PUE")
        self.output = w.HTML()
        self.result = None
        self.gpu.observe(self._gpu_changed, names="value")
        for c in (self.model, self.n_gpus, self.gpu_price, self.cloud_price, self.lifespan, self.kwh, self.pue):
            c.observe(self.update, names="value")
        self.widget = w.VBox([w.HBox([self.model, self.gpu, self.n_gpus]),
                              w.HBox([self.gpu_price, self.cloud_price]),
                              w.HBox([self.lifespan, self.kwh, self.pue]), self.output])
        self.update()

    def _gpu_changed(self, change: dict) -> None:
        a = Assumptions()
        with self.gpu_price.hold_trait_notifications(), self.cloud_price.hold_trait_notifications():
            self.gpu_price.value = a.gpu_price(change["new"])
            self.cloud_price.value = a.cloud_price(change["new"])
        self.update()

    def update(self, *_: Any) -> None:
        model, gpu, n = self.model.value, self.gpu.value, int(self.n_gpus.value)
        days, source = days_for(model, gpu, n, root=self._root)  # ours, else the paper's, else analytic
        a = Assumptions(lifespan_years=self.lifespan.value, kwh_price_usd=self.kwh.value, pue=self.pue.value,
                        gpu_price_usd={gpu: self.gpu_price.value},
                        cloud_usd_per_gpu_hour={gpu: self.cloud_price.value})
        c = cost_of(gpu, n, days, a, source, model)
        self.result = c
        self.output.value = (
            f"<b>{model_label(model)} on {setup_label(gpu, n)}: {c.days:,.1f} days</b> ({c.days_source})<br>"
            f"purchase ${c.purchase_usd:,.0f} &middot; per run ${c.per_experiment_usd:,.0f} + energy "
            f"${c.energy_usd:,.0f} = <b>owned ${c.owned_per_experiment_usd:,.0f}</b> &middot; "
            f"<b>rented ${c.cloud_usd:,.0f}</b>")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


class PlanExplorer:
    """Sliders around ``planning.plan_decoder``; ``result`` holds the last ``Plan``, ``output`` its text."""

    def __init__(self, params: float = 1e9, tokens: float = 3e12, gpu: str = "h100-80gb", n_gpus: int = 8,
                 seq_len: int = 2048, root: str | None = None) -> None:
        import ipywidgets as w

        self._root = root
        self.params = w.FloatLogSlider(value=params, base=10, min=7, max=11, step=0.01, description="Parameters",
                                       readout_format=".3s")
        self.tokens = w.FloatLogSlider(value=tokens, base=10, min=9, max=13.5, step=0.01, description="Tokens",
                                       readout_format=".3s")
        self.seq_len = w.Dropdown(options=[512, 1024, 2048, 4096, 8192], value=seq_len, description="Seq len")
        self.gpu = w.Dropdown(options=_gpu_menu(), value=gpu, description="GPU")
        self.n_gpus = w.Dropdown(options=list(GPU_COUNTS), value=n_gpus, description="GPUs")
        self.output = w.HTML()
        self.result = None
        for c in (self.params, self.tokens, self.seq_len, self.gpu, self.n_gpus):
            c.observe(self.update, names="value")
        self.widget = w.VBox([w.HBox([self.params, self.tokens]), w.HBox([self.seq_len, self.gpu, self.n_gpus]),
                              self.output])
        self.update()

    def update(self, *_: Any) -> None:
        p = plan_decoder(self.params.value, self.tokens.value, self.gpu.value, int(self.n_gpus.value),
                         int(self.seq_len.value), root=self._root)
        self.result = p
        head = f"{p.params / 1e9:.3g}B parameters, {p.tokens / 1e9:,.0f}B tokens on {setup_label(p.gpu, p.n_gpus)}"
        if p.days is None:
            self.output.value = f"<b>{head}</b>: {p.note}"
        else:
            self.output.value = (f"<b>{head}: {p.days:,.1f} days</b> (range {p.days_low:,.1f}-{p.days_high:,.1f}; "
                                 f"at 100% of peak {p.days_at_peak:,.1f})<br>{p.note}")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def cost_explorer(**kwargs: Any) -> CostExplorer:
    """A live cost explorer (needs a kernel): ``cost_explorer(model='pythia-1b', gpu='h100-80gb', n_gpus=4)``."""
    return CostExplorer(**kwargs)


def plan_explorer(**kwargs: Any) -> PlanExplorer:
    """A live planner (needs a kernel): ``plan_explorer(params=1e9, tokens=3e12, gpu='h100-80gb', n_gpus=8)``."""
    return PlanExplorer(**kwargs)
