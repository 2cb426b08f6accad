"""A step carried to a small micro-batch starts from the step the study measured nearest it
(``predict.fixed_micro_batch``): the search's, or a row timed at a fixed micro-batch on the same setup."""
from __future__ import annotations

import json
import math
import shutil

import pandas as pd
import pytest

from academic_bench.analysis import runs_root
from academic_bench.predict import fixed_micro_batch as fmb
from academic_bench.predict.transfer_validation import configurations, idle_charge_check, measured, prediction_of


def _search_row(model: str = "roberta-large", setup: str = "h100x1") -> pd.Series:
    c = configurations(None)
    return c[(c["setup"] == setup) & (c["model"] == model) & (c["methods_label"] == "free-lunch")
             & (c["n_gpus"] == 1)].iloc[0]


def test_a_step_carried_to_a_measured_micro_batch_on_its_own_gpu_is_that_measurement():
    """What a user relies on: asked for RoBERTa-large at a micro-batch the study timed on that GPU, the answer is
    the timing, not the search's step plus a charge."""
    fixed = fmb.fixed_micro_batch_rows(None)
    assert not fixed.empty, "the shipped runs hold RoBERTa-large timed at fixed micro-batches on one H100"
    src, prof = _search_row(), measured(None)[1]
    for _, r in fixed.iterrows():
        p = prediction_of(src, prof, str(r["gpu"]), 1, micro_batch=int(r["micro_batch"]))[0]
        assert p.micro_batch == int(r["micro_batch"])
        assert p.step_time_s == pytest.approx(float(r["step_time_s"]), rel=1e-3)


def test_the_search_step_alone_undercharges_every_smaller_micro_batch():
    """The table the book shows: each fixed micro-batch's step carried from the search's micro-batch is shorter
    than measured."""
    check = idle_charge_check(None)
    assert len(check) == len(fmb.fixed_micro_batch_rows(None))
    assert (check["micro_batch"] < check["search_micro_batch"]).all()
    assert (check["idle_charge_error"] < 0).all()


def test_a_fixed_micro_batch_row_is_split_by_its_own_profile_against_its_timed_step():
    """The profiler's host work lengthens a small micro-batch's profiled step: the carried row's idle time is its
    timed step less its profiled kernels' time, so a slower GPU stretches the kernels, not the waiting."""
    from academic_bench.predict.transfer import source_from_row

    prof = measured(None)[1]
    for _, r in fmb.fixed_micro_batch_rows(None).iterrows():
        own = prof[(prof["setup"] == r["setup"]) & (prof["model"] == r["model"])
                   & (prof["micro_batch"] == r["micro_batch"]) & (prof["methods_label"] == r["methods_label"])]
        if own.empty:
            continue
        src = source_from_row(r.to_dict(), prof, wall_from_step=True)
        busy, step = float(own["busy_s"].iloc[0]), float(r["step_time_s"])
        assert src.split_basis == "configuration"
        assert src.split["idle"] == pytest.approx(max(0.0, step - busy) / max(step, busy), abs=0.02)
    smallest = fmb.fixed_micro_batch_rows(None).sort_values("micro_batch").iloc[0]
    by_wall = source_from_row(smallest.to_dict(), prof).split["idle"]
    assert by_wall > source_from_row(smallest.to_dict(), prof, wall_from_step=True).split["idle"], \
        "at the smallest micro-batch the profiled wall counts the profiler's host work as idle time"


def test_between_measured_micro_batches_the_nearest_by_ratio_is_carried(monkeypatch):
    src = pd.Series({"setup": "s", "model": "m", "methods_label": "free-lunch", "n_gpus": 1, "micro_batch": 64})
    rows = pd.DataFrame({"setup": "s", "model": "m", "methods_label": "free-lunch", "n_gpus": 1,
                         "micro_batch": [4, 16]})
    monkeypatch.setattr(fmb, "fixed_micro_batch_rows", lambda root=None: rows)
    nearest = lambda m: int(fmb.nearest_measured(src, m).loc["micro_batch"])  # noqa: E731
    assert [nearest(m) for m in (1, 4, 5, 7, 16, 30, 33, 128)] == [4, 4, 4, 4, 16, 16, 64, 64]
    assert nearest(8) == 16, "a tie goes to the larger micro-batch"
    assert fmb.nearest_measured(src, 64) is src
    other = src.copy()
    other["model"] = "n"
    assert fmb.nearest_measured(other, 4) is other, "rows of another model are never a source"


def test_a_fixed_micro_batch_row_counts_only_where_its_setup_validated_its_method_class(tmp_path):
    """The same rule as every result: rows of an engine revision the setup never validated are no source."""
    src_root = runs_root(None)
    rows = [json.loads(line) for line in (src_root / "h100x1" / fmb.MICRO_BATCH_FILE).read_text().splitlines()]
    assert rows

    def runs(name: str, lines: list[dict] | None) -> str:
        setup = tmp_path / name / "h100x1"
        (setup / "evidence" / "encoders").mkdir(parents=True)
        shutil.copy(src_root / "h100x1" / "results.jsonl", setup / "results.jsonl")
        if lines is not None:
            (setup / fmb.MICRO_BATCH_FILE).write_text("".join(json.dumps(r) + "\n" for r in lines))
        return str(tmp_path / name)

    assert fmb.fixed_micro_batch_rows(runs("none", None)).empty, "no micro-batch file in that folder"
    assert fmb.fixed_micro_batch_rows(runs("unvalidated", [{**r, "engine": 99} for r in rows])).empty
    got = fmb.fixed_micro_batch_rows(runs("validated", rows))
    assert sorted(got["micro_batch"]) == sorted(r["micro_batch"] for r in rows)
    assert all(math.isfinite(s) for s in got["step_time_s"])


def test_an_answer_on_a_small_gpu_starts_from_the_fixed_row_nearest_the_micro_batch_that_fits_it():
    """On an 11 GB RTX 2080 Ti the memory model fits RoBERTa-large at a small micro-batch: the carried step starts
    from the H100 step measured nearest it, says so, and is longer than the search's step with the idle-time charge
    alone; a GPU count given as a numpy integer or a whole float answers the same."""
    import numpy as np

    from academic_bench.predict.transfer import predict, source_from_row, target_micro_batch

    src, prof = _search_row(), measured(None)[1]
    fits = target_micro_batch(source_from_row(src.to_dict(), prof), "rtx2080ti", 1)
    assert fits is not None and fits < int(src["micro_batch"])
    p = prediction_of(src, prof, "rtx2080ti", 1)[0]
    near = int(fmb.nearest_measured(src, fits)["micro_batch"])
    assert p.micro_batch == fits and f"from its step measured at micro-batch {near}" in p.basis
    alone = predict(source_from_row(src.to_dict(), prof), "rtx2080ti", 1, micro_batch=fits)
    assert p.step_time_s > alone.step_time_s
    for count in (np.int64(1), 1.0):
        assert prediction_of(src, prof, "rtx2080ti", count)[0].step_time_s == pytest.approx(p.step_time_s)


@pytest.mark.parametrize("bad", [0, -2, 2.5, float("nan")])
def test_a_micro_batch_that_is_no_whole_count_of_samples_is_refused_with_the_reason(bad):
    with pytest.raises(ValueError, match="whole number of samples"):
        fmb.nearest_measured(_search_row(), bad)


def test_a_configuration_profiled_at_several_micro_batches_keeps_a_profile_at_each():
    """Profiles of one configuration at fixed micro-batches share its id: each micro-batch keeps its latest, and
    the search's own profile is not replaced by them."""
    prof = measured(None)[1]
    src = _search_row()
    mine = prof[(prof["setup"] == src["setup"]) & (prof["model"] == src["model"])
                & (prof["methods_label"] == src["methods_label"])]
    fixed = set(fmb.fixed_micro_batch_rows(None)["micro_batch"].astype(int))
    assert {int(src["micro_batch"]), *fixed} <= set(mine["micro_batch"].astype(int))
    assert len(set(mine["config_id"])) == 1
