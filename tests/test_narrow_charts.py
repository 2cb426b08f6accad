"""Each chart's phone rendering (``charts.narrow``), the names a reader reads, and where the repository lives.

The browser tests (``test_reading_browser.py``) check the drawn pages; these check the specs and helpers behind
them without a browser.
"""
from __future__ import annotations

import json
import re

import altair as alt
import pandas as pd

from academic_bench.book import charts
from academic_bench.book.charts.narrow import FONT, NARROW_COLUMN, narrow_spec, split_narrow


def _walk(spec):
    yield spec
    for key in ("vconcat", "hconcat", "concat", "layer"):
        for child in spec.get(key, []):
            yield from _walk(child)
    if isinstance(spec.get("spec"), dict):
        yield from _walk(spec["spec"])


def test_a_derived_narrow_rendering_stacks_panels_fits_widths_and_wraps_labels():
    df = pd.DataFrame({"what": ["a finding that is far too long for one line of a phone", "short"],
                       "share": [0.5, 0.2], "panel": ["left", "right"]})
    wide = alt.Chart(df).mark_bar().encode(y="what:N", x="share:Q").properties(
        width=520, title="A title that is much longer than the forty characters a phone's column holds")
    spec = alt.hconcat(wide, wide).to_dict()
    narrow = narrow_spec(spec)
    assert "vconcat" in narrow and "hconcat" not in narrow  # side by side becomes one under the other
    for view in narrow["vconcat"]:
        assert view["width"] <= NARROW_COLUMN
        assert "labelExpr" in view["encoding"]["y"]["axis"]  # the long label is broken onto lines
        assert isinstance(view["title"], list) and all(len(line) <= 40 for line in view["title"])
    assert narrow["config"]["axis"]["labelFontSize"] >= FONT and narrow["config"]["legend"]["labelFontSize"] >= FONT
    faceted = alt.Chart(df).mark_bar().encode(x="share:Q", y="what:N").properties(width=250).facet(
        facet="panel:N", columns=2).to_dict()
    assert narrow_spec(faceted)["columns"] == 1


def test_a_chart_that_draws_its_own_phone_rendering_keeps_it():
    df = pd.DataFrame({"model": ["Pythia-160M", "Pythia-1B"], "setting": ["H100 x1", "H100 x2"],
                       "status": ["feasible", "infeasible"], "table": ["t1", "t1"]})
    spec = charts.feasibility_grid(df, "Feasible settings", row="table").to_dict()
    wide, narrow = split_narrow(spec)
    assert "usermeta" not in wide
    inner = narrow["spec"]  # the facet's panel: axes swapped on a phone, a setting a row
    assert inner["encoding"]["y"]["field"] == "setting" and inner["encoding"]["x"]["field"] == "model"
    assert wide["spec"]["encoding"]["x"]["field"] == "setting"


def test_the_page_carries_both_renderings_and_their_data_once():
    df = pd.DataFrame({"x": list(range(50)), "y": [v * 2.5 for v in range(50)]})
    html = charts.chart_html(alt.Chart(df).mark_point().encode(x="x:Q", y="y:Q").properties(width=600).to_dict())
    wide = json.loads(re.search(r"wide: (\{.*?\}), narrow: ", html).group(1))
    narrow = json.loads(re.search(r"narrow: (\{.*?\})\};", html).group(1))
    assert wide["width"] == 600 and narrow["width"] <= NARROW_COLUMN
    assert wide["datasets"] and narrow["datasets"] == {}  # the rows are written once
    assert "data-drawn" in html or "dataset.drawn" in html


def test_days_by_gpus_tells_ours_from_the_papers():
    df = pd.DataFrame({"model": ["Pythia-1B"] * 4, "gpu": ["H100 80GB SXM"] * 4, "n_gpus": [1, 2, 1, 2],
                       "days": [40.0, 21.0, 20.0, 11.0], "source": ["ours", "ours", "paper", "paper"]})
    spec = charts.days_by_gpus(df).to_dict()
    dash = spec["spec"]["layer"][0]["encoding"]["strokeDash"]
    assert dash["legend"]["symbolType"] == "stroke"
    assert dash["scale"]["domain"] == ["ours", "paper"] and dash["scale"]["range"][0] != dash["scale"]["range"][1]
    fill = spec["spec"]["layer"][1]["encoding"]["fillOpacity"]["scale"]
    assert fill["range"][:2] == [1, 0]  # ours filled, the paper's open


def test_kernel_names_lose_their_template_arguments():
    from academic_bench.catalog.kernels import kernel_label

    assert kernel_label("void selective_scan_bwd_kernel<Traits<128, 16, true, true>, float>(Params)") == \
        "selective_scan_bwd_kernel"
    assert kernel_label("void cudnn::cnn::wgrad2d_grouped_direct_kernel<false, true, int>(P, float const*, ") == \
        "cudnn::cnn::wgrad2d_grouped_direct_kernel"
    assert kernel_label("aten::mm") == "aten::mm"


def test_setups_are_named_by_their_gpus_and_counted_in_one_set_of_terms(tmp_path):
    from academic_bench import analysis

    names = analysis.setup_names()
    assert all(re.fullmatch(r"\d+ x .+", v) for v in names.values()), names
    runs = analysis.runs_frame()
    counts = analysis.setups(runs)
    if counts.empty:
        return
    for r in counts.itertuples():
        lines = (analysis.runs_root() / r.setup / "results.jsonl").read_text().splitlines()
        assert r.in_file == sum(1 for line in lines if line.strip())
        assert r.rows == len(runs[runs["setup"] == r.setup].drop_duplicates(["config_id", "timing", "mode"]))
        assert r.ok <= r.rows <= r.in_file
    prov = analysis.provenance().set_index("file")
    for r in counts.itertuples():
        assert int(prov.loc[f"notebooks/runs/{r.setup}/results.jsonl", "rows"]) == r.in_file


def test_the_repository_address_is_read_from_pyproject_only(tmp_path):
    from academic_bench.catalog.env import REPO_ROOT, repository_url

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[project.urls]\n'
                                             'Repository = "https://example.org/lab/academic-bench"\n')
    assert repository_url(tmp_path) == "https://example.org/lab/academic-bench"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert repository_url(tmp_path) is None
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert repository_url() == project.get("urls", {}).get("Repository")


def test_the_published_ratio_axis_labels_a_tick_beyond_every_point_and_none_too_close():
    """``ratio_ticks``: the domain runs from a labelled tick at or below the lowest ratio to one at or above the
    highest, 1 is labelled, and neighbouring ticks are a ``most``-th of the axis apart or more, so that vega drops
    none of their labels."""
    import math

    from academic_bench.book.charts.figures import ratio_ticks

    for low, high in ((0.46, 1.35), (0.8, 1.25), (0.62, 1.04), (1.1, 3.0), (0.2, 0.9)):
        lo, hi, ticks = ratio_ticks(low, high)
        assert ticks[0] == lo <= low and high <= hi == ticks[-1], (low, high, ticks)
        assert 1.0 in ticks or not lo < 1.0 < hi
        gaps = [math.log10(b / a) for a, b in zip(ticks, ticks[1:])]
        assert min(gaps) >= math.log10(hi / lo) / 5 - 1e-12, (low, high, ticks)


def test_the_cost_explorer_is_no_taller_on_a_phone():
    """The cost explorer's bars are as thick on a phone as on a wide screen, two a setup, with no row of their own
    for the setups' names (which made the phone's chart more than twice as tall): on a phone the short names
    stand inside the plot, left of where the bars start, and the plot keeps to the column."""
    from academic_bench.book import explorers
    from academic_bench.book.charts.narrow import CHAR_PX
    from academic_bench.book.explorers.answer_grid import short_label
    from academic_bench.book.explorers.budget import PHONE_IMPLAUSIBLE

    setups = explorers.explorer_setups()

    def bars(spec: dict) -> tuple[dict, dict]:
        """(the view that sizes the bars, the bars' encoding)"""
        for v in _walk(spec):
            for unit in [v, *v.get("layer", [])]:
                if "yOffset" in (unit.get("encoding") or {}):
                    return v, unit["encoding"]
        raise AssertionError("no bars")

    (wide, wide_enc), (narrow, narrow_enc) = (bars(s) for s in split_narrow(explorers.cost_chart(setups).to_dict()))
    per_setup = [v["height"]["step"] * len(e["yOffset"]["scale"]["domain"])
                 for v, e in ((wide, wide_enc), (narrow, narrow_enc))]
    assert per_setup[1] <= per_setup[0], per_setup
    assert narrow["width"] <= NARROW_COLUMN
    longest = max(len(f"{int(n)} x {short_label(g)}{PHONE_IMPLAUSIBLE}")
                  for g, n in zip(setups["gpu"], setups["n_gpus"]))
    start, end = narrow_enc["x"]["scale"]["range"]
    assert longest * CHAR_PX <= start < end <= narrow["width"], (start, end, longest)
