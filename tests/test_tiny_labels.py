"""A tiny (workshop) run is named where it ran in every output that shows it, as ``bench`` prints it: "tiny MODEL on
the CPU (a workshop run, not a GPU result)", never under the name of the GPU its configuration names, and without
training days (the tiny recipe's days and an MFU rated at a GPU it did not use would read as that GPU's result).

The rows here ran "on the CPU of an H100 machine": their environment reports an H100, the worst case for a label."""
from __future__ import annotations

import json

import pytest
import yaml

from academic_bench import analysis, cli
from academic_bench.answer.export import best_row, export_best
from academic_bench.book import runs_readme, runs_report
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import ResultStore, make_row, run_label

from echo_worker import ECHO_ENV, MODULE as ECHO_WORKER
from measured import measured_fields

H100 = "NVIDIA H100 80GB HBM3"
LABEL = "tiny pythia-160m on the CPU (a workshop run, not a GPU result)"


def _tiny_row(timing: str = "synced", outcome: str = "ok", methods: str = "naive") -> dict:
    c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(methods), tiny=True)
    fields = measured_fields(c, 4, step=0.05, timing=timing) if outcome == "ok" else {"reason": "boom"}
    row = make_row(c, setup="h100x1-tiny", outcome=outcome, timing=timing, search="naive", **fields)
    row["env"] = {**row["env"], "gpu_name": H100, "device": "cpu"}
    return row


@pytest.fixture
def tiny_run(tmp_path):
    """A setup folder of tiny rows: a synced and an unsynced timing of one configuration, and a failure."""
    store = ResultStore(tmp_path / "h100x1-tiny" / "results.jsonl")
    for row in (_tiny_row(), _tiny_row("unsynced"), _tiny_row(outcome="error", methods="free-lunch")):
        store.append(row)
    return store.path


def test_the_launcher_records_the_device_a_run_ran_on(tmp_path, monkeypatch):
    from academic_bench.launch import run_config

    monkeypatch.setenv(ECHO_ENV, str(tmp_path / "echo.json"))  # a worker that only says how it started
    c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("naive"), micro_batch=2, tiny=True)
    row = run_config(c, setup="cpu-test", device="cpu", timeout_s=60, worker=ECHO_WORKER)
    assert row["env"]["device"] == "cpu"
    assert run_label(row) == LABEL
    # Where no device was recorded (older rows), the label says nothing of a place rather than guess one.
    assert run_label({**row, "env": {}}) == "tiny pythia-160m (a workshop run, not a GPU result)"


def test_export_names_a_tiny_run_where_it_ran_and_writes_no_days(tiny_run, tmp_path, capsys):
    written = export_best(tiny_run, "pythia-160m", "h100-80gb", 1, tmp_path / "out", tiny=True)
    recipe = json.loads(written["recipe.json"].read_text())
    assert recipe["run"] == recipe["measured"]["run"] == LABEL
    assert recipe["gpu"] is None and recipe["tiny"] is True
    assert "days" not in recipe["measured"] and "mfu" not in recipe["measured"]
    assert yaml.safe_load(written["accelerate.yaml"].read_text())["use_cpu"] is True  # it trains where it ran
    assert cli.main(["export", "--results", str(tiny_run), "--model", "pythia-160m", "--gpu", "h100-80gb",
                     "--gpus", "1", "--tiny", "--out", str(tmp_path / "cli")]) == 0
    assert f"the settings of {LABEL}" in capsys.readouterr().out
    # Asked for a full-size result, the refusal names the tiny one as the workshop run it is.
    with pytest.raises(ValueError) as exc:
        best_row(ResultStore(tiny_run).rows(), "pythia-160m", "h100-80gb", 1)
    assert "tiny pythia-160m (a workshop run, not a GPU result) (--tiny --gpu h100-80gb --gpus 1)" in str(exc.value)
    assert "on 1 x h100-80gb (tiny)" not in str(exc.value)


def test_the_run_pages_tables_name_tiny_runs_and_show_no_days(tiny_run):
    summary = runs_report.summary_table(tiny_run)
    assert set(summary["model"]) == {LABEL}
    assert summary["days"].isna().all() and summary["MFU"].isna().all()
    assert summary["step s"].notna().any()  # the step is shown, as bench shows it
    failures = runs_report.failures_table(tiny_run)
    assert set(failures["model"]) == {LABEL}


def test_the_runs_readme_names_a_tiny_setup_by_its_device(tiny_run):
    text = runs_readme.runs_readme(tiny_run.parent.parent)
    machine = next(line for line in text.splitlines() if line.startswith("- **Machine:**"))
    assert "tiny models on the CPU (a workshop run, not a GPU result)" in machine and H100 not in machine
    assert f"| {LABEL} |" in text


def test_the_books_loaders_never_show_a_tiny_run_under_a_gpus_name(tiny_run):
    runs = analysis.runs_frame(tiny_run.parent.parent)
    assert runs["tiny"].all() and len(runs) == 3
    assert analysis.sync_pairs(runs).empty  # a CPU's synced and unsynced timings say nothing of a GPU's clock
    setups = analysis.setups(runs)
    assert setups["gpu_name"].tolist() == ["tiny models on the CPU (a workshop run, not a GPU result)"]
    assert setups["models"].tolist() == ["tiny pythia-160m"]
