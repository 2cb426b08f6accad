"""The book's figures, chapter by chapter: survey, training time, methods, honest measurement, cost."""
from __future__ import annotations

import math

import altair as alt
import pandas as pd

from ...analysis import COVERAGE_STATUSES, MFU_IMPLAUSIBLE
from .narrow import with_narrow
from .tables import NO_VALUE
from .common import SOURCE_COLORS, empty_chart, by_model, gpu_color, gpu_names, gpu_shape, model_order

__all__ = ["availability_heatmap", "share_bars", "days_by_gpus", "mfu_strip", "feasibility_grid", "COVERAGE_COLORS",
           "coverage_grid", "speedup_bars", "SMART_COLORS", "search_bars", "profile_bars", "scatter_vs",
           "error_strip", "cost_vs_days", "published_ratio_strip"]

# --- the survey --------------------------------------------------------------------------------------------

def availability_heatmap(df: pd.DataFrame, title: str) -> alt.Chart:
    """Share of respondents (colour) by GPU count (rows) and longest allowed use (columns).

    ``df`` columns: n_gpus (str label), duration, share (0-1), and optionally count.
    """
    if df.empty:
        return empty_chart("No survey answers to show.")
    order = ["Hours", "Days", "Weeks", "Months", "Indefinitely"]
    base = alt.Chart(df).encode(
        x=alt.X("duration:N", sort=order, title="longest use per experiment"),
        y=alt.Y("n_gpus:N", sort=list(dict.fromkeys(df["n_gpus"])), title="GPUs"),
    )
    tooltip = [c for c in ("n_gpus", "duration", "share", "count") if c in df.columns]
    rect = base.mark_rect().encode(
        color=alt.Color("share:Q", title="share of respondents", scale=alt.Scale(scheme="blues")),
        tooltip=tooltip)
    text = base.mark_text(fontSize=11).encode(
        text=alt.Text("share:Q", format=".0%"),
        color=alt.condition("datum.share > 0.5", alt.value("white"), alt.value("black")))
    return (rect + text).properties(width=420, height=230, title=title)


def share_bars(df: pd.DataFrame, category: str, title: str, value: str = "share") -> alt.Chart:
    """Horizontal bars of a share (0-1) per category, labelled with the percentage."""
    if df.empty:
        return empty_chart("No answers to show.")
    base = alt.Chart(df).encode(y=alt.Y(f"{category}:N", sort="-x", title=None),
                                x=alt.X(f"{value}:Q", axis=alt.Axis(format="%"), title="share of respondents"))
    return (base.mark_bar(color="#4c78a8") + base.mark_text(align="left", dx=3).encode(
        text=alt.Text(f"{value}:Q", format=".0%"))).properties(width=420, title=title)


# --- training time ------------------------------------------------------------------------------------------

def days_by_gpus(df: pd.DataFrame, title: str = "Training days by GPU count") -> alt.Chart:
    """Days (log scale) vs GPU count, one line per model, paper and ours side by side, one panel per GPU (two
    panels a row, so the chart fits a page's column; one a row on a phone). Ours are solid lines with filled
    dots, the paper's dashed lines with open ones, and the legend draws them so.

    ``df`` columns: model, gpu (display label), n_gpus, days, source ("paper"/"ours"), and optionally mfu and
    status (what the search behind a point of ours reached, for its tooltip).
    """
    if df.empty:
        return empty_chart("No training times to show yet.")
    if "status" in df.columns:  # the paper's points have no search of ours behind them: a dash, never "null"
        df = df.assign(status=df["status"].fillna(NO_VALUE))
    sources = [s for s in ("ours", "paper") if s in set(df["source"])] + sorted(set(df["source"]) - {"ours", "paper"})
    base = alt.Chart().encode(
        x=alt.X("n_gpus:O", title="GPUs"),
        y=alt.Y("days:Q", scale=alt.Scale(type="log"), title="days (log scale)"),
        color=alt.Color("model:N", sort=model_order(df["model"])),
        tooltip=["model", "gpu", "n_gpus", "source", alt.Tooltip("days:Q", format=",.1f"),
                 *([alt.Tooltip("mfu:Q", format=".2f")] if "mfu" in df.columns else []),
                 *(["status"] if "status" in df.columns else [])])
    lines = base.mark_line().encode(strokeDash=alt.StrokeDash(
        "source:N", title="source", sort=sources,
        scale=alt.Scale(domain=sources, range=[[1, 0], [5, 3], [1, 2]][:len(sources)]),
        legend=alt.Legend(symbolType="stroke", symbolStrokeWidth=2, symbolSize=400, symbolStrokeColor="#555")))
    points = base.mark_point(size=36, strokeWidth=1.5).encode(
        fill=alt.Fill("model:N", sort=model_order(df["model"]), legend=None),
        fillOpacity=alt.FillOpacity("source:N", sort=sources,
                                    scale=alt.Scale(domain=sources, range=[1, 0, 0][:len(sources)]), legend=None))
    return alt.layer(lines, points, data=df).properties(width=250, height=160).facet(
        facet=alt.Facet("gpu:N", title=None, sort=[g for g in gpu_names() if g in set(df["gpu"])]), columns=2,
    ).properties(title=title)


def mfu_strip(df: pd.DataFrame, title: str = "Implied MFU of every cell") -> alt.Chart:
    """MFU per cell (x) per model (y), coloured by source, with the implausibility threshold drawn.

    ``df`` columns: model, gpu, n_gpus, mfu, source.
    """
    if df.empty:
        return empty_chart("No MFU values to show yet.")
    points = alt.Chart(df).mark_point(filled=True, size=60, opacity=0.8).encode(
        # The stored MFU, on the peak of the precision that ran: the basis of the plausibility line drawn beside it.
        x=alt.X("mfu:Q", title="MFU (fraction of the dense peak of the precision that ran)"),
        y=alt.Y("model:N", title=None, sort=model_order(df["model"])),
        color=alt.Color("source:N", scale=SOURCE_COLORS, title="source"),
        shape=gpu_shape(),
        tooltip=["model", "gpu", "n_gpus", "source", alt.Tooltip("mfu:Q", format=".2f"),
                 *([alt.Tooltip("days:Q", format=",.1f")] if "days" in df.columns else [])],
    )
    rule = alt.Chart(pd.DataFrame({"x": [MFU_IMPLAUSIBLE]})).mark_rule(color="#d62728", strokeDash=[4, 3]).encode(
        x="x:Q")
    return (points + rule).properties(width=460, height=260, title=title)


def feasibility_grid(df: pd.DataFrame, title: str, row: str | None = None) -> alt.Chart:
    """Which model x (GPU, count) settings are feasible; ``df``: model, setting, status, and the ``row`` column
    that splits it into panels (one per table). On a phone the axes swap: a setting a row, a model a column."""
    if df.empty:
        return empty_chart("No settings to show yet.")

    def grid(narrow: bool) -> alt.Chart:
        setting = alt.X("setting:N", sort=None, title=None)
        model = alt.Y("model:N", sort=model_order(df["model"]), title=None)
        if narrow:
            setting = alt.Y("setting:N", sort=None, title=None)
            model = alt.X("model:N", sort=model_order(df["model"]), title=None,
                          axis=alt.Axis(orient="top", labelAngle=-90))
        cells = alt.Chart(df).mark_rect(stroke="white").encode(
            setting, model,
            color=alt.Color("status:N", scale=alt.Scale(
                domain=["feasible", "infeasible", "not measured"], range=["#59a14f", "#e15759", "#dddddd"])),
            tooltip=["model", "setting", "status"],
        ).properties(width=alt.Step(18 if narrow else 20), height=alt.Step(16 if narrow else 20))
        if row:
            cells = cells.facet(row=alt.Row(f"{row}:N", title=None, sort=list(dict.fromkeys(df[row])),
                                            header=alt.Header(labelOrient="top", labelAnchor="start",
                                                              labelFontWeight="bold")))
        return cells.properties(title=title)

    return with_narrow(grid(False), grid(True))


COVERAGE_COLORS = alt.Scale(domain=list(COVERAGE_STATUSES),
                            range=["#4c78a8", "#9ecae9", "#e0a458", "#e15759", "#eeeeee"])


def coverage_grid(df: pd.DataFrame, title: str = "What the shipped runs cover") -> alt.Chart:
    """One cell per setup (rows) and model (columns), one panel per search, coloured by its state;
    ``df`` is ``analysis.coverage`` with a ``model_name`` column. On a phone the axes swap: a model a row."""
    if df.empty:
        return empty_chart("No benchmark run is shipped yet.")

    def grid(narrow: bool) -> alt.Chart:
        model = alt.X("model_name:N", sort=model_order(df["model_name"]), title=None,
                      axis=alt.Axis(labelAngle=-40, orient="top"))
        setup = alt.Y("setup:N", title=None)
        if narrow:
            model = alt.Y("model_name:N", sort=model_order(df["model_name"]), title=None)
            setup = alt.X("setup:N", title=None, axis=alt.Axis(labelAngle=-90, orient="top"))
        return alt.Chart(df).mark_rect(stroke="white", strokeWidth=2).encode(
            model, setup,
            color=alt.Color("status:N", scale=COVERAGE_COLORS, title=None,
                            legend=alt.Legend(orient="bottom", columns=1 if narrow else 3)),
            tooltip=["setup", "model_name", "search", "status",
                     alt.Tooltip("ok:Q", title="measured"), alt.Tooltip("failed:Q", title="out of memory or failed"),
                     alt.Tooltip("not_run:Q", title="left by a budget")],
        ).properties(width=alt.Step(30 if narrow else 44), height=alt.Step(18 if narrow else 22)).facet(
            row=alt.Row("search:N", sort=list(dict.fromkeys(df["search"])), title=None,
                        header=alt.Header(labelOrient="top", labelAnchor="start", labelFontWeight="bold")),
        ).properties(title=title)

    return with_narrow(grid(False), grid(True))


# --- efficient methods ---------------------------------------------------------------------------------------

def speedup_bars(df: pd.DataFrame, x: str, title: str, column: str | None = None) -> alt.Chart:
    """Speed-up factors (1 = no change) per category ``x``; ``df`` columns: x, speedup, and optionally source."""
    if df.empty:
        return empty_chart("No speed-ups to show yet: they need runs of both settings.")
    has_source = "source" in df.columns
    base = alt.Chart()  # data comes from the layer, so a facet splits bars and the reference line alike
    tips = [c for c in df.columns if c in (x, "speedup", "source", "model", "gpu", "n_gpus", "label")]
    if x != "model":  # long labels (one bar per setting): horizontal bars, one setting a row, in the frame's order
        bars = base.mark_bar().encode(
            y=alt.Y(f"{x}:N", title=None, sort=list(dict.fromkeys(df[x]))),
            x=alt.X("speedup:Q", title="speed-up (x)"),
            color=alt.Color("source:N", scale=SOURCE_COLORS) if has_source else alt.value("#4c78a8"),
            yOffset=alt.YOffset("source:N") if has_source else alt.YOffset(), tooltip=tips)
        one = base.mark_rule(color="black").encode(x=alt.datum(1.0))
        return alt.layer(bars, one, data=df).properties(width=300, height=alt.Step(16), title=title)
    bars = base.mark_bar().encode(
        x=alt.X(f"{x}:N", title=None, sort=model_order(df[x])),
        y=alt.Y("speedup:Q", title="speed-up (x)"),
        color=alt.Color("source:N", scale=SOURCE_COLORS) if has_source else alt.value("#4c78a8"),
        xOffset=alt.XOffset("source:N") if has_source else alt.XOffset(), tooltip=tips,
    )
    one = base.mark_rule(color="black").encode(y=alt.datum(1.0))
    layered = alt.layer(bars, one, data=df).properties(width=260 if column else 480, height=220)
    if column:
        return layered.facet(facet=alt.Facet(f"{column}:N", title=None), columns=2).properties(title=title)
    return layered.properties(title=title)


SMART_COLORS = alt.Scale(domain=["measured", "skipped", "not run"], range=["#4c78a8", "#c7c7c7", "#e0a458"])


def search_bars(df: pd.DataFrame, title: str = "Every combination of the exhaustive search, and what smart did") -> alt.Chart:
    """Training days of each measured combination (one panel per setting), coloured by what the smart search
    did with it; ``df`` is ``analysis.search_combinations`` with a ``setting`` label column. On a phone, one row
    of dots per setting (a dot per combination, its methods in the tooltip) instead of a panel of named bars."""
    if df.empty:
        return empty_chart("No exhaustive search to show yet.")
    tooltip = ["methods_label", alt.Tooltip("days:Q", format=",.1f"), "micro_batch",
               alt.Tooltip("gpu_minutes:Q", format=",.1f", title="GPU minutes to measure"), "smart"]
    color = alt.Color("smart:N", scale=SMART_COLORS, title="smart search", legend=alt.Legend(orient="bottom"))
    wide = alt.Chart(df).mark_bar().encode(
        x=alt.X("days:Q", title="training days"),
        y=alt.Y("methods_label:N", title=None, sort=alt.EncodingSortField("days", order="ascending"),
                axis=alt.Axis(labelLimit=320)),
        color=color, tooltip=tooltip,
    ).properties(width=300, height=alt.Step(16)).facet(  # settings above their panels: the page is narrow
        row=alt.Row("setting:N", title=None, sort=settings_order(df),
                    header=alt.Header(labelOrient="top", labelAnchor="start", labelFontWeight="bold",
                                      labelFontSize=12)),
    ).resolve_scale(y="independent").properties(title=title)
    narrow = alt.Chart(df).mark_point(filled=True, size=70, opacity=0.85).encode(
        x=alt.X("days:Q", title="training days"),
        y=alt.Y("setting:N", title=None, sort=settings_order(df)),
        yOffset=alt.YOffset("smart:N", scale=alt.Scale(domain=SMART_COLORS.domain)),
        color=color, tooltip=tooltip,
    ).properties(width=200, height=alt.Step(13), title=alt.Title(
        title, subtitle="One dot per combination measured (tap it for its methods)"))
    return with_narrow(wide, narrow)


def settings_order(df: pd.DataFrame) -> list[str]:
    """The ``setting`` labels in model order (catalog order of ``model``, where the frame has it)."""
    return list(dict.fromkeys((by_model(df) if "model" in df.columns else df)["setting"]))


def profile_bars(df: pd.DataFrame, title: str = "Where the device's time goes in one training step") -> alt.Chart:
    """Each profiled configuration's busy device time split by kind of work, as stacked shares;
    ``df`` is ``analysis.profiles`` with a ``setting`` label column."""
    if df.empty:
        return empty_chart("No profile yet: academic-bench profile measures one.")
    kinds = list(dict.fromkeys(df["kind"]))  # the profiler's order of kinds (``measure.profile.KINDS``)
    return alt.Chart(df.assign(order=df["kind"].map({k: i for i, k in enumerate(kinds)}))).mark_bar().encode(
        x=alt.X("share:Q", title="share of the device's busy time", axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("setting:N", title=None, sort=settings_order(df), axis=alt.Axis(labelLimit=300)),
        color=alt.Color("kind:N", title="kind of work", sort=kinds, legend=alt.Legend(orient="bottom", columns=3)),
        order=alt.Order("order:Q"),
        tooltip=["setting", "kind", alt.Tooltip("share:Q", format=".1%"),
                 alt.Tooltip("seconds:Q", format=",.3g", title="seconds per step"),
                 alt.Tooltip("busy_share:Q", format=".0%", title="device busy")],
    ).properties(width=360, height=alt.Step(22), title=title)


# --- measuring honestly -------------------------------------------------------------------------------------

def scatter_vs(df: pd.DataFrame, x: str, y: str, x_title: str, y_title: str, title: str,
               color: str = "model", log: bool = False) -> alt.Chart:
    """``y`` against ``x`` with the y = x line (predicted vs measured, synced vs unsynced...)."""
    if df.empty:
        return empty_chart("No paired measurements yet.")
    scale = alt.Scale(type="log") if log else alt.Scale(zero=False)
    lo, hi = float(df[[x, y]].min().min()), float(df[[x, y]].max().max())
    diag = alt.Chart(pd.DataFrame({x: [lo, hi], y: [lo, hi]})).mark_line(color="#888", strokeDash=[4, 3]).encode(
        x=alt.X(f"{x}:Q", scale=scale), y=alt.Y(f"{y}:Q", scale=scale))
    tips = [c for c in ("model", "gpu", "n_gpus", "methods_label", x, y) if c in df.columns]
    points = alt.Chart(df).mark_circle(size=70).encode(
        x=alt.X(f"{x}:Q", title=x_title, scale=scale), y=alt.Y(f"{y}:Q", title=y_title, scale=scale),
        color=alt.Color(f"{color}:N", sort=model_order(df[color]) if color == "model" else "ascending"),
        tooltip=tips)
    return (diag + points).properties(width=420, height=320, title=title)


# --- other hardware -------------------------------------------------------------------------------------------

def error_strip(df: pd.DataFrame, worst: float, title: str) -> alt.Chart:
    """Each held-out prediction's error (x) per method class (y), coloured by how it was carried, with the
    target's worst error drawn on both sides. ``df`` columns: method_class, error, carried, point."""
    if df.empty:
        return empty_chart("No held-out prediction yet.")
    points = alt.Chart(df).mark_point(filled=True, size=60, opacity=0.8).encode(
        x=alt.X("error:Q", title="predicted / measured days - 1", axis=alt.Axis(format="+.0%")),
        y=alt.Y("method_class:N", title=None),
        color=alt.Color("carried:N", title="predicted as"),
        tooltip=["point", "carried", alt.Tooltip("error:Q", format="+.1%")])
    rules = alt.Chart(pd.DataFrame({"x": [-worst, worst]})).mark_rule(color="#d62728", strokeDash=[4, 3]).encode(
        x="x:Q")
    return (points + rules).properties(width=460, height=alt.Step(26), title=title)


# --- cost -----------------------------------------------------------------------------------------------------

def cost_vs_days(df: pd.DataFrame, cost: str, title: str, cost_title: str) -> alt.Chart:
    """Hardware (or per-experiment) cost vs training days, one point per hardware option (Figure 7 style).

    ``df`` columns: label, days, ``cost``, gpu, source.
    """
    if df.empty:
        return empty_chart("No costs to show.")
    return alt.Chart(df).mark_point(filled=True, size=80).encode(
        x=alt.X("days:Q", title="training days", scale=alt.Scale(zero=False)),
        y=alt.Y(f"{cost}:Q", title=cost_title, axis=alt.Axis(format="$,.0f")),
        color=gpu_color(),
        shape=alt.Shape("source:N", title="times from") if "source" in df.columns else alt.value("circle"),
        tooltip=["label", alt.Tooltip("days:Q", format=",.1f"), alt.Tooltip(f"{cost}:Q", format="$,.0f")]
        + (["source"] if "source" in df.columns else []),
    ).properties(width=480, height=300, title=title)


# --- other hardware -------------------------------------------------------------------------------------------

# Ratios a log axis of predicted over published may label: round to read, about evenly apart in the logarithm.
RATIO_TICKS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


def ratio_ticks(low: float, high: float, most: int = 5) -> tuple[float, float, list[float]]:
    """A log axis's domain and labelled ticks for ratios from ``low`` to ``high``: the domain runs from the tick at or
    below ``low`` to the one at or above ``high``, so that a label lies beyond every point at both ends; between
    them, 1 and the ticks at least a ``most``-th of the axis from their neighbours, so that no label overlaps another
    and none is dropped (vega drops overlapping labels of a log axis)."""
    lo = max((t for t in RATIO_TICKS if t <= low), default=low * 0.95)
    hi = min((t for t in RATIO_TICKS if t >= high), default=high * 1.05)
    gap = math.log10(hi / lo) / most
    fixed = sorted({lo, hi} | ({1.0} if lo < 1.0 < hi else set()))
    ticks = [fixed[0]]
    for end in fixed[1:]:
        for t in (t for t in RATIO_TICKS if ticks[-1] < t < end):
            if math.log10(t / ticks[-1]) >= gap and math.log10(end / t) >= gap:
                ticks.append(t)
        ticks.append(end)
    return lo, hi, ticks


def published_ratio_strip(df: pd.DataFrame, order: list[str], median: tuple[float, float], worst: tuple[float, float],
                          title: str = "Predicted over published time per token, by GPU type") -> alt.Chart:
    """One point per published measurement (``answer.published_check``: columns gpu, ratio, source, model,
    n_gpus, method, published, predicted), one row per GPU type in ``order``, on a log axis; the ``worst``
    band shaded and the ``median`` band darker. Narrow enough for a phone's column."""
    df = df.dropna(subset=["ratio"])
    if df.empty:
        return empty_chart("No published measurement predicted yet.")
    lo, hi, ticks = ratio_ticks(min(float(df["ratio"].min()), worst[0]), max(float(df["ratio"].max()), worst[1]))
    x = alt.X("ratio:Q", title="predicted / published time per token",
              scale=alt.Scale(type="log", domain=[lo, hi], nice=False), axis=alt.Axis(format=".2f", values=ticks))
    y = alt.Y("gpu:N", title=None, sort=order)
    bands = pd.DataFrame({"from": [worst[0], median[0]], "to": [worst[1], median[1]],
                          "band": ["every point", "median"]})
    shade = alt.Chart(bands).mark_rect(opacity=0.15).encode(
        x=alt.X("from:Q", scale=alt.Scale(type="log", domain=[lo, hi], nice=False)), x2="to:Q",
        color=alt.Color("band:N", title="target", scale=alt.Scale(domain=["every point", "median"],
                                                                  range=["#74c476", "#238b45"])))
    one = alt.Chart(pd.DataFrame({"ratio": [1.0]})).mark_rule(color="#555").encode(x="ratio:Q")
    points = alt.Chart(df).mark_point(filled=True, size=60, opacity=0.8).encode(
        x=x, y=y, shape=alt.Shape("source:N", title="published in"),
        tooltip=["model", "gpu", "n_gpus", "method", alt.Tooltip("published:Q", title="published tokens/s/GPU",
                                                                 format=",.0f"),
                 alt.Tooltip("predicted:Q", title="predicted tokens/s/GPU", format=",.0f"),
                 alt.Tooltip("ratio:Q", format=".2f")])
    return (shade + one + points).properties(width=300, height=alt.Step(28), title=title)

