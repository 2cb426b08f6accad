"""A predicted answer's range is the error the study observed for predictions of its kind (``predict.ranges``):
the largest |error| of the held-out predictions of its model, method class and architecture carry, a wider group
where a class has few, the model's own span where no check covers the carry; and on the held-out points
themselves, each left out of its own range, at least 80% fall inside."""
from __future__ import annotations

import pandas as pd
import pytest

from academic_bench.answer import grid
from academic_bench.predict import ranges
from academic_bench.predict.transfer import MFU_CAP


def _observed(points: list[tuple[str, str, bool, float]]) -> pd.DataFrame:
    """(by, method class, same architecture, error) -> an ``observed_errors`` frame (100 measured days each)."""
    rows = [{"point": str(i), "by": by, "method_class": cls, "offload": "offload" in cls, "same_architecture": same,
             "predicted_days": 100 * (1 + e), "predicted_days_low": 90.0, "predicted_days_high": 130.0,
             "measured_days": 100.0, "error": e} for i, (by, cls, same, e) in enumerate(points)]
    return pd.DataFrame(rows, columns=ranges.OBSERVED_COLUMNS)


T = "transfer model"
FIVE = [(T, "free-lunch", True, e) for e in (0.01, -0.02, 0.04, -0.08, 0.03)]
OFFLOAD = [(T, "ZeRO-1 + offload", True, e) for e in (0.1, -0.15, 0.05, 0.02, -0.01)]


def test_the_range_is_the_largest_error_observed_for_the_kind():
    r = ranges.stated_range(_observed(FIVE + OFFLOAD), T, "free-lunch", False, True)
    assert r.error == pytest.approx(0.08) and not r.keep_own and "5 held-out free-lunch" in r.words
    lo, hi, words = r.bounds(50.0, 48.0, 52.0)
    assert words == r.words  # no MFU given: nothing held
    assert (lo, hi) == (pytest.approx(50 / 1.08), pytest.approx(50 / 0.92))


def test_a_measurement_is_inside_exactly_when_its_prediction_erred_by_at_most_the_range():
    r = ranges.StatedRange(0.1, False, "")
    for error in (-0.1, -0.05, 0.0, 0.099, 0.1, 0.11, -0.12):
        predicted = 100 * (1 + error)
        lo, hi, _ = r.bounds(predicted, None, None)
        assert (lo <= 100 <= hi) == (abs(error) <= 0.1 + 1e-12), error


def test_a_class_with_few_checks_takes_its_wider_group():
    few = [(T, "ZeRO-3 + offload", True, 0.3)]
    r = ranges.stated_range(_observed(FIVE + OFFLOAD + few), T, "ZeRO-3 + offload", True, True)
    assert r.error == pytest.approx(0.3) and "with offloading" in r.words  # the six offloaded checks
    r = ranges.stated_range(_observed(FIVE + OFFLOAD), T, "free-lunch (DDP)", False, True)
    assert r.error == pytest.approx(0.08) and "without offloading" in r.words
    r = ranges.stated_range(_observed(FIVE[:3] + OFFLOAD[:3]), T, "free-lunch", False, True)
    assert r.error == pytest.approx(0.15) and "every class" in r.words


def test_another_architecture_keeps_the_models_own_span_where_it_is_wider():
    r = ranges.stated_range(_observed(FIVE), T, "free-lunch", False, False)
    assert r.keep_own and "another architecture" in r.words
    lo, hi, _ = r.bounds(100.0, 80.0, 101.0)
    assert lo == 80.0 and hi == pytest.approx(100 / 0.92)


def test_with_no_check_of_its_kind_the_range_is_the_models_own_and_says_it_is_unchecked():
    r = ranges.stated_range(_observed(FIVE), "work model", "free-lunch", False, True)
    assert r.error is None and "unchecked" in r.words
    assert r.bounds(100.0, 90.0, 120.0) == (90.0, 120.0, r.words)


def test_a_short_end_past_the_mfu_cap_is_held_there_and_says_so():
    r = ranges.StatedRange(0.5, False, "the kind's error")
    mfu = MFU_CAP / 1.2  # the error's short end, days / 1.5, would imply an MFU of 1.5 x mfu, past the cap
    lo, hi, words = r.bounds(100.0, None, None, mfu)
    assert lo == pytest.approx(100 * mfu / MFU_CAP) and hi == pytest.approx(200.0)
    assert words.startswith("the kind's error") and f"held at {MFU_CAP:.0%} MFU" in words
    assert r.bounds(100.0, None, None, MFU_CAP / 2)[2] == "the kind's error"  # not past it: said as it is


def test_coverage_leaves_each_point_out_of_its_own_range():
    """Six checks of one kind: each point's range is the largest of the other five, so the largest error alone
    falls outside its range."""
    points = _observed([(T, "free-lunch", True, e) for e in (0.01, -0.02, 0.04, -0.08, 0.03, 0.2)])
    assert ranges.coverage(points) == {"inside": 5, "points": 6, "coverage": pytest.approx(5 / 6)}


def test_at_least_80_percent_of_the_held_out_points_fall_inside_their_ranges():
    """The study's held-out predictions (every counted configuration from the other setups, the decoders
    outside the catalog estimated before they ran), each inside the range its kind gets from the others."""
    observed = ranges.observed_errors()
    c = ranges.coverage(observed)
    assert c["points"] >= 50
    assert c["coverage"] >= ranges.COVERAGE_TARGET, (
        f"{c['inside']} of {c['points']} held-out points ({c['coverage']:.1%}) inside their ranges, below "
        f"{ranges.COVERAGE_TARGET:.0%}")


def test_every_predicted_answer_states_what_its_range_is():
    for a in grid():
        if a.kind == "predicted":
            assert a.range_basis and a.days_low <= a.days <= a.days_high, a
            if a.range_error is not None:
                # Its short end: the error's, unless that passes the MFU no real run passes (then held there).
                short = max(a.days / (1 + a.range_error), a.days * (a.mfu or 0.0) / MFU_CAP)
                assert a.days_low <= short * (1 + 1e-9)
                assert a.days_high >= a.days / (1 - a.range_error) * (1 - 1e-9)
                if "own span" not in a.range_basis:
                    assert (a.days_low, a.days_high) == (pytest.approx(short),
                                                         pytest.approx(a.days / (1 - a.range_error)))
                if short > a.days / (1 + a.range_error):
                    assert f"held at {MFU_CAP:.0%} MFU" in a.range_basis, a.range_basis
            assert a.mfu is None or a.days_low >= a.days * a.mfu / MFU_CAP * (1 - 1e-9), "no end passes the cap"
        elif a.kind == "measured":
            assert "timed repetitions" in a.range_basis
