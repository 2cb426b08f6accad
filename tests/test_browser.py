"""The built book in a real browser: every page loads offline, cleanly, and every chart draws."""
from __future__ import annotations

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


def _move_control(page, control) -> None:
    """Change a vega-bound input the way a reader would: a new value, then input and change events."""
    kind = control.evaluate("el => el.tagName.toLowerCase() + ':' + (el.type || '')")
    if kind.startswith("select"):
        control.evaluate("""el => { el.selectedIndex = (el.selectedIndex + 1) % el.options.length;
                                    el.dispatchEvent(new Event('change', {bubbles: true})); }""")
    elif kind.endswith("range") or kind.endswith("number"):
        control.evaluate("""el => { const lo = +el.min || 0, hi = +el.max || 100;
                                    el.value = (+el.value === hi) ? lo : hi;
                                    el.dispatchEvent(new Event('input', {bubbles: true}));
                                    el.dispatchEvent(new Event('change', {bubbles: true})); }""")
    else:  # radio buttons and checkboxes
        control.evaluate("el => el.click()")


def test_bound_controls_change_their_chart(built_site, open_page):
    """Every chart with a slider or menu (Altair parameters bound to inputs) redraws when the control moves."""
    checked = 0
    for path in book_pages(built_site):
        if CHART_SELECTOR.lstrip(".") not in (built_site / path).read_text():
            continue
        visit = open_page(path)
        page = visit.page
        for div in page.eval_on_selector_all(CHART_SELECTOR, "els => els.map(e => e.id)"):
            controls = page.query_selector_all(f"#{div} .vega-bind input, #{div} .vega-bind select")
            if not controls:
                continue
            before = page.inner_html(f"#{div} svg")
            _move_control(page, controls[0])
            page.wait_for_function(
                "([sel, old]) => document.querySelector(sel).innerHTML !== old", arg=[f"#{div} svg", before],
                timeout=5_000)
            checked += 1
        assert not visit.problems, (path, visit.problems)
        page.close()
    assert checked > 0, "no chart with bound controls in the built book (the explorers have them)"


def test_the_answer_for_pythia_1b_on_four_a100s_is_in_the_intros_first_screen(open_page):
    """A reader asking "Pythia-1B on 4 x A100?" finds the days, with what they rest on, without scrolling, and the
    answer grid below it responds to its model menu."""
    visit = open_page("book/intro.html")
    page = visit.page
    page.set_viewport_size({"width": 1400, "height": 900})
    answer = page.locator("strong", has_text="Pythia-1B on 4 x A100").first
    box = answer.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 900, box
    line = answer.locator("xpath=..").inner_text()
    assert any(kind in line for kind in ("measured", "predicted", "the paper's")), line
    assert "implied MFU" in line, line
    # The same answer as every other surface (academic_bench.answer), with its settings.
    from academic_bench.answer import answer as study

    a = study("pythia-1b", "a100-80gb", 4)
    assert f"{a.days:,.0f} days" in line and a.kind in line and a.settings.methods_label in line, line
    assert page.locator(".vega-bind select").count() >= 1  # the grid's model menu (the test above moves it)
    assert not visit.problems, visit.problems
