"""Where a configuration's wall time went (``measure.wall``): phases that never overlap, launches that add up, and
the book's per-class reading of the rows that record it."""
from __future__ import annotations

import time

import pytest

from academic_bench.analysis.launches import wall_breakdown
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.measure.wall import PHASES, PhaseClock, add_launch, breakdown
from academic_bench.results import make_row


def test_a_phase_inside_another_pauses_it():
    clock = PhaseClock()
    t0 = time.perf_counter()
    with clock.phase("trials"):
        with clock.phase("build"):
            time.sleep(0.05)
        time.sleep(0.02)
    whole = time.perf_counter() - t0
    assert clock.seconds["build"] >= 0.05
    assert clock.seconds["trials"] >= 0.02
    # each moment counted once: together no more than the time that passed
    assert clock.seconds["build"] + clock.seconds["trials"] <= whole


def test_launches_add_up_and_the_rest_is_the_launchers_own_or_other():
    spent: dict[str, float] = {}
    worker = {"entered": 101.0, "setup": 0.5, "build": 2.0, "trials": 3.0, "warmup": 1.0, "timed": 2.0,
              "validation": 0.0, "written_at": 110.0}
    add_launch(spent, worker, launched_at=100.0, ended_at=110.5)
    add_launch(spent, None, launched_at=111.0, ended_at=112.0)  # a launch that wrote no result
    row = breakdown(spent, duration_s=13.0)
    assert tuple(row) == PHASES
    assert row["start"] == 1.0 and row["teardown"] == 0.5 and row["build"] == 2.0
    assert row["launcher"] == pytest.approx(13.0 - 10.5 - 1.0)
    assert sum(row.values()) == pytest.approx(13.0)
    # the launch without a record and the worker's unaccounted 1.5 s stay in "other"
    assert row["other"] == pytest.approx(1.0 + (10.5 - 1.0 - 8.5 - 0.5))


def _row(methods: str, duration: float, spent: dict | None) -> dict:
    c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(methods))
    row = make_row(c, setup="h100x1", outcome="ok", duration_s=duration)
    if spent is not None:
        row["wall_breakdown"] = spent
    return row


def test_the_breakdown_per_method_class_reads_only_the_rows_that_record_it():
    a = breakdown({"launched": 9.0, "timed": 6.0, "build": 3.0}, 10.0)
    b = breakdown({"launched": 30.0, "timed": 10.0, "trials": 20.0}, 30.0)
    rows = [_row("naive", 10.0, a), _row("naive", 30.0, b), _row("naive", 50.0, None),
            _row("compile", 20.0, None)]
    table, unrecorded = wall_breakdown(rows)
    assert unrecorded == 2  # made before the record existed: counted, never given a breakdown
    [naive] = table.to_dict("records")
    assert naive["configurations"] == 2 and naive["median_s"] == 20.0
    assert naive["timed"] == pytest.approx(16.0 / 40.0) and naive["launcher"] == pytest.approx(1.0 / 40.0)
    assert sum(naive[p] for p in PHASES) == pytest.approx(1.0)
