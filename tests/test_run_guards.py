"""What a new user meets on a machine without a GPU, with a bad output path, or with ``--json``: the run stops
before any work (exit 2, the way forward named), a run that measured nothing says so (exit 1), Ctrl-C ends in one
line, a measured row is never lost (not to an output error, not to a worker killed after its timing), and a
tiny CPU run is never shown with a GPU's name. Everything here runs on the CPU; "no GPU" is made so on a machine
that has one too."""
from __future__ import annotations

import json

import pytest
import torch
from faulty_worker import FAULTS_ENV, MODULE as FAULTY_WORKER

from academic_bench.cli import bench as bench_cli
from academic_bench import cli
from academic_bench.search import notebook as nb, papermill_runner, sweep
from academic_bench.search import params as params_mod
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import ResultStore, make_row

# The README's examples, as a new user copies them.
README_BENCH = ["bench", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "free-lunch"]
README_SWEEP = ["sweep", "--model", "pythia-160m,pythia-1b", "--gpu", "h100-80gb", "--gpus", "4", "--preset", "smart"]
README_PROFILE = ["profile", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "best"]
README_NOTEBOOK = ["notebook", "--setup", "a100x4", "--gpu", "a100-80gb", "--gpus", "4", "--preset", "naive", "smart",
                   "-p", "time_budget_s", "28800"]
TINY_BENCH = ["bench", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "naive", "--tiny",
              "--device", "cpu", "--micro-batch", "8"]


def tiny(methods: str = "naive") -> Config:
    return Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(methods), micro_batch=8, tiny=True)


@pytest.fixture
def no_gpu(monkeypatch):
    """This machine has no GPU, as far as torch can tell (also where one is installed)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def no_launch(monkeypatch):
    """Any launch fails the test: the command had to stop before it."""
    def launched(*args, **kwargs):
        raise AssertionError("a configuration was launched")
    monkeypatch.setattr(bench_cli, "run", launched)
    monkeypatch.setattr(sweep, "run", launched)
    monkeypatch.setattr(papermill_runner, "run_notebook", launched)


def _launches_give(monkeypatch, **fields) -> None:
    """Each launch returns a row of these fields for its configuration (the launcher's own tests launch for real)."""
    def run(config, **kwargs):
        return make_row(config, setup=kwargs["setup"], **fields)
    monkeypatch.setattr(bench_cli, "run", run)
    monkeypatch.setattr(sweep, "run", run)


# --- no GPU, no GPU work ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, out", [(README_BENCH, "results.jsonl"), (README_SWEEP, "results.jsonl"),
                                       (README_PROFILE, "profiles.jsonl"), (README_NOTEBOOK, None)])
def test_without_a_gpu_the_readme_examples_stop_before_any_work_naming_the_workshop_path(
        tmp_path, capsys, no_gpu, no_launch, argv, out):
    target = ["--out", str(tmp_path / "mine" / out)] if out else ["--output-root", str(tmp_path / "runs")]
    assert cli.main(argv + target) == 2
    err = capsys.readouterr().err
    assert "no GPU here" in err and "--tiny --device cpu" in err
    assert not any(tmp_path.rglob("*.jsonl")) and not any(tmp_path.rglob("*.log"))


def test_asking_for_the_cpu_by_name_runs_on_a_machine_without_a_gpu(tmp_path, capsys, no_gpu, monkeypatch):
    _launches_give(monkeypatch, outcome="ok", micro_batch=8, gas=1, step_time_s=0.2, days=0.0291)
    assert cli.main(TINY_BENCH + ["--out", str(tmp_path / "results.jsonl")]) == 0
    assert len(ResultStore(tmp_path / "results.jsonl").rows()) == 1


def test_the_notebook_stops_after_the_first_configuration_that_shows_no_gpu_can_run(tmp_path, monkeypatch):
    """Run without the command's check (papermill from Jupyter, say): the first configuration's workers find no
    GPU; its row is kept, and no other configuration starts (each would fail the same way)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the workers see no GPU, on any machine
    params = params_mod.resolve_parameters("h100x1-tiny", {"models": ["pythia-160m", "pythia-410m"], "gpu": "h100-80gb",
                                                      "preset": ["naive", "smart"], "tiny": True, "device": "cuda"})
    with pytest.raises(ValueError, match="cannot run any configuration") as exc:
        nb.run_benchmark(**{**params, "output_dir": str(tmp_path), "timeout_s": 300})
    (row,) = ResultStore(tmp_path / params_mod.RESULTS_FILE).rows()
    assert row["outcome"] == "error" and row["config_id"] in str(exc.value)
    assert "configuration(s) left were not started" in str(exc.value) and "--tiny --device cpu" in str(exc.value)


@pytest.mark.parametrize("outcome", ["error", "timeout", "oom"])
def test_a_bench_that_measured_nothing_exits_1(tmp_path, capsys, monkeypatch, outcome):
    _launches_give(monkeypatch, outcome=outcome, reason="synthetic")
    assert cli.main(TINY_BENCH + ["--out", str(tmp_path / "results.jsonl")]) == 1
    assert ResultStore(tmp_path / "results.jsonl").rows()[0]["outcome"] == outcome


def test_a_sweep_where_every_configuration_failed_exits_1(tmp_path, capsys, monkeypatch):
    _launches_give(monkeypatch, outcome="error", reason="synthetic")
    out = tmp_path / "results.jsonl"
    argv = ["sweep", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--preset", "free-lunch",
            "--tiny", "--device", "cpu", "--no-progress", "--out", str(out)]
    assert cli.main(argv) == 1
    assert "no configuration was measured" in capsys.readouterr().out


def test_ctrl_c_in_the_notebook_ends_in_one_line_and_keeps_the_rows(tmp_path, capsys, monkeypatch):
    def interrupted(setup, overrides, output_root, **kwargs):
        ResultStore(tmp_path / setup / params_mod.RESULTS_FILE).append(
            make_row(tiny(), setup=setup, outcome="ok", micro_batch=8, gas=1, step_time_s=0.2))
        raise KeyboardInterrupt
    monkeypatch.setattr(papermill_runner, "run_notebook", interrupted)
    try:
        rc = cli.main(["notebook", "--setup", "cpu-tiny", "--models", "pythia-160m", "--gpu", "h100-80gb",
                       "--preset", "naive", "--tiny", "--device", "cpu", "--output-root", str(tmp_path)])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C ended the notebook command in a traceback")
    err = capsys.readouterr().err.strip()
    assert rc == 130 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(tmp_path / "cpu-tiny" / params_mod.RESULTS_FILE) in err
    assert len(ResultStore(tmp_path / "cpu-tiny" / params_mod.RESULTS_FILE).rows()) == 1


# --- outputs checked before work ---------------------------------------------------------------------------

def _out_cases(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("my notes\n")
    (tmp_path / "notes.jsonl").write_text("my notes\n")
    return {"a folder": (tmp_path / "folder", "is a folder"),
            "a text file": (tmp_path / "notes.txt", "not a JSON-lines file"),
            "not JSON lines": (tmp_path / "notes.jsonl", "not a JSON-lines file"),
            "under a file": (tmp_path / "notes.txt" / "results.jsonl", "which is a file")}


@pytest.mark.parametrize("case", ["a folder", "a text file", "not JSON lines", "under a file"])
@pytest.mark.parametrize("command", ["bench", "sweep", "profile"])
def test_an_out_that_cannot_take_rows_stops_before_any_work(tmp_path, capsys, no_launch, command, case):
    out, says = _out_cases(tmp_path)[case]
    argv = {"bench": TINY_BENCH,
            "sweep": ["sweep", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--preset", "naive",
                      "--tiny", "--device", "cpu"],
            "profile": ["profile", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--tiny",
                        "--device", "cpu", "--methods", "naive", "--micro-batch", "2"]}[command]
    before = (tmp_path / "notes.txt").read_text()
    assert cli.main(argv + ["--out", str(out)]) == 2
    assert f"--out: {out}" in (err := capsys.readouterr().err) and says in err
    assert (tmp_path / "notes.txt").read_text() == before


@pytest.mark.parametrize("out, says", [("notes.txt", "is a file"), ("notes.txt/configs", "which is a file")])
def test_export_refuses_an_out_folder_that_is_a_file_or_under_one(tmp_path, capsys, out, says):
    (tmp_path / "notes.txt").write_text("my notes\n")
    results = tmp_path / "results.jsonl"
    ResultStore(results).append(make_row(tiny(), setup="t", outcome="ok", micro_batch=8, gas=1, step_time_s=0.2))
    argv = ["export", "--results", str(results), "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1",
            "--tiny", "--out", str(tmp_path / out)]
    assert cli.main(argv) == 2
    assert says in capsys.readouterr().err and (tmp_path / "notes.txt").read_text() == "my notes\n"


def test_a_measured_row_is_never_lost_to_an_output_error(tmp_path, capsys, monkeypatch):
    """The results file became unwritable during the measurement (here: a folder made in its place): the row is
    written beside it, and the output says where."""
    out = tmp_path / "results.jsonl"
    row = make_row(tiny(), setup="t", outcome="ok", micro_batch=8, gas=1, step_time_s=0.2)

    def measured(*args, **kwargs):
        out.mkdir()
        return row
    monkeypatch.setattr(bench_cli, "run", measured)
    assert cli.main(TINY_BENCH + ["--out", str(out), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    kept = ResultStore(said["results"]).rows()
    assert said["results"] != str(out) and said["not_appended_because"]
    assert [r["config_id"] for r in kept] == [row["config_id"]]


# --- --json everywhere, errors included ----------------------------------------------------------------------

def _commands() -> list[str]:
    parser = cli.build_parser()
    return list(next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices)


@pytest.mark.parametrize("command", _commands())
def test_every_command_takes_json_and_answers_a_bad_argument_as_json(capsys, command):
    sub = next(a for a in cli.build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert any("--json" in a.option_strings for a in sub.choices[command]._actions), f"{command} takes no --json"
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--json", "--no-such-option"])
    assert exc.value.code == 2
    said = json.loads(capsys.readouterr().out)
    assert said["error"] and isinstance(said["choices"], list)


@pytest.mark.parametrize("argv, choice", [
    (TINY_BENCH[:2] + ["gpt-5"] + TINY_BENCH[3:] + ["--out", "x.jsonl"], "pythia-160m"),
    (["estimate", "--model", "pythia-1b", "--gpu", "h100", "--gpus", "1"], "h100-80gb"),
    (["notebook", "--setup", "x", "--models", "nope", "--device", "cpu"], "pythia-160m"),
    (["runs-readme", "--root", "/no/such/folder"], None),
])
def test_a_refusal_under_json_is_json_naming_the_choices(tmp_path, monkeypatch, capsys, argv, choice):
    monkeypatch.chdir(tmp_path)
    try:
        rc = cli.main(argv + ["--json"])
    except SystemExit as exc:  # argparse's own refusals
        rc = exc.code
    said = json.loads(capsys.readouterr().out)
    assert rc == 2 and said["error"]
    assert choice is None or choice in said["choices"]


# --- a tiny CPU run is labelled as one --------------------------------------------------------------------------

def test_a_tiny_cpu_run_is_never_shown_with_a_gpus_name(tmp_path, capsys, monkeypatch):
    _launches_give(monkeypatch, outcome="ok", micro_batch=8, gas=1, step_time_s=0.2, days=0.0291)
    assert cli.main(TINY_BENCH + ["--out", str(tmp_path / "a.jsonl")]) == 0
    text = capsys.readouterr().out
    assert "tiny pythia-160m on the CPU" in text and "h100" not in text and "days" not in text
    assert cli.main(TINY_BENCH + ["--out", str(tmp_path / "b.jsonl"), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert (said["tiny"], said["device"]) == (True, "cpu") and "h100" not in said["name"]
    argv = ["sweep", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--preset", "naive", "--tiny",
            "--device", "cpu", "--no-progress", "--out", str(tmp_path / "c.jsonl")]
    assert cli.main(argv) == 0
    best = [line for line in capsys.readouterr().out.splitlines() if line.startswith("best for")]
    assert best and all("tiny pythia-160m on the CPU" in line and "days" not in line for line in best)


# --- a worker killed after its timing ---------------------------------------------------------------------------

def test_a_worker_killed_after_its_timing_leaves_its_row_recovered_not_lost(tmp_path, monkeypatch):
    """SIGKILL to rank 0 once its phases are timed and before it writes its result (as the host's memory killer
    or a hung teardown would): the sweep's row is the recovered timing, saying so, never an error that hides it."""
    monkeypatch.setenv(FAULTS_ENV, json.dumps({"*": {"sigkill_after_timing": True}}))
    out = tmp_path / "results.jsonl"
    s = sweep.run_sweep([tiny()], out, "cpu-test", search="naive", device="cpu", progress=False, timeout_s=300,
                        warmup=2, reps=5, worker=FAULTY_WORKER)
    (row,) = ResultStore(out).rows()
    assert s.outcomes == {"ok": 1} and row["outcome"] == "ok", row["reason"]
    assert row["step_time_s"] > 0 and row["days"] > 0 and row["ran"]["recovered"]
    assert "killed by signal 9" in row["ran"]["notes"][0]

