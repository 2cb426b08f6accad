"""The GPU plan for the switches beyond the paper (``notebooks/runs/h100x1/evidence/beyond-paper.md``) is what
``scripts/offline-gpu/beyond_paper_plan.py`` prints, and every entry of it is one the bench command accepts:
each model with each switch that applies to it, and each method class validated once per setup."""
from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import pytest

from academic_bench.catalog.methods import BEYOND_SWITCHES, parse_methods, validation_class
from academic_bench.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "notebooks/runs/h100x1/evidence/beyond-paper.md"
SETUPS = [("h100x1", "h100-80gb"), ("h200x1", "h200")]


def script():
    spec = importlib.util.spec_from_file_location("beyond_paper_plan", ROOT / "scripts/offline-gpu/beyond_paper_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def plans():
    mod = script()
    return {setup: mod.plan(setup, gpu) for setup, gpu in SETUPS}


@pytest.mark.parametrize("setup, gpu", SETUPS)
def test_the_kept_plan_is_the_scripts(plans, setup, gpu):
    entries, left_out = plans[setup]
    shown = 'BENCH="' + ";\n".join(entries) + '"'
    assert shown in PLAN.read_text(), f"run scripts/offline-gpu/beyond_paper_plan.py {setup} {gpu} and update {PLAN}"
    assert all(f"# not measured: {line}" in PLAN.read_text() for line in left_out)


@pytest.mark.parametrize("setup, gpu", SETUPS)
def test_every_entry_is_a_bench_command_and_every_class_is_validated(plans, setup, gpu):
    entries, left_out = plans[setup]
    parser = build_parser()
    parsed = [parser.parse_args(["bench", "--gpu", gpu, "--gpus", "1", "--out", f"notebooks/runs/{setup}/results.jsonl",
                                 *shlex.split(e)]) for e in entries]
    measured = [a for a in parsed if not a.validate]
    validated = [a for a in parsed if a.validate]
    assert {a.validate for a in validated} == {3}
    classes = {validation_class(parse_methods(a.methods), 1) for a in measured if parse_methods(a.methods).beyond_paper}
    assert sorted(validation_class(parse_methods(a.methods), 1) for a in validated) == sorted(classes)
    for model in ("pythia-160m", "pythia-1b", "pythia-2.8b", "pythia-6.9b"):
        mine = {a.methods for a in measured if a.model == model}
        said = {s for s in BEYOND_SWITCHES if any(line.startswith(f"{model} free-lunch+{s}:") for line in left_out)}
        assert {f"free-lunch+{s}" for s in BEYOND_SWITCHES} - mine == {f"free-lunch+{s}" for s in said}, model
    decoder = [a for a in measured if a.model.endswith("llama-3.2-1b/config.json")]
    assert decoder and all(a.out == f"notebooks/runs/{setup}/evidence/decoders/results.jsonl" for a in decoder)
    assert {f"free-lunch+{s}" for s in BEYOND_SWITCHES} <= {a.methods for a in decoder}
