"""The benchmark notebook: its parameters, the papermill runner (on the CPU, tiny models), the time budget's
rows and output trimming (the generated runs README: ``test_runs_report``).

Two tests start a Jupyter kernel (one of them also one torchrun launch, ~30-60 s on two cores); the rest
need no subprocess.
"""
from __future__ import annotations

import importlib.util
import json
import math
import shlex

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from academic_bench.search import params as params_mod, notebook as nb, papermill_runner
from academic_bench.book import runs_report as report
from academic_bench.cli import build_parser, main
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import FREE_LUNCH, NAIVE
from academic_bench.results import ResultStore, is_not_run, latest_rows, make_row
from academic_bench.search.sweep import run_sweep
from conftest import skip_or_fail

CPU_FLAGS = ["--models", "pythia-160m", "--gpu", "h100-80gb", "--preset", "naive", "--tiny", "--device", "cpu"]


def _needs_kernel() -> None:
    if importlib.util.find_spec("papermill") is None or importlib.util.find_spec("ipykernel") is None:
        skip_or_fail("papermill and ipykernel are not installed (pip install -e '.[book]')")


def _outputs(path, output_type: str) -> list:
    book = nbformat.read(str(path), as_version=4)
    return [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == output_type]


# --- the template and its parameters -------------------------------------------------------------------------

def test_template_parameters_are_the_documented_ones():
    defaults = params_mod.template_parameters()
    assert tuple(defaults) == params_mod.PARAMETERS
    book = nbformat.read(str(params_mod.TEMPLATE), as_version=4)
    assert book.metadata.kernelspec.name == params_mod.KERNEL
    assert not any(c.get("outputs") for c in book.cells if c.cell_type == "code"), "the template is saved clean"
    params = params_mod.resolve_parameters("h200x2", {"models": ["pythia-1b"]})
    assert params["n_gpus"] == 2 and params["output_dir"] == "."


@pytest.mark.parametrize("argv, expected", [
    (["--setup", "Bad Label"], "lowercase letters"),
    (["--setup", "h200x2", "--gpus", "1"], "names 2 GPU(s) but n_gpus is 1"),
    (["--setup", "h100x1", "--models", "gpt-5"], "choose one of: pythia-160m"),
    (["--setup", "h100x1", "-p", "budget", "10"], "the template's parameters are: models"),
    (["--setup", "h100x1", "-p", "preset", "fast"], "choose from: naive, free-lunch, exhaustive, smart"),
    (["--setup", "h100x1", "--device", "cpu"], "one of: rtx3090"),
    (["--setup", "h100x1", "--gpu", "b200"], "one of: rtx3090"),
    (["--setup", "h100x1", "--models", "pythia-1b", "-p", "validate_models", "[vit-large]"],
     "are not measured by this notebook"),
    (["--setup", "h100x1", "--models", "vit-large", "-p", "models", "[vit-large]"], "given twice"),
])
def test_runner_rejects_bad_input_before_any_work(tmp_path, capsys, argv, expected):
    assert main(["notebook", *argv, "--output-root", str(tmp_path)]) == 2
    assert expected in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_rerun_command_gives_back_the_same_parameters():
    from academic_bench.cli.notebook import overrides_from

    params = params_mod.resolve_parameters("h200x2", {
        "models": ["pythia-1b", "vit-large"], "preset": ["naive", "smart"], "exhaustive_models": ["pythia-1b"],
        "unsynced_models": ["vit-large"], "time_budget_s": None, "tiny": True, "gpu": "h200"})
    argv = shlex.split(params_mod.command_for(params))
    assert argv[:2] == ["academic-bench", "notebook"]
    args = build_parser().parse_args(argv[1:])
    assert params_mod.resolve_parameters(args.setup, overrides_from(args)) == params


# --- the time budget ------------------------------------------------------------------------------------------

def test_a_spent_budget_still_leaves_every_model_a_row(tmp_path, capsys):
    run = nb.run_benchmark(setup="cpu-tiny", models=["pythia-160m", "vit-large"], gpu="h100-80gb", n_gpus=1,
                           preset=["naive", "smart"], exhaustive_models=["roberta-large"],
                           unsynced_models=["pythia-160m"], validate_models=["pythia-160m"], validate_steps=3,
                           validate_classes=True,
                           time_budget_s=0, timeout_s=60, retry=[], tiny=True, device="cpu",
                           output_dir=str(tmp_path))
    rows = ResultStore(tmp_path / params_mod.RESULTS_FILE).rows()  # validated against the schema
    assert {r["config"]["model"] for r in rows} == {"pythia-160m", "vit-large", "roberta-large"}
    # A configuration a budget never started is "not run", never a timeout: nothing ran, so nothing timed out.
    assert {r["outcome"] for r in rows} == {"not run", "invalid"}
    assert {r["status"] for r in rows} == {"not run", "invalid"}
    for r in rows:
        if r["outcome"] == "not run":
            assert r["reason"].startswith(nb.NOT_RUN_PREFIX) and "time_budget_s=0" in r["reason"]
        else:  # excluded combinations are classified by their rule, budget or not
            assert "sharding" in r["reason"] or "offloading" in r["reason"]
    assert {(r["timing"], r["search"]) for r in rows if r["config"]["model"] == "pythia-160m"} >= {
        ("synced", "naive"), ("unsynced", "naive"), ("unsynced", "free-lunch"), ("synced", "smart")}
    assert run.not_run == sum(r["outcome"] == "not run" for r in rows)
    assert not (tmp_path / "logs").exists(), "nothing was launched"
    assert "nothing to validate" in capsys.readouterr().out
    failures = report.failures_table(run)
    assert set(failures["outcome"]) == {"not run", "invalid"}, "a budget's row is 'not run', not a timeout"
    assert failures["reason"].str.startswith("excluded by rule").any()


@pytest.mark.parametrize("retry, latest", [([], "ok"), (["all"], "not run")])
def test_a_search_from_scratch_that_its_budget_never_reached_says_so(tmp_path, retry, latest):
    """Measured before, then asked again from scratch (``retry`` "all") with no budget left: the older row must not
    pass for this search's measurement, so a 'not run' row supersedes it (and running again measures it). A
    resumed run leaves the measured row as the latest word. No launch: the budget is 0 s."""
    config = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, tiny=True)
    store = ResultStore(tmp_path / params_mod.RESULTS_FILE)
    store.append(make_row(config, setup="cpu-tiny", outcome="ok", search="naive", micro_batch=4, gas=2,
                          step_time_s=1.0, started_at="2000-01-01T00:00:00+00:00"))
    run = nb.run_benchmark(setup="cpu-tiny", models=["pythia-160m"], gpu="h100-80gb", n_gpus=1, preset=["naive"],
                           exhaustive_models=[], unsynced_models=[], validate_models=[], validate_steps=3,
                           validate_classes=False, time_budget_s=0, timeout_s=60, retry=retry, tiny=True,
                           device="cpu", output_dir=str(tmp_path))
    (row,) = [r for r in run.rows() if r["config_id"] == config.id]
    assert row["outcome"] == latest and run.not_run == (latest == "not run")
    assert ResultStore(store.path).rows()[0]["outcome"] == "ok", "the older row stays in the file"


def test_a_resumed_sweep_relaunches_configurations_never_started_but_not_real_timeouts(tmp_path):
    configs = [Config("pythia-160m", "h100-80gb", 1, methods=m, tiny=True) for m in (NAIVE, FREE_LUNCH)]
    phase = nb.Phase("test", configs, "naive")
    store = ResultStore(tmp_path / params_mod.RESULTS_FILE)
    store.append(make_row(configs[0], setup="t", outcome="timeout", search="naive",
                          reason="no result within the time limit of 60 s"))
    assert nb._record_not_run(store.path, "t", phase, [c.id for c in configs], budget_s=5) == 1
    # The sweep CLI and the notebook share the rule: a 'not run' row is no measurement, a real timeout is.
    summary = run_sweep(configs, store.path, "t", search="naive", device="cpu", progress=False)
    assert (summary.resumed, summary.ran) == (1, 1)
    assert latest_rows(ResultStore(store.path).rows())[-1]["outcome"] == "ok"
    summary = run_sweep(configs, store.path, "t", search="naive", device="cpu", progress=False, retry=["timeout"])
    assert summary.ran == 1, "retrying timeouts measures the real timeout again"


def test_a_validation_that_cannot_end_within_the_budget_is_not_started(tmp_path, capsys):
    # A GPU machine is planned by the budget: a validation that would run past it is recorded as not run
    # (re-running the notebook measures it), rather than started and cut off with nothing saved.
    config = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, tiny=True)
    store = ResultStore(tmp_path / params_mod.RESULTS_FILE)
    store.append(make_row(config, setup="t", outcome="ok", search="naive", micro_batch=4, gas=2, step_time_s=10.0,
                          days=1.0, duration_s=100.0))
    params = {"validate_models": ["pythia-160m"], "validate_steps": 3}
    [phase] = nb.validation_phases(params, store.path)
    assert phase.expected_s == 100.0 + 3 * 10.0  # the measurement it checks plus the steps it adds
    deadline = nb.time.monotonic() + 60  # less than the 130 s it needs, more than nothing
    summary, n = nb._run_phase(phase, store.path, "t", deadline, 600, timeout_s=60, device="cpu", retry=[])
    assert "shorter than the 130 s it needs" in capsys.readouterr().out
    row = latest_rows(ResultStore(store.path).rows())[-1]
    assert (summary, n, row["mode"], row["outcome"]) == (None, 1, "validate", "not run")
    assert is_not_run(row) and "expected 130 s" in row["reason"]
    assert not (tmp_path / "logs").exists(), "nothing was launched"


# --- trimming the executed notebook ------------------------------------------------------------------------

def test_tidy_notebook_collapses_progress_bars_and_cuts_long_streams(tmp_path):
    cell = new_code_cell("x", outputs=[
        new_output("stream", name="stderr", text=" 0%|  | 0/3\r 33%|# | 1/3\r100%|##| 3/3\n"),
        new_output("stream", name="stdout", text="".join(f"line {i}\n" for i in range(500))),
        new_output("stream", name="stdout", text="the end\n"),
    ])
    path = tmp_path / "run.ipynb"
    meta = {"papermill": {"input_path": str(params_mod.TEMPLATE), "output_path": str(path)}}
    nbformat.write(new_notebook(cells=[cell], metadata=meta), str(path))
    assert papermill_runner.tidy_notebook(path, max_lines=20) > 400
    streams = _outputs(path, "stream")
    assert [o.name for o in streams] == ["stderr", "stdout"]  # consecutive stdout outputs merged
    assert streams[0].text == "100%|##| 3/3\n"
    lines = streams[1].text.split("\n")
    assert len(lines) == 20 and lines[0] == "line 0" and "lines cut" in lines[10] and lines[-2] == "the end"
    meta = nbformat.read(str(path), as_version=4).metadata.papermill
    assert (meta.input_path, meta.output_path) == ("notebooks/benchmark.ipynb", "run.ipynb")


def test_progress_bars_are_text_and_quiet_in_a_kernel_without_ipywidgets(monkeypatch):
    """The GPU machines' kernels have no ipywidgets: the executed notebook must not carry tqdm's advice to
    install them (the bars are text on purpose)."""
    import sys
    import types
    import warnings

    import IPython  # noqa: F401 (tqdm asks it which front end runs the kernel)
    import tqdm.std

    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", types.ModuleType("ipykernel.zmqshell"))  # "a kernel"
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # not installed
    for name in ("tqdm.auto", "tqdm.autonotebook", "tqdm.notebook"):  # imported afresh, as in a new kernel
        monkeypatch.delitem(sys.modules, name, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with nb._text_progress_bars():
            assert sys.modules["tqdm.auto"].tqdm is tqdm.std.tqdm
    assert [str(w.message) for w in caught] == []


# --- executing the template (kernel; one torchrun launch) ----------------------------------------------------

def test_a_failing_cell_keeps_the_notebook_and_exits_1(tmp_path, capsys):
    _needs_kernel()
    template = tmp_path / "template.ipynb"
    params = new_code_cell("\n".join(f"{k} = {v!r}" for k, v in params_mod.template_parameters().items()),
                           metadata={"tags": ["parameters"]})
    nbformat.write(new_notebook(cells=[params, new_code_cell("raise RuntimeError('evidence')")],
                                metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                         "language": "python"}}), str(template))
    with pytest.raises(SystemExit) as exc:
        main(["notebook", "--setup", "broken", *CPU_FLAGS, "--template", str(template), "--quiet",
              "--output-root", str(tmp_path / "runs")])
    assert exc.value.code == 1
    assert "RuntimeError: evidence" in capsys.readouterr().err
    errors = _outputs(tmp_path / "runs" / "broken" / params_mod.NOTEBOOK_FILE, "error")
    assert [e.evalue for e in errors] == ["evidence"]


def test_the_template_runs_on_cpu_with_a_tiny_model_and_resumes_configurations_never_started(tmp_path):
    _needs_kernel()
    root = tmp_path / "runs"
    folder = root / "cpu-tiny"
    # An earlier run whose budget was spent before anything started: a 'not run' row, and no launch.
    params = params_mod.resolve_parameters("cpu-tiny", {"models": ["pythia-160m"], "gpu": "h100-80gb", "preset": ["naive"],
                                                "tiny": True, "device": "cpu", "time_budget_s": 0})
    nb.run_benchmark(**{**params, "output_dir": str(folder)})
    assert main(["notebook", "--setup", "cpu-tiny", *CPU_FLAGS, "-p", "time_budget_s", "900",
                 "-p", "timeout_s", "600", "--output-root", str(root)]) == 0
    rows = ResultStore(folder / params_mod.RESULTS_FILE).rows()
    assert [(r["config"]["model"], r["search"], r["mode"], r["outcome"], r["setup"]) for r in rows] == [
        ("pythia-160m", "naive", "step", "not run", "cpu-tiny"), ("pythia-160m", "naive", "step", "ok", "cpu-tiny"),
        ("pythia-160m", "single", "validate", "ok", "cpu-tiny")]  # the validation net: the one class that ran
    # The validation ran its sustained steps and compared them (a tiny model's CPU step varies with the machine's
    # load, so its error here says nothing of the method: the GPU rows' validations are the evidence).
    assert rows[2]["validate"]["steps"] >= 1 and math.isfinite(rows[2]["validate"]["rel_error"])
    assert is_not_run(rows[0]) and rows[0]["config_id"] == rows[1]["config_id"]
    assert rows[1]["config"]["tiny"] and rows[1]["step_time_s"] > 0
    executed = folder / params_mod.NOTEBOOK_FILE
    book = nbformat.read(str(executed), as_version=4)
    assert book.metadata.papermill.parameters["models"] == ["pythia-160m"]
    assert "widgets" not in book.metadata, "progress bars are saved as text, not as widget state"
    assert not _outputs(executed, "error")
    assert book.cells[0].source.startswith("# Benchmark run: cpu-tiny\n")
    assert any("image/svg+xml" in o.data for o in _outputs(executed, "execute_result"))
    assert all(len(o.text.split("\n")) <= params_mod.MAX_STREAM_LINES for o in _outputs(executed, "stream"))
    assert executed.stat().st_size < 200_000
    assert str(tmp_path) not in json.dumps(book.metadata.papermill), "no local paths saved"
    assert main(["runs-readme", "--root", str(root)]) == 0
    # the latest row counts, the tiny model named as the workshop run it is (results.run_label)
    assert "| tiny pythia-160m on the CPU (a workshop run, not a GPU result) | naive | 1 | 1 |" in (
        root / "README.md").read_text()


def test_the_validation_net_plans_the_cheapest_unvalidated_configuration_of_each_method_class(tmp_path):
    from academic_bench.catalog.methods import parse_methods

    store = ResultStore(tmp_path / params_mod.RESULTS_FILE)

    def measured(spec, step_s, duration_s, mode="step", engine=None, validate=None):
        config = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(spec))
        row = make_row(config, setup="t", outcome="ok", search="smart", micro_batch=4, gas=2, step_time_s=step_s,
                       days=1.0, duration_s=duration_s, mode=mode, validate=validate)
        if engine is not None:
            row["engine"] = engine
        store.append(row)

    measured("free-lunch", 2.0, 60.0)
    measured("free-lunch+ckpt", 3.0, 60.0)
    measured("naive+ckpt", 1.0, 30.0)  # the cheaper checkpointing configuration
    measured("free-lunch+zero1+offload", 2.0, 60.0, engine=1)  # set aside: no result, so nothing to validate
    measured("naive", 1.0, 10.0)
    measured("naive", 1.0, 10.0, mode="validate",  # naive is validated already
             validate={"steps": 3, "sustained_step_s": 1.0, "predicted_step_s": 1.0, "rel_error": 0.0})
    measured("free-lunch+fsdp_full_shard+offload", 1.0, 10.0)
    measured("free-lunch+fsdp_full_shard+offload", 1.0, 10.0, mode="validate")  # skipped by its deadline: no check
    params = {"validate_classes": True, "validate_steps": 3}
    phases = nb.validation_net_phases(params, store.path)
    assert [p.title.split(" (")[0] for p in phases] == ["validation net: FSDP full-shard + offload",
                                                        "validation net: checkpointing", "validation net: free-lunch"]
    phases = phases[1:]
    assert phases[0].configs[0].methods == parse_methods("naive+ckpt") and phases[0].configs[0].micro_batch == 4
    assert phases[0].expected_s == 30.0 + 3 * 1.0 and phases[0].validate == 3
    assert nb.validation_net_phases({**params, "validate_classes": False}, store.path) == []


def test_the_validation_net_validates_again_a_class_validated_only_by_an_older_engine(tmp_path):
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.results import ENGINE_REVISION

    store = ResultStore(tmp_path / params_mod.RESULTS_FILE)
    config = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("naive"))
    row = make_row(config, setup="t", outcome="ok", search="naive", micro_batch=4, gas=2, step_time_s=1.0, days=1.0,
                   duration_s=10.0)
    store.append(row)
    store.append({**row, "mode": "validate", "engine": ENGINE_REVISION - 1,
                  "validate": {"steps": 3, "sustained_step_s": 1.0, "predicted_step_s": 1.0, "rel_error": 0.0}})
    phases = nb.validation_net_phases({"validate_classes": True, "validate_steps": 3}, store.path)
    assert [p.title.split(" (")[0] for p in phases] == ["validation net: naive"]


def test_an_unsynced_timing_waits_for_an_ok_synced_twin(tmp_path, capsys):
    # Seen on 2 x H200: the synced free-lunch row timed out, and its unsynced twin searched a micro-batch of
    # its own and was timed alone -- GPU time spent on a figure that pairs with nothing.
    config = Config("pythia-160m", "h100-80gb", 1, methods=FREE_LUNCH, tiny=True)
    store = ResultStore(tmp_path / params_mod.RESULTS_FILE)
    store.append(make_row(config, setup="t", outcome="timeout", search="free-lunch",
                          reason="no result within the time limit of 60 s"))
    phase = nb.Phase("unsynced", [config], "free-lunch", timing="unsynced")
    summary, n = nb._run_phase(phase, store.path, "t", None, None, timeout_s=60, device="cpu", retry=[])
    assert (summary, n) == (None, 0)
    assert "synced twin has no ok row" in capsys.readouterr().out
    assert [r["timing"] for r in store.rows()] == ["synced"], "nothing was timed, no row was written"
