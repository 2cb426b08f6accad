"""Errors for people, for every command: an output that cannot be written stops before any work (exit 2, a
message, JSON under --json, no temporary folder left); ``--json`` is strict JSON (no NaN); a valid question the
study has no answer to exits 1 in every command that answers; hints name only options the command takes; a
library's notices stay off the terminal.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from academic_bench.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--tiny", "--device", "cpu"]


def strict_json(text: str):
    """JSON as a browser's ``JSON.parse`` reads it: NaN and Infinity are errors."""
    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def _temporary_folders() -> set[str]:
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("academic-bench-")}


# every command that writes, with where it writes (OUT is replaced by the unwritable path)
WRITERS = {
    "export": ["export", "--best", "--model", "pythia-1b", "--gpu", "a100-80gb", "--gpus", "4", "--out", "OUT"],
    "bench": ["bench", *TINY, "--methods", "naive", "--micro-batch", "2", "--out", "OUT/results.jsonl"],
    "sweep": ["sweep", *TINY, "--preset", "naive", "--out", "OUT/results.jsonl"],
    "profile": ["profile", *TINY, "--methods", "naive", "--micro-batch", "2", "--reps", "1",
                "--out", "OUT/profiles.jsonl"],
    "notebook": ["notebook", "--setup", "cpu-tiny", "--gpu", "h100-80gb", "--tiny", "--device", "cpu",
                 "--models", "pythia-160m", "--preset", "naive", "--output-root", "OUT"],
    "runs-readme": ["runs-readme", "--root", "OUT"],
}
UNWRITABLE = ["/proc/academic-bench-x", "/sys/academic-bench-x/y"]


@pytest.fixture
def no_work(monkeypatch):
    """Any measurement, profile, notebook or README that starts fails the test: the refusal must come first."""
    import papermill

    from academic_bench.book import runs_readme
    from academic_bench.cli import bench, profile

    def started(*a, **k):
        raise AssertionError("work started before the output was checked")

    monkeypatch.setattr(bench, "run", started)
    monkeypatch.setattr(bench, "run_sweep", started)
    monkeypatch.setattr(profile, "_profile_or_say_why", started)
    monkeypatch.setattr(papermill, "execute_notebook", started)
    monkeypatch.setattr(runs_readme, "write_runs_readme", started)


@pytest.mark.parametrize("where", UNWRITABLE)
@pytest.mark.parametrize("command", list(WRITERS))
def test_an_output_that_cannot_be_written_stops_every_command_before_any_work(command, where, no_work, capsys):
    if command == "runs-readme":
        where = "/proc"  # the root must be a folder of runs: one that exists, where nothing can be written
    argv = [a.replace("OUT", where) for a in WRITERS[command]]
    before = _temporary_folders()
    assert _exit(argv) == 2
    err = capsys.readouterr().err
    assert f"academic-bench {command}: error: --" in err and "cannot write" in err and "Traceback" not in err
    assert _exit([*argv, "--json"]) == 2
    doc = strict_json(capsys.readouterr().out)
    assert "cannot write" in doc["error"] and doc["choices"] == []
    assert _temporary_folders() == before, "no temporary folder left behind"


def test_a_folder_under_a_file_is_refused_and_nothing_is_made(tmp_path, no_work, capsys):
    (tmp_path / "file").write_text("x")
    assert _exit([a.replace("OUT", str(tmp_path / "file" / "sub")) for a in WRITERS["export"]]) == 2
    assert "which is a file" in capsys.readouterr().err


def test_a_checked_output_leaves_the_file_system_as_it_was(tmp_path):
    from academic_bench.cli.args import check_out

    check_out(tmp_path / "a" / "b" / "results.jsonl")
    check_out(tmp_path / "c" / "d", folder=True)
    assert list(tmp_path.iterdir()) == []


def test_plan_json_is_strict_json_and_its_table_prints_no_nan(capsys):
    """Pythia-6.9B's plan had paper cells without settings, and now ranks GPUs some of which have no listed
    price: neither may give ``NaN`` in the JSON or ``nan`` in the table."""
    assert _exit(["plan", "--model", "pythia-6.9b", "--budget", "40000", "--json"]) == 0
    doc = strict_json(capsys.readouterr().out)
    assert doc["candidates"] and all(c["methods_label"] is None or isinstance(c["methods_label"], str)
                                     for c in doc["candidates"])
    assert all(c["purchase_usd"] is not None for c in doc["candidates"]), "a GPU without a price is not ranked"
    assert _exit(["plan", "--model", "pythia-6.9b", "--budget", "40000"]) == 0
    assert not re.search(r"\bnan\b", capsys.readouterr().out)


def _unanswered(tmp_path) -> list[str]:
    """A valid question the study has no answer for: Llama-3-70B's shape (its published config.json), beyond the
    sizes any prediction was checked against, on 8 x H100 (every catalog setting has an answer)."""
    path = tmp_path / "llama-70b" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
                                "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 80,
                                "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}))
    return ["--model", str(path), "--tokens", "3e11", "--seq-len", "2048", "--gpu", "h100-80gb", "--gpus", "8"]


def test_no_answer_exits_1_in_estimate_cost_and_export(tmp_path, capsys):
    """One rule (README): a valid question without an answer prints why and exits 1; bad input exits 2."""
    setting = _unanswered(tmp_path)
    for argv in (["estimate", *setting], ["cost", *setting], ["export", "--best", *setting, "--out", str(tmp_path / "x")]):
        assert _exit(argv) == 1, argv
        said = capsys.readouterr()
        assert "no answer" in said.out + said.err and "Traceback" not in said.err
        assert _exit([*argv, "--json"]) == 1
        doc = strict_json(capsys.readouterr().out)
        assert doc["answer"]["kind"] == "none", argv
    assert not (tmp_path / "x").exists()


def _options(command: str) -> set[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {o for a in sub.choices[command]._actions for o in a.option_strings}


@pytest.mark.parametrize("argv", [
    ["remeasure", "--out", "RESULTS"],
    ["bench", *TINY[:6], "--methods", "naive", "--out", "OUT"],
    ["sweep", *TINY[:6], "--preset", "naive", "--out", "OUT"],
    ["profile", *TINY[:6], "--methods", "naive", "--micro-batch", "2", "--out", "PROFILES"],
    ["notebook", "--setup", "mine", "--gpu", "h100-80gb", "--models", "pythia-160m", "--output-root", "ROOT"],
])
def test_without_a_gpu_the_hint_names_only_options_the_command_takes(argv, tmp_path, monkeypatch, capsys):
    """``remeasure`` with no GPU named ``--tiny --device cpu``, which it does not take."""
    from academic_bench.launch import processes

    monkeypatch.setattr(processes, "no_gpu_reason", lambda: "nvidia-smi is not installed")
    results = tmp_path / "r" / "results.jsonl"
    results.parent.mkdir()
    results.write_text("")
    paths = {"RESULTS": str(results), "OUT": str(tmp_path / "o.jsonl"), "PROFILES": str(tmp_path / "p.jsonl"),
             "ROOT": str(tmp_path / "runs")}
    assert _exit([paths.get(a, a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "no GPU here" in err
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", err))
    assert named and named <= _options(argv[0]), named - _options(argv[0])


def test_a_first_config_json_prints_no_library_notice(tmp_path):
    """Building a config.json's model the first time (transformers, torch, torchao on import) printed two torch
    deprecation notices on stderr; the command's own output is all there is."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
                                  "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
                                  "vocab_size": 256, "max_position_embeddings": 64}))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    for seq_len in ("64", "32"):  # the shape read and the model built; then, shape kept, its facts at a new length
        done = subprocess.run([sys.executable, "-m", "academic_bench", "estimate", "--model", str(config),
                               "--tokens", "1e9", "--seq-len", seq_len, "--gpu", "h100-80gb", "--gpus", "1"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert done.returncode in (0, 1) and "study's answer" in done.stdout
        assert done.stderr == "", done.stderr
