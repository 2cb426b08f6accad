"""Every page of the built book, read in Chromium as a reader would, on a phone (390 px) and a desktop (1400 px).

* On every page at both widths the page never scrolls sideways, and no chart text is below 10 px: a chart too wide
  for the column is drawn again for it (``charts.narrow``), never shrunk. The intro's table of answers fits a
  phone's column without scrolling.
* In every page's prose and charts (tooltips included): no "null"/"undefined", no "1 GPUs"-style plural, no run
  folder name ("h100x1") where a reader reads words (nor in a table of the study's chapters), no ",," left by a cut
  list, no number in scientific notation ("1e+11") in the prose; where a legend shows ours and the paper's, their
  symbols differ.
* The Run-it page gives the repository's address from ``pyproject.toml`` or says plainly that none is set, and
  tells a lab how to add a GPU, run the notebook, check and contribute the run, and what the days leave out. The
  workshop page quotes the timing record of its laptop path.
"""
from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT, book_pages

WIDTHS = (390, 1400)
MIN_TEXT_PX = 10
# What a count reads as when its noun was not made singular ("1 GPUs"): the nouns the book counts.
PLURAL_AFTER_ONE = re.compile(
    r"(?<![\d.,])\b1 (GPUs|setups|settings|models|configurations|rows|runs|combinations|classes|measurements|cells"
    r"|steps|notebooks|days|hours|minutes|seconds|respondents|answers|kernels|validations|methods|pairs|results"
    r"|searches|files|nodes|errors|warnings|setting|lines)\b")
MISSING_WORDS = re.compile(r"\bnull\b|\bundefined\b|\bNaN\b")
CUT_LIST = re.compile(r",\s*,")
# A number printed in scientific notation ("1e+11 tokens"): code's format, not a reader's words.
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?e[+-]?\d+\b")


def _pages(site) -> list[str]:
    return [p for p in book_pages(site) if p != "index.html" and not p.startswith(("genindex", "search"))]


def _setup_keys() -> list[str]:
    """The run folders' names (notebooks/runs/<setup>/) and the planned setups: how a run is filed, not prose."""
    from academic_bench.results import load_planned

    keys = {p.name for p in (ROOT / "notebooks" / "runs").iterdir() if p.is_dir()} | set(load_planned())
    return sorted(keys, key=len, reverse=True)


# For every chart: its rendering, the width of its SVG against the column, and each text under MIN_TEXT_PX as
# drawn (its font size times the scale the page draws the SVG at).
_CHARTS_JS = """(minPx) => {
  const doc = document.documentElement;
  const out = {overflow: Math.max(doc.scrollWidth, document.body.scrollWidth) - window.innerWidth, small: []};
  for (const chart of document.querySelectorAll('.ab-chart')) {
    for (const t of chart.querySelectorAll('svg text')) {
      const text = t.textContent.trim();
      const box = t.getBoundingClientRect();
      if (!text || box.width === 0 || getComputedStyle(t).visibility === 'hidden') continue;
      const m = t.getScreenCTM();
      const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      if (px < minPx - 0.05) {
        out.small.push(`${chart.id} (${chart.dataset.drawn}): "${text.slice(0, 40)}" at ${px.toFixed(1)} px`);
      }
    }
  }
  return out;
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways_and_no_chart_text_is_below_10px(built_site, open_page, width):
    problems = []
    for path in _pages(built_site):
        visit = open_page(path, width=width)
        found = visit.page.evaluate(_CHARTS_JS, MIN_TEXT_PX)
        if found["overflow"] > 1:
            problems.append(f"{path}: the page scrolls sideways by {found['overflow']} px")
        problems += [f"{path}: {s}" for s in found["small"][:5]]
        visit.page.close()
    assert not problems, "\n".join(problems)


def test_a_chart_too_wide_for_a_phone_is_drawn_again_for_it(built_site, open_page):
    """At 390 px the charts that do not fit are in their narrow rendering; at 1400 px every chart is wide."""
    narrow_on_phone = 0
    for width in WIDTHS:
        for path in ("book/training-time.html", "book/efficient-methods.html", "book/explorers.html"):
            visit = open_page(path, width=width)
            drawn = visit.page.eval_on_selector_all(".ab-chart", "els => els.map(e => e.dataset.drawn)")
            if width == 1400:
                assert set(drawn) == {"wide"}, (path, drawn)
            else:
                narrow_on_phone += drawn.count("narrow")
            visit.page.close()
    assert narrow_on_phone >= 5, narrow_on_phone


def test_the_intros_table_of_answers_fits_a_phone(built_site, open_page):
    visit = open_page("book/intro.html", width=390)
    found = visit.page.evaluate("""() => {
      const main = document.querySelector('article.bd-article');
      const right = main.getBoundingClientRect().right;
      return Array.from(main.querySelectorAll('table.ab-stack')).map(t => ({
        right: t.getBoundingClientRect().right, column: right, scrolls: !!t.closest('.ab-scroll'),
        rows: t.querySelectorAll('tbody tr').length, text: t.innerText.slice(0, 60)}));
    }""")
    runs = list((ROOT / "notebooks" / "runs").glob("*/results.jsonl"))
    if not runs:
        return
    assert found, "the intro's table of answers is not drawn to stack on a phone"
    for t in found:
        assert t["right"] <= t["column"] + 1 and not t["scrolls"], t
        assert t["rows"] >= 1, t


# The text a reader reads as words: paragraphs, list items, headings, captions; not tables (where a run folder's
# name is a file's name), not the executed notebooks' saved tables, not text quoted as published. ``words`` leaves
# out inline code (a command may name a folder); ``full`` keeps it (a kernel's name is set as code).
_PROSE_JS = """() => {
  const main = document.querySelector('article.bd-article') || document.body;
  const words = [], full = [];
  for (const el of main.querySelectorAll('p, li, h1, h2, h3, h4, h5, h6, dt, dd, caption, figcaption')) {
    if (el.closest('pre, table, .ab-verbatim, .ab-evidence, script, style')) continue;
    full.push(el.innerText);
    const copy = el.cloneNode(true);
    copy.querySelectorAll('code, pre, kbd, script, style').forEach(e => e.remove());
    words.push(copy.innerText);
  }
  return {words: words.join('\\n'), full: full.join('\\n')};
}"""
_SVG_TEXT_JS = "() => Array.from(document.querySelectorAll('.ab-chart svg text')).map(t => t.textContent).join('\\n')"


def _findings(text: str, keys: list[str], full: str | None = None) -> list[str]:
    """What is wrong in ``text`` (words), and ``full`` (the same with its code) for lists cut short."""
    setup_key = re.compile(r"\b(" + "|".join(map(re.escape, keys)) + r")\b") if keys else None
    found = []
    for name, pattern, where in (("missing value", MISSING_WORDS, text), ("plural after 1", PLURAL_AFTER_ONE, text),
                                 ("cut list", CUT_LIST, text if full is None else full),
                                 ("scientific notation", SCIENTIFIC, text),
                                 ("run folder name", setup_key, text)):
        for m in (pattern.finditer(where) if pattern else ()):
            found.append(f"{name}: ...{where[max(0, m.start() - 50):m.end() + 20]!r}")
    return found


@pytest.mark.parametrize("width", WIDTHS)
def test_no_template_words_in_the_prose_or_the_charts(built_site, open_page, width):
    keys = _setup_keys()
    problems = []
    for path in _pages(built_site):
        visit = open_page(path, width=width)
        prose = visit.page.evaluate(_PROSE_JS)
        problems += [f"{path} (prose): {f}" for f in _findings(prose["words"], keys, prose["full"])[:4]]
        problems += [f"{path} (chart): {f}" for f in _findings(visit.page.evaluate(_SVG_TEXT_JS), keys)[:4]]
        visit.page.close()
    assert not problems, "\n".join(problems)


# The pages where a run folder's name is what a reader needs (to find the folder, or a revision's runs): the Run-it
# page, the changelog, the provenance, and the executed notebooks. Elsewhere a table reads GPUs as words.
_FOLDER_PAGES = ("book/run-it.html", "book/changelog.html", "book/provenance.html", "notebooks/")
_CELLS_JS = "() => Array.from(document.querySelectorAll('article.bd-article td')).map(td => td.innerText.trim())"


def test_the_studys_tables_name_a_setup_by_its_gpus_not_its_run_folder(built_site, open_page):
    keys = set(_setup_keys())
    problems = []
    for path in _pages(built_site):
        if path.startswith(_FOLDER_PAGES):
            continue
        visit = open_page(path, width=1400)
        cells = sorted({c for c in visit.page.evaluate(_CELLS_JS) if c in keys})
        problems += [f"{path}: a table cell reads {c!r}" for c in cells]
        visit.page.close()
    assert not problems, "\n".join(problems)

_MARKS_JS = """(perChart) => {
  const out = [];
  document.querySelectorAll('.ab-chart').forEach((chart, c) => {
    const marks = Array.from(chart.querySelectorAll('svg .role-mark path, svg .role-mark text'))
      .filter(m => { const b = m.getBoundingClientRect(); return b.width > 2 && b.height > 2; });
    const step = Math.max(1, Math.floor(marks.length / perChart));
    for (let i = 0; i < marks.length && out.length < 400; i += step) {
      marks[i].setAttribute('data-probe', `${c}-${i}`);
      out.push(`${c}-${i}`);
    }
  });
  return out;
}"""


def test_no_tooltip_shows_null(built_site, open_page):
    """Hovering the marks of every chart (a sample of each, every cell of the answer grid) shows no tooltip with
    "null", "undefined" or "NaN" in it: a cell without an answer says so in words."""
    problems, read = [], 0
    for path in _pages(built_site):
        if "ab-chart" not in (built_site / path).read_text():
            continue
        visit = open_page(path, width=1400)
        page = visit.page
        for probe in page.evaluate(_MARKS_JS, 24):
            mark = page.query_selector(f'[data-probe="{probe}"]')
            mark.scroll_into_view_if_needed()
            box = mark.bounding_box()
            if not box:
                continue
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            tip = page.evaluate("""() => { const t = document.getElementById('vg-tooltip-element');
                                           return t && t.classList.contains('visible') ? t.innerText : ''; }""")
            if tip:
                read += 1
                if MISSING_WORDS.search(tip):
                    problems.append(f"{path}: {' | '.join(tip.split())[:160]}")
        page.close()
    assert read > 50, f"only {read} tooltips were read: the probe does not reach the charts"
    assert not problems, "\n".join(problems[:20])


_LEGENDS_JS = """() => {
  const out = [];
  for (const legend of document.querySelectorAll('.ab-chart svg .role-legend')) {
    const symbols = {};
    for (const entry of legend.querySelectorAll('.role-legend-symbol')) {  // one entry: its symbol and label
      const label = entry.parentNode.querySelector('.role-legend-label text');
      const path = entry.querySelector('path');
      if (!label || !path) continue;
      const s = getComputedStyle(path);
      symbols[label.textContent] = [path.getAttribute('d'), s.fill, s.stroke, s.strokeDasharray,
                                    s.fillOpacity].join('|');
    }
    out.push(symbols);
  }
  return out;
}"""


def test_ours_and_the_papers_symbols_differ_in_every_legend(built_site, open_page):
    compared = 0
    for path in _pages(built_site):
        if "ab-chart" not in (built_site / path).read_text():
            continue
        for width in WIDTHS:
            visit = open_page(path, width=width)
            for symbols in visit.page.evaluate(_LEGENDS_JS):
                if "ours" in symbols and "paper" in symbols:
                    compared += 1
                    assert symbols["ours"] != symbols["paper"], (path, width, symbols)
            visit.page.close()
    assert compared >= 2, "no legend with both ours and the paper's was found"


def _text(visit) -> str:
    return " ".join(visit.page.inner_text("article.bd-article").split())


def test_run_it_names_the_repository_from_one_place_and_tells_a_lab_how_to_run(built_site, open_page):
    from academic_bench.catalog.env import repository_url

    visit = open_page("book/run-it.html", width=1400)
    text = _text(visit)
    url = repository_url()
    assert "<this repository>" not in text and "this repository>" not in visit.page.content()
    if url:
        assert f"git clone {url}" in text
    else:  # no address is invented: the page says none is set, and where the commands run from
        assert "names no public address for the repository" in text and "[project.urls] Repository" in text
        assert "The commands below run from a checkout of this repository" in text
    # Adding a GPU: the catalog file, column by column, as the file holds them.
    header = (ROOT / "academic_bench" / "data" / "gpus.csv").read_text().splitlines()[0].split(",")
    table = visit.page.inner_text("#a-gpu-that-is-not-in-the-catalog")
    assert "academic_bench/data/gpus.csv" in text and all(column in table for column in header)
    for needed in ("academic-bench notebook --setup", "academic-bench check-run notebooks/runs/<setup>",
                   "evidence/README.md", "academic-bench runs-readme", "commit the whole folder"):
        assert needed in text, needed
    days = visit.page.inner_text("#what-the-days-include-and-what-they-leave-out")
    for left_out in ("data loading", "random inputs of the right shape", "checkpointing", "evaluation", "restarts"):
        assert left_out in days, left_out
    assert not visit.problems, visit.problems


def test_the_workshop_page_quotes_its_measured_time(built_site, open_page):
    record_file = ROOT / "notebooks" / "workshop" / "timing.json"
    visit = open_page("book/workshop.html", width=390)
    text = _text(visit)
    if not record_file.exists():
        assert "No timing of this path is shipped yet" in text
        return
    record = json.loads(record_file.read_text())
    total = record["total_seconds"]
    shown = (f"{round(total)} second{'s' if round(total) != 1 else ''} in all" if total < 90
             else f"{total / 60:.1f} minutes in all")
    assert shown in text, shown
    assert record["date"][:10] in text and (record["commit"] or "unknown")[:10] in text
    assert record["machine"]["cpu"] in text and record["command"] in text
    for step in record["steps"]:
        assert step["command"] in text and step["exit_status"] == 0, step
        named = re.search(r"--gpu (\S+)", step["command"])
        if named and "--device cpu" in step["command"]:  # a GPU named for a run on the CPU: the page says why
            assert (f"a CPU has none to detect, so the command names one with --gpu {named.group(1)}" in text
                    and "its memory and peak set the search and the MFU" in text), step
    assert not visit.problems, visit.problems


def test_the_example_survey_is_described_alike_and_counted_alike(built_site, open_page):
    """The survey example is invented data on both pages that describe it, with the same count of respondents."""
    from academic_bench.analysis import survey

    n = len(survey.load_survey(ROOT / "academic_bench" / "data" / "survey_example.csv"))
    hardware = _text(open_page("book/academic-hardware.html", width=1400))
    assert f"made-up export of {n} invented respondent" in hardware
    visit = open_page("book/provenance.html", width=1400)
    row = visit.page.evaluate("""() => Array.from(document.querySelectorAll('article table tbody tr'))
        .map(r => Array.from(r.cells).map(c => c.innerText.replace(/\\s+/g, ''))
        .join(' | ')).find(r => r.startsWith('academic_bench/data/survey_example.csv'))""")
    assert row and f"| {n} |" in row and "inventedrespondents" in row and "transcribed" not in row, row
