"""What a reader sees of models and GPUs: the catalog's order (each family by size, never alphabetical) and the
display labels the charts use, in tables, chart axes and legends, and menus; and tables without pandas' artefacts."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from academic_bench import analysis
from academic_bench.book import charts, explorers
from academic_bench.catalog.models import CATALOG, model_rank

PYTHIA = ["Pythia-160M", "Pythia-410M", "Pythia-1B", "Pythia-2.8B", "Pythia-6.9B"]
ALPHABETICAL = sorted(PYTHIA)  # Pythia-160M, Pythia-1B, Pythia-2.8B, Pythia-410M, Pythia-6.9B
DISPLAYS = [m.display for m in CATALOG.values()]


def _encodings(spec) -> list[dict]:
    """Every ``encoding`` block of a Vega-Lite spec (layers, facets and concatenations included)."""
    found = []
    if isinstance(spec, dict):
        if isinstance(spec.get("encoding"), dict):
            found.append(spec["encoding"])
        for v in spec.values():
            found += _encodings(v)
    elif isinstance(spec, list):
        for v in spec:
            found += _encodings(v)
    return found


def _sort_of(spec: dict, field: str) -> list:
    """The ``sort`` of every channel (facet rows included) that shows ``field``."""
    channels = [c for enc in _encodings(spec) for c in enc.values() if isinstance(c, dict) and c.get("field") == field]
    facet = spec.get("facet", {})
    channels += [c for c in facet.values() if isinstance(c, dict) and c.get("field") == field]
    assert channels, f"no channel shows {field}"
    return [c.get("sort") for c in channels]


def _each_sorted(sorts: list, expected: list) -> bool:
    """Every channel that shows the field (a chart's layers, and its phone rendering) sorts it as ``expected``."""
    return bool(sorts) and all(s == expected for s in sorts)


def _binds(spec) -> dict[str, dict]:
    """Bound controls of a spec by parameter name."""
    out = {}
    if isinstance(spec, dict):
        if "bind" in spec and "name" in spec:
            out[spec["name"]] = spec["bind"]
        for v in spec.values():
            out |= _binds(v)
    elif isinstance(spec, list):
        for v in spec:
            out |= _binds(v)
    return out


def test_model_rank_sorts_each_family_by_size_from_keys_or_labels():
    assert sorted(ALPHABETICAL, key=model_rank) == PYTHIA
    assert sorted(["pythia-6.9b", "pythia-2.8b", "pythia-410m", "pythia-1b", "pythia-160m"], key=model_rank) == \
        [k.lower() for k in PYTHIA]
    assert model_rank("a model nobody knows") == len(CATALOG)
    assert charts.model_order(["Pythia-2.8B", "Pythia-410M", "Pythia-2.8B", None]) == ["Pythia-410M", "Pythia-2.8B"]


# --- charts: axes, legends and facets in catalog order -----------------------------------------------------------

def _cells(models: list[str], **cols) -> pd.DataFrame:
    n = len(models)
    base = dict(model=models, gpu=["H100 80GB SXM"] * n, n_gpus=[1] * n, days=[1.0 + i for i in range(n)],
                mfu=[0.3] * n, source=["ours"] * n)
    return pd.DataFrame(base | cols)


def test_days_by_gpus_legend_lists_models_by_size():
    assert _each_sorted(_sort_of(charts.days_by_gpus(_cells(ALPHABETICAL)).to_dict(), "model"), PYTHIA)


def test_mfu_strip_axis_lists_models_by_size():
    assert _sort_of(charts.mfu_strip(_cells(ALPHABETICAL)).to_dict(), "model") == [PYTHIA]


def test_mfu_strip_axis_names_the_peak_its_line_is_judged_on():
    """The strip draws the plausibility line, judged on the peak of the precision that ran, where tables show the
    16-bit peak: its axis says which, so an fp32 cell that sits higher there than in a table is not a contradiction."""
    spec = charts.mfu_strip(_cells(ALPHABETICAL, mfu=[0.5] * 5)).to_dict()
    titles = [e["x"].get("title", "") for e in _encodings(spec) if "x" in e and e["x"].get("field") == "mfu"]
    assert titles and all("precision that ran" in t for t in titles), titles


def test_feasibility_grid_rows_list_models_by_size():
    df = _cells(ALPHABETICAL, setting=["H100 x1"] * 5, status=["feasible"] * 5)
    assert _each_sorted(_sort_of(charts.feasibility_grid(df, "t").to_dict(), "model"), PYTHIA)


def test_coverage_grid_columns_list_models_by_size():
    df = pd.DataFrame({"setup": "h100x1", "model_name": ALPHABETICAL, "search": "smart", "status": "complete",
                       "ok": 1, "failed": 0, "not_run": 0})
    assert _each_sorted(_sort_of(charts.coverage_grid(df).to_dict(), "model_name"), PYTHIA)


def test_scatter_and_speedup_charts_list_models_by_size():
    df = _cells(ALPHABETICAL, a=[1.0, 2, 3, 4, 5], b=[1.0, 2, 3, 4, 5], speedup=[1.5] * 5)
    assert _sort_of(charts.scatter_vs(df, "a", "b", "a", "b", "t").to_dict(), "model") == [PYTHIA]
    assert _sort_of(charts.speedup_bars(df, "model", "t").to_dict(), "model") == [PYTHIA]


def test_profile_and_search_panels_follow_the_models_by_size():
    settings = [f"{m} best" for m in ALPHABETICAL]
    prof = _cells(ALPHABETICAL, setting=settings, kind="matmul", share=1.0, seconds=1.0, busy_share=1.0)
    assert _sort_of(charts.profile_bars(prof).to_dict(), "setting") == [[f"{m} best" for m in PYTHIA]]
    combos = _cells(ALPHABETICAL, setting=settings, methods_label="free lunch", micro_batch=1, gpu_minutes=1.0,
                    smart="measured")
    assert _each_sorted(_sort_of(charts.search_bars(combos).to_dict(), "setting"), [f"{m} best" for m in PYTHIA])


# --- the explorers' menus: display labels, keys as values, models by size ------------------------------------------

def _setups() -> pd.DataFrame:
    keys = ["pythia-2.8b", "pythia-410m", "pythia-1b"]
    rows = [dict(model=m, gpu=g, n_gpus=n, setup=f"{n} x {analysis.gpu_label(g)}", days=10.0, days_source="paper",
                 kind="paper", gpu_quote_usd=1.0, machine_usd=1.0, board_power_w=700, cloud_quote_usd=1.0,
                 utilisation=0.8, purchase_usd=1.0)
            for m in keys for g, n in (("h100-80gb", 4), ("a100-80gb", 8))]
    return pd.DataFrame(rows)


def _budget_setups() -> pd.DataFrame:
    return _setups().assign(prices="today", days_from="answer", label="measured", basis="measured", days_low=9.0,
                            days_high=11.0, about="9.0-11.0, measured", price_basis="b", implied_mfu=0.3,
                            implausible=False)


def test_explorer_menus_show_display_labels_and_models_by_size():
    binds = _binds(explorers.budget_chart(_budget_setups(), model="pythia-1b").to_dict()) | _binds(
        explorers.cost_chart(_setups(), model="pythia-1b", setup="4 x h100-80gb").to_dict())
    for name in ("budget_model", "cost_model"):
        assert binds[name]["options"] == ["pythia-410m", "pythia-1b", "pythia-2.8b"]  # values stay keys
        assert binds[name]["labels"] == ["Pythia-410M", "Pythia-1B", "Pythia-2.8B"]
    assert binds["cost_setup"]["options"] == ["8 x a100-80gb", "4 x h100-80gb"]
    assert binds["cost_setup"]["labels"] == [f"8 x {analysis.gpu_label('a100-80gb')}",
                                             f"4 x {analysis.gpu_label('h100-80gb')}"]


def test_planner_menu_shows_setups_by_display_name():
    grid = pd.DataFrame([dict(gpu="h100-80gb", n_gpus=8, key="8 x h100-80gb", setup="8 x H100", params_b=1.0,
                              mfu=0.4, mfu_low=0.3, mfu_high=0.5, mfu_source="ours", flops_base=1.0,
                              flops_per_position=1.0, peak_flops=1e15)])
    bind = _binds(explorers.plan_chart(grid).to_dict())["plan_setup"]
    assert bind["options"] == ["8 x h100-80gb"] and bind["labels"] == [f"8 x {analysis.gpu_label('h100-80gb')}"]


def test_live_explorers_menus_show_labels_and_keep_keys(tmp_path):
    ex = explorers.cost_explorer(model="pythia-1b", gpu="a100-80gb", n_gpus=8, root=str(tmp_path))
    assert ex.model.value == "pythia-1b" and ex.model.label == "Pythia-1B"
    assert [label for label, _ in ex.model.options] == DISPLAYS
    assert ex.gpu.value == "a100-80gb" and ex.gpu.label == analysis.gpu_label("a100-80gb")
    assert f"Pythia-1B on 8 x {analysis.gpu_label('a100-80gb')}" in ex.output.value
    assert "pythia-1b" not in ex.output.value
    plan = explorers.plan_explorer(gpu="h100-80gb", root=str(tmp_path))
    assert plan.gpu.value == "h100-80gb" and plan.gpu.label == analysis.gpu_label("h100-80gb")


# --- tables -----------------------------------------------------------------------------------------------------

def _cells_of(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", html, re.S)]


def test_table_shows_no_index_and_marks_missing_values():
    df = pd.DataFrame({"model": ["Pythia-1B", "Pythia-410M"], "days": [1.25, float("nan")],
                       "note": [None, "nan"], "gas": [pd.NA, 2]}, index=[7, 9])
    html = charts.table(df, formats={"days": ",.1f"}).data
    cells = _cells_of(html)
    assert not {"NaN", "nan", "None", "<NA>", ""} & set(cells), cells
    assert cells.count(charts.NO_VALUE) == 4
    assert "7" not in cells and "9" not in cells  # no index column
    assert "<tbody>" in html and not re.search(r"<tbody>.*<th", html, re.S)


def test_table_sets_text_between_backticks_as_code_and_escapes_it():
    """An HTML table's cells are never read as Markdown: the table sets `code` itself, its text escaped."""
    df = pd.DataFrame({"produced by": ["`make book` (reads `a<b & c`)", "no code, one ` alone"]})
    html = charts.table(df).data
    assert "<code>make book</code>" in html and "<code>a&lt;b &amp; c</code>" in html
    assert "`" not in html.replace("one ` alone", "")
    quoted = charts.table(df, verbatim=True).data  # quoted as published: its backticks as printed
    assert "`make book`" in quoted and "<code>" not in quoted


def test_by_model_and_model_list_put_models_in_catalog_order():
    df = pd.DataFrame({"setup": ["b", "a", "a", "a"], "model": ["pythia-1b", "pythia-2.8b", "pythia-410m", "pythia-1b"],
                       "i": [0, 1, 2, 3]})
    assert list(charts.by_model(df)["i"]) == [2, 0, 3, 1]
    assert list(charts.by_model(df, within=("setup",))["i"]) == [2, 3, 1, 0]
    assert charts.model_list("pythia-2.8b, pythia-410m, pythia-1b") == "Pythia-410M, Pythia-1B, Pythia-2.8B"


@pytest.mark.parametrize("key", list(CATALOG))
def test_every_catalog_model_has_a_rank_by_key_and_label(key):
    assert model_rank(key) == model_rank(CATALOG[key].display) == list(CATALOG).index(key)
