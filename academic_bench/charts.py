"""Altair charts for the book and notebooks, and the offline renderer that shows them without a CDN.

Altair's default HTML output loads vega, vega-lite and vega-embed from public CDNs, so an offline book
would show "Error loading script" in place of every chart. ``enable_offline()`` registers a renderer that
emits a plain div plus a script calling ``window.vegaEmbed``; the library itself is one local file
(``vendor_bundle``) that the book serves from its own static folder (``academic_bench.bookbuild``).
Charts stay interactive (tooltips, bound sliders and menus) with no kernel and no network.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from .analysis import COVERAGE_STATUSES, MFU_IMPLAUSIBLE

BUNDLE_NAME = "vega-bundle.js"
RENDERER = "academic-bench-offline"
CHART_CLASS = "ab-chart"  # every chart div carries it; the browser tests look for it

_counter = itertools.count()


# --- the offline renderer ---------------------------------------------------------------------------------

def vendor_bundle(folder: str | Path) -> Path:
    """Write vega + vega-lite + vega-embed (matched to the installed Altair) into ``folder``.

    The bundle is wrapped in a function scope because its top-level ``const _`` clashes with Sphinx's
    global ``_``; it publishes ``window.vegaEmbed`` itself. The file is rewritten only when it changes.
    """
    import vl_convert

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    text = "(function(){\n" + vl_convert.javascript_bundle() + "\n})();\n"
    path = folder / BUNDLE_NAME
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def _html(spec: dict, **_: Any) -> dict[str, str]:
    """A div and a script that draws ``spec`` with the locally served vega-embed."""
    blob = json.dumps(spec, sort_keys=True)
    div = f"ab-chart-{next(_counter)}-{hashlib.sha1(blob.encode()).hexdigest()[:10]}"
    safe = blob.replace("</", "<\\/")  # a "</script>" inside a label must not end the script
    html = f"""<div id="{div}" class="{CHART_CLASS}"></div>
<script type="text/javascript">
(function () {{
  var spec = {safe};
  function draw() {{
    var el = document.getElementById("{div}");
    if (!window.vegaEmbed) {{
      el.textContent = "The chart library is missing: build the book with `make book`.";
      console.error("vegaEmbed is not loaded");
      return;
    }}
    window.vegaEmbed(el, spec, {{actions: false, renderer: "svg"}}).catch(function (err) {{
      el.textContent = "Chart error: " + err;
      console.error(err);
    }});
  }}
  if (document.readyState === "loading") {{ document.addEventListener("DOMContentLoaded", draw); }}
  else {{ draw(); }}
}})();
</script>"""
    return {"text/html": html}


def enable_offline() -> None:
    """Make every Altair chart displayed from now on render with the local vega bundle (no CDN)."""
    if RENDERER not in alt.renderers.names():
        alt.renderers.register(RENDERER, _html)
    alt.renderers.enable(RENDERER)


# --- shared pieces -----------------------------------------------------------------------------------------

SOURCE_COLORS = alt.Scale(domain=["paper", "ours"], range=["#9e9e9e", "#1f77b4"])


def model_order(values) -> list:
    """The distinct models in ``values`` (keys or display labels) in catalog order, for a chart's ``sort=``:
    each family by size (Pythia-160M, -410M, -1B, -2.8B, -6.9B), never alphabetical."""
    from .models import model_rank

    return sorted(dict.fromkeys(v for v in values if isinstance(v, str)), key=model_rank)


def by_model(df: pd.DataFrame, col: str = "model", within: tuple[str, ...] = ()) -> pd.DataFrame:
    """``df``'s rows with the models in ``col`` (keys or display labels) in catalog order; rows of one model keep
    their order. ``within`` names columns to group by first (sorted by their own values)."""
    from .models import model_rank

    if df.empty:
        return df
    ranked = df.assign(_model_rank=df[col].map(model_rank))
    return ranked.sort_values([*within, "_model_rank"], kind="stable").drop(columns="_model_rank")


def model_list(models) -> str:
    """Models (keys, or one comma-separated string of keys) as their display labels in catalog order, joined."""
    from .analysis import model_label

    if isinstance(models, str):
        models = [m.strip() for m in models.split(",") if m.strip()]
    return ", ".join(model_label(m) for m in model_order(models))


def _empty(message: str) -> alt.Chart:
    """A small chart that says why there is nothing to draw (so a page never shows a blank box)."""
    return alt.Chart(pd.DataFrame({"text": [message]})).mark_text(size=14, color="#555").encode(
        text="text:N").properties(width=520, height=60)


# --- the survey --------------------------------------------------------------------------------------------

def availability_heatmap(df: pd.DataFrame, title: str) -> alt.Chart:
    """Share of respondents (colour) by GPU count (rows) and longest allowed use (columns).

    ``df`` columns: n_gpus (str label), duration, share (0-1), and optionally count.
    """
    if df.empty:
        return _empty("No survey answers to show.")
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
        return _empty("No answers to show.")
    base = alt.Chart(df).encode(y=alt.Y(f"{category}:N", sort="-x", title=None),
                                x=alt.X(f"{value}:Q", axis=alt.Axis(format="%"), title="share of respondents"))
    return (base.mark_bar(color="#4c78a8") + base.mark_text(align="left", dx=3).encode(
        text=alt.Text(f"{value}:Q", format=".0%"))).properties(width=420, title=title)


# --- training time ------------------------------------------------------------------------------------------

def days_by_gpus(df: pd.DataFrame, title: str = "Training days by GPU count") -> alt.Chart:
    """Days (log scale) vs GPU count, one line per model, paper and ours side by side.

    ``df`` columns: model, gpu, n_gpus, days, source ("paper"/"ours").
    """
    if df.empty:
        return _empty("No training times to show yet.")
    return alt.Chart(df).mark_line(point=True).encode(
        x=alt.X("n_gpus:O", title="GPUs"),
        y=alt.Y("days:Q", scale=alt.Scale(type="log"), title="days (log scale)"),
        color=alt.Color("model:N", sort=model_order(df["model"])),
        strokeDash=alt.StrokeDash("source:N", title="source"),
        tooltip=["model", "gpu", "n_gpus", "source", alt.Tooltip("days:Q", format=",.1f"),
                 *([alt.Tooltip("mfu:Q", format=".2f")] if "mfu" in df.columns else [])],
    ).properties(width=230, height=180).facet(column=alt.Column("gpu:N", title=None)).properties(title=title)


def mfu_strip(df: pd.DataFrame, title: str = "Implied MFU of every cell") -> alt.Chart:
    """MFU per cell (x) per model (y), coloured by source, with the implausibility threshold drawn.

    ``df`` columns: model, gpu, n_gpus, mfu, source.
    """
    if df.empty:
        return _empty("No MFU values to show yet.")
    points = alt.Chart(df).mark_point(filled=True, size=60, opacity=0.8).encode(
        x=alt.X("mfu:Q", title="model FLOPs utilisation (fraction of dense spec peak)"),
        y=alt.Y("model:N", title=None, sort=model_order(df["model"])),
        color=alt.Color("source:N", scale=SOURCE_COLORS, title="source"),
        shape=alt.Shape("gpu:N", title="GPU"),
        tooltip=["model", "gpu", "n_gpus", "source", alt.Tooltip("mfu:Q", format=".2f"),
                 *([alt.Tooltip("days:Q", format=",.1f")] if "days" in df.columns else [])],
    )
    rule = alt.Chart(pd.DataFrame({"x": [MFU_IMPLAUSIBLE]})).mark_rule(color="#d62728", strokeDash=[4, 3]).encode(
        x="x:Q")
    return (points + rule).properties(width=460, height=260, title=title)


def feasibility_grid(df: pd.DataFrame, title: str) -> alt.Chart:
    """Which model x (GPU, count) settings are feasible; ``df``: model, setting, status."""
    if df.empty:
        return _empty("No settings to show yet.")
    return alt.Chart(df).mark_rect(stroke="white").encode(
        x=alt.X("setting:N", sort=None, title=None), y=alt.Y("model:N", sort=model_order(df["model"]), title=None),
        color=alt.Color("status:N", scale=alt.Scale(
            domain=["feasible", "infeasible", "not measured"], range=["#59a14f", "#e15759", "#dddddd"])),
        tooltip=["model", "setting", "status"],
    ).properties(title=title)


COVERAGE_COLORS = alt.Scale(domain=list(COVERAGE_STATUSES),
                            range=["#4c78a8", "#9ecae9", "#e0a458", "#e15759", "#eeeeee"])


def coverage_grid(df: pd.DataFrame, title: str = "What the shipped runs cover") -> alt.Chart:
    """One cell per setup (rows) and model (columns), one panel per search, coloured by its state;
    ``df`` is ``analysis.coverage`` with a ``model_name`` column."""
    if df.empty:
        return _empty("No benchmark run is shipped yet.")
    return alt.Chart(df).mark_rect(stroke="white", strokeWidth=2).encode(
        x=alt.X("model_name:N", sort=model_order(df["model_name"]), title=None,
                axis=alt.Axis(labelAngle=-40, orient="top")),
        y=alt.Y("setup:N", title=None),
        color=alt.Color("status:N", scale=COVERAGE_COLORS, title=None, legend=alt.Legend(orient="bottom",
                                                                                         columns=3)),
        tooltip=["setup", "model_name", "search", "status",
                 alt.Tooltip("ok:Q", title="measured"), alt.Tooltip("failed:Q", title="out of memory or failed"),
                 alt.Tooltip("not_run:Q", title="left by a budget")],
    ).properties(width=alt.Step(44), height=alt.Step(22)).facet(
        row=alt.Row("search:N", sort=list(dict.fromkeys(df["search"])), title=None,
                    header=alt.Header(labelOrient="top", labelAnchor="start", labelFontWeight="bold")),
    ).properties(title=title)


# --- efficient methods ---------------------------------------------------------------------------------------

def speedup_bars(df: pd.DataFrame, x: str, title: str, column: str | None = None) -> alt.Chart:
    """Speed-up factors (1 = no change) per category ``x``; ``df`` columns: x, speedup, and optionally source."""
    if df.empty:
        return _empty("No speed-ups to show yet: they need runs of both settings.")
    has_source = "source" in df.columns
    base = alt.Chart()  # data comes from the layer, so a facet splits bars and the reference line alike
    bars = base.mark_bar().encode(
        x=alt.X(f"{x}:N", title=None, sort=model_order(df[x]) if x == "model" else None),
        y=alt.Y("speedup:Q", title="speed-up (x)"),
        color=alt.Color("source:N", scale=SOURCE_COLORS) if has_source else alt.value("#4c78a8"),
        xOffset=alt.XOffset("source:N") if has_source else alt.XOffset(),
        tooltip=[c for c in df.columns if c in (x, "speedup", "source", "model", "gpu", "n_gpus", "label")],
    )
    one = base.mark_rule(color="black").encode(y=alt.datum(1.0))
    layered = alt.layer(bars, one, data=df).properties(width=200 if column else 480, height=220)
    if column:
        return layered.facet(column=alt.Column(f"{column}:N", title=None)).properties(title=title)
    return layered.properties(title=title)


SMART_COLORS = alt.Scale(domain=["measured", "skipped", "not run"], range=["#4c78a8", "#c7c7c7", "#e0a458"])


def search_bars(df: pd.DataFrame, title: str = "Every combination of the exhaustive search, and what smart did") -> alt.Chart:
    """Training days of each measured combination (one panel per setting), coloured by what the smart search
    did with it; ``df`` is ``analysis.search_combinations`` with a ``setting`` label column."""
    if df.empty:
        return _empty("No exhaustive search to show yet.")
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("days:Q", title="training days"),
        y=alt.Y("methods_label:N", title=None, sort=alt.EncodingSortField("days", order="ascending"),
                axis=alt.Axis(labelLimit=320)),
        color=alt.Color("smart:N", scale=SMART_COLORS, title="smart search", legend=alt.Legend(orient="top")),
        tooltip=["methods_label", alt.Tooltip("days:Q", format=",.1f"), "micro_batch",
                 alt.Tooltip("gpu_minutes:Q", format=",.1f", title="GPU minutes to measure"), "smart"],
    ).properties(width=300, height=alt.Step(16)).facet(  # settings above their panels: the page is narrow
        row=alt.Row("setting:N", title=None, sort=_settings_order(df),
                    header=alt.Header(labelOrient="top", labelAnchor="start", labelFontWeight="bold",
                                      labelFontSize=12)),
    ).resolve_scale(y="independent").properties(title=title)


def _settings_order(df: pd.DataFrame) -> list[str]:
    """The ``setting`` labels in model order (catalog order of ``model``, where the frame has it)."""
    return list(dict.fromkeys((by_model(df) if "model" in df.columns else df)["setting"]))


def profile_bars(df: pd.DataFrame, title: str = "Where the device's time goes in one training step") -> alt.Chart:
    """Each profiled configuration's busy device time split by kind of work, as stacked shares;
    ``df`` is ``analysis.profiles`` with a ``setting`` label column."""
    if df.empty:
        return _empty("No profile yet: academic-bench profile measures one.")
    kinds = list(dict.fromkeys(df["kind"]))  # the profiler's order of kinds (``measure.profile.KINDS``)
    return alt.Chart(df.assign(order=df["kind"].map({k: i for i, k in enumerate(kinds)}))).mark_bar().encode(
        x=alt.X("share:Q", title="share of the device's busy time", axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("setting:N", title=None, sort=_settings_order(df), axis=alt.Axis(labelLimit=360)),
        color=alt.Color("kind:N", title="kind of work", sort=kinds, legend=alt.Legend(orient="top", columns=4)),
        order=alt.Order("order:Q"),
        tooltip=["setting", "kind", alt.Tooltip("share:Q", format=".1%"),
                 alt.Tooltip("seconds:Q", format=",.3g", title="seconds per step"),
                 alt.Tooltip("busy_share:Q", format=".0%", title="device busy")],
    ).properties(width=460, height=alt.Step(22), title=title)


# --- measuring honestly -------------------------------------------------------------------------------------

def scatter_vs(df: pd.DataFrame, x: str, y: str, x_title: str, y_title: str, title: str,
               color: str = "model", log: bool = False) -> alt.Chart:
    """``y`` against ``x`` with the y = x line (predicted vs measured, synced vs unsynced...)."""
    if df.empty:
        return _empty("No paired measurements yet.")
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


# --- cost -----------------------------------------------------------------------------------------------------

def cost_vs_days(df: pd.DataFrame, cost: str, title: str, cost_title: str) -> alt.Chart:
    """Hardware (or per-experiment) cost vs training days, one point per hardware option (Figure 7 style).

    ``df`` columns: label, days, ``cost``, gpu, source.
    """
    if df.empty:
        return _empty("No costs to show.")
    return alt.Chart(df).mark_point(filled=True, size=80).encode(
        x=alt.X("days:Q", title="training days", scale=alt.Scale(zero=False)),
        y=alt.Y(f"{cost}:Q", title=cost_title, axis=alt.Axis(format="$,.0f")),
        color=alt.Color("gpu:N", title="GPU"),
        shape=alt.Shape("source:N", title="times from") if "source" in df.columns else alt.value("circle"),
        tooltip=["label", alt.Tooltip("days:Q", format=",.1f"), alt.Tooltip(f"{cost}:Q", format="$,.0f")]
        + (["source"] if "source" in df.columns else []),
    ).properties(width=480, height=300, title=title)


# --- tables ---------------------------------------------------------------------------------------------------

NO_VALUE = "—"  # what a table shows where a value is missing (never pandas' "NaN" or "None")
_MISSING_TEXT = {"nan", "NaN", "None", "<NA>", "NaT"}


def table(df: pd.DataFrame, columns: dict[str, str] | None = None, formats: dict[str, str] | None = None,
          empty: str = "Nothing to show yet.", escape: bool = True, na: str = NO_VALUE):
    """A compact HTML table for a page: chosen columns renamed, numbers formatted, no index.

    ``columns`` maps column -> heading (order kept); ``formats`` maps column -> format spec (e.g. ",.1f");
    a missing value (NaN, None, or such a value already turned into text) shows as ``na``.
    """
    from IPython.display import HTML

    if df.empty:
        return HTML(f'<p class="ab-empty"><em>{empty}</em></p>')
    columns = columns or {c: c for c in df.columns}
    out = df[list(columns)].copy()
    for col, spec in (formats or {}).items():
        if col in out.columns:
            out[col] = out[col].map(lambda v, s=spec: na if _missing(v) else format(v, s))
    out = out.astype(object).map(lambda v: na if _missing(v) else v)
    out = out.map(lambda v: {True: "yes", False: "no"}.get(v, v) if isinstance(v, bool) else v)
    out = out.rename(columns=columns)
    return HTML(out.to_html(index=False, escape=escape, border=0, classes="ab-table"))


def _missing(v) -> bool:
    """A missing value: None, NaN, pd.NA or NaT, or one that was already printed as text ("nan", "None")."""
    if isinstance(v, str):
        return v.strip() in _MISSING_TEXT
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # a list or array in a cell is a value
        return False


def grid_html(long: pd.DataFrame, value: str, models: list[str], gpus: list[str], model_names: dict[str, str],
              gpu_names: dict[str, str], counts: tuple[int, ...] = (1, 2, 4, 8)):
    """The paper's Table 1 layout (models x GPU type x count), each cell ours and/or the paper's.

    ``long`` is ``analysis.table1_long``; ``value`` is "days" or "mfu". Our numbers are bold blue, the paper's
    grey italic; MFU above the plausibility threshold is red; a dash is infeasible, "?" unreadable in the paper.
    """
    from IPython.display import HTML

    index = {(r.model, r.gpu, int(r.n_gpus)): r for r in long.itertuples()}

    def fmt(v: float, ours: bool) -> str:
        if value == "mfu":
            return f"{v:.2f}"
        # The paper prints whole days; ours keep a decimal where it matters.
        return f"{v:,.1f}" if ours and v < 10 else f"{v:,.0f}"

    def num(v: float, cls: str) -> str:
        flag = value == "mfu" and v > MFU_IMPLAUSIBLE
        text = fmt(v, cls == "ab-ours")
        return f'<span class="{cls}{" ab-flag" if flag else ""}">{text}{" ⚠" if flag else ""}</span>'

    def cell(key: tuple) -> str:
        r = index.get(key)
        if r is None:
            return ""
        ours, paper = getattr(r, f"ours_{value}"), getattr(r, f"paper_{value}")
        parts = []
        if ours == ours and ours is not None:
            parts.append(num(ours, "ab-ours"))
        if paper == paper and paper is not None:
            parts.append(num(paper, "ab-paper"))
        elif r.paper_status == "infeasible":
            parts.append('<span class="ab-paper">—</span>')
        elif r.paper_status == "unreadable":
            parts.append('<span class="ab-paper">?</span>')
        return "<br>".join(parts)

    cols = pd.MultiIndex.from_tuples([(gpu_names.get(g, g), n) for g in gpus for n in counts], names=["GPU", "count"])
    rows = [[cell((m, g, n)) for g in gpus for n in counts] for m in models]
    out = pd.DataFrame(rows, index=[model_names.get(m, m) for m in models], columns=cols)
    return HTML('<div class="ab-scroll">' + out.to_html(escape=False, border=0, classes="ab-table ab-grid")
                + "</div>")


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular or plural as ``n`` asks: '1 setting', '3 settings' (never 'setting(s)')."""
    n = int(n)
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def glue(name: str, value) -> None:
    """Glue a value into a page's prose (``{glue:text}`name:.1f```) as a plain Python number or text.

    numpy scalars would be glued by their repr (``np.float64(...)``), which the format spec cannot read.
    """
    from myst_nb import glue as _glue

    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    _glue(name, value, display=False)
