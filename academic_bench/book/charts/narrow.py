"""Charts drawn for a phone: the narrow rendering of every chart.

A chart scaled down to a 390 px screen is unreadable (its text shrinks with it), so each chart has a second
rendering drawn for a column of about ``NARROW_COLUMN`` px, and the renderer shows it where the wide one does not
fit (``render``). A chart function can draw its own (``with_narrow``: fewer facets, axes swapped, shorter labels);
every other chart gets one derived from its wide spec (``narrow_spec``): side-by-side panels stacked, plots as
wide as the column leaves them, long axis labels and titles wrapped onto lines, and no text below ``FONT`` px.
"""
from __future__ import annotations

import copy
import math
import textwrap
from typing import Any

NARROW_COLUMN = 330  # px a chart may take on a 390 px screen: the book's column there, less a margin
FONT = 11  # px: the smallest text of a narrow chart (vega's own defaults go down to 10)
CHAR_PX = 6.3  # px per character of an 11 px sans-serif label, on average
TITLE_CHARS = 40  # a 13 px bold title line that fits the column
SUBTITLE_CHARS = 50
LABEL_CHARS = 22  # an axis label longer than this is wrapped onto lines
MIN_PLOT = 120
NARROW_KEY = "ab_narrow"  # usermeta key of a chart's own narrow spec (``with_narrow``)

NARROW_CONFIG = {
    "axis": {"labelFontSize": FONT, "titleFontSize": FONT, "labelLimit": LABEL_CHARS * 8, "labelOverlap": "greedy",
             "labelSeparation": 4},
    # Legends below the plot one under the other (vega puts them side by side by default).
    "legend": {"labelFontSize": FONT, "titleFontSize": FONT, "columns": 1, "labelLimit": NARROW_COLUMN - 30,
               "titleLimit": NARROW_COLUMN, "layout": {"bottom": {"direction": "vertical", "anchor": "start"}}},
    "header": {"labelFontSize": FONT + 1, "titleFontSize": FONT + 1, "labelLimit": NARROW_COLUMN},
    "title": {"fontSize": 13, "subtitleFontSize": FONT, "anchor": "start", "limit": NARROW_COLUMN},
    "text": {"fontSize": FONT},
}


def with_narrow(wide, narrow):  # noqa: ANN001, ANN201 (Altair top-level charts)
    """``wide`` carrying ``narrow`` as its phone rendering (drawn where ``wide`` does not fit its column)."""
    meta = dict(getattr(wide, "usermeta", None) or {}) if not _undefined(getattr(wide, "usermeta", None)) else {}
    meta[NARROW_KEY] = narrow.to_dict()
    return wide.properties(usermeta=meta)


def _undefined(value: Any) -> bool:
    return value is None or type(value).__name__ == "UndefinedType"


def split_narrow(spec: dict) -> tuple[dict, dict]:
    """``(wide, narrow)`` for a spec: its own narrow rendering where the chart drew one, else one derived from it;
    both without the usermeta that carried it."""
    wide = copy.deepcopy(spec)
    meta = wide.get("usermeta") or {}
    own = meta.pop(NARROW_KEY, None)
    if not meta:
        wide.pop("usermeta", None)
    narrow = narrow_spec(own, relayout=False) if own is not None else narrow_spec(wide)
    return wide, narrow


def narrow_spec(spec: dict, relayout: bool = True) -> dict:
    """The narrow rendering of ``spec``: readable type, wrapped titles and labels and, with ``relayout``, panels
    stacked and plots as wide as the column leaves them."""
    s = copy.deepcopy(spec)
    datasets = s.get("datasets") or {}
    _view(s, datasets, s.get("data"), relayout, top=True)
    config = s.setdefault("config", {})
    for key, values in NARROW_CONFIG.items():
        merged = dict(config.get(key) or {})
        for k, v in values.items():
            merged[k] = max(merged.get(k, v), v) if k.endswith("FontSize") or k == "fontSize" else v
        config[key] = merged
    return s


# --- the walk over a vega-lite spec --------------------------------------------------------------------------

def _view(v: dict, datasets: dict, data: Any, relayout: bool, top: bool = False) -> None:
    data = v.get("data", data)
    if "title" in v:
        v["title"] = _wrapped_title(v["title"])
    if relayout:
        if "hconcat" in v:
            v["vconcat"] = v.pop("hconcat")
        if "concat" in v or "facet" in v:
            if "columns" in v:
                v["columns"] = 1
        if isinstance(v.get("facet"), dict) and "column" in v["facet"]:
            v["facet"]["row"] = v["facet"].pop("column")
    for key in ("vconcat", "hconcat", "concat", "layer"):
        for child in v.get(key, []):
            _view(child, datasets, data, relayout)
    if isinstance(v.get("spec"), dict):
        _view(v["spec"], datasets, data, relayout)
    if "mark" in v or "layer" in v:
        _unit(v, datasets, data, relayout)


def _unit(v: dict, datasets: dict, data: Any, relayout: bool) -> None:
    enc = v.get("encoding") or {}
    rows = _rows(datasets, data)
    if relayout and "column" in enc:
        enc["row"] = enc.pop("column")
    mark = v.get("mark")
    if isinstance(mark, dict) and mark.get("type") == "text" and mark.get("fontSize", FONT) < FONT:
        mark["fontSize"] = FONT
    y_px = 0.0
    y = enc.get("y") if isinstance(enc.get("y"), dict) else None
    if y and y.get("type") in ("nominal", "ordinal") and y.get("field"):
        lines, longest = _wrap_labels(y, rows)
        y_px = longest * CHAR_PX + 8
        if lines > 1 and "yOffset" not in enc:  # (with an offset channel the step is the offset band's)
            step = max(_step(v.get("height")) or 20, 13 * lines + 4)
            v["height"] = {"step": step}
    elif y and y.get("type") == "quantitative":
        y_px = 60
    for channel in ("color", "shape", "strokeDash", "size", "opacity"):
        _fit_legend(enc.get(channel), rows)
    if relayout and "layer" not in v:
        _fit_width(v, enc, rows, y_px)
    elif relayout:
        widest = max([y_px] + [_y_px(layer.get("encoding") or {}, _rows(datasets, layer.get("data", data)))
                               for layer in v["layer"]])
        _fit_width(v, {}, rows, widest)
    for channel in ("x", "y"):
        _wrap_axis_title(enc.get(channel))


def _y_px(enc: dict, rows: list[dict]) -> float:
    y = enc.get("y") if isinstance(enc.get("y"), dict) else None
    if not y:
        return 0.0
    if y.get("type") == "quantitative":
        return 60.0
    values = [str(r.get(y.get("field"), "")) for r in rows]
    return min(max((len(s) for s in values), default=0), LABEL_CHARS) * CHAR_PX + 8


def _fit_width(v: dict, enc: dict, rows: list[dict], y_px: float) -> None:
    """The plot as wide as the column leaves beside its axis labels and title."""
    room = max(MIN_PLOT, NARROW_COLUMN - y_px - 24)
    width = v.get("width")
    if isinstance(width, (int, float)) and width > room:
        v["width"] = int(room)
    step = _step(width)
    x = enc.get("x") if isinstance(enc.get("x"), dict) else None
    if step and x and x.get("field"):
        n = len({r.get(x["field"]) for r in rows}) or 1
        if n * step > room:
            v["width"] = {"step": max(12, int(room // n))}


def _wrap_axis_title(channel: Any) -> None:
    if isinstance(channel, dict) and isinstance(channel.get("title"), str):
        channel["title"] = _lines(channel["title"], SUBTITLE_CHARS - 10)


def _step(value: Any) -> float | None:
    return value.get("step") if isinstance(value, dict) else None


def _rows(datasets: dict, data: Any) -> list[dict]:
    if isinstance(data, dict):
        if "values" in data:
            return list(data["values"])
        return list(datasets.get(data.get("name"), []))
    return []


def _wrap_labels(channel: dict, rows: list[dict]) -> tuple[int, int]:
    """Wrap the axis labels of a band channel longer than ``LABEL_CHARS`` onto lines (a vega label expression);
    return the most lines a label takes and the longest line, in characters."""
    values = {str(r.get(channel["field"], "")) for r in rows}
    wrapped = [textwrap.wrap(s, LABEL_CHARS, break_long_words=False) or [""] for s in values]
    lines = max((len(w) for w in wrapped), default=1)
    longest = max((len(line) for w in wrapped for line in w), default=0)
    if lines > 1:
        if "axis" not in channel or channel["axis"] is not None:  # axis None: no axis drawn
            axis = dict(channel.get("axis") or {})
            axis["labelExpr"] = wrap_expression("datum.label", LABEL_CHARS)
            axis["labelLimit"] = LABEL_CHARS * 8
            channel["axis"] = axis
    return lines, longest


def wrap_expression(text: str, width: int) -> str:
    """A vega expression that breaks ``text`` into lines of at most ``width`` characters at spaces (an array of
    strings, which vega draws one under the other)."""
    return (f"split(trim(replace({text}, regexp('(.{{1,{width}}})(\\\\s+|$)', 'g'), '$1\\n')), '\\n')")


def _fit_legend(channel: Any, rows: list[dict]) -> None:
    """As many legend columns as the longest label lets fit the column (one where the labels are not known)."""
    if not isinstance(channel, dict) or channel.get("legend", {}) is None or not channel.get("field"):
        return
    domain = (channel.get("scale") or {}).get("domain")
    values = [str(v) for v in domain] if isinstance(domain, list) else [
        str(r[channel["field"]]) for r in rows if channel["field"] in r]
    legend = dict(channel.get("legend") or {})
    if values and channel.get("type") in ("nominal", "ordinal"):
        longest = max(len(s) for s in values) * CHAR_PX + 45
        legend["columns"] = max(1, min(legend.get("columns", 3) or 3, math.floor(NARROW_COLUMN / longest)))
    else:
        legend["columns"] = 1
    legend.pop("direction", None)
    channel["legend"] = legend


def _wrapped_title(title: Any) -> Any:
    if isinstance(title, dict):
        title = dict(title)
        if "text" in title:
            title["text"] = _lines(title["text"], TITLE_CHARS)
        if "subtitle" in title:
            title["subtitle"] = _line_list(title["subtitle"], SUBTITLE_CHARS)
        return title
    return _lines(title, TITLE_CHARS)


def _line_list(text: str | list[str], width: int) -> list[str]:
    """``text`` (a string, or a list of lines) as lines of at most ``width`` characters, broken at spaces."""
    return [line for t in ([text] if isinstance(text, str) else text)
            for line in (textwrap.wrap(str(t), width, break_long_words=False) or [""])]


def _lines(text: str | list[str], width: int) -> list[str] | str:
    """Like ``_line_list``, but a title that fits on one line stays a string."""
    lines = _line_list(text, width)
    return lines if len(lines) > 1 else lines[0]
