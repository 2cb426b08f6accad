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
ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def _frames():
    from . import analysis, answers

    runs = analysis.runs_frame()
    return runs, answers.answers(runs, analysis.skipped_frame()), analysis.validation_pairs(runs)


def setup_summary_html(setup: str, root: str | Path | None = None) -> str:
    """The summary of one setup's folder, as HTML: every result, the best per model, the validations."""
    from . import analysis, charts, runs_report
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


def decorate(body: str, summary: str) -> str:
    """A run page's HTML body with the summary after its title; saved tables without pandas' index column and
    NaN, in scrolling wrappers."""
    body = _NAN_CELL.sub("<td>—</td>", body)
    body = _TABLE.sub(lambda m: '<div class="ab-scroll ab-evidence">' + _without_index(m.group(1)) + "</div>", body)
    end = body.find("</h1>")
    if end < 0:
        return summary + body
    end = body.find("\n", end) + 1 or len(body)
    return body[:end] + summary + body[end:]


def on_page(app, pagename, templatename, context, doctree) -> None:  # noqa: ANN001 (Sphinx objects)
    """Sphinx ``html-page-context``: decorate each run page."""
    m = RUN_PAGE.match(pagename)
    if m and "body" in context:
        context["body"] = decorate(context["body"], setup_summary_html(m["setup"]))
