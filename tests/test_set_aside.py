"""Measurements a correction of the engine invalidated are set aside by every reader, and kept in the evidence.

Engine revision 1 timed DeepSpeed's phases against DeepSpeed's own drifting accumulation boundary
(``test_phase_alignment``): its ZeRO step times are no measurement. Rows record the revision that made them.
"""
from __future__ import annotations

import pytest

from academic_bench import analysis
from academic_bench.catalog.config import Config
from academic_bench.answer.export import best_row
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import ENGINE_REVISION, ResultStore, engine_revision, make_row, set_aside_reason
from academic_bench.search.sweep import run_sweep

from measured import typed_figures  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("typed_figures")  # synthetic rows with typed-in figures


def row(spec: str, step_s: float, *, engine: int | None, outcome: str = "ok", tiny: bool = False, **kw) -> dict:
    config = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(spec), tiny=tiny)
    r = make_row(config, setup="h100x1", outcome=outcome, search="smart", micro_batch=4, gas=2, step_time_s=step_s,
                 days=step_s, reason=None if outcome in ("ok", "oom") else "why", **kw)
    if engine is None:
        del r["engine"]  # as rows written before revisions were recorded
    else:
        r["engine"] = engine
    return r


def test_new_rows_record_the_engine_revision_and_old_zero_timings_are_set_aside():
    assert make_row(Config("pythia-160m", "h100-80gb", 1), setup="s", outcome="ok")["engine"] == ENGINE_REVISION
    old_zero = row("free-lunch+zero1+offload", 1.0, engine=None)
    assert engine_revision(old_zero) == 1 and "accumulation boundary" in set_aside_reason(old_zero)
    assert "first accumulating micro-step" in set_aside_reason(row("free-lunch+zero1+offload", 1.0, engine=2))
    assert set_aside_reason(row("free-lunch+zero1+offload", 1.0, engine=3)) is None
    # Revision 4 times ZeRO-3 + offload's steady micro-steps as one block: its revision-3 timings are void.
    long = {"gas": 32}  # revision 4 times a block of GAS - 2 accumulating micro-steps where there are 2 or more
    assert "one at a time" in set_aside_reason(row("free-lunch+zero3+offload", 1.0, engine=3) | long)
    assert set_aside_reason(row("free-lunch+zero3+offload", 1.0, engine=3)) is None, "GAS 2: the same work"
    assert set_aside_reason(row("free-lunch+zero3+offload", 1.0, engine=4) | long) is None
    assert set_aside_reason(row("free-lunch+zero3", 1.0, engine=3)) is None
    assert set_aside_reason(row("free-lunch+zero3+offload", 1.0, engine=3, timing="unsynced")) is None
    assert set_aside_reason(row("free-lunch+fsdp_full_shard+offload", 1.0, engine=None)) is None
    # Revision 5 collated and pinned batches inside synchronized phases: its timings of offloading configurations
    # (whose host is busy) are void, the others stand, and revision 6 is not affected.
    for spec in ("free-lunch+zero1+offload", "free-lunch+fsdp_full_shard+offload"):
        assert "main thread" in set_aside_reason(row(spec, 1.0, engine=5))
        assert set_aside_reason(row(spec, 1.0, engine=6)) is None
        assert set_aside_reason(row(spec, 1.0, engine=5, timing="unsynced")) is None
    assert set_aside_reason(row("free-lunch", 1.0, engine=5)) is None
    assert set_aside_reason(row("free-lunch+zero1", 1.0, engine=5)) is None
    # Its search ran whole, aligned steps: an out-of-memory verdict stands.
    assert set_aside_reason(row("free-lunch+zero3+offload", 1.0, engine=None, outcome="oom")) is None


def _validation(spec: str, engine: int, rel_error: float, at: str, config_id: str | None = None) -> dict:
    v = row(spec, 1.0, engine=engine, mode="validate",
            validate={"steps": 3, "sustained_step_s": 1.0, "predicted_step_s": 1.0 + rel_error, "rel_error": rel_error})
    return {**v, "config_id": config_id or v["config_id"], "started_at": at}


@pytest.fixture
def runs(tmp_path):
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    for r in (row("free-lunch", 2.0, engine=None), row("free-lunch+zero1+offload", 1.0, engine=None),
              row("free-lunch+zero2+offload", 3.0, engine=3),
              _validation("free-lunch", 1, 0.01, "2026-01-01T00:00:00+00:00", "v-free"),
              _validation("free-lunch+zero2+offload", 3, 0.01, "2026-01-01T00:00:00+00:00", "v-zero2")):
        store.append(r)
    before = store.path.read_bytes()
    yield tmp_path
    assert store.path.read_bytes() == before, "the evidence file is never edited"


def test_analysis_and_export_never_use_a_set_aside_row_and_say_how_many_and_why(runs):
    df = analysis.runs_frame(runs)
    assert sorted(df.loc[df["mode"] == "step", "outcome"]) == ["ok", "ok", "set aside"]
    assert set(analysis.results(df)["methods_label"]) == {"free-lunch", "free-lunch + ZeRO-2 + offload"}
    best = analysis.best_per_setting(df)
    assert best["methods_label"].tolist() == ["free-lunch"], "the faster, misaligned ZeRO-1 row is no result"
    aside = analysis.set_aside(df)
    assert aside[["setup", "rows"]].values.tolist() == [["h100x1", 1]]
    assert "engine revision 1" in aside["reason"].iloc[0]
    cov = analysis.coverage(df, analysis.skipped_frame(runs))
    smart = cov[(cov["model"] == "pythia-160m") & (cov["search"] == "smart")].iloc[0]
    assert (smart["status"], smart["not_run"]) == ("measured, search unfinished", 1)
    rows = ResultStore(runs / "h100x1" / "results.jsonl").rows()
    assert best_row(rows, "pythia-160m", "h100-80gb", 1)["config"]["methods"]["sharding"] == "none"


def test_a_sweep_measures_a_set_aside_configuration_again(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    old = row("naive+zero1+offload", 1.0, engine=None, tiny=True)
    # An earlier real failure of the same configuration must not stand in for its latest, set-aside row.
    store.append(row("naive+zero1+offload", 1.0, engine=None, tiny=True, outcome="timeout"))
    store.append(old)
    assert ResultStore(store.path).done_ids() == set()
    config = Config.from_dict(old["config"])
    summary = run_sweep([config], store.path, "h100x1", search="smart", device="cpu", progress=False, timeout_s=120)
    assert (summary.resumed, summary.ran) == (0, 1)
    latest = store.rows()[-1]
    assert latest["config_id"] == config.id and latest["engine"] == ENGINE_REVISION
    assert ResultStore(store.path).done_ids() == {config.id}


def test_a_method_class_that_missed_its_validation_gives_no_result_until_validated_again(tmp_path):
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    store.append(row("free-lunch", 2.0, engine=ENGINE_REVISION))
    store.append(row("free-lunch+zero3+offload", 1.0, engine=ENGINE_REVISION))
    store.append(_validation("free-lunch", ENGINE_REVISION, 0.01, "2026-01-01T00:00:00+00:00", "v-free"))
    miss = row("free-lunch+zero3+offload", 1.0, engine=ENGINE_REVISION, mode="validate",
               validate={"steps": 3, "sustained_step_s": 1.2, "predicted_step_s": 1.0, "rel_error": -1 / 6})
    store.append({**miss, "config_id": "zero3-validation", "started_at": "2026-01-01T00:00:00+00:00"})
    df = analysis.runs_frame(tmp_path)
    assert analysis.missed_validation(df) == {("h100x1", "ZeRO-3 + offload", ENGINE_REVISION)}
    assert analysis.best_per_setting(df)["methods_label"].tolist() == ["free-lunch"]
    net = analysis.validation_net(df).set_index("validation_class")
    assert net.loc["ZeRO-3 + offload", "within"] == False and net.loc["ZeRO-3 + offload", "measured"] == 1  # noqa: E712
    fixed = {**miss, "config_id": "zero3-validation-2", "started_at": "2026-02-01T00:00:00+00:00",
             "validate": {"steps": 3, "sustained_step_s": 1.01, "predicted_step_s": 1.0, "rel_error": -0.01}}
    store.append(fixed)
    df = analysis.runs_frame(tmp_path)
    assert analysis.missed_validation(df) == set()
    assert analysis.best_per_setting(df)["methods_label"].tolist() == ["free-lunch + ZeRO-3 + offload"]


def test_a_result_counts_only_where_the_revision_that_made_it_validated_its_class(tmp_path):
    """A validation by another engine revision does not speak for a measurement: each revision times the phases
    its own way."""
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    store.append({**row("free-lunch", 2.0, engine=1), "config_id": "old-free"})
    store.append(row("free-lunch", 3.0, engine=6))
    store.append(_validation("free-lunch", 1, 0.01, "2026-01-01T00:00:00+00:00", "val-1"))
    df = analysis.runs_frame(tmp_path)
    assert analysis.results(df)["engine"].tolist() == [1], "revision 6's row has no validation of its own"
    assert set(analysis.uncounted(df)["engine"]) == {6}
    assert "not validated" in analysis.uncounted(df)["why"].iloc[0]


def test_a_later_set_aside_validation_does_not_hide_a_missed_one(tmp_path):
    """ZeRO-3 + offload missed its validation at revision 4, then the same configuration's revision-5 validation
    was set aside: the miss stays in the validation table, and revision 4's measurements are no result."""
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    store.append(row("free-lunch+zero3+offload", 1.0, engine=4))
    store.append(_validation("free-lunch+zero3+offload", 4, -0.0348, "2026-01-01T00:00:00+00:00", "z3"))
    store.append(_validation("free-lunch+zero3+offload", 5, -0.07, "2026-01-02T00:00:00+00:00", "z3"))
    df = analysis.runs_frame(tmp_path)
    assert analysis.missed_validation(df) == {("h100x1", "ZeRO-3 + offload", 4)}
    assert analysis.results(df).empty
    pairs = analysis.validation_pairs(df)
    assert pairs[["engine", "within"]].values.tolist() == [[4, False]]
    assert pairs["sustained_s"].iloc[0] == pytest.approx(3.0)



def test_a_validation_a_budget_never_started_is_replaced_by_its_later_run():
    """A validation a notebook's budget never started validated nothing: once the same configuration is validated,
    readers see that run alone, not a 'not run' row of an earlier revision beside it."""
    from academic_bench.results import NOT_RUN_PREFIX, rows_to_read

    never = {**_validation("naive", 1, 0.0, "2026-01-01T00:00:00+00:00", "v"), "outcome": "timeout",
             "reason": NOT_RUN_PREFIX + " the notebook's time budget was spent", "validate": None}
    del never["engine"]  # as a budget's placeholder row carries no revision
    ran = _validation("naive", 6, -0.004, "2026-01-02T00:00:00+00:00", "v")
    assert rows_to_read([never, ran]) == [ran]
    missed = _validation("naive", 4, -0.05, "2026-01-01T12:00:00+00:00", "v")
    assert rows_to_read([never, missed, ran]) == [ran, missed], "a missed validation still stays a miss"


def test_a_set_aside_row_supersedes_an_earlier_valid_one_so_that_the_configuration_is_measured_again():
    """Revision 5 re-measured validated configurations and its offloading rows are void: the configuration has no
    valid measurement by a current engine, so the book says 'not validated' and a resumed sweep measures it."""
    from academic_bench.results import latest_rows

    valid = row("free-lunch+zero2+offload", 2.0, engine=3)
    void = row("free-lunch+zero2+offload", 3.0, engine=5)
    assert latest_rows([valid, void]) == [void]
    newer = row("free-lunch+zero2+offload", 2.5, engine=6)
    assert latest_rows([valid, void, newer]) == [newer]


def test_rows_no_validation_speaks_for_are_selected_to_be_measured_again(tmp_path, capsys):
    """A row of an older engine revision whose class that revision never validated counts for no reader, and no
    validation can come for it any more: ``remeasure --retry unvalidated`` selects it. A validated row is left,
    and so is an unvalidated row of the current revision, which its validation net still covers."""
    import json

    from academic_bench import cli

    out = tmp_path / "h100x1" / "results.jsonl"
    store = ResultStore(out)
    store.append({**row("free-lunch", 2.0, engine=1), "config_id": "old-free"})
    store.append({**row("free-lunch+ckpt", 3.0, engine=1), "config_id": "old-ckpt"})
    store.append({**row("free-lunch+ckpt", 3.0, engine=ENGINE_REVISION), "config_id": "new-ckpt"})
    store.append(_validation("free-lunch", 1, 0.01, "2026-01-01T00:00:00+00:00", "val-1"))
    assert analysis.unvalidated_rows(analysis.runs_frame(tmp_path))["config_id"].tolist() == ["old-ckpt"]
    assert cli.main(["remeasure", "--out", str(out), "--retry", "unvalidated", "--list", "--json"]) == 0
    assert [r["config_id"] for r in json.loads(capsys.readouterr().out)] == ["old-ckpt"]
    store.append(_validation("free-lunch+ckpt", 1, 0.01, "2026-01-02T00:00:00+00:00", "val-ckpt-1"))
    assert analysis.unvalidated_rows(analysis.runs_frame(tmp_path)).empty, "validated by its own revision"
