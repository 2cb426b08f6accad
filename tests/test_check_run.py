"""``check-run``: a contributed run folder is accepted when clean and each broken one is rejected with its reason.

Every folder is built here in ``tmp_path`` (never under notebooks/runs, so nothing reaches the book).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from academic_bench.analysis import MFU_IMPLAUSIBLE, VALIDATION_TOLERANCE
from academic_bench.cli import main
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import preset
from academic_bench.results import ENGINE_REVISION, make_row
from academic_bench.analysis.run_check import ERROR, EVIDENCE_README, NOTEBOOK, RESULTS, WARNING, check_run

from measured import measured_fields

SETUP = "h100x1"
ENV = {"gpu_name": "NVIDIA H100 80GB HBM3", "torch": "2.14.1", "git_commit": "0123456789abcdef", "cuda": "13.0"}
SAFE_MFU = MFU_IMPLAUSIBLE / 2  # a plausible utilisation, derived from the threshold


def _row(methods: str = "naive", mode: str = "step", mfu: float = SAFE_MFU, env: dict | None = None,
         rel_error: float | None = None, timing: str = "synced") -> dict:
    """A measured row whose figures agree with its phases (``measured_fields``), at ``mfu``."""
    config = Config("pythia-160m", "h100-80gb", 1, methods=preset(methods))
    row = make_row(config, setup=SETUP, outcome="ok", mode=mode, timing=timing, status="measured",
                   env=dict(ENV if env is None else env), **measured_fields(config, 8, mfu=mfu, timing=timing))
    if rel_error is not None:
        step = row["step_time_s"]
        row["validate"] = {"steps": 2, "sustained_step_s": step / (1 + rel_error), "predicted_step_s": step,
                           "rel_error": rel_error}
    return row


def _good_rows() -> list[dict]:
    """A measurement and a validation within the tolerance for each of two method classes."""
    within = VALIDATION_TOLERANCE / 2
    return [_row("naive"), _row("naive", "validate", rel_error=within),
            _row("free-lunch"), _row("free-lunch", "validate", rel_error=within)]


def _folder(tmp_path: Path, rows: list[dict] | None = None, lines: list[str] | None = None,
            notebook: bool = True, executed: bool = True, readme: bool = True, setup: str = SETUP) -> Path:
    folder = tmp_path / setup
    folder.mkdir()
    text = [json.dumps(r) for r in (_good_rows() if rows is None else rows)] + (lines or [])
    (folder / RESULTS).write_text("\n".join(text) + "\n")
    if notebook:
        cell = {"cell_type": "code", "execution_count": 1 if executed else None, "source": "", "outputs": [],
                "metadata": {}}
        (folder / NOTEBOOK).write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                   "nbformat_minor": 5}))
    if readme:
        (folder / EVIDENCE_README).parent.mkdir()
        (folder / EVIDENCE_README).write_text("# how this run was made\n")
    return folder


def _main(*argv: str) -> int:
    """The command's exit status: ``cli.main`` returns 0 or 2; an exit 1 is raised (``SystemExit``)."""
    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code)


def _errors(folder: Path) -> list[str]:
    return [p.line() for p in check_run(folder).errors]


def test_a_good_folder_passes(tmp_path, capsys) -> None:
    folder = _folder(tmp_path)
    check = check_run(folder)
    assert check.ok and not check.problems
    assert check.summary["rows"] == len(_good_rows())
    assert set(check.summary["validated_classes"]) == {f"naive (engine revision {ENGINE_REVISION})", f"free-lunch (engine revision {ENGINE_REVISION})"}
    assert _main("check-run", str(folder)) == 0
    out = capsys.readouterr().out
    assert "ok" in out.splitlines()[0] and "rows:" in out


def test_a_malformed_line_is_named(tmp_path) -> None:
    errors = _errors(_folder(tmp_path, lines=["{not json"]))
    assert len(errors) == 1
    assert f"{RESULTS}:{len(_good_rows()) + 1}" in errors[0] and "not valid JSON" in errors[0]


def test_a_row_breaking_the_schema_is_named(tmp_path) -> None:
    broken = _row()
    del broken["env"]
    errors = _errors(_folder(tmp_path, rows=[*_good_rows(), broken]))
    assert len(errors) == 1 and "schema" in errors[0] and "env" in errors[0] and broken["config_id"] in errors[0]


@pytest.mark.parametrize("missing", ["git_commit", "gpu_name"])
def test_a_row_without_its_environment_is_rejected(tmp_path, missing) -> None:
    rows = _good_rows()
    rows[0]["env"] = {k: v for k, v in ENV.items() if k != missing}
    errors = _errors(_folder(tmp_path, rows=rows))
    assert len(errors) == 1 and f"{RESULTS}:1 (config {rows[0]['config_id']})" in errors[0]
    assert f"without {missing}" in errors[0]


def test_a_superseded_row_without_its_environment_is_a_warning(tmp_path) -> None:
    old = _row("naive", env={})
    check = check_run(_folder(tmp_path, rows=[old, *_good_rows()]))
    assert check.ok
    assert [p.where for p in check.warnings] == [f"{RESULTS}:1 (config {old['config_id']})"]


def test_an_implausible_mfu_is_rejected(tmp_path, capsys) -> None:
    rows = _good_rows()
    rows[2] = _row("free-lunch", mfu=(1 + MFU_IMPLAUSIBLE) / 2)  # phases that give an MFU between it and the peak
    folder = _folder(tmp_path, rows=rows)
    errors = _errors(folder)
    assert len(errors) == 1 and rows[2]["config_id"] in errors[0] and "MFU" in errors[0]
    assert _main("check-run", str(folder)) == 1
    assert "MFU" in capsys.readouterr().out


def test_an_unsynchronized_mfu_is_not_a_result_and_passes(tmp_path) -> None:
    unsynced = _row("naive", mfu=1 + MFU_IMPLAUSIBLE, timing="unsynced")
    assert check_run(_folder(tmp_path, rows=[*_good_rows(), unsynced])).ok


@pytest.mark.parametrize("kwargs, reason", [({"notebook": False}, f"{NOTEBOOK}: missing"),
                                            ({"executed": False}, f"{NOTEBOOK}: not executed"),
                                            ({"readme": False}, f"{EVIDENCE_README}: missing")])
def test_missing_evidence_files_are_rejected(tmp_path, kwargs, reason) -> None:
    errors = _errors(_folder(tmp_path, **kwargs))
    assert len(errors) == 1 and reason in errors[0]


def test_a_method_class_without_validation_is_a_warning(tmp_path, capsys) -> None:
    rows = [r for r in _good_rows() if not (r["mode"] == "validate" and r["config"]["methods"]["compile"])]
    folder = _folder(tmp_path, rows=rows)
    check = check_run(folder)
    assert check.ok
    assert [(p.level, p.where) for p in check.problems] == [(WARNING, f"method class free-lunch (engine revision {ENGINE_REVISION})")]
    assert _main("check-run", str(folder)) == 0
    assert "no validation" in capsys.readouterr().out
    assert "bench --validate" in check.warnings[0].what, "the current revision's class can still be validated"
    old = [{**r, "engine": ENGINE_REVISION - 1} for r in rows]  # an older revision's: only measuring again helps
    (tmp_path / "old").mkdir()
    check = check_run(_folder(tmp_path / "old", rows=old))
    assert f"remeasure --retry unvalidated --out {tmp_path / 'old' / SETUP / RESULTS}" in " ".join(
        p.what for p in check.warnings)


def test_a_validation_outside_the_rule_is_a_warning(tmp_path) -> None:
    rows = _good_rows()
    rows[1] = _row("naive", "validate", rel_error=2 * VALIDATION_TOLERANCE)
    check = check_run(_folder(tmp_path, rows=rows))
    assert check.ok and [p.where for p in check.warnings] == [f"method class naive (engine revision {ENGINE_REVISION})"]
    assert "do not count" in check.warnings[0].what


def test_not_a_run_folder_exits_2(tmp_path, capsys) -> None:
    assert _main("check-run", str(tmp_path / "nowhere")) == 2
    assert "not a folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert _main("check-run", str(tmp_path / "empty")) == 2
    assert RESULTS in capsys.readouterr().err


def test_json_output_lists_every_problem(tmp_path, capsys) -> None:
    folder = _folder(tmp_path, lines=["{not json"], readme=False)
    assert _main("check-run", str(folder), "--json") == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["errors"] == 2
    assert {p["level"] for p in data["problems"]} == {ERROR}


def test_a_forged_step_time_is_rejected_naming_the_row_and_field(tmp_path, capsys) -> None:
    """A row whose step time was edited (its phases still give the measured one) is an error, never a pass."""
    rows = _good_rows()
    rows[2]["step_time_s"] = rows[2]["step_time_s"] / 50
    folder = _folder(tmp_path, rows=rows)
    errors = _errors(folder)
    assert len(errors) == 1
    assert f"{RESULTS}:3 (config {rows[2]['config_id']})" in errors[0] and "step_time_s" in errors[0]
    assert _main("check-run", str(folder)) == 1


@pytest.mark.parametrize("field", ["days", "mfu", "throughput", "gpu_days"])
def test_each_derived_figure_is_recomputed(tmp_path, field) -> None:
    rows = _good_rows()
    rows[0][field] = rows[0][field] * 0.9
    errors = _errors(_folder(tmp_path, rows=rows))
    assert len(errors) == 1 and f"{field}: stored" in errors[0] and rows[0]["config_id"] in errors[0]


def test_a_forged_validation_error_is_rejected(tmp_path) -> None:
    rows = _good_rows()
    rows[1]["validate"]["rel_error"] = 0.0  # its sustained and predicted steps say otherwise
    errors = _errors(_folder(tmp_path, rows=[*rows[:1], _row("naive", "validate", rel_error=0.02), *rows[2:]]))
    assert not errors
    rows[1]["validate"]["sustained_step_s"] *= 1.5
    errors = _errors(_folder(tmp_path / "b", rows=rows)) if (tmp_path / "b").mkdir() is None else []
    assert len(errors) == 1 and "validate.rel_error" in errors[0]


def test_duplicated_rows_give_one_notice_and_no_doubled_warnings(tmp_path) -> None:
    rows = [r for r in _good_rows() if not (r["mode"] == "validate" and r["config"]["methods"]["compile"])]
    single = check_run(_folder(tmp_path, rows=rows))
    (tmp_path / "b").mkdir()
    doubled = check_run(_folder(tmp_path / "b", rows=rows + [json.loads(json.dumps(r)) for r in rows]))
    assert [p.line() for p in doubled.warnings] == [p.line() for p in single.warnings]
    dup = [p for p in doubled.errors if "repeat" in p.what]
    assert len(doubled.errors) == 1 and len(dup) == 1
    assert f"{len(rows) + 1} (= 1)" in dup[0].what


def test_a_row_from_another_gpu_than_its_setup_is_rejected(tmp_path) -> None:
    rows = _good_rows()
    rows[0]["env"] = {**ENV, "gpu_name": "NVIDIA H200"}
    errors = _errors(_folder(tmp_path, rows=rows))
    assert len(errors) == 1 and "env.gpu_name" in errors[0] and "NVIDIA H200" in errors[0]
    assert "h100-80gb" in errors[0] and rows[0]["config_id"] in errors[0]


def test_a_failed_row_from_another_gpu_is_rejected(tmp_path) -> None:
    config = Config("pythia-160m", "h200", 1, methods=preset("naive"))
    oom = make_row(config, setup=SETUP, outcome="oom", reason="out of memory", env=dict(ENV))
    errors = _errors(_folder(tmp_path, rows=[*_good_rows(), oom]))
    assert len(errors) == 1 and "env.gpu_name" in errors[0] and "h200" in errors[0]


WORKSHOP = "cpu-tiny"  # a setup label that names no GPU


def _workshop_row(setup: str = WORKSHOP) -> dict:
    """A tiny model measured on the CPU, as ``bench --tiny --device cpu --setup SETUP`` writes it."""
    config = Config("pythia-160m", "h100-80gb", 1, methods=preset("naive"), tiny=True)
    env = {**ENV, "gpu_name": None, "device": "cpu"}
    return make_row(config, setup=setup, outcome="ok", mode="step", timing="synced", status="measured", env=env,
                    **measured_fields(config, 8, step=0.5, timing="synced"))


def test_a_workshop_run_on_the_cpu_passes_without_a_gpu_and_says_what_it_is(tmp_path, capsys) -> None:
    """A teacher's run of tiny models on laptops records no GPU and need not ship a notebook or an evidence README;
    the report says it is no evidence of any GPU's speed."""
    folder = _folder(tmp_path, rows=[_workshop_row()], notebook=False, readme=False, setup=WORKSHOP)
    check = check_run(folder)
    assert check.ok, [p.line() for p in check.errors]
    assert {p.where for p in check.warnings} >= {NOTEBOOK, str(EVIDENCE_README)}
    assert _main("check-run", str(folder)) == 0
    assert "a workshop run: tiny models on the CPU" in capsys.readouterr().out


@pytest.mark.parametrize("rows, field", [
    (lambda: [_workshop_row(SETUP)], "config.tiny"),  # the table's first row: a tiny CPU row in h100x1
    (lambda: _good_rows() + [_workshop_row(SETUP)], "config.tiny"),
    (lambda: [_row(env={**ENV, "gpu_name": None, "device": "cpu"})], "env.device"),  # a full-size model on the CPU
    (lambda: [{**_row(), "config": {**_row()["config"], "gpu": "h200"}, "env": {**ENV, "gpu_name": "NVIDIA H200"}}],
     "config.gpu"),  # another GPU's row, labelled as such, in the H100's folder
])
def test_a_row_the_gpu_of_its_folder_did_not_make_is_an_error(tmp_path, capsys, rows, field) -> None:
    """A folder named for a GPU (h100x1) is that GPU's evidence: a tiny model, a run on the CPU or another GPU's
    run among its rows is an error naming the field, and check-run exits 1."""
    made = rows()
    folder = _folder(tmp_path, rows=made)
    errors = [e for e in _errors(folder) if "names the GPU h100-80gb" in e]
    assert len(errors) == 1 and errors[0].startswith(f"error: {RESULTS}:{len(made)}") and f"{field}:" in errors[0]
    assert not check_run(folder).summary["workshop"]
    assert _main("check-run", str(folder)) == 1
    assert "names the GPU h100-80gb" in capsys.readouterr().out


def test_a_gpu_folder_with_a_workshop_row_still_needs_its_files_and_gpu_names(tmp_path) -> None:
    folder = _folder(tmp_path, rows=_good_rows() + [_workshop_row(SETUP)], notebook=False)
    assert any(NOTEBOOK in e for e in _errors(folder))
    gpu_row_without_name = _row(env={**ENV, "gpu_name": None})
    (tmp_path / "b").mkdir()
    folder2 = _folder(tmp_path / "b", rows=[gpu_row_without_name], notebook=True)
    assert any("gpu_name" in e for e in _errors(folder2))


def _not_run_row(**switches) -> dict:
    """A row recording that a time budget never started this configuration of the smart search."""
    config = Config("pythia-160m", "h100-80gb", 1, methods=replace(preset("free-lunch"), **switches))
    return make_row(config, setup=SETUP, outcome="not run", reason="not run: the budget was spent", search="smart",
                    env=dict(ENV))


def test_a_configuration_a_smart_search_skipped_after_its_budget_is_counted_as_skipped(tmp_path, capsys) -> None:
    """A budget left two configurations unstarted and a smart search then skipped one of them: the summary says
    so, as the run pages do, so that 'not run' counts only what running the notebook again would measure."""
    skipped, left = _not_run_row(sharding="zero3", offload=True), _not_run_row(checkpointing=True)
    folder = _folder(tmp_path, rows=_good_rows() + [skipped, left])
    skip = {k: skipped[k] for k in ("config_id", "config", "setup", "search", "timing", "mode")}
    (folder / "results.skipped.jsonl").write_text(json.dumps({**skip, "category": "cannot win",
                                                              "reason": "smart: skipped", "at": "2099-01-01"}) + "\n")
    check = check_run(folder)
    assert check.ok
    assert check.summary["states"]["skipped"] == 1 and check.summary["states"]["not run"] == 1
    assert _main("check-run", str(folder)) == 0
    assert "not run 1" in capsys.readouterr().out


def test_a_skip_that_names_no_configuration_is_rejected(tmp_path) -> None:
    folder = _folder(tmp_path)
    (folder / "results.skipped.jsonl").write_text(json.dumps({"reason": "smart: skipped"}) + "\n")
    errors = _errors(folder)
    assert len(errors) == 1 and "results.skipped.jsonl:1" in errors[0] and "configuration" in errors[0]
