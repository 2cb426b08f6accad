"""HTML tables for the book's pages (no index, no NaN), the paper's Table 1 grid, counts and glue."""
from __future__ import annotations

import html
import re

import pandas as pd

from ...analysis import MFU_IMPLAUSIBLE

# --- tables ---------------------------------------------------------------------------------------------------

NO_VALUE = "—"  # what a table shows where a value is missing (never pandas' "NaN" or "None")
_MISSING_TEXT = {"nan", "NaN", "None", "<NA>", "NaT"}


def table(df: pd.DataFrame, columns: dict[str, str] | None = None, formats: dict[str, str] | None = None,
          empty: str = "Nothing to show yet.", escape: bool = True, na: str = NO_VALUE, verbatim: bool = False,
          stacked: bool = False):
    """A compact HTML table for a page: chosen columns renamed, numbers formatted, no index.

    ``columns`` maps column -> heading (order kept); ``formats`` maps column -> format spec (e.g. ",.1f");
    a missing value (NaN, None, or such a value already turned into text) shows as ``na``. Text between backticks
    (a command, a column's name) is set as code, as Markdown would set it: the page's Markdown parser never reads
    an HTML table's cells. The table sits in a wrapper that scrolls sideways on a phone-sized screen; on a wide
    one it fits its column. ``verbatim`` marks text quoted as published (the paper's survey questions), which the
    browser tests do not correct and whose backticks stay as printed. ``stacked``:
    on a phone each row is drawn as a block of "heading: value" lines instead (the stylesheet's ``ab-stack``), so
    a table the reader must see whole fits the column without scrolling.
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
    if escape:  # escaped here, so that long paths, commands and URLs can get break opportunities
        out = out.map(lambda v: _code_spans(_breakable(html.escape(v, quote=False)), verbatim)
                      if isinstance(v, str) else v)
    classes = "ab-table ab-verbatim" if verbatim else "ab-table"
    if stacked:
        return HTML(_stacked(out, classes + " ab-stack"))
    return HTML('<div class="ab-scroll">' + out.to_html(index=False, escape=False, border=0, classes=classes)
                + "</div>")


def _stacked(out: pd.DataFrame, classes: str) -> str:
    """An HTML table whose cells carry their column's heading (``data-label``), for the phone layout."""
    heads = [html.escape(str(h)) for h in out.columns]
    head = "".join(f"<th>{h}</th>" for h in heads)
    body = "".join("<tr>" + "".join(f'<td data-label="{h}">{v}</td>' for h, v in zip(heads, row)) + "</tr>"
                   for row in out.itertuples(index=False))
    return f'<table class="{classes}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'



_LONG_TOKEN = re.compile(r"\S{24,}")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _code_spans(text: str, verbatim: bool = False) -> str:
    """Escaped ``text`` with each `span` between backticks as ``<code>`` (text quoted as published, ``verbatim``,
    keeps its backticks as they were printed)."""
    return text if verbatim else _CODE_SPAN.sub(r"<code>\1</code>", text)


def _breakable(text: str) -> str:
    """``text`` with a line-break opportunity (``<wbr>``) after each /, _, . or = inside tokens of 24 or more
    characters, so that a table of file paths or URLs fits its column without breaking numbers or words."""
    return _LONG_TOKEN.sub(lambda m: re.sub(r"(?<=[/_.=])", "<wbr>", m.group(0)), text)


def _missing(v) -> bool:
    """A missing value: None, NaN, pd.NA or NaT, or one that was already printed as text ("nan", "None")."""
    if isinstance(v, str):
        return v.strip() in _MISSING_TEXT
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # a list or array in a cell is a value
        return False


def grid_html(long: pd.DataFrame, value: str, models: list[str], gpus: list[str], model_names: dict[str, str],
              gpu_names: dict[str, str], counts: tuple[int, ...] = (1, 2, 4, 8), per_table: int = 2,
              rebased: bool = False):
    """The paper's Table 1 layout (models x GPU type x count), each cell ours and/or the paper's.

    ``long`` is ``analysis.table1_long``; ``value`` is "days" or "mfu". Our numbers are bold blue, the paper's
    grey italic; MFU above the plausibility threshold is red; a dash is infeasible, "?" unreadable in the paper.
    With ``rebased`` (MFU re-rated on the dense 16-bit basis) a paper cell keeps the flag of the precision that
    ran. At most ``per_table`` GPUs share one table, so that each fits a page's column on a wide screen (on a phone a
    table scrolls inside its ``ab-scroll`` wrapper).
    """
    from IPython.display import HTML

    index = {(r.model, r.gpu, int(r.n_gpus)): r for r in long.itertuples()}

    def fmt(v: float, ours: bool) -> str:
        if value == "mfu":
            return f"{v:.2f}"
        # The paper prints whole days; ours keep a decimal where it matters.
        return f"{v:,.1f}" if ours and v < 10 else f"{v:,.0f}"

    def num(v: float, cls: str, flagged: bool | None = None) -> str:
        flag = value == "mfu" and (v > MFU_IMPLAUSIBLE if flagged is None else flagged)
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
            # An MFU re-rated on another basis keeps the flag of the precision that ran (``paper_implausible``).
            flagged = getattr(r, "paper_implausible", None) if rebased else None
            parts.append(num(paper, "ab-paper", None if flagged is None or flagged != flagged else bool(flagged)))
        elif r.paper_status == "infeasible":
            parts.append('<span class="ab-paper">—</span>')
        elif r.paper_status == "unreadable":
            parts.append('<span class="ab-paper">?</span>')
        return "<br>".join(parts)

    parts = []
    for group in [gpus[i:i + per_table] for i in range(0, len(gpus), per_table)]:
        cols = pd.MultiIndex.from_tuples([(gpu_names.get(g, g), n) for g in group for n in counts],
                                         names=["GPU", "count"])
        rows = [[cell((m, g, n)) for g in group for n in counts] for m in models]
        out = pd.DataFrame(rows, index=pd.Index([model_names.get(m, m) for m in models], name="model"), columns=cols)
        parts.append('<div class="ab-scroll">' + out.to_html(escape=False, border=0, classes="ab-table ab-grid")
                     + "</div>")
    return HTML("\n".join(parts))


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
