"""The run pages: what the book shows around each executed benchmark notebook.

``notebooks/runs/<setup>/benchmark.ipynb`` is GPU evidence: the book renders its saved outputs and cannot execute
it again, and it shows only the last resume of its setup (a resume that measured nothing reads "0 ran"). Above
it the book puts a summary of the whole folder, generated from ``results.jsonl`` when the book is built: every
result (per model and search, all resumes), the best configuration per model across searches with what its
search reached, and the validations against sustained steps. The notebook's own tables are shown as saved, in a
wrapper that scrolls sideways, with pandas' "NaN" shown as a dash and without its index column.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

RUN_PAGE = re.compile(r"^notebooks/runs/(?P<setup>[^/]+)/benchmark$")
ROOT = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=1)
def _frames():
    from .. import analysis
    from ..predict import measured as answers

    runs = analysis.runs_frame()
    return runs, answers.answers(runs, analysis.skipped_frame()), analysis.validation_pairs(runs)


def setup_summary_html(setup: str, root: str | Path | None = None) -> str:
    """The summary of one setup's folder, as HTML: every result, the best per model, the validations."""
    from .. import analysis
    from . import charts, runs_report
    from .charts import by_model

    folder = Path(root or ROOT / "notebooks" / "runs") / setup
    runs, answers, validations = _frames()
    every = runs_report.summary_table(folder)
    every = by_model(every).assign(model=lambda d: d["model"].map(analysis.model_label))
    best = by_model(answers[answers["setup"] == setup])
    val = by_model(validations[validations["setup"] == setup]).assign(
        model=lambda d: d["model"].map(analysis.model_label))
    parts = [
        '<div class="admonition ab-run-summary"><p class="admonition-title">The whole setup, from its results '
        f"file</p><p>Generated from <code>notebooks/runs/{setup}/results.jsonl</code> when the book was built. "
        "The executed notebook below shows only the last time it was resumed; these tables hold every result "
        "the folder keeps.</p>",
        "<h4>Best per model, across every search</h4>",
        "<p>A setting counts as optimised only where its search is complete; naive-only and unfinished settings "
        "are labelled so and have no days here.</p>",
        charts.table(best, {"model_name": "model", "status": "search", "days": "days",
                            "methods_label": "fastest methods", "micro_batch": "micro-batch", "mfu": "MFU"},
                     {"days": ",.1f", "mfu": ".2f", "micro_batch": ".0f"}, empty="No result yet.").data,
        "<h4>Every result, per model and search</h4>",
        charts.table(every, {"model": "model", "search": "search", "configurations": "configurations",
                             "outcomes": "outcomes", "best methods": "fastest methods", "days": "days",
                             "MFU": "MFU"}, {"days": ",.1f", "MFU": ".2f"}, empty="No result yet.").data,
        "<h4>Validations: extrapolated against sustained steps</h4>",
        charts.table(val, {"model": "model", "methods_label": "methods", "micro_batch": "micro-batch",
                           "predicted_step_s": "extrapolated step (s)", "sustained_step_s": "sustained step (s)",
                           "validate_rel_error": "difference"},
                     {"predicted_step_s": ".3f", "sustained_step_s": ".3f", "validate_rel_error": "+.1%",
                      "micro_batch": ".0f"}, empty="No validation in this folder yet.").data,
        "</div>"]
    return "\n".join(parts)


_TABLE = re.compile(r"(<table[^>]*class=\"dataframe[^\"]*\"[^>]*>.*?</table>)", re.S)
_NAN_CELL = re.compile(r"<td>\s*(NaN|nan|None|&lt;NA&gt;)\s*</td>")


_INDEX_HEAD = re.compile(r"(<thead>\s*<tr[^>]*>)\s*<th>\s*</th>")
_INDEX_CELL = re.compile(r"(<tr[^>]*>)\s*<th>\s*\d+\s*</th>")


def _without_index(table: str) -> str:
    """A pandas table without its index column (an empty heading, then a row number heading each row)."""
    if not _INDEX_HEAD.search(table):
        return table
    return _INDEX_CELL.sub(r"\1", _INDEX_HEAD.sub(r"\1", table))


# A chart as the notebook saved it: the offline renderer's div and script around the chart's spec (its data).
_SAVED_CHART = re.compile(r'<div id="ab-chart-[^"]*" class="ab-chart"></div>\s*<script type="text/javascript">\s*'
                          r"\(function \(\) \{\s*var spec = (?P<spec>.*?);\n.*?\}\)\(\);\s*</script>", re.S)


# A chart saved by today's renderer: both renderings' specs on one line (``charts.chart_html``).
_SAVED_SPECS = re.compile(r"^  var specs = \{wide: (?P<specs>.*)\};$", re.M)


def without_not_results(spec: dict, gone: list[NotResult]) -> dict:
    """A saved chart's spec without the data points that plot a measurement in ``gone`` (its model, methods label
    and days, the figures the notebook drew it from): a set-aside row is no result, on a chart as in a table."""
    import math

    def plots_one(v: dict) -> bool:
        return isinstance(v, dict) and any(
            v.get("model") == model and v.get("methods_label") == label and isinstance(v.get("days"), (int, float))
            and math.isclose(v["days"], days, rel_tol=1e-9) for model, label, _, _, days in gone)

    def clean(node):
        if isinstance(node, dict):
            return {k: ([x for x in v if not plots_one(x)] if k == "values" and isinstance(v, list) else clean(v))
                    for k, v in node.items()}
        if isinstance(node, list):
            return [clean(x) for x in node]
        return node

    return clean(spec) if gone else spec


def redraw_saved_charts(body: str, names: dict[str, str] | None = None, gone: list[NotResult] | None = None) -> str:
    """The saved charts of an executed notebook drawn by today's renderer, from the same spec and data less the
    points of measurements that are no result today (``gone``, ``without_not_results``): it adds the rendering for
    a phone (``charts.narrow``), which a notebook saved before it could not carry. A run folder's name in a chart's
    title is given as its hardware (``names``: ``analysis.setup_names``), in a chart saved by today's renderer
    too."""
    import json

    from .. import analysis
    from .charts import chart_html, specs_line

    def in_words(spec: dict) -> dict:
        spec = without_not_results(spec, gone or [])
        title = spec.get("title")  # a line, or the lines a narrow rendering breaks it into
        if isinstance(title, str):
            spec["title"] = analysis.setups_in_words(title, names or {})
        elif isinstance(title, list):
            spec["title"] = [analysis.setups_in_words(t, names or {}) if isinstance(t, str) else t for t in title]
        return spec

    def redraw(m: re.Match) -> str:
        return chart_html(in_words(json.loads(m["spec"])))

    def retitle(m: re.Match) -> str:
        text, decoder = m["specs"], json.JSONDecoder()
        wide, end = decoder.raw_decode(text)
        rest = text[end:]
        if not rest.startswith(", narrow: "):
            return m.group(0)
        narrow, _ = decoder.raw_decode(rest[len(", narrow: "):])
        return specs_line(in_words(wide), in_words(narrow))

    return _SAVED_SPECS.sub(retitle, _SAVED_CHART.sub(redraw, body))


NotResult = tuple[str, str, float, str, float]  # model, methods label, step time (s), why it is no result, days


def not_results(setup: str, root: str | Path | None = None) -> list[NotResult]:
    """Every synchronized measurement the setup's folder keeps (earlier rows included: a saved notebook may show
    them) that is no result today: set aside by a correction of the engine, or of a method class that the
    engine revision which made it did not validate (``runs_report.unvalidated_reasons``)."""
    from ..catalog.methods import Methods
    from ..results import ResultStore, set_aside_reason, status_of
    from .runs_report import unvalidated_reasons

    path = Path(root or ROOT / "notebooks" / "runs") / setup / "results.jsonl"
    rows = ResultStore(path).rows() if path.exists() else []
    unvalidated = unvalidated_reasons(rows, rows)
    out = []
    for r in rows:
        if r["outcome"] != "ok" or r["timing"] != "synced" or r["mode"] != "step" or not r.get("step_time_s"):
            continue
        why = set_aside_reason(r) if status_of(r) != "measured" else unvalidated.get(id(r))
        if why:
            label = Methods.from_dict(r["config"]["methods"]).label()
            out.append((r["config"]["model"], label, float(r["step_time_s"]), why.split(":")[0],
                        float(r.get("days") or "nan")))
    return out


_SAVED_MFU = re.compile(r"(<th[^>]*>\s*)MFU(\s*</th>)")
_ROW = re.compile(r"<tr[^>]*>(?:(?!</tr>).)*</tr>", re.S)
_CELL = re.compile(r"<td[^>]*>\s*(.*?)\s*</td>", re.S)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def mark_not_results(table: str, gone: list[NotResult]) -> tuple[str, int]:
    """A saved table with each row that shows a measurement in ``gone`` (its model, methods label and step time
    at the table's 4 decimals) marked as no result, and how many rows were marked."""
    marked = 0

    def mark(m: re.Match) -> str:
        nonlocal marked
        row = m.group(0)
        cells = _CELL.findall(row)
        numbers = {n for n in map(_number, cells) if n is not None}
        for model, label, step, why, _ in gone:
            if model in cells and label in cells and round(step, 4) in numbers:
                marked += 1
                row = row.replace("<tr", '<tr class="ab-not-result"', 1)
                return row.replace(f"<td>{label}</td>", f"<td>{label} <strong>({why}: no result)</strong></td>", 1)
        return row

    return _ROW.sub(mark, table), marked


def decorate(body: str, summary: str, gone: list[NotResult] | None = None,
             names: dict[str, str] | None = None) -> str:
    """A run page's HTML body with the summary after its title; saved tables without pandas' index column and
    NaN, in scrolling wrappers; saved charts drawn again (``redraw_saved_charts``, with the setups' ``names``);
    rows that show a measurement that is no result today (``gone``) marked, with a note above the notebook saying
    how many."""
    body = redraw_saved_charts(_NAN_CELL.sub("<td>—</td>", body), names, gone)
    # The saved tables hold the MFU as the row stores it (rated at the peak of the precision that ran); every
    # other MFU on the page is on the study's one basis, so the saved column says which it is.
    body = _SAVED_MFU.sub(r"\1MFU (as saved: rated at the peak of the precision that ran)\2", body)
    count = 0
    if gone:
        def marked_table(m: re.Match) -> str:
            nonlocal count
            table, n = mark_not_results(m.group(1), gone)
            count += n
            return table
        body = _TABLE.sub(marked_table, body)
    if count:
        summary += ('<div class="admonition warning ab-not-results"><p class="admonition-title">Saved tables read '
                    f"with care</p><p>The executed notebook below is shown as it was saved. {count} "
                    f"row{'s' if count != 1 else ''} of its tables show{'' if count != 1 else 's'} a measurement "
                    "that is no result today (set "
                    "aside by a later correction of the engine, or of a method class not validated by the engine "
                    "revision that measured it); each is marked <strong>no result</strong>, and its days chart is "
                    "drawn again without them. The tables above hold the results.</p></div>")
    body = _TABLE.sub(lambda m: '<div class="ab-scroll ab-evidence">' + _without_index(m.group(1)) + "</div>", body)
    end = body.find("</h1>")
    if end < 0:
        return summary + body
    end = body.find("\n", end) + 1 or len(body)
    return body[:end] + summary + body[end:]


def on_doctree(app, doctree) -> None:  # noqa: ANN001 (Sphinx objects)
    """Sphinx ``doctree-read``: a run page's title names its hardware ('Benchmark run: 1 x H100 80GB SXM'), not
    the folder the notebook saved in it; read before Sphinx takes the title for the navigation."""
    from docutils import nodes

    from .. import analysis

    m = RUN_PAGE.match(app.env.docname)
    title = next(iter(doctree.findall(nodes.title)), None) if m else None
    if title is None:
        return
    name = analysis.setup_names(_frames()[0]).get(m["setup"])
    if name and m["setup"] in title.astext():
        title.children = [nodes.Text(title.astext().replace(m["setup"], name))]


def on_page(app, pagename, templatename, context, doctree) -> None:  # noqa: ANN001 (Sphinx objects)
    """Sphinx ``html-page-context``: decorate each run page."""
    m = RUN_PAGE.match(pagename)
    if m and "body" in context:
        from .. import analysis

        context["body"] = decorate(context["body"], setup_summary_html(m["setup"]), not_results(m["setup"]),
                                   analysis.setup_names(_frames()[0]))
