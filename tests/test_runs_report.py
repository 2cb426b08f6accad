"""The generated runs README (``runs_report``): what a synthetic run's files become, timeouts, not-run and skipped
configurations told apart, planned setups that have not run, and the days chart offline."""
from __future__ import annotations

import json
import re
import shlex

import nbformat
import pytest
from nbformat.v4 import new_notebook

from academic_bench.search import params as params_mod, notebook as nb
from academic_bench.book import runs_readme as readme, runs_report as report
from academic_bench.cli import build_parser, main
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import FREE_LUNCH, NAIVE, Methods
from academic_bench.results import PLANNED_FILE, ResultStore, make_row
from academic_bench.results import skipped_path

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
    store.append(make_row(c("pythia-160m", NAIVE), outcome="ok", search="naive", mode="validate", micro_batch=4,
                          gas=256, step_time_s=1.0, days=1.0, validate={"steps": 3, "sustained_step_s": 1.0,
                                                                        "predicted_step_s": 1.0, "rel_error": 0.0},
                          **base))
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
    from academic_bench.cli.notebook import overrides_from

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
    text = readme.runs_readme(tmp_path)
    assert "### What the smart search skipped" in text
    assert f"| pythia-160m | smart | cannot win | synthetic pythia-160m | 1: {zero1.label()} |" in text
    assert f"| pythia-1b | smart | cannot win | synthetic pythia-1b | 1: {zero1.label()} |" in text
    assert f"| pythia-2.8b | smart | cannot fit (host memory model) | host memory | 1: {zero1.label()} |" in text
    assert "| model | search | error | timeout | not run | skipped | total |" in text
    assert "| pythia-160m | smart |  |  |  | 1 | 1 |" in text, "left by a budget, then skipped by smart: settled"
    assert "profiles.jsonl" not in text
    (folder / "profiles.jsonl").write_text('{"config_id": "x"}\n{"config_id": "y"}\n')
    assert "[profiles.jsonl](h100x1/profiles.jsonl) (2 step profiles, torch.profiler)" in readme.runs_readme(tmp_path)
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


def test_a_set_aside_or_unvalidated_row_is_never_shown_as_a_result(tmp_path):
    """The notebook's summary and chart and the README show only results: a faster row set aside by a correction
    of the engine, or one of a method class its engine revision never validated, is marked, never a best, and a
    skip's reason never quotes its time."""
    folder = tmp_path / "h200x2"
    store = ResultStore(folder / params_mod.RESULTS_FILE)
    c = lambda methods: Config("pythia-1b", "h200", 2, methods=methods)  # noqa: E731
    base = dict(setup="h200x2", env=GPU_ENV, started_at="2026-11-23T10:00:00+00:00", search="smart", outcome="ok",
                gas=2)
    zero1 = Methods(compile=True, kernels=True, tf32=True, sharding="zero1")
    aside = {**make_row(c(zero1), micro_batch=32, step_time_s=1.2345, days=2.0, **base), "engine": 1}
    store.append(aside)
    store.append(make_row(c(Methods(compile=True, kernels=True, tf32=True, checkpointing=True)), micro_batch=32,
                          step_time_s=1.5, days=2.5, **base))  # its class never validated
    store.append(make_row(c(NAIVE), micro_batch=16, step_time_s=4.0, days=8.0, **base))
    store.append(make_row(c(NAIVE), micro_batch=16, step_time_s=4.0, days=8.0, mode="validate",
                          validate={"steps": 3, "sustained_step_s": 4.0, "predicted_step_s": 4.0, "rel_error": 0.0},
                          **base))
    skip = {"config_id": "z2", "config": c(Methods(compile=True, kernels=True, tf32=True, sharding="zero2")).to_dict(),
            "label": "free-lunch + ZeRO-2", "setup": "h200x2", "search": "smart", "timing": "synced", "mode": "step",
            "category": "cannot win (no larger micro-batch)", "at": "2026-11-23T11:00:00+00:00",
            "reason": "smart: skipped because the memory model predicts no larger micro-batch for it (<= 32) than "
                      "for free-lunch + ZeRO-1, measured at 1.234 s/step; more memory saving would only add overhead"}
    skipped_path(store.path).write_text(json.dumps(skip) + "\n")
    summary = report.summary_table(folder).set_index("search")
    assert summary.loc["smart", "best methods"] == "naive" and summary.loc["smart", "days"] == 8.0
    assert "set aside 1" in summary.loc["smart", "outcomes"] and "not validated 1" in summary.loc["smart", "outcomes"]
    text = readme.runs_readme(tmp_path)
    assert "1.234" not in text and "whose measurement is set aside (no result)" in text
    assert "| not validated |" in text and "no validation of its method class (checkpointing (DDP))" in text


def test_runs_readme_with_no_runs(tmp_path):
    assert "No runs yet." in readme.runs_readme(tmp_path)


def test_runs_readme_lists_planned_setups_that_have_not_run(tmp_path):
    (tmp_path / "h100x1").mkdir()
    _synthetic_run(tmp_path / "h100x1")
    (tmp_path / PLANNED_FILE).write_text("setup,gpu,n_gpus,note\nh100x1,h100-80gb,1,\n"
                                         'h200x4,h200,4,"No machine with four GPUs was available."\n')
    text = readme.runs_readme(tmp_path)
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
        readme.runs_readme(tmp_path)
