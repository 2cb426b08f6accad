"""The built book in a real browser: every page loads offline, cleanly, and every chart draws."""
from __future__ import annotations

import pytest

from conftest import CHART_SELECTOR, book_pages


def test_every_page_loads_offline_without_errors(built_site, open_page):
    pages = book_pages(built_site)
    assert "book/intro.html" in pages
    problems = {}
    for path in pages:
        visit = open_page(path)
        if visit.problems:
            problems[path] = visit.problems
        visit.page.close()
    assert not problems, problems


def test_every_chart_renders(built_site, open_page):
    """Each chart div holds an SVG (or canvas) drawn by the locally served vega-embed."""
    drawn, missing = 0, []
    for path in book_pages(built_site):
        if CHART_SELECTOR.lstrip(".") not in (built_site / path).read_text():
            continue
        visit = open_page(path)
        ids = visit.page.eval_on_selector_all(CHART_SELECTOR, "els => els.map(e => e.id)")
        for div in ids:
            if visit.page.query_selector(f"#{div} svg, #{div} canvas") is None:
                missing.append(f"{path}#{div}: {visit.page.inner_text('#' + div)[:120]!r}")
            else:
                drawn += 1
        visit.page.close()
    assert not missing, missing
    assert drawn >= 1


def test_index_redirects_to_the_introduction(open_page):
    visit = open_page("index.html", wait_for_charts=False)
    visit.page.wait_for_url("**/book/intro.html", timeout=10_000)
    assert not visit.problems, visit.problems
