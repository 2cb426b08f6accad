"""The run pages: the executed notebook is shown as saved, and its rows that are no result today are marked."""
from __future__ import annotations

import pytest

from academic_bench.book import run_pages
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import NAIVE, Methods
from academic_bench.results import ResultStore, make_row
from measured import typed_figures  # noqa: F401  (a fixture)

ZERO1 = Methods(compile=True, kernels=True, tf32=True, sharding="zero1")
SAVED = """<h1>Benchmark</h1>
<table border="1" class="dataframe">
<thead><tr><th></th><th>model</th><th>search</th><th>best methods</th><th>step s</th></tr></thead>
<tbody>
<tr><th>0</th><td>pythia-1b</td><td>naive</td><td>naive</td><td>4.0000</td></tr>
<tr><th>1</th><td>pythia-1b</td><td>smart</td><td>free-lunch + ZeRO-1</td><td>1.2346</td></tr>
</tbody></table>"""


def test_a_saved_row_set_aside_since_is_marked_as_no_result(tmp_path):
    store = ResultStore(tmp_path / "h200x2" / "results.jsonl")
    c = lambda m: Config("pythia-1b", "h200", 2, methods=m)  # noqa: E731
    base = dict(setup="h200x2", outcome="ok", search="smart", gas=2, micro_batch=16)
    store.append({**make_row(c(ZERO1), step_time_s=1.23456, days=2.0, **base), "engine": 1})  # set aside
    store.append(make_row(c(NAIVE), step_time_s=4.0, days=8.0, **base))
    store.append(make_row(c(NAIVE), step_time_s=4.0, days=8.0, mode="validate", **base,
                          validate={"steps": 3, "sustained_step_s": 4.0, "predicted_step_s": 4.0, "rel_error": 0.0}))
    gone = run_pages.not_results("h200x2", tmp_path)
    assert [(m, label, why, days) for m, label, _, why, days in gone] == [("pythia-1b", "free-lunch + ZeRO-1",
                                                                           "set aside", 2.0)]
    page = run_pages.decorate(SAVED, "<p>summary</p>", gone)
    assert page.count('class="ab-not-result"') == 1
    assert "free-lunch + ZeRO-1 <strong>(set aside: no result)</strong>" in page
    assert "1 row of its tables shows" in page and page.index("summary") < page.index("<table")


@pytest.mark.usefixtures("typed_figures")  # synthetic rows with typed-in figures
def test_the_same_row_prints_one_mfu_on_every_table_that_shows_it(tmp_path, monkeypatch):
    """A naive fp32 run is stored rated at the fp32 peak; the notebook's summary, the answer and the run page
    show it on the one basis (the dense 16-bit peak), with the same rounding."""
    import pandas as pd

    from academic_bench import analysis
    from academic_bench.predict import measured as answers
    from academic_bench.book import runs_report

    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    c = Config("vit-large", "h100-80gb", 1, methods=NAIVE)
    fp32 = 67e12  # a placeholder peak for the stored rating, not the catalog's: the basis is what is tested
    base = dict(setup="h100x1", outcome="ok", search="naive", gas=2, micro_batch=16, step_time_s=4.0, days=8.0,
                mfu=0.6, peak_flops=fp32)
    store.append(make_row(c, **base))
    store.append(make_row(c, mode="validate", **base,
                          validate={"steps": 3, "sustained_step_s": 4.0, "predicted_step_s": 4.0, "rel_error": 0.0}))
    runs = analysis.runs_frame(tmp_path)
    expected = round(0.6 * fp32 / analysis.dense16_peak("h100-80gb"), analysis.MFU_DIGITS)
    summary = runs_report.summary_table(tmp_path / "h100x1")
    assert summary.loc[summary["search"] == "naive", "MFU"].tolist() == [expected]
    monkeypatch.setattr(answers, "coverage", lambda df, skipped: pd.DataFrame(
        [{"setup": "h100x1", "model": "vit-large", "search": "smart", "status": "complete"}]))
    answer = answers.answers(runs, analysis.skipped_frame(tmp_path))
    assert round(answer["mfu"].iloc[0], analysis.MFU_DIGITS) == expected
    saved = run_pages.decorate("<h1>x</h1><table class=\"dataframe\"><tr><th>MFU</th></tr></table>", "")
    assert "MFU (as saved: rated at the peak of the precision that ran)" in saved


def test_saved_charts_are_drawn_again_with_a_phone_rendering_and_named_hardware():
    """A chart the executed notebook saved (spec and data in its output) is drawn by today's renderer, which
    carries the phone rendering, from the same data; a run folder's name in its title reads as the hardware."""
    import json

    import altair as alt
    import pandas as pd

    from academic_bench.book import charts

    spec = alt.Chart(pd.DataFrame({"days": [10.2, 41.8], "model": ["pythia-160m", "pythia-1b"]})).mark_bar().encode(
        x="days:Q", y="model:N").properties(width=600, title="Fastest configuration per model and search (h100x1)")
    saved_js = json.dumps(spec.to_dict(), sort_keys=True)
    saved = (f'<div id="ab-chart-0-abc" class="ab-chart"></div>\n<script type="text/javascript">\n(function () {{\n'
             f'  var spec = {saved_js};\n  function draw() {{ window.vegaEmbed(el, spec); }}\n  draw();\n}})();\n</script>')
    page = run_pages.decorate(f"<h1>Benchmark run</h1>\n{saved}", "", names={"h100x1": "1 x H100 80GB SXM"})
    assert "var spec = " not in page and "var specs = {wide: " in page
    assert "(1 x H100 80GB SXM)" in page and "(h100x1)" not in page
    assert '"days": 41.8' in page  # the same data
    assert charts.NARROW_COLUMN > 0


def test_a_chart_saved_by_todays_renderer_names_the_hardware_in_both_renderings():
    """A notebook executed since the phone rendering saves both specs; the run folder's name in the title, a line
    in the wide one and broken into lines in the narrow one, reads as the hardware in each."""
    import altair as alt
    import pandas as pd

    from academic_bench.book import charts

    spec = alt.Chart(pd.DataFrame({"days": [10.2, 41.8], "model": ["pythia-160m", "pythia-1b"]})).mark_bar().encode(
        x="days:Q", y="model:N").properties(width=600, title="Fastest configuration per model and search (h100x1)")
    saved = charts.chart_html(spec.to_dict())
    assert saved.count("h100x1") == 2  # the wide title and the narrow one's lines
    page = run_pages.decorate(f"<h1>Benchmark run</h1>\n{saved}", "", names={"h100x1": "1 x H100 80GB SXM"})
    assert "h100x1" not in page and page.count("1 x H100 80GB SXM") == 2
    assert '"days": 41.8' in page  # the same data


def _chart_points(html: str) -> list[dict]:
    """Every data point of the charts in a page: the values of each saved spec (``var spec = ...``) or of each
    spec drawn by today's renderer (``var specs = {wide: ..., narrow: ...}``)."""
    import json
    import re

    decoder, points = json.JSONDecoder(), []

    def values(node) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                points.extend(x for x in v if isinstance(x, dict)) if k == "values" and isinstance(v, list) \
                    else values(v)
        elif isinstance(node, list):
            for x in node:
                values(x)

    for m in re.finditer(r"var specs? = (\{wide: )?", html):
        values(decoder.raw_decode(html, m.end())[0])
    return points


def test_the_h200x2_page_s_chart_plots_no_set_aside_row():
    """The shipped h200x2 notebook's days chart, drawn from the rows it saved, plotted Pythia-1B with ZeRO-1, the
    measurement its table marks "set aside: no result"; the run page draws the chart again without it."""
    import json

    nb = json.loads((run_pages.ROOT / "notebooks/runs/h200x2/benchmark.ipynb").read_text())
    saved = next("".join(o["data"]["text/html"]) for c in nb["cells"] for o in c.get("outputs", [])
                 if "ab-chart" in "".join(o.get("data", {}).get("text/html", [])))
    gone = [g for g in run_pages.not_results("h200x2") if g[3] == "set aside"]
    plots = lambda points: [p for p in points for model, label, _, _, days in gone  # noqa: E731
                            if (p.get("model"), p.get("methods_label"), p.get("days")) == (model, label, days)]
    assert gone and plots(_chart_points(saved))  # the saved chart plots a set-aside measurement
    page = run_pages.decorate("<h1>Benchmark</h1>" + saved, "", run_pages.not_results("h200x2"))
    points = _chart_points(page)
    assert points and not plots(points)
