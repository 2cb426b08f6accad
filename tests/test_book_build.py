"""The book builds from the shipped files (warnings are errors), works offline, and shows every page of its toc."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from academic_bench.book import build as bookbuild

ROOT = Path(__file__).resolve().parents[1]


def _toc_files(node) -> list[str]:
    """Every `file:` of _toc.yml, depth first."""
    out = []
    if isinstance(node, dict):
        if "file" in node:
            out.append(node["file"])
        if "root" in node:
            out.append(node["root"])
        for v in node.values():
            out += _toc_files(v)
    elif isinstance(node, list):
        for v in node:
            out += _toc_files(v)
    return out


def test_config_builds_offline_and_fails_loudly():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    execute = cfg["execute"]
    assert execute["execute_notebooks"] == "cache"
    assert execute["raise_on_error"] is True and execute["allow_errors"] is False
    # notebooks executed on GPUs are rendered with their saved outputs, never re-run at build
    assert "notebooks/runs/*/*.ipynb" in execute["exclude_patterns"]
    for pattern in (".*", "**/.*", ".venv", "_build", "tests"):
        assert pattern in cfg["exclude_patterns"]
    assert not (ROOT / "_static").exists(), "a root _static/ makes Jupyter Book add its scripts to every page"
    assert "academic_bench.book.build" in cfg["sphinx"]["extra_extensions"]


def test_every_toc_page_is_built(built_site):
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = _toc_files(toc)
    assert {"book/intro", "book/training-time", "book/measuring-honestly", "book/workshop",
            "book/provenance", "book/references"} <= set(files)
    for f in files:
        assert (built_site / f"{f}.html").exists(), f
    index = (built_site / "index.html").read_text()
    assert "book/intro.html" in index


def test_benchmark_notebooks_are_rendered_not_rerun(built_site):
    for nb_path in sorted((ROOT / "notebooks" / "runs").glob("*/benchmark.ipynb")):
        html = built_site / nb_path.relative_to(ROOT).with_suffix(".html")
        assert html.exists(), f"{nb_path} is not in the book"


def test_no_page_loads_anything_from_another_host(built_site):
    assert bookbuild.external_assets(built_site) == {}
    bundle = built_site / "_static" / "vega-bundle.js"
    assert bundle.exists() and bundle.read_text()[:12] == "(function(){"
    for page in built_site.glob("book/*.html"):
        text = page.read_text()
        assert "cdn.jsdelivr" not in text and "unpkg.com" not in text, page
        assert "mathjax-is-not-vendored" not in text, f"{page} uses math, which needs MathJax vendored first"


def test_glued_numbers_are_formatted_and_no_page_prints_warnings(built_site):
    for page in built_site.glob("book/*.html"):
        text = page.read_text()
        assert 'class="output stderr"' not in text, f"{page} shows a warning or error printed at build"
        assert "np.float64" not in text and "np.int64" not in text, page
        assert "Failed to format" not in text, page


def test_counts_in_the_prose_agree_with_their_nouns(built_site):
    """'3 settings', '1 GPU': never a template's 'setting(s)' (units such as 'step (s)' stand apart). The paper's
    survey questions are quoted as the paper wrote them ('your research area(s)')."""
    for page in built_site.glob("book/*.html"):
        text = re.sub(r"<script.*?</script>|<style.*?</style>", "", page.read_text(), flags=re.S)
        text = re.sub(r"<[^>]+>", " ", text).replace("research area(s)", "")
        found = re.findall(r".{0,30}[A-Za-z]\(s\)", text)
        assert not found, f"{page.name}: {found[:3]}"


def test_no_sentence_prints_a_missing_value_as_a_figure(built_site):
    """A value the data do not have is said in words ('not timed: ...'), never printed as 'nan s' or '(None)'."""
    for page in built_site.glob("book/*.html"):
        text = re.sub(r"<script.*?</script>|<style.*?</style>", "", page.read_text(), flags=re.S)
        text = " ".join(re.sub(r"<[^>]+>", " ", text).split())
        found = re.findall(r".{0,40}\b(?:nan|NaN|None|<NA>)(?: s\b| days\b| GB\b|%|\))", text)
        assert not found, f"{page.name}: {found[:3]}"


def test_pages_say_plainly_when_there_is_no_data(built_site):
    runs = sorted((ROOT / "notebooks" / "runs").glob("*/results.jsonl"))
    intro = (built_site / "book" / "intro.html").read_text()
    run_it = (built_site / "book" / "run-it.html").read_text()
    if not runs:
        assert "No GPU measurements are shipped with this build yet" in intro
        assert "No executed benchmark notebook is shipped yet" in run_it
    else:
        for r in runs:
            assert r.parent.name in run_it
    from academic_bench.results import load_planned

    from academic_bench import analysis

    unrun = [s for s in load_planned() if s not in {r.parent.name for r in runs}]
    names = analysis.setup_names()
    if runs and unrun:  # a planned setup that has not run is named as missing (by its GPUs), not left out
        unrun = [names[s] for s in unrun]
        assert f"every cell of {', '.join(unrun)}" in " ".join(re.sub(r"<[^>]+>", "", run_it).split())
        assert f"Planned but not run yet: {', '.join(unrun)}" in re.sub(r"<[^>]+>", "", intro)


def test_key_finding_matches_the_data(built_site):
    """The intro's count of implausible paper cells is the one analysis computes (nothing typed by hand)."""
    from academic_bench import analysis

    os.environ.setdefault(analysis.CACHE_ENV, str(built_site.parent / ".derived"))
    cells = analysis.paper_cells("table1")
    measured = cells[cells["status"] == "measured"]
    text = re.sub(r"<[^>]+>", "", (built_site / "book" / "intro.html").read_text())
    assert f"Of the {len(measured)} measured cells" in " ".join(text.split())
    assert f"{int(measured['implausible'].sum())} (" in text


def test_external_assets_finds_cdn_scripts(tmp_path):
    (tmp_path / "a.html").write_text('<script src="https://cdn.example.org/x.js"></script>'
                                     '<a href="https://example.org">a link is fine</a>'
                                     '<link rel="stylesheet" href="_static/local.css">')
    assert bookbuild.external_assets(tmp_path) == {"a.html": ["https://cdn.example.org/x.js"]}


def test_inputs_fingerprint_follows_the_files(tmp_path):
    data = tmp_path / "academic_bench" / "data"
    data.mkdir(parents=True)
    (data / "x.csv").write_text("a\n1\n")
    before = bookbuild.inputs_fingerprint(tmp_path)
    assert bookbuild.inputs_fingerprint(tmp_path) == before
    run = tmp_path / "notebooks" / "runs" / "h100x1"
    run.mkdir(parents=True)
    (run / "results.jsonl").write_text("{}\n")
    assert bookbuild.inputs_fingerprint(tmp_path) != before


def test_what_limits_pythia_1b_mfu_is_read_from_its_profile(built_site):
    """The efficient-methods page factors Pythia-1B's MFU on one H100 with the numbers analysis computes from
    the shipped profile and result (nothing typed by hand), or says that no profile is shipped."""
    from academic_bench import analysis

    factors = analysis.mfu_factors(analysis.runs_frame(), analysis.profiles())
    one = factors[(factors["setup"] == "h100x1") & (factors["model"] == "pythia-1b")]
    text = " ".join(re.sub(r"<[^>]+>", "", (built_site / "book" / "efficient-methods.html").read_text()).split())
    if one.empty:
        assert "No GPU profile is shipped yet" in text or "Pythia-1B on one H100 (" not in text
        return
    r = one.iloc[0]
    assert (f"MFU {r['mfu']:.2f} = GPU busy {r['busy_share']:.1%} of the step x {r['flop_share']:.0%} of that time "
            f"in the FLOP kernels x those kernels at {r['flop_rate']:.0%} of the peak") in text


# --- what a reader sees in tables and menus ------------------------------------------------------------------

MISSING_MARKERS = {"NaN", "nan", "None", "<NA>", "NaT"}  # pandas' spellings of a missing value
# Tables ranked by a number on purpose (the noisiest configurations, the most implausible cells): the ranking
# column must be in order; every other table with a model column lists the models in catalog order.
RANKED_BY = ("(max - min) / median", "implied MFU")


def _tables(page: Path) -> list[dict]:
    """The tables of a built page: classes, headings and body rows (cell texts; ``th`` flags row headers)."""
    def text(cell: str) -> str:
        return " ".join(re.sub(r"<[^>]+>", " ", cell).replace("&amp;", "&").split())

    out = []
    for attrs, body in re.findall(r"<table([^>]*)>(.*?)</table>", page.read_text(), re.S):
        head = re.search(r"<thead>(.*?)</thead>", body, re.S)
        tbody = re.search(r"<tbody>(.*?)</tbody>", body, re.S)
        heads = [text(c) for c in re.findall(r"<th[^>]*>(.*?)</th>", head.group(1), re.S)] if head else []
        rows = [[(tag, text(c)) for tag, c in re.findall(r"<(td|th)\b[^>]*>(.*?)</\1>", tr, re.S)]
                for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", tbody.group(1) if tbody else "", re.S)]
        out.append({"classes": re.search(r'class="([^"]*)"', attrs).group(1).split() if "class=" in attrs else [],
                    "heads": heads, "rows": rows})
    return out


def _book_pages(html: Path) -> list[Path]:
    # The executed benchmark notebooks (notebooks/runs/) keep the outputs they had on the GPU machine.
    return sorted(html.glob("book/*.html"))


def pandas_artifacts(html: Path) -> list[str]:
    """Tables that show a pandas index column or a cell that is only pandas' word for a missing value."""
    found = []
    for page in _book_pages(html):
        for i, t in enumerate(_tables(page)):
            if "ab-grid" not in t["classes"] and any(tag == "th" for row in t["rows"] for tag, _ in row):
                found.append(f"{page.name} table {i} {t['heads'][:4]}: an index column")
            bad = {c for row in t["rows"] for _, c in row if c in MISSING_MARKERS}
            if bad:
                found.append(f"{page.name} table {i} {t['heads'][:4]}: cells {sorted(bad)}")
    return found


def models_out_of_order(html: Path) -> list[str]:
    """Tables whose models are not in catalog order (each family by size) within the columns left of them."""
    from academic_bench.catalog.models import CATALOG, model_rank

    known = {m.display for m in CATALOG.values()}
    found = []
    for page in _book_pages(html):
        for i, t in enumerate(_tables(page)):
            rows = [[c for _, c in row] for row in t["rows"]]
            if "ab-grid" in t["classes"]:  # the Table 1 layout: one row per model, the model as its header
                col, heads = 0, ["model"]
            elif "model" in t["heads"]:
                col, heads = t["heads"].index("model"), t["heads"]
            else:
                continue
            ranked = [h for h in RANKED_BY if h in heads]
            if ranked:
                values = [float(re.sub(r"[^\d.eE+-]", "", r[heads.index(ranked[0])]) or "nan") for r in rows]
                if values != sorted(values, reverse=True):
                    found.append(f"{page.name} table {i}: not ranked by {ranked[0]}")
                continue
            groups: dict[tuple, list[str]] = {}
            for r in rows:
                if col < len(r) and r[col] in known:
                    groups.setdefault(tuple(r[:col]), []).append(r[col])
            for models in groups.values():
                if models != sorted(models, key=model_rank):
                    found.append(f"{page.name} table {i} {heads[:3]}: {list(dict.fromkeys(models))}")
    return found


def chart_specs(page_text: str) -> list[dict]:
    """Every chart spec a built page draws: each chart's wide and phone renderings (``charts.render``)."""
    found = []
    for wide, narrow in re.findall(r"var specs = \{wide: (\{.*?\}), narrow: (\{.*?\})\};\n", page_text, re.S):
        found += [json.loads(wide.replace("<\\/", "</")), json.loads(narrow.replace("<\\/", "</"))]
    return found


def raw_keys_shown(html: Path) -> list[str]:
    """Table cells and menu entries that show a model or GPU key ('pythia-1b', '4 x h100-80gb') where the charts
    show its display label."""
    from academic_bench.catalog.hardware import catalog as gpu_catalog
    from academic_bench.catalog.models import CATALOG

    keys = "|".join(re.escape(k) for k in [*CATALOG, *gpu_catalog()])
    raw = re.compile(rf"(\d+ x )?({keys})")
    found = []
    for page in _book_pages(html):
        for i, t in enumerate(_tables(page)):
            for row in t["rows"]:
                for _, cell in row:
                    if any(raw.fullmatch(part.strip()) for part in cell.split(",")):
                        found.append(f"{page.name} table {i} {t['heads'][:3]}: {cell!r}")
        for spec in chart_specs(page.read_text()):
            menus = [p for p in spec.get("params", []) if p.get("bind", {}).get("input") == "select"]
            for p in menus:
                shown = p["bind"].get("labels") or [str(o) for o in p["bind"]["options"]]
                bad = [s for s in shown if raw.fullmatch(s)]
                if bad:
                    found.append(f"{page.name} menu {p['name']}: {bad[:3]}")
    return found


def test_tables_show_no_pandas_index_or_missing_markers(built_site):
    """No table on a page of the book shows a pandas index column or a cell reading NaN, nan or None."""
    assert pandas_artifacts(built_site) == []


def test_no_table_shows_a_raw_backtick(built_site):
    """A code span in a table a page computes is set as code (an HTML table's cells are never read as Markdown),
    so no cell shows the backticks around it; text quoted as published keeps its own."""
    found = [f"{page.name} table {i} {t['heads'][:3]}: {c!r}" for page in _book_pages(built_site)
             for i, t in enumerate(_tables(page)) if "ab-verbatim" not in t["classes"]
             for row in t["rows"] for _, c in row if "`" in c]
    assert found == [], found[:5]


def test_tables_list_models_by_size_within_each_family(built_site):
    """Pythia-160M, -410M, -1B, -2.8B, -6.9B: never alphabetical (-2.8B before -410M), unless a table is ranked by a
    number on purpose."""
    assert models_out_of_order(built_site) == []


def test_tables_and_menus_show_display_labels(built_site):
    """'Pythia-1B' and '4 x H100 80GB SXM', as in the charts, never the keys 'pythia-1b' or '4 x h100-80gb'."""
    assert raw_keys_shown(built_site) == []


def test_the_papers_title_has_no_stray_backslash(built_site):
    """The reference to the paper reads '$100K or 100 Days', not '\\$100k or 100 days'."""
    refs = " ".join(re.sub(r"<[^>]+>", " ", (built_site / "book" / "references.html").read_text()).split())
    assert "$100K or 100 Days" in refs
    for page in _book_pages(built_site):
        assert "\\$100" not in page.read_text(), page.name


def test_intro_answers_first_with_days_only_from_complete_searches(built_site):
    """The first page opens with the answer: a table with a days column, one row per setting whose smart search
    is complete (or where nothing fits), in the days analysis computes, and no 'nan' or 'None' anywhere in it."""
    from academic_bench import analysis
    from academic_bench.predict import measured as answers

    page = built_site / "book" / "intro.html"
    html = page.read_text()
    tables = [t for t in _tables(page) if "days" in t["heads"] and "smart search" in t["heads"]]
    assert len(tables) == 1, "the intro shows one answer table with a days column"
    assert html.index("How many days on your GPUs") < html.index("Key findings"), "the answer comes first"
    t = tables[0]
    cells = [c for row in t["rows"] for _, c in row]
    assert not {c for c in cells if c.strip().lower() in {"nan", "none", "<na>"}}
    ans = answers.answers(analysis.runs_frame(), analysis.skipped_frame())
    shown = ans[ans["status"].isin(answers.ANSWERED)]
    if shown.empty:
        return
    status, days = t["heads"].index("smart search"), t["heads"].index("days")
    assert {row[status][1] for row in t["rows"]} <= set(answers.ANSWERED), "no unfinished search is an answer"
    assert [row[days][1] for row in t["rows"]] == [
        "—" if d != d else f"{d:,.1f}" for d in shown["days"]]
    left = len(ans) - len(shown)
    if left:
        assert f"{left} setting" in " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_page_kernels_import_the_checkout_being_built(tmp_path, monkeypatch):
    """The kernels that execute the pages import the package from the checkout the book is built from, even where
    another checkout is installed or first on PYTHONPATH (otherwise a page shows another tree's numbers)."""
    import subprocess
    import sys

    other = tmp_path / "other-checkout"
    (other / "academic_bench").mkdir(parents=True)
    (other / "academic_bench" / "__init__.py").write_text("raise ImportError('the wrong checkout')\n")
    env = bookbuild.build_env(base={**os.environ, "PYTHONPATH": str(other)})
    # A kernel is a Python process started in the page's folder with the build's environment.
    out = subprocess.run([sys.executable, "-c", "import academic_bench; print(academic_bench.__file__)"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve().is_relative_to(ROOT / "academic_bench"), out.stdout

    seen = {}

    def fake_run(cmd, **kw):
        seen.update(kw)
        return subprocess.CompletedProcess(cmd, 1, "", "stopped by the test")

    monkeypatch.setattr(bookbuild.subprocess, "run", fake_run)
    monkeypatch.setenv("PYTHONPATH", str(other))
    try:
        bookbuild.build(tmp_path / "out", quiet=True)
    except RuntimeError:
        pass
    assert seen["env"]["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)


def test_the_methods_chapter_says_what_is_beyond_the_paper_and_what_is_not_measured_yet(built_site):
    """The section beyond the paper reads its gains and loss parity from the runs, and names every cell of the
    study's grid that no validated row measures yet (``analysis.beyond``), none typed by hand."""
    from academic_bench import analysis
    from academic_bench.analysis import beyond
    from academic_bench.catalog.methods import SWITCH_LABELS

    text = " ".join(re.sub(r"<[^>]+>", "", (built_site / "book" / "efficient-methods.html").read_text()).split())
    assert "Beyond the paper" in text and "beyond the paper" in text
    g = beyond.gains(analysis.runs_frame(), beyond.parity_frame())
    cells, _ = beyond.study_grid()
    left = beyond.not_measured(g, cells)
    too_big = beyond.out_of_memory(analysis.runs_frame(), left)
    for model, gpu, switch in (cell for cell in left if cell not in too_big):
        assert f"{analysis.model_label(model)} on {analysis.gpu_label(gpu)}: " in text and SWITCH_LABELS[switch] in text
    for (model, gpu, switch), why in too_big.items():  # a measured out of memory, said as such
        said = f"{analysis.model_label(model)} on {analysis.gpu_label(gpu)} with {SWITCH_LABELS[switch]}: {why}"
        assert said in text.replace("\u2019", "'"), said  # the page typesets apostrophes
    if g.empty:
        assert "nothing beyond the paper is measured yet on any setup" in text
    if beyond.parity_frame().empty:
        assert "no switch is checked yet" in text


def test_a_missing_value_reaches_a_chart_as_null_not_nan():
    """pandas marks a missing value NaN; on the page it must be JSON's null, never the word NaN."""
    import altair as alt
    import pandas as pd

    from academic_bench.book.charts.render import chart_html

    # Rows handed to a chart as records (as a page's tooltips take a frame's rows) keep pandas' NaN.
    rows = pd.DataFrame({"x": [1.0, float("nan")], "y": [2.0, 3.0]}).to_dict("records")
    spec = alt.Chart(alt.Data(values=rows)).mark_point().encode(x="x:Q", y="y:Q")
    html = chart_html(spec.to_dict(validate=False))
    assert "NaN" not in html and "null" in html
