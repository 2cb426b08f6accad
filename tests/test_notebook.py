"""The benchmark notebook: its parameters, the papermill runner (on the CPU, tiny models), the time budget's
rows, output trimming, and the generated runs README.

Two tests start a Jupyter kernel (one of them also one torchrun launch, ~30-60 s on two cores); the rest
need no subprocess.
"""
from __future__ import annotations

import importlib.util
import json
import re
import shlex

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from academic_bench import benchmark_params as params_mod, notebook as nb, runs_report as report
from academic_bench.cli import build_parser, main
from academic_bench.config import Config
from academic_bench.methods import FREE_LUNCH, NAIVE, Methods
from academic_bench.results import PLANNED_FILE, ResultStore, is_not_run, latest_rows, make_row
from academic_bench.results import skipped_path
from academic_bench.sweep import run_sweep
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
    from academic_bench.notebook_cli import overrides_from

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


def test_a_resumed_sweep_relaunches_configurations_never_started_but_not_real_timeouts(tmp_path):
    configs = [Config("pythia-160m", "h100-80gb", 1, methods=m, tiny=True) for m in (NAIVE, FREE_LUNCH)]
    phase = nb.Phase("test", configs, "naive")
    store = ResultStore(tmp_path / params_mod.RESULTS_FILE)
    store.append(make_row(configs[0], setup="t", outcome="timeout", search="naive",
                          reason="no result within the time limit of 60 s"))
    assert nb._record_not_run(store.path, "t", phase, [c.id for c in configs], budget_s=5) == 1
    # The sweep CLI and the notebook share the rule: a 'not run' row is no measurement, a real timeout is.
    summary = run_sweep(configs, store.path, "t", search="naive", device="cpu", progress=False)
    assert (summary["resumed"], summary["ran"]) == (1, 1)
    assert latest_rows(ResultStore(store.path).rows())[-1]["outcome"] == "ok"
    summary = run_sweep(configs, store.path, "t", search="naive", device="cpu", progress=False, retry=["timeout"])
    assert summary["ran"] == 1, "retrying timeouts measures the real timeout again"


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
    assert nb.tidy_notebook(path, max_lines=20) > 400
    streams = _outputs(path, "stream")
    assert [o.name for o in streams] == ["stderr", "stdout"]  # consecutive stdout outputs merged
    assert streams[0].text == "100%|##| 3/3\n"
    lines = streams[1].text.split("\n")
    assert len(lines) == 20 and lines[0] == "line 0" and "lines cut" in lines[10] and lines[-2] == "the end"
    meta = nbformat.read(str(path), as_version=4).metadata.papermill
    assert (meta.input_path, meta.output_path) == ("notebooks/benchmark.ipynb", "run.ipynb")


# --- the runs README ----------------------------------------------------------------------------------------

GPU_ENV = {"gpu_name": "NVIDIA H100 80GB HBM3", "driver": "570.86.15", "cuda": "12.8", "torch": "2.11.0",
           "transformers": "5.17.0", "deepspeed": "0.19.8", "flash_attn": None, "mamba_ssm": None,
           "timm": "1.0.29", "python": "3.12.3", "package_version": "0.1.0", "git_commit": "abc1234",
           "hostname": "gpu-node"}


def _synthetic_run(folder) -> None:
    """A results file in the row schema (no measured value: the numbers are placeholders for the generator)."""
    store = ResultStore(folder / params_mod.RESULTS_FILE)
    c = lambda m, methods: Config(m, "h100-80gb", 1, methods=methods)  # noqa: E731
    base = dict(setup="h100x1", env=GPU_ENV, started_at="2026-11-23T10:00:00+00:00")
    store.append(make_row(c("pythia-160m", NAIVE), outcome="ok", search="naive", micro_batch=4, gas=256,
                          step_time_s=1.0, days=1.0, **base))
    store.append(make_row(c("pythia-6.9b", NAIVE), outcome="oom", search="naive",
                          reason="even the smallest micro-batch does not fit in memory", **base))
    store.append(make_row(c("vit-large", FREE_LUNCH), outcome="error", search="free-lunch",
                          reason="exit status 1. Last lines of the log:\nTraceback ...\nRuntimeError: boom", **base))
    store.append(make_row(c("vit-large", Methods(offload=True)), outcome="invalid", search="smart",
                          reason="invalid combination (...): offloading is only allowed when sharding is enabled",
                          **{**base, "started_at": "2026-11-24T09:00:00+00:00"}))
    params = params_mod.resolve_parameters("h100x1", {"models": ["vit-large"], "gpu": "h100-80gb", "time_budget_s": 600})
    book = new_notebook(metadata={"papermill": {"parameters": params}})
    nbformat.write(book, str(folder / params_mod.NOTEBOOK_FILE))


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


def test_runs_readme_from_a_synthetic_run(tmp_path, capsys):
    (tmp_path / "h100x1" / "evidence").mkdir(parents=True)
    (tmp_path / "h100x1" / "evidence" / "README.md").write_text("# How these results were made\n")
    _synthetic_run(tmp_path / "h100x1")
    assert main(["runs-readme", "--root", str(tmp_path)]) == 0
    text = (tmp_path / "README.md").read_text()
    assert "[evidence/README.md](h100x1/evidence/README.md)" in text
    assert "do not edit by hand" in text.splitlines()[2]
    assert "NVIDIA H100 80GB HBM3 (driver 570.86.15, CUDA 12.8)" in text
    assert "torch 2.11.0" in text and "flash-attn not installed" in text and "commit abc1234" in text
    assert "2026-11-23 to 2026-11-24" in text
    assert "| pythia-160m | naive | 1 |" in text  # outcome counts per model and search
    assert "even the smallest micro-batch does not fit in memory" in text
    assert "exit status 1. Last lines of the log: ... RuntimeError: boom" in text  # the log tail's last line
    assert "excluded by rule: offloading is only allowed when sharding is enabled" in text
    assert "academic-bench notebook --setup h100x1 --models pythia-160m pythia-6.9b vit-large --gpu h100-80gb" \
        in text
    # the whole setup, from its rows (template order, searches, pairs, validations), and the last run as recorded
    whole, last = re.findall(r"```bash\n(.+)\n```", text.split("### Re-run it")[1])
    from academic_bench.notebook_cli import overrides_from

    args = build_parser().parse_args(shlex.split(whole)[1:])
    params = params_mod.resolve_parameters(args.setup, overrides_from(args))
    assert (params["models"], params["gpu"], params["preset"]) == (["pythia-160m", "pythia-6.9b", "vit-large"],
                                                                    "h100-80gb", ["naive", "free-lunch", "smart"])
    assert "The last run here, as its executed notebook records it:" in text
    assert "--models vit-large --gpu h100-80gb" in last and "time_budget_s 600" in last
    assert main(["runs-readme", "--root", str(tmp_path), "--check"]) == 0
    (tmp_path / "README.md").write_text(text + "hand edit\n")
    with pytest.raises(SystemExit) as exc:
        main(["runs-readme", "--root", str(tmp_path), "--check"])
    assert exc.value.code == 1 and "out of date" in capsys.readouterr().err


def test_days_chart_is_a_static_svg_or_else_an_offline_altair_chart(tmp_path, monkeypatch):
    import altair as alt

    (tmp_path / "h100x1").mkdir()
    _synthetic_run(tmp_path / "h100x1")
    results = tmp_path / "h100x1" / params_mod.RESULTS_FILE
    svg = report.days_chart(results)
    assert svg.data.startswith("<svg") and "pythia-160m" in svg.data
    monkeypatch.setitem(__import__("sys").modules, "vl_convert", None)  # a machine without vl-convert
    renderer = alt.renderers.active
    try:
        assert isinstance(report.days_chart(results), alt.TopLevelMixin)
    finally:
        alt.renderers.enable(renderer)


def test_runs_readme_tells_timeouts_not_run_and_skipped_apart(tmp_path):
    """A budget's 'not run' rows are not timeouts; one a smart search then skipped is settled (*skipped*), but
    the same configuration left by an exhaustive search is still to run."""
    folder = tmp_path / "h100x1"
    store = ResultStore(folder / params_mod.RESULTS_FILE)
    base = dict(setup="h100x1", env=GPU_ENV, started_at="2026-11-23T10:00:00+00:00")
    zero1 = Methods(compile=True, kernels=True, tf32=True, sharding="zero1", offload=True)
    offload = lambda m: Config(m, "h100-80gb", 1, methods=zero1)  # noqa: E731
    not_run = nb._not_run_reason(60)
    store.append(make_row(offload("pythia-160m"), outcome="timeout", search="smart", reason=not_run, **base))
    store.append(make_row(offload("pythia-1b"), outcome="timeout", search="exhaustive", reason=not_run, **base))
    store.append(make_row(Config("vit-large", "h100-80gb", 1, methods=FREE_LUNCH), outcome="timeout",
                          search="smart", reason="no result within the time limit of 300 s", **base))
    skips = [{"config_id": offload(m).id, "config": offload(m).to_dict(), "label": zero1.label(), "setup": "h100x1",
              "search": "smart", "timing": "synced", "mode": "step", "category": "cannot win",
              "reason": f"synthetic {m}", "at": "2026-11-23T11:00:00+00:00"} for m in ("pythia-160m", "pythia-1b")]
    # a retry that a smart search then skipped: the skip, newer than the row, is the latest word on it
    store.append(make_row(offload("pythia-2.8b"), outcome="error", search="smart", reason="exit status 1", **base))
    skips.append({**skips[0], "config_id": offload("pythia-2.8b").id, "config": offload("pythia-2.8b").to_dict(),
                  "category": "cannot fit (host memory model)", "reason": "host memory"})
    skipped_path(folder / params_mod.RESULTS_FILE).write_text("".join(json.dumps(s) + "\n" for s in skips))
    text = report.runs_readme(tmp_path)
    assert "### What the smart search skipped" in text
    assert f"| pythia-160m | smart | cannot win | synthetic pythia-160m | 1: {zero1.label()} |" in text
    assert f"| pythia-1b | smart | cannot win | synthetic pythia-1b | 1: {zero1.label()} |" in text
    assert f"| pythia-2.8b | smart | cannot fit (host memory model) | host memory | 1: {zero1.label()} |" in text
    assert "| model | search | error | timeout | not run | skipped | total |" in text
    assert "| pythia-160m | smart |  |  |  | 1 | 1 |" in text, "left by a budget, then skipped by smart: settled"
    assert "profiles.jsonl" not in text
    (folder / "profiles.jsonl").write_text('{"config_id": "x"}\n{"config_id": "y"}\n')
    assert "[profiles.jsonl](h100x1/profiles.jsonl) (2 step profiles, torch.profiler)" in report.runs_readme(tmp_path)
    assert "| pythia-1b | exhaustive |  |  | 1 |  | 1 |" in text, "a smart skip does not settle an exhaustive row"
    assert "| vit-large | smart |  | 1 |  |  | 1 |" in text, "a real timeout stays a timeout"
    assert "| pythia-2.8b | smart | 1 |  |  |  | 1 |" in text, "an error stays an error, with the skip listed after"
    # the executed notebook's tables read the same states, given the run folder or its results file
    outcomes = report.summary_table(folder).set_index(["model", "search"])["outcomes"].to_dict()
    assert outcomes == {("pythia-160m", "smart"): "skipped 1", ("pythia-1b", "exhaustive"): "not run 1",
                        ("pythia-2.8b", "smart"): "error 1", ("vit-large", "smart"): "timeout 1"}
    failures = report.failures_table(folder / params_mod.RESULTS_FILE)
    assert sorted(zip(failures["model"], failures["outcome"])) == [
        ("pythia-1b", "not run"), ("pythia-2.8b", "error"), ("vit-large", "timeout")], "the failure itself stays"


def test_runs_readme_with_no_runs(tmp_path):
    assert "No runs yet." in report.runs_readme(tmp_path)


def test_runs_readme_lists_planned_setups_that_have_not_run(tmp_path):
    (tmp_path / "h100x1").mkdir()
    _synthetic_run(tmp_path / "h100x1")
    (tmp_path / PLANNED_FILE).write_text("setup,gpu,n_gpus,note\nh100x1,h100-80gb,1,\n"
                                         'h200x4,h200,4,"No machine with four GPUs was available."\n')
    text = report.runs_readme(tmp_path)
    assert "| [h200x4](#h200x4) | NVIDIA H200 141GB SXM (planned, not run yet) | 4 | 0 | 0 |  |" in text
    section = text[text.index("## h200x4"):]
    assert "planned: 4 x NVIDIA H200 141GB SXM; **not run yet**, no row" in section
    assert "- **Plan:** No machine with four GPUs was available." in section
    command = section.split("```bash\n")[1].split("\n```")[0]
    assert "--setup h200x4 " in command and "--gpu h200 --gpus 4 " in command
    assert "--models pythia-160m" in command, "what the shipped setups ran"
    assert "**Plan:**" not in text[:text.index("## h200x4")], "a planned setup without a note says nothing"
    assert "## h100x1" in text and text.count("## h200x4") == 1


@pytest.mark.parametrize("csv, message", [
    ("setup,gpu\nx,h200\n", "the header must be setup,gpu,n_gpus,note"),
    ("setup,gpu,n_gpus,note\nx,h300,1,\n", "line 2: unknown GPU 'h300'; valid: a100-80gb, a6000, h100-80gb, h200"),
    ("setup,gpu,n_gpus,note\nx,h200,two,\n", "line 2: n_gpus must be a whole number of at least 1, not 'two'"),
    ("setup,gpu,n_gpus,note\nx,h200,1,\nx,h200,2,\n", "line 3: each setup needs a name of its own, not 'x'"),
])
def test_a_malformed_planned_setups_file_names_its_line_and_the_choices(tmp_path, csv, message):
    (tmp_path / PLANNED_FILE).write_text(csv)
    with pytest.raises(ValueError, match=re.escape(message)):
        report.runs_readme(tmp_path)



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
    assert abs(rows[2]["validate"]["rel_error"]) < 1
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
    assert "| pythia-160m | naive | 1 | 1 |" in (root / "README.md").read_text()  # the latest row counts


def test_the_validation_net_plans_the_cheapest_unvalidated_configuration_of_each_method_class(tmp_path):
    from academic_bench.methods import parse_methods

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
