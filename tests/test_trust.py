"""Rows re-derived, not trusted: the book's loader sets aside a measured row whose stored figures its phases and
recipe do not give, whose synchronized MFU is implausible, or that ran on another GPU than its setup's; every
shipped row re-derives exactly."""
from __future__ import annotations

import pytest

from academic_bench import analysis
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import ResultStore, load_runs, make_row, row_faults

from measured import measured_fields

ENV = {"gpu_name": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "git_commit": "0123456789abcdef"}


def _row(methods: str, mfu: float, **kw) -> dict:
    c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(methods))
    return make_row(c, setup="h100x1", outcome="ok", search="exhaustive", env=dict(ENV),
                    **measured_fields(c, 8, mfu=mfu), **kw)


def test_the_loader_sets_a_forged_row_aside_naming_the_field(tmp_path):
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    genuine, forged, fast = _row("free-lunch", 0.4), _row("free-lunch+ckpt", 0.3), _row("naive", 0.9)
    forged["step_time_s"] = forged["step_time_s"] / 50  # its phases still give the measured step
    forged["days"] = forged["days"] / 50
    other_gpu = _row("free-lunch+zero1", 0.35)
    other_gpu["env"] = {**ENV, "gpu_name": "NVIDIA H200"}
    for r in (genuine, forged, fast, other_gpu):
        store.append(r)
    # The genuine row's class validated by its engine revision, so that it counts as a result.
    store.append({**genuine, "mode": "validate", "validate": {
        "steps": 3, "sustained_step_s": genuine["step_time_s"], "predicted_step_s": genuine["step_time_s"],
        "rel_error": 0.0}})
    full = analysis.runs_frame(tmp_path)
    df = full[full["mode"] == "step"].set_index("config_id")
    assert df.loc[genuine["config_id"], "outcome"] == "ok"
    for row, field in ((forged, "step_time_s"), (fast, "mfu"), (other_gpu, "env.gpu_name")):
        assert df.loc[row["config_id"], "outcome"] == "set aside"
        assert f"{field}:" in df.loc[row["config_id"], "reason"]
    assert list(analysis.results(full)["config_id"]) == [genuine["config_id"]]
    best = analysis.best_per_setting(full)
    assert list(best["config_id"]) == [genuine["config_id"]]


def test_the_paper_timing_may_exceed_the_mfu_threshold():
    """The unsynchronized timing under-counts by design (shown beside its twin only): no implausibility."""
    c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch"))
    row = make_row(c, setup="h100x1", outcome="ok", timing="unsynced", env=dict(ENV),
                   **measured_fields(c, 8, mfu=3.0, timing="unsynced"))
    assert row_faults(row) == []


def test_every_shipped_row_re_derives():
    from conftest import skip_or_fail

    if not list(load_runs()):
        skip_or_fail("no shipped runs")
    faults = {(r["setup"], r["config_id"], r["timing"], r["mode"]): [f.line() for f in row_faults(r)]
              for r in load_runs()}
    assert {k: v for k, v in faults.items() if v} == {}


def test_a_measured_row_keeps_its_samples_and_a_summary_they_do_not_give_is_a_fault():
    """The engine stores each phase's repetitions beside their summary (a CPU twin of the GPU measurement, a tiny
    model): the summary is re-derived from them, so a median edited after the measurement is a fault; rows
    written before the samples were kept have nothing to compare."""
    from academic_bench.measure import worker
    from academic_bench.results.trust import sample_faults

    cfg = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("naive"), tiny=True, micro_batch=2)
    row = {**worker.measure({"config": cfg.to_dict(), "timing": "synced", "warmup": 1, "reps": 6}, "cpu", 0),
           "config": cfg.to_dict(), "timing": "synced"}
    assert row["outcome"] == "ok"
    for phase, t in row["times"].items():
        assert len(t["samples"]) == t["n"] == 6 and t["min"] <= t["median"] <= t["max"], phase
    assert sample_faults(row) == []
    edited = {**row, "times": {**row["times"], "boundary": {**row["times"]["boundary"],
                                                            "median": row["times"]["boundary"]["median"] / 2}}}
    assert [f.field for f in sample_faults(edited)] == ["times.boundary"]
    older = {**row, "times": {k: {s: v for s, v in t.items() if s != "samples"} for k, t in row["times"].items()}}
    assert sample_faults(older) == []


def test_how_far_a_step_moves_with_fewer_repetitions_is_read_from_its_first_samples():
    """``fewer_reps`` rebuilds the step from the median of each phase's first samples: a row whose later
    repetitions ran slower moves by exactly what its first ones give; a row timed no more often than asked, a tiny
    run and a row without samples have nothing to say."""
    import statistics

    from academic_bench.analysis.launches import fewer_reps
    from academic_bench.measure.extrapolation import extrapolate, rebuilt_step

    c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch"))
    first, later = [1.0, 1.1, 0.9, 1.0, 1.05], [1.3, 1.4, 1.35]  # seconds a micro-step, before and after
    phases = {name: [v * scale for v in first + later] for name, scale in
              (("accumulate_first", 0.02), ("accumulate", 0.02), ("boundary", 0.025), ("optimizer", 0.1))}
    row = make_row(c, setup="h100x1", outcome="ok", search="exhaustive", env=dict(ENV),
                   **extrapolate(c, 8, phases, "synced"))
    assert row_faults(row) == []
    (check,) = fewer_reps([row], 5).itertuples()
    expected = rebuilt_step({k: statistics.median(v[:5]) for k, v in phases.items()}, row["gas"], "synced")
    assert check.reps == 8 and check.fewer_step_s == pytest.approx(expected) and check.change < 0
    assert check.change == pytest.approx(expected / row["step_time_s"] - 1)
    assert fewer_reps([row], 8).empty
    tiny = {**row, "config": {**row["config"], "tiny": True}}
    older = {**row, "times": {k: {s: v for s, v in t.items() if s != "samples"} for k, t in row["times"].items()}}
    assert fewer_reps([tiny], 5).empty and fewer_reps([older], 5).empty


def test_the_default_repetitions_give_every_shipped_step_that_kept_more_within_one_percent():
    """The engine times ``DEFAULT_REPS`` repetitions of each phase because the shipped rows that kept more moved by
    less than 1% when rebuilt from their first ``DEFAULT_REPS``: a row that moves further fails this until the
    default goes back up (where no row kept more, there is nothing to check)."""
    from academic_bench.analysis.launches import fewer_reps
    from academic_bench.launch import DEFAULT_REPS
    from academic_bench.measure.timing import MIN_REPS
    from academic_bench.results import load_runs

    moved = fewer_reps(load_runs(), DEFAULT_REPS)
    assert DEFAULT_REPS >= MIN_REPS
    assert (moved["change"].abs() < 0.01).all(), moved[moved["change"].abs() >= 0.01]


def test_the_block_repetitions_give_every_step_timed_in_blocks_that_kept_more_within_one_percent():
    """ZeRO-3 with offload times its steady phase as whole blocks (``timing.BLOCK_REPS`` of them, each a whole
    step's run of micro-steps), because every such row that kept more moved by less than 1% when rebuilt from its
    first ``BLOCK_REPS``: the shipped runs and the engine's whole-search checks (``evidence/engine/``) hold it to
    that, and at least one row must check it."""
    from academic_bench.analysis.launches import engine_evidence_rows, fewer_reps
    from academic_bench.measure.timing import BLOCK_REPS
    from academic_bench.results import load_runs

    moved = fewer_reps([*load_runs(), *engine_evidence_rows("results-one-launch*.jsonl")], BLOCK_REPS, blocks=True)
    assert BLOCK_REPS >= 1 and not moved.empty
    assert moved["methods_label"].str.contains("ZeRO-3").all()
    assert (moved["change"].abs() < 0.01).all(), moved[moved["change"].abs() >= 0.01]


def test_the_timing_share_of_a_configuration_is_read_from_what_ran():
    """``timing_share`` divides the seconds a row's timing took by the configuration's wall time, for rows that
    keep their samples; a row without samples says nothing."""
    from academic_bench.analysis.launches import timing_share
    from academic_bench.measure.extrapolation import extrapolate

    c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch"))
    phases = {name: [0.02, 0.021, 0.019, 0.02, 0.02] for name in
              ("accumulate_first", "accumulate", "boundary", "optimizer")}
    row = make_row(c, setup="h100x1", outcome="ok", search="smart", env=dict(ENV), duration_s=12.0,
                   ran={"timing_s": 3.0}, **extrapolate(c, 8, phases, "synced"))
    (share,) = timing_share([row]).itertuples()
    assert (share.reps, share.share) == (5, pytest.approx(0.25))
    older = {**row, "times": {k: {s: v for s, v in t.items() if s != "samples"} for k, t in row["times"].items()}}
    assert timing_share([older]).empty


def _qwen3_4b_row() -> tuple[dict, str]:
    """The shipped measurement of Qwen3-4B (a config.json decoder, ``evidence/decoders``), its spec registered
    with the settings its estimate.json was made with, as the readers of those rows register it."""
    import json
    from pathlib import Path

    from academic_bench.analysis.memory_check import decoder_key

    folder = Path(__file__).resolve().parents[1] / "notebooks/runs/h100x1/evidence/decoders"
    (row,) = [r for r in ResultStore(folder / "results.jsonl").rows() if r["config"]["model"].startswith("qwen3-4b@")]
    estimate = folder / "qwen3-4b" / "estimate.json"
    key = decoder_key(estimate.with_name("config.json"), json.loads(estimate.read_text())["architecture"])
    assert key == row["config"]["model"]
    return row, key


def test_a_row_written_under_an_earlier_flops_count_is_read_with_todays_and_not_rejected():
    """Qwen3-4B's row was written when attention was counted over the hidden size (2,560) instead of heads x head
    size (4,096): its stored MFU agrees with the FLOPs it stored, so it is no fault, and readers take today's
    count and the MFU it gives, with the same step time. An MFU edited after the measurement is still a fault."""
    from academic_bench import estimate as est
    from academic_bench.catalog.models import get_model
    from academic_bench.results import recounted

    row, key = _qwen3_4b_row()
    assert row_faults(row) == []
    today = est.model_flops_per_step(get_model(key))
    again = recounted(row)
    assert again["model_flops_per_step"] == today != row["model_flops_per_step"]
    assert again["mfu"] == pytest.approx(row["mfu"] * today / row["model_flops_per_step"])
    assert again["mfu"] == pytest.approx(today / (row["step_time_s"] * row["peak_flops"]))
    edited = {**row, "mfu": row["mfu"] * today / row["model_flops_per_step"]}  # today's MFU typed in
    assert [f.field for f in row_faults(edited)] == ["mfu"]
    (read,) = analysis.frame_from_rows([row], checked=True).itertuples()
    assert read.status == "measured" and read.mfu == pytest.approx(again["mfu"])
    assert read.model_flops_per_step == today and read.step_time_s == row["step_time_s"]
