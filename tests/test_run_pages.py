"""The run pages: the executed notebook is shown as saved, and its rows that are no result today are marked."""
from __future__ import annotations

from academic_bench import run_pages
from academic_bench.config import Config
from academic_bench.methods import NAIVE, Methods
from academic_bench.results import ResultStore, make_row

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
    assert [(m, label, why) for m, label, _, why in gone] == [("pythia-1b", "free-lunch + ZeRO-1", "set aside")]
    page = run_pages.decorate(SAVED, "<p>summary</p>", gone)
    assert page.count('class="ab-not-result"') == 1
    assert "free-lunch + ZeRO-1 <strong>(set aside: no result)</strong>" in page
    assert "1 row of its tables shows" in page and page.index("summary") < page.index("<table")
