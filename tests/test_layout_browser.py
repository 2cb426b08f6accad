"""Every page of the built book fits its column and reads cleanly, at a desktop and a phone width.

At 1400 px and 390 px, on every page: no chart, table or image is wider than the column that holds it (at the
phone width only, a wide table may scroll inside its ``.ab-scroll`` wrapper, the last resort; the executed
benchmark notebooks' saved tables scroll at both widths), no legend label is cut
("..." or "…" at its end), no table shows pandas' index column (row numbers under an empty heading), and the
rendered text holds none of the template artifacts "(s)", "NaN" or "\\$100k".
"""
from __future__ import annotations

import re

import pytest

from conftest import book_pages

WIDTHS = (1400, 390)
# Where a wide table may scroll sideways instead of fitting: at the phone width, any table in its ``.ab-scroll``
# wrapper (the last resort); at the desktop width only the saved tables of the executed benchmark notebooks
# (``.ab-evidence``: GPU evidence that cannot be re-executed to change its layout).
SCROLLABLE = {1400: ".ab-evidence", 390: ".ab-scroll, .ab-evidence"}
ARTIFACTS = re.compile(r"[A-Za-z]\(s\)|\bNaN\b|\\\$100k")

# For each chart, table and figure in the article: its width against the width of the column that holds it.
# A wide element inside a horizontally scrollable wrapper counts as fitting when the wrapper itself fits.
_OVERFLOW_JS = """(scrollable) => {
  const main = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const style = getComputedStyle(main);
  const left = main.getBoundingClientRect().left + parseFloat(style.paddingLeft);
  const right = main.getBoundingClientRect().right - parseFloat(style.paddingRight);
  const out = [];
  for (const el of main.querySelectorAll('.ab-chart, table, img')) {
    const wrap = el.closest(scrollable);
    const r = (wrap ? wrap : el).getBoundingClientRect();
    const w = Math.max(r.width, wrap ? 0 : el.scrollWidth);
    if (r.width === 0) continue;
    if (r.left + w > right + 2 || r.left < left - 2) {
      const id = el.id || (el.closest('.ab-chart') || {}).id || el.className || el.tagName;
      out.push(`${el.tagName.toLowerCase()} ${String(id).slice(0, 60)}: ${Math.round(w)} px at ` +
               `${Math.round(r.left)} in a column ${Math.round(left)}-${Math.round(right)} px`);
    }
  }
  return out;
}"""

_CLIPPED_LEGEND_JS = """() => Array.from(document.querySelectorAll('.ab-chart svg .role-legend text, .ab-chart svg .role-legend-label text, .ab-chart svg .role-legend-title text'))
   .map(t => t.textContent).filter(t => /(\\.\\.\\.|…)$/.test(t.trim()))"""


def _pages(site):
    return [p for p in book_pages(site) if p != "index.html" and not p.startswith("genindex")
            and not p.startswith("search")]


def _found_on_every_page(site, open_page, width: int, script: str, arg=None) -> str:
    """What ``script`` finds on each page at ``width`` px, one line per finding ('' when nothing anywhere)."""
    problems = {}
    for path in _pages(site):
        visit = open_page(path, width=width)  # each chart drawn for this width (charts.narrow)
        found = visit.page.evaluate(script, arg)
        if found:
            problems[path] = found[:8]
        visit.page.close()
    return "\n".join(f"{page}: {item}" for page, items in problems.items() for item in items)


@pytest.mark.parametrize("width", WIDTHS)
def test_every_element_fits_its_column(built_site, open_page, width):
    found = _found_on_every_page(built_site, open_page, width, _OVERFLOW_JS, SCROLLABLE[width])
    assert not found, found


@pytest.mark.parametrize("width", WIDTHS)
def test_no_legend_label_is_cut(built_site, open_page, width):
    found = _found_on_every_page(built_site, open_page, width, _CLIPPED_LEGEND_JS)
    assert not found, found


def test_no_template_artifacts_in_the_text(built_site, open_page):
    problems = {}
    for path in _pages(built_site):
        visit = open_page(path)
        # Text quoted as published (``.ab-verbatim``: the paper's survey questions) is left as it was written.
        text = visit.page.evaluate("""() => { const m = (document.querySelector('main') || document.body).cloneNode(true);
            m.querySelectorAll('.ab-verbatim').forEach(e => e.remove()); return m.innerText; }""")
        svg = " ".join(visit.page.eval_on_selector_all(".ab-chart svg text", "els => els.map(e => e.textContent)"))
        found = sorted({m.group(0) for m in ARTIFACTS.finditer(text + " " + svg)})
        if found:
            problems[path] = [f"{f!r} in ...{(text + ' ' + svg)[max(0, (text + ' ' + svg).find(f) - 60):(text + ' ' + svg).find(f) + 40]!r}..." for f in found]
        visit.page.close()
    assert not problems, "\n".join(f"{page}: {item}" for page, items in problems.items() for item in items)


# A pandas index column: an empty first heading, and body rows headed by their row number.
_INDEX_JS = """() => Array.from(document.querySelectorAll('main table')).filter(t => {
  const head = t.querySelector('thead tr th');
  const rows = Array.from(t.querySelectorAll('tbody tr'));
  return head && head.textContent.trim() === '' && rows.length > 0 &&
         rows.every(r => r.firstElementChild && r.firstElementChild.tagName === 'TH' &&
                         /^\\d+$/.test(r.firstElementChild.textContent.trim()));
}).map(t => t.innerText.slice(0, 80))"""


def test_no_table_shows_a_pandas_index(built_site, open_page):
    problems = {}
    for path in _pages(built_site):
        visit = open_page(path)
        found = visit.page.evaluate(_INDEX_JS)
        if found:
            problems[path] = found
        visit.page.close()
    assert not problems, "\n".join(f"{page}: {item!r}" for page, items in problems.items() for item in items)
