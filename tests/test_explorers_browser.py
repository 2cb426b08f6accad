"""The book's explorers in a real browser: move a control, and the answer line shows what Python computes.

Each explorer chart states its answer as text (an SVG text mark). The tests set a slider or menu the way a
reader would (value + input/change events), wait for that text to change, and compare it with the same answer
computed by ``academic_bench.cost`` / ``academic_bench.answer`` (numbers to the precision shown; words exactly).
"""
from __future__ import annotations

import re

import pytest

from academic_bench.book import explorers
from conftest import skip_or_fail

PAGE = "book/explorers.html"
NUMBER = re.compile(r"\d[\d,]*\.?\d*")


# Words that only one explorer's answer line contains.
BUDGET = ("Fastest within", "Nothing fits")
DEADLINE = ("Cheapest within", "Nothing finishes within")
COST = (" per run (hardware ", "No days for ")
PLAN = ("), MFU ", "No answered decoder on ")


def _answer(page, marks: tuple[str, ...]) -> str:
    texts = page.eval_on_selector_all(".ab-chart svg text", "els => els.map(e => e.textContent)")
    found = [t for t in texts if any(m in t for m in marks)]
    assert len(found) == 1, (marks, texts)
    return found[0]


def _set(page, name: str, value) -> None:
    """Set a bound control like a reader: the input's value, then the events Vega listens to."""
    page.eval_on_selector(f'.vega-bind [name="{name}"]', """(el, v) => {
        el.value = v;
        el.dispatchEvent(new Event('input', {bubbles: true}));
        el.dispatchEvent(new Event('change', {bubbles: true}));
    }""", str(value))


def _wait_changed(page, marks: tuple[str, ...], old: str) -> str:
    page.wait_for_function(
        """([marks, old]) => Array.from(document.querySelectorAll('.ab-chart svg text'))
               .some(e => marks.some(m => e.textContent.includes(m)) && e.textContent !== old)""",
        arg=[list(marks), old], timeout=10_000)
    return _answer(page, marks)


def _same(shown: str, expected: str) -> None:
    """Equal words, and numbers equal to the precision shown."""
    assert NUMBER.sub("#", shown) == NUMBER.sub("#", expected), (shown, expected)
    for a, b in zip(NUMBER.findall(shown), NUMBER.findall(expected)):
        x, y = float(a.replace(",", "")), float(b.replace(",", ""))
        step = 10 ** -len(a.split(".")[1]) if "." in a else 1
        assert abs(x - y) <= step * 0.51, (shown, expected)


@pytest.fixture(scope="module")
def setups():
    return explorers.explorer_setups()


@pytest.fixture(scope="module")
def machines():
    return explorers.budget_setups()


def test_explorers_page_loads_offline_with_three_charts(open_page):
    visit = open_page(PAGE, width=1400)  # the desktop rendering (a phone gets each answer on lines)
    assert not visit.problems, visit.problems
    assert visit.page.eval_on_selector_all(".ab-chart svg", "els => els.length") >= 3
    names = visit.page.eval_on_selector_all(".vega-bind [name]", "els => els.map(e => e.getAttribute('name'))")
    for name in ("budget_usd", "budget_model", "budget_prices", "budget_deadline", "cost_lifespan", "cost_kwh", "cost_gpu_pct", "cost_cloud_pct",
                 "cost_setup", "plan_params_b", "plan_tokens_b", "plan_setup"):
        assert name in names


def test_budget_slider_names_the_fastest_setup_that_fits(open_page, machines):
    visit = open_page(PAGE, width=1400)  # the desktop rendering (a phone gets each answer on lines)
    first = _answer(visit.page, BUDGET)
    # Today's prices and the study's answers by default: the 2026 budget table's machines, labels and ranges.
    _same(first, explorers.budget_answer(machines, "pythia-1b", "today", "answer", 40_000))
    in_time = _answer(visit.page, DEADLINE)
    _same(in_time, explorers.deadline_answer(machines, "pythia-1b", "today", "answer", 30))
    _set(visit.page, "budget_usd", 150_000)
    now = _wait_changed(visit.page, BUDGET, first)
    _same(now, explorers.budget_answer(machines, "pythia-1b", "today", "answer", 150_000))
    _set(visit.page, "budget_deadline", 100)
    _same(_wait_changed(visit.page, DEADLINE, in_time),
          explorers.deadline_answer(machines, "pythia-1b", "today", "answer", 100))
    # The paper's 2024 quotes and its Table 1 days: Section 4.1's question as the paper asked it, for comparison.
    _set(visit.page, "budget_prices", "paper")
    now = _wait_changed(visit.page, BUDGET, now)
    _same(now, explorers.budget_answer(machines, "pythia-1b", "paper", "answer", 150_000))
    _set(visit.page, "budget_days_from", "paper")
    _set(visit.page, "budget_usd", 40_000)
    _same(_wait_changed(visit.page, BUDGET, now), explorers.budget_answer(machines, "pythia-1b", "paper", "paper",
                                                                          40_000))
    assert not visit.problems, visit.problems


def test_the_budget_line_says_where_the_fastest_machine_outlasts_the_gpus(open_page, machines):
    """Where the fastest machine within the budget would train longer than the GPUs' assumed life (the 2026
    budget table's note), the browser's line says so in the words ``budget_answer`` computes."""
    from academic_bench.answer.budget import budget_table

    table = budget_table()
    long = table[(table["question"] == "fastest within") & (table["past_life"] != "")]
    if long.empty:
        skip_or_fail("no fastest machine within a budget outlasts the GPUs' life")
    r = long.iloc[0]
    visit = open_page(PAGE, width=1400)
    first = _answer(visit.page, BUDGET)
    _set(visit.page, "budget_model", r["model"])
    mid = _wait_changed(visit.page, BUDGET, first)
    shown = mid
    if r["limit"] != 40_000:  # the chart's default budget
        _set(visit.page, "budget_usd", int(r["limit"]))
        shown = _wait_changed(visit.page, BUDGET, mid)
    expected = explorers.budget_answer(machines, r["model"], "today", "answer", r["limit"])
    _same(shown, expected)
    assert expected.endswith("; " + r["past_life"]), expected
    assert not visit.problems, visit.problems


def test_the_budget_explorer_shows_every_machine_of_todays_prices(open_page, machines):
    """Every machine of the model at today's prices is a point, a GPU the paper never priced among them, and its
    tooltip says whether its days are measured or predicted, and their range."""
    from academic_bench.book.explorers.budget import POINTS

    visit = open_page(PAGE, width=1400)
    mine = machines[(machines["model"] == "pythia-1b") & (machines["prices"] == "today")
                    & (machines["days_from"] == "answer")]
    # Each point's tooltip as vega computed it (the scenegraph item vega keeps on the SVG element it drew).
    tips = visit.page.eval_on_selector_all(f'.ab-chart g.mark-symbol[class*="{POINTS}"] path',
                                           "els => els.map(e => e.__data__ && e.__data__.tooltip)")
    assert len(tips) == len(mine) and all(tips), tips
    assert sorted(t["setup"] for t in tips) == sorted(mine["setup"])
    for r in mine.itertuples():
        t = next(t for t in tips if t["setup"] == r.setup)
        assert (t["range, label"], t["days from"]) == (r.about, r.label)
    r = mine[mine["setup"].str.contains("RTX 4090")].iloc[0]
    assert r["basis"] == "predicted" and r["label"].startswith("predicted")
    # And a reader hovering a point sees it (a point under a ring or a rule may not take the pointer: the next).
    seen = ""
    for mark in visit.page.query_selector_all(f'.ab-chart g.mark-symbol[class*="{POINTS}"] path'):
        mark.scroll_into_view_if_needed()
        box = mark.bounding_box()
        visit.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        seen = visit.page.evaluate("""() => { const t = document.getElementById('vg-tooltip-element');
                                              return t && t.classList.contains('visible') ? t.innerText : ''; }""")
        if "range, label" in seen:
            break
    assert "range, label" in seen and "price rests on" in seen, seen
    assert not visit.problems, visit.problems


def test_cost_sliders_update_the_cost_per_run(open_page, setups):
    visit = open_page(PAGE, width=1400)  # the desktop rendering (a phone gets each answer on lines)
    first = _answer(visit.page, COST)
    _same(first, explorers.cost_answer(setups, "pythia-1b", "answer", "4 x h100-80gb"))
    # Switched to the paper's days, its cells whose days imply an impossible MFU are bars still, named as
    # implausible on the axis.
    _set(visit.page, "cost_days_from", "paper")
    first = _wait_changed(visit.page, COST, first)
    _same(first, explorers.cost_answer(setups, "pythia-1b", "paper", "4 x h100-80gb"))
    texts = visit.page.eval_on_selector_all(".ab-chart svg text", "els => els.map(e => e.textContent)")
    marked = {t.split(" (implausible")[0] for t in texts if "(implausible: MFU above" in t}
    paper = setups[(setups["model"] == "pythia-1b") & (setups["kind"] == "paper")]
    assert marked == set(paper.loc[paper["implausible"].astype(bool), "setup"]) and marked
    _set(visit.page, "cost_setup", "8 x a100-80gb")
    shown = _wait_changed(visit.page, COST, first)
    _same(shown, explorers.cost_answer(setups, "pythia-1b", "paper", "8 x a100-80gb"))
    for name, value in (("cost_lifespan", 3), ("cost_kwh", 0.25), ("cost_gpu_pct", 80), ("cost_cloud_pct", 150),
                        ("cost_pue", 1.2)):
        _set(visit.page, name, value)
        shown = _wait_changed(visit.page, COST, shown)
    _same(shown, explorers.cost_answer(setups, "pythia-1b", "paper", "8 x a100-80gb", gpu_pct=80, lifespan=3,
                                       kwh=0.25, pue=1.2, cloud_pct=150))
    assert not visit.problems, visit.problems


def test_planner_sliders_update_the_days(open_page):
    visit = open_page(PAGE, width=1400)  # the desktop rendering (a phone gets each answer on lines)
    shown = _answer(visit.page, PLAN)
    _same(shown, explorers.plan_answer(1.0, 3000, 2048, "8 x h100-80gb"))  # OLMo-1B's budget: 1B on 3T tokens
    for name, value in (("plan_params_b", 2.5), ("plan_tokens_b", 1000), ("plan_setup", "4 x a100-80gb")):
        _set(visit.page, name, value)
        shown = _wait_changed(visit.page, PLAN, shown)
    _same(shown, explorers.plan_answer(2.5, 1000, 2048, "4 x a100-80gb"))
    assert not visit.problems, visit.problems


def test_the_planner_says_a_capped_answer_is_a_lower_bound(open_page):
    """Where the MFU the planner takes is held at the cap (``transfer.MFU_CAP``, which the page carries), the
    answer line says the days are a lower bound, as ``plan_answer`` does; elsewhere it does not."""
    from academic_bench.answer.planner import CAPPED_WORDS
    from academic_bench.predict.transfer import MFU_CAP

    grid = explorers.plan_grid()
    held = grid[(grid["params_b"] == 1.0) & (grid["mfu"] >= MFU_CAP)]
    if held.empty:
        skip_or_fail("no setup's answers are held at the MFU cap")
    words = CAPPED_WORDS.format(cap=MFU_CAP)
    visit = open_page(PAGE, width=1400)
    shown = _answer(visit.page, PLAN)
    expected = explorers.plan_answer(1.0, 3000, 2048, "8 x h100-80gb")
    _same(shown, expected)
    assert (words in shown) == (words in expected)
    key = held["key"].iloc[0]
    _set(visit.page, "plan_setup", key)
    shown = _wait_changed(visit.page, PLAN, shown)
    assert words in shown, shown
    _same(shown, explorers.plan_answer(1.0, 3000, 2048, key))
    assert not visit.problems, visit.problems


def test_the_planner_says_where_only_the_fast_end_of_its_range_is_capped(open_page):
    """Where the MFU the planner takes is below the cap but the high end of its range is at it (a size between a
    held answer and a slower one, or an answer whose own range reaches the cap), the answer line says the fast end
    of the range is a lower bound, in words of its own, as ``plan_answer`` does."""
    from academic_bench.answer.planner import CAPPED_WORDS, FAST_END_CAPPED_WORDS, at_cap
    from academic_bench.predict.transfer import MFU_CAP

    grid = explorers.plan_grid()
    fast = grid[(grid["params_b"] == 1.0) & ~grid["mfu"].map(at_cap) & grid["mfu_high"].map(at_cap)]
    if fast.empty:
        skip_or_fail("no setup's MFU range reaches the MFU cap with its MFU below it")
    words, held = FAST_END_CAPPED_WORDS.format(cap=MFU_CAP), CAPPED_WORDS.format(cap=MFU_CAP)
    visit = open_page(PAGE, width=1400)
    shown = _answer(visit.page, PLAN)
    key = fast["key"].iloc[0]
    _set(visit.page, "plan_setup", key)
    shown = _wait_changed(visit.page, PLAN, shown)
    assert words in shown and held not in shown, shown
    _same(shown, explorers.plan_answer(1.0, 3000, 2048, key))
    assert not visit.problems, visit.problems


_BARS_JS = """(marks) => {
    const chart = Array.from(document.querySelectorAll('.ab-chart')).find(
        el => Array.from(el.querySelectorAll('svg text')).some(t => marks.some(m => t.textContent.includes(m))));
    const boxes = Array.from(chart.querySelectorAll('g.mark-rect path')).map(p => p.getBoundingClientRect());
    const svg = chart.querySelector('svg').getBoundingClientRect();
    return {drawn: chart.dataset.drawn, bars: boxes.length, svg_width: svg.width, svg_height: svg.height,
            top: Math.min(...boxes.map(b => b.top)), bottom: Math.max(...boxes.map(b => b.bottom))};
}"""


def test_the_cost_chart_is_no_taller_on_a_phone(open_page):
    """On a phone the cost explorer's bars take no more height than on a wide screen (it once drew each setup's
    name on a row of its own above its bars, with thicker bars), and the chart fits the column."""
    seen = {}
    for width in (1400, 390):
        visit = open_page(PAGE, width=width)
        seen[width] = visit.page.evaluate(_BARS_JS, list(COST))
        assert not visit.problems, visit.problems
        visit.page.close()
    wide, phone = seen[1400], seen[390]
    assert (wide["drawn"], phone["drawn"]) == ("wide", "narrow"), seen
    assert phone["bars"] == wide["bars"] > 0, seen
    assert phone["bottom"] - phone["top"] <= wide["bottom"] - wide["top"] + 1, seen
    assert phone["svg_width"] <= 390, seen


# One phone screen: the window ``open_page`` gives a 390 px phone is 900 px high (an iPhone's is 844-932). The
# planner with its controls in one screen lets a reader move a slider and see the answer and every row change
# without scrolling; it was more than three screens tall with every setup a row.
PHONE_SCREEN = 900

_PLAN_JS = """(marks) => {
    const chart = Array.from(document.querySelectorAll('.ab-chart')).find(
        el => Array.from(el.querySelectorAll('svg text')).some(t => marks.some(m => t.textContent.includes(m))));
    const dots = Array.from(chart.querySelectorAll('g.mark-symbol.role-mark path'));
    // The answer drawn on lines (a tspan each), read back as one line.
    const answer = Array.from(chart.querySelectorAll('svg text')).find(t => marks.some(m => t.textContent.includes(m)));
    const spans = Array.from(answer.querySelectorAll('tspan')).map(s => s.textContent);
    return {drawn: chart.dataset.drawn, height: chart.getBoundingClientRect().height,
            svg_width: chart.querySelector('svg').getBoundingClientRect().width,
            setups: dots.map(p => p.__data__.datum.setup),
            answer: spans.length ? spans.join(' ') : answer.textContent};
}"""


def test_the_planner_fits_one_phone_screen_and_shows_every_setup_by_count(open_page):
    """At 390 px the planner, controls included, is no taller than one phone screen: its rows are the setups of
    one GPU count, picked in a menu (the count of the setup the answer starts on). Each count shows every setup
    of that count, so every setup of the wide chart is a row under some count; the answer line, drawn on lines,
    is still the one Python computes."""
    from academic_bench.book.explorers.planner import ROWS_PARAM

    grid = explorers.plan_grid()
    at_size = grid[grid["params_b"] == 1.0]
    visit = open_page(PAGE, width=390)
    seen = visit.page.evaluate(_PLAN_JS, list(PLAN))
    assert seen["drawn"] == "narrow", seen["drawn"]
    assert seen["height"] <= PHONE_SCREEN, seen["height"]
    assert seen["svg_width"] <= 390, seen["svg_width"]
    _same(seen["answer"], explorers.plan_answer(1.0, 3000, 2048, "8 x h100-80gb"))
    shown, first = set(), 8  # the count of the setup the answer starts on, 8 x H100
    for n in [first] + sorted(set(at_size["n_gpus"]) - {first}):
        if n != first:
            _set(visit.page, ROWS_PARAM, n)
            visit.page.wait_for_function(
                """([marks, n]) => { const chart = Array.from(document.querySelectorAll('.ab-chart')).find(el =>
                       Array.from(el.querySelectorAll('svg text')).some(t => marks.some(m => t.textContent.includes(m))));
                       const dots = Array.from(chart.querySelectorAll('g.mark-symbol.role-mark path'));
                       return dots.length && dots.every(p => p.__data__.datum.n_gpus === n); }""",
                arg=[list(PLAN), int(n)], timeout=10_000)
            seen = visit.page.evaluate(_PLAN_JS, list(PLAN))
        assert sorted(seen["setups"]) == sorted(at_size.loc[at_size["n_gpus"] == n, "setup"]), n
        assert seen["height"] <= PHONE_SCREEN, (n, seen["height"])
        shown |= set(seen["setups"])
    assert shown == set(at_size["setup"])
    assert not visit.problems, visit.problems


_NAMES_JS = """(marks) => {
    const chart = Array.from(document.querySelectorAll('.ab-chart')).find(
        el => Array.from(el.querySelectorAll('svg text')).some(t => marks.some(m => t.textContent.includes(m))));
    const bars = Array.from(chart.querySelectorAll('g.mark-rect.role-mark path')).map(p => p.getBoundingClientRect());
    const top = Math.min(...bars.map(b => b.top)), bottom = Math.max(...bars.map(b => b.bottom));
    const names = Array.from(chart.querySelectorAll('g.mark-text.role-mark text')).map(t => t.getBoundingClientRect())
        .filter(r => r.top >= top - 1 && r.bottom <= bottom + 1);
    return {names: names.length, bars: bars.length, names_right: Math.max(...names.map(r => r.right)),
            bars_left: Math.min(...bars.map(b => b.left))};
}"""


def test_the_cost_explorers_names_end_where_its_bars_start_on_a_phone(open_page):
    """On a phone the cost explorer's setup names stand inside the plot, left of where its bars start; that start
    is estimated from the names' characters (``charts.narrow.CHAR_PX``: vega's expressions cannot measure text).
    Measured as drawn, every name ends before the bars start, with the study's days and the paper's (whose
    implausible cells carry a mark after the name)."""
    visit = open_page(PAGE, width=390)
    for days_from in ("answer", "paper"):
        if days_from != "answer":
            before = _answer(visit.page, COST)
            _set(visit.page, "cost_days_from", days_from)
            _wait_changed(visit.page, COST, before)
        seen = visit.page.evaluate(_NAMES_JS, list(COST))
        assert seen["names"] > 0 and seen["bars"] > 0, seen
        assert seen["names_right"] <= seen["bars_left"], (days_from, seen)
    assert not visit.problems, visit.problems
