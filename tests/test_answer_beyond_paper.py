"""Beside the study's answer, flagged, what the switches beyond the paper buy (``answer.BeyondPaper``,
``analysis.beyond``): the replication's answer stays the paper's methods' even where a switch beyond the paper
runs faster, and a number beyond the paper is offered only when validated and its loss parity passed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from academic_bench import cli
from academic_bench.analysis import results, runs_frame
from academic_bench.analysis.beyond import gains, parity_frame, parity_verdict, same_machine_gains
from academic_bench.answer import answer, answers_frame
from academic_bench.answer.types import Answer
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import ResultStore, make_row
from measured import typed_figures  # noqa: F401  (a fixture)
from test_cost import write_synthetic_runs

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("typed_figures")  # synthetic rows with typed-in figures


def add_row(root, methods: str, days: float, mfu: float, *, validated: bool = True, setup: str = "synthetic",
            model: str = "pythia-1b", peak_gb: float | None = None) -> str:
    """A measured row of ``methods`` (as ``bench`` writes it), and its class validated within 3% when asked."""
    cfg = Config(model, "h100-80gb", 1, methods=parse_methods(methods))
    step = days * 86_400 / 143_000
    row = make_row(cfg, setup=setup, outcome="ok", search="single", step_time_s=step, micro_batch=16, gas=64,
                   days=days, gpu_days=days, mfu=mfu, peak_memory_gb=[peak_gb] if peak_gb else None)
    store = ResultStore(root / setup / "results.jsonl")
    store.append(row)
    if validated:
        store.append({**row, "mode": "validate", "validate": {"steps": 3, "sustained_step_s": step,
                                                              "predicted_step_s": step, "rel_error": 0.01}})
    return cfg.id


def add_parity(root, switch: str, passed: bool, setup: str = "synthetic", dry_run: bool = False) -> None:
    folder = root / setup / "evidence" / "parity"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{switch}.json").write_text(json.dumps({
        "switch": switch, "passed": passed, "dry_run": dry_run, "steps": 300, "device": "NVIDIA H100 80GB HBM3",
        "tolerance": {"relative": 0.02, "window_steps": 10, "rule": "..."},
        "largest_window_difference": 0.01 if passed else 0.05, "largest_noise_difference": 0.001}))


@pytest.fixture
def runs(tmp_path):
    """Pythia-1B on one H100: the replication's complete search (free-lunch, 50 days), and free-lunch with the fused
    cross-entropy measured beside it, faster, its class validated."""
    write_synthetic_runs(tmp_path, [("pythia-1b", "h100-80gb", 1, 50.0, 0.4)])
    add_row(tmp_path, "free-lunch+fused-ce", 45.0, 0.44)
    return tmp_path


def test_the_replication_answer_stays_the_papers_and_the_switch_is_offered_beside_it(runs):
    add_parity(runs, "fused-ce", passed=True)
    a = answer("pythia-1b", "h100-80gb", 1, str(runs))
    assert (a.kind, a.days, a.settings.methods) == ("measured", 50.0, "free-lunch"), "a faster switch is no answer"
    b = a.beyond_paper
    assert (b.status, b.days, b.label) == ("measured", 45.0, "beyond the paper")
    assert b.settings.methods == "free-lunch+fused-ce" and b.settings.methods_label.endswith("[beyond the paper]")
    assert b.settings.export_command == "", "export --best writes the replication's settings, not these"
    assert b.saves == pytest.approx(0.1) and "fused-ce: passed" in b.parity
    assert b.words().startswith("beyond the paper: 45.0 days") and "10% fewer days than the answer" in b.words()
    assert Answer.from_dict(json.loads(json.dumps(a.to_dict()))) == a, "kept in answers.json as it is"
    frame = answers_frame([a])
    assert frame.loc[0, "beyond_paper_status"] == "measured" and frame.loc[0, "beyond_paper_days"] == 45.0


@pytest.mark.parametrize("parity, status", [(None, "loss parity not checked yet"), (False, "loss parity failed")])
def test_a_switch_without_a_passed_loss_parity_is_never_recommended(runs, parity, status):
    if parity is not None:
        add_parity(runs, "fused-ce", passed=parity)
    b = answer("pythia-1b", "h100-80gb", 1, str(runs)).beyond_paper
    assert (b.status, b.days, b.settings) == (status, None, None) and "free-lunch + fused CE" in b.rests_on
    assert b.words().startswith(f"beyond the paper: {status}")


def test_a_dry_run_parity_is_no_evidence(runs):
    add_parity(runs, "fused-ce", passed=True, dry_run=True)
    assert parity_frame(runs).empty
    assert answer("pythia-1b", "h100-80gb", 1, str(runs)).beyond_paper.status == "loss parity not checked yet"


def test_an_unvalidated_class_and_an_unmeasured_setting_say_so(tmp_path):
    write_synthetic_runs(tmp_path, [("pythia-1b", "h100-80gb", 1, 50.0, 0.4)])
    add_row(tmp_path, "free-lunch+fp8-rowwise", 52.0, 0.38, validated=False)
    add_parity(tmp_path, "fp8-rowwise", passed=True)
    b = answer("pythia-1b", "h100-80gb", 1, str(tmp_path)).beyond_paper
    assert b.status == "not validated yet" and b.days is None and "not validated on synthetic" in b.rests_on
    assert answer("pythia-1b", "h200", 1, str(tmp_path)).beyond_paper.status == "not measured yet"


def test_the_gains_set_each_row_beside_its_paper_counterpart(runs):
    add_parity(runs, "fused-ce", passed=True)
    df = runs_frame(runs)
    assert not results(df)["beyond_paper"].any(), "the replication's results are the paper's methods'"
    [g] = gains(df, parity_frame(runs)).itertuples()
    assert (g.switches, g.validation, g.paper_methods_label, g.parity) == ("fused-ce", "validated", "free-lunch",
                                                                           "passed")
    assert g.speedup == pytest.approx(50 / 45) and g.methods == "free-lunch+fused-ce"


def test_a_switch_timed_beside_its_counterpart_on_one_machine_is_read_per_pair(tmp_path):
    """``<setup>/evidence/*-ab/<pair>/``: each pair's speed-up from its own two rows at the same micro-batch, free of
    any machine-to-machine difference; a pair without its counterpart, or at another micro-batch, gives none."""
    def bench(pair: str, methods: str, step: float, micro_batch: int = 32, **row) -> None:
        cfg = Config("pythia-1b", "h200", 1, methods=parse_methods(methods), micro_batch=micro_batch)
        ResultStore(tmp_path / "h200x1" / "evidence" / "fp8-ab" / pair / "results.jsonl").append(make_row(
            cfg, setup="h200x1", search="single", step_time_s=step, micro_batch=micro_batch, gas=32,
            **{"outcome": "ok", **row}))

    bench("1", "free-lunch", 24.5)
    bench("1", "free-lunch+fp8-rowwise", 24.0)
    bench("1", "free-lunch", 30.0, mode="validate")  # a sustained check, not a timed step: no counterpart
    bench("2", "free-lunch", 25.0)
    bench("2", "free-lunch+fp8-rowwise", 24.5)
    bench("2", "free-lunch+bf16w+fp8-rowwise", 23.0)
    bench("3", "free-lunch+fp8-rowwise", 20.0)  # no counterpart in its pair
    bench("3", "free-lunch", None, outcome="oom", reason="out of memory")  # a failure is none either
    bench("4", "free-lunch", 25.0, micro_batch=16)
    bench("4", "free-lunch+fp8-rowwise", 20.0)  # its counterpart ran another micro-batch
    g = same_machine_gains(tmp_path)
    assert list(g["pair"]) == ["1", "2", "2"] and set(g["folder"]) == {"fp8-ab"}
    assert list(g["switches"]) == ["fp8-rowwise", "fp8-rowwise", "bf16w+fp8-rowwise"]
    assert list(g["speedup"]) == pytest.approx([24.5 / 24.0, 25.0 / 24.5, 25.0 / 23.0])
    assert g["file"].iloc[0] == "h200x1/evidence/fp8-ab/1/results.jsonl"
    assert same_machine_gains(tmp_path / "none").empty


def test_the_parity_of_a_set_is_its_weakest_switch(runs):
    add_parity(runs, "bf16w", passed=True)
    add_parity(runs, "fp8-rowwise", passed=False, setup="other")
    p = parity_frame(runs)
    assert parity_verdict(p, ["bf16w"], "synthetic")[0] == "passed"
    state, words = parity_verdict(p, ["bf16w", "fp8-rowwise"], "synthetic")
    assert state == "failed" and "fp8-rowwise: FAILED" in words and "(checked on other)" in words
    assert parity_verdict(p, ["bf16w", "fused-ce"], "synthetic")[0] == "not checked yet"


def test_estimate_and_cost_print_it_beside_the_answer(runs, capsys, monkeypatch):
    add_parity(runs, "fused-ce", passed=True)
    monkeypatch.setenv("ACADEMIC_BENCH_RUNS", str(runs))
    assert cli.main(["estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1"]) == 0
    out = capsys.readouterr().out
    # estimate prints the answer as cost and plan do (cli.args.answer_lines), the switches beside it
    assert "the study's answer: 50.0 days (measured" in out and "beside it     beyond the paper: 45.0 days" in out
    assert "--methods free-lunch+fused-ce" in out
    assert cli.main(["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1"]) == 0
    assert "beside it     beyond the paper: 45.0 days" in capsys.readouterr().out


def test_a_config_decoders_rows_join_when_one_is_beyond_the_paper(tmp_path):
    """The decoders' rows stay out of the setups' results; those of a decoder measured with a switch beyond the
    paper are read here with its free-lunch row, registered from the config and settings kept beside them."""
    import shutil

    from academic_bench.analysis.beyond import decoder_rows
    from academic_bench.catalog.models.from_config import decoder_spec

    shipped = ROOT / "notebooks/runs/h100x1/evidence/decoders"
    folder = tmp_path / "h100x1" / "evidence" / "decoders"
    shutil.copytree(shipped / "llama-3.2-1b", folder / "llama-3.2-1b")
    key = decoder_spec(folder / "llama-3.2-1b" / "config.json", seq_len=2048, tokens=3e11).spec.key
    plain = [r for r in ResultStore(shipped / "results.jsonl").rows() if r["config"]["model"] == key
             and r["config"]["methods"] == parse_methods("free-lunch").to_dict()]
    assert plain, "the shipped free-lunch row of the decoder"
    store = ResultStore(folder / "results.jsonl")
    store.append(plain[-1])
    assert decoder_rows(tmp_path) == [], "no decoder beyond the paper: nothing to read (and nothing built)"
    beyond = make_row(Config(key, "h100-80gb", 1, methods=parse_methods("free-lunch+fused-ce")), setup="h100x1",
                      outcome="oom", search="single")  # what it measured does not matter here
    store.append(beyond)
    assert [r["config_id"] for r in decoder_rows(tmp_path)] == [plain[-1]["config_id"], beyond["config_id"]]


def test_export_writes_the_replications_best_not_a_faster_switch_beyond_it(runs):
    from academic_bench.answer.export import best_row, load_rows

    row = best_row(load_rows(runs / "synthetic" / "results.jsonl"), "pythia-1b", "h100-80gb", 1)
    assert row["config"]["methods"] == parse_methods("free-lunch").to_dict()


def test_the_study_grid_is_each_switch_that_applies_and_a_validated_row_takes_its_cell_off_the_list(runs):
    from academic_bench.analysis.beyond import not_measured, study_grid

    cells, excluded = study_grid()
    assert ("pythia-1b", "h100-80gb", "bf16w") in cells and ("pythia-6.9b", "h200", "fp8-rowwise") in cells
    assert {(m, s) for m, _, s, _ in excluded} == {(m, "bf16w") for m in ("pythia-160m", "pythia-2.8b", "pythia-6.9b")}
    g = gains(runs_frame(runs), parity_frame(runs))
    left = not_measured(g, cells)
    assert ("pythia-1b", "h100-80gb", "fused-ce") not in left and ("pythia-1b", "h200", "fused-ce") in left
    assert len(left) == len(cells) - 1


def test_a_switch_measured_out_of_memory_is_a_measured_outcome_not_a_cell_still_to_measure(runs):
    """FP8's smallest micro-batch may not fit where the free lunch does: the row says so, and the study grid
    reads it as 'does not fit' with the search's reason, not as 'not measured yet'."""
    from academic_bench.analysis.beyond import not_measured, out_of_memory, study_grid

    cfg = Config("pythia-2.8b", "h100-80gb", 1, methods=parse_methods("free-lunch+fp8-tensorwise"))
    why = "even micro-batch 16 does not fit (FP8 training's smallest for this sequence length)"
    ResultStore(runs / "synthetic" / "results.jsonl").append(make_row(cfg, setup="synthetic", outcome="oom",
                                                                       search="single", reason=why))
    cells, _ = study_grid()
    df = runs_frame(runs)
    left = not_measured(gains(df, parity_frame(runs)), cells)
    assert out_of_memory(df, left) == {("pythia-2.8b", "h100-80gb", "fp8-tensorwise"): why}
