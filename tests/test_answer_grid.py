"""The intro's answer grid: every model x GPU x count of the study, each cell labelled by what its days rest on."""
from __future__ import annotations

import pytest

from academic_bench import analysis
from academic_bench.predict import measured as answers
from academic_bench.book import explorers
from academic_bench.catalog.hardware import catalog as gpu_catalog
from academic_bench.catalog.models import CATALOG


@pytest.fixture(scope="module")
def grid():
    return explorers.answer_grid_frame()


def test_every_model_gpu_and_count_has_a_labelled_cell(grid):
    """Every model on every GPU of data/gpus.csv and count, each in its generation; the cells a GPU refuses (AMD,
    bf16 before Ampere: ``store.refused``) say so with the reason."""
    from academic_bench.answer.store import refused
    from academic_bench.catalog.hardware import every_gpu

    assert len(grid) == len(CATALOG) * len(every_gpu()) * 4
    no = grid[grid["kind"] == explorers.GRID_LABELS["refused"]]
    assert len(no) == len(refused()) and no["basis"].str.len().gt(0).all() and no["days"].isna().all()
    assert set(gpu_catalog()) < set(grid["gpu"])
    arch = grid["gpu"].map(lambda g: every_gpu()[g].architecture)
    assert [a in g.lower() for g, a in zip(grid["generation"], arch)] == [True] * len(grid)
    assert set(grid["kind"]) <= set(explorers.GRID_LABELS.values())
    answered = grid[~grid["kind"].isin([explorers.GRID_LABELS["none"], explorers.GRID_LABELS["refused"]])]
    assert answered["days"].notna().all() and grid.loc[grid["kind"] == "no answer", "days"].isna().all()


def test_no_answer_rests_on_days_no_real_run_reaches(grid):
    """Answered cells never carry an MFU above the plausibility line; the paper's cell beside it says when it
    does."""
    answered = grid[grid["days"].notna()]
    assert (answered["mfu"].dropna() <= analysis.MFU_IMPLAUSIBLE).all()
    flagged = grid[grid["paper_mfu"] > analysis.MFU_IMPLAUSIBLE]
    assert len(flagged) and flagged["paper_note"].str.contains("no real run reaches it").all()
    paper_answers = grid[grid["kind"] == explorers.GRID_LABELS["paper"]]
    assert (paper_answers["paper_mfu"] <= analysis.MFU_IMPLAUSIBLE).all()
    assert (paper_answers["days"] == paper_answers["paper_days"]).all()


def test_measured_cells_are_the_studys_answers_for_complete_searches(grid):
    """A cell is 'measured' exactly where the study's answer comes from a complete search, with those days."""
    runs = analysis.runs_frame()
    ans = answers.answers(runs, analysis.skipped_frame())
    complete = ans[ans["status"] == "search complete"].set_index(["model", "gpu", "n_gpus"])["days"]
    measured = grid[grid["kind"] == "measured"].set_index(["model", "gpu", "n_gpus"])["days"]
    assert len(measured) and set(measured.index) <= set(complete.index)
    for key, days in measured.items():
        assert days == pytest.approx(complete[key])


def test_the_chart_filters_by_the_model_menu(grid):
    spec = explorers.answer_grid_chart(grid).to_dict()
    assert any(p.get("name") == "grid_model" and p.get("bind", {}).get("input") == "select"
               for p in spec.get("params", []))
    assert "datum.model == grid_model" in str(spec)


def test_a_prediction_on_a_gpu_never_measured_says_so_and_is_no_narrower(grid):
    """A predicted cell on a GPU no run measured names the published check at its distance, and its range holds
    the range the study's own checks give (the widening never narrows it, the central days stay)."""
    from academic_bench.answer.store import other_gpus

    kept = {(a.model, a.gpu, a.n_gpus): a for a in other_gpus() if a.kind == "predicted"}
    shown = grid.set_index(["model", "gpu", "n_gpus"])
    assert kept
    for key, a in kept.items():
        row = shown.loc[key]
        assert "never measured on this GPU" in row["basis"]
        assert row["days"] == a.days
        assert row["days_low"] <= a.days_low + 1e-9 and row["days_high"] >= a.days_high - 1e-9
