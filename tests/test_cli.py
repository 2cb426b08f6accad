"""The ``academic-bench`` command: models, gpus, space and estimate, and its errors for people (exit 2).

Runs in-process through ``academic_bench.cli.main`` and once as ``python -m academic_bench`` in a subprocess.
"""
from __future__ import annotations

import itertools

import json
import subprocess
import sys
from pathlib import Path

import pytest

from academic_bench import estimate as est
from academic_bench.cli import main
from academic_bench.catalog.hardware import catalog as gpu_catalog
from academic_bench.catalog.models import CATALOG

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv: str):
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


# --- models, gpus, space ---------------------------------------------------------------------------------

def test_models_lists_the_catalog(capsys) -> None:
    rc, out, _ = run(capsys, "models")
    assert rc == 0
    assert all(key in out for key in CATALOG)
    rows = run_json(capsys, "models")
    assert [r["model"] for r in rows] == list(CATALOG)
    assert {r["steps"] for r in rows if r["model"].startswith("pythia")} == {143_000}


def test_gpus_lists_every_gpu_the_answer_knows_the_measured_first(capsys) -> None:
    from academic_bench.catalog.hardware import every_gpu

    rc, out, _ = run(capsys, "gpus")
    assert rc == 0 and all(key in out for key in every_gpu())
    rows = run_json(capsys, "gpus")
    assert {r["gpu"] for r in rows} == set(every_gpu())
    measured = [r["measured"] == "yes" for r in rows]
    assert {r["gpu"] for r in rows if r["measured"] == "yes"} == set(gpu_catalog())
    assert measured == sorted(measured, reverse=True)  # the study's GPUs first
    assert {r["gpu"]: r["bf16 TFLOP/s"] for r in rows}["v100-32gb"] is None  # no bf16 before Ampere


@pytest.mark.parametrize("n,valid,excluded", [(1, 12, 12), (2, 22, 2), (8, 22, 2)])
def test_space_counts_match_appendix_f(capsys, n: int, valid: int, excluded: int) -> None:
    # Paper Appendix F: 12 valid memory-saving combinations on one GPU, 22 on more.
    data = run_json(capsys, "space", "--model", "pythia-1b", "--gpus", str(n))
    assert (len(data["valid"]), len(data["excluded"])) == (valid, excluded)
    assert all(r["reason"] for r in data["excluded"])
    rc, out, _ = run(capsys, "space", "--model", "pythia-1b", "--gpus", str(n), "--gpu", "a100-80gb")
    assert rc == 0 and f"{valid} valid" in out


# --- estimate --------------------------------------------------------------------------------------------

def test_estimate_prints_days_memory_micro_batch_and_feasibility(capsys) -> None:
    rc, out, err = run(capsys, "estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "8",
                       "--methods", "free-lunch+zero3")
    assert rc == 0, err
    for text in ("the study's answer", "  settings  ", "  rests on  ", "  lower bound  ", "weights",
                 "gradients", "optimizer states", "activations", "overhead", "total", "Max micro-batch",
                 "Feasible: yes"):
        assert text in out, text
    assert "assumed" not in out  # no answer at an assumed MFU


def test_estimate_cost_and_plan_print_the_answer_in_the_same_words(capsys) -> None:
    """One printer (``cli.args.answer_lines``): the lines after the head (settings, how to write them, what the
    answer rests on, its checked error, the paper's days, the lower bound) are the same in each command."""
    def block(out: str, head: str) -> list[str]:
        lines = out.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith(head))
        assert lines[start].endswith(a.headline())
        return list(itertools.takewhile(lambda line: line.startswith("  ") and not line.startswith("  purchase"),
                                        lines[start + 1:]))

    from academic_bench.answer import answer

    a = answer("pythia-1b", "a100-80gb", 4)
    estimate = block(run(capsys, "estimate", "--model", "pythia-1b", "--gpu", "a100-80gb", "--gpus", "4")[1],
                     "Pythia-1B on 4 x")
    cost_block = block(run(capsys, "cost", "--model", "pythia-1b", "--gpu", "a100-80gb", "--gpus", "4")[1],
                       "pythia-1b on 4 x a100-80gb")
    assert estimate == cost_block and len(estimate) >= 4
    assert any(a.rests_on in line for line in estimate) and any("lower bound" in line for line in estimate)


def test_estimate_json_agrees_with_the_python_api(capsys) -> None:
    d = run_json(capsys, "estimate", "--model", "pythia-410m", "--gpu", "a100-80gb", "--gpus", "4",
                 "--mfu", "0.5")
    assert d["methods"] == "free-lunch"
    assert d["what_if"]["days"] == pytest.approx(est.analytic_days("pythia-410m", "a100-80gb", 4, 0.5))
    assert d["days_analytic"]["lower_bound"] == pytest.approx(d["what_if"]["days"] * 0.5)
    assert d["flops"]["total"] == pytest.approx(est.total_flops("pythia-410m"))
    assert d["fits"] and d["micro_batch"] == d["max_micro_batch"]
    parts = ("weights", "gradients", "optimizer_states", "activations", "buffers", "overhead")
    assert d["memory_gib"]["total"] == pytest.approx(sum(d["memory_gib"][k] for k in parts))
    assert d["memory_gib"]["total"] <= d["usable_gib"]


def test_estimate_with_a_micro_batch_that_does_not_fit_says_why_and_what_fits(capsys) -> None:
    d = run_json(capsys, "estimate", "--model", "pythia-1b", "--gpu", "rtx3090", "--gpus", "1",
                 "--methods", "naive", "--micro-batch", "64")
    assert not d["fits"] and d["micro_batch"] == 64
    assert "does not fit" in d["reason"] and "activations" in d["reason"]
    assert d["alternatives"], "some valid combination should fit a 1B model on 24 GB"
    rc, out, _ = run(capsys, "estimate", "--model", "pythia-6.9b", "--gpu", "rtx3090", "--gpus", "1")
    # no answer for this setting: printed in full, and exit 1 (EXIT_NO_ANSWER), as cost and export
    assert rc == 1 and "Feasible: no" in out and "not even 1" in out and "Predicted to fit instead" in out


def test_estimate_rejects_an_offload_without_sharding_with_the_rule_and_the_choices(capsys) -> None:
    rc, _, err = run(capsys, "estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "2",
                     "--methods", "free-lunch+offload")
    assert rc == 2
    assert "offloading is only allowed when sharding is enabled" in err
    assert "Valid --methods on 2 GPU(s)" in err and "free-lunch+ckpt+zero3+offload" in err


def test_estimate_rejects_sharding_without_offload_on_one_gpu(capsys) -> None:
    rc, _, err = run(capsys, "estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1",
                     "--methods", "free-lunch+zero2")
    assert rc == 2
    assert "sharding is a no-op on one GPU" in err and "free-lunch+zero2+offload" in err


# --- errors for people -----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv,names", [
    (["estimate", "--model", "gpt-5", "--gpu", "h100-80gb", "--gpus", "1"], ["unknown model", "pythia-160m"]),
    (["estimate", "--model", "pythia-1b", "--gpu", "tpu-v5", "--gpus", "1"], ["unknown GPU", "h100-80gb"]),
    (["estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "0"], ["--gpus must be at least 1"]),
    (["estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "turbo"],
     ["unknown method", "free-lunch", "ckpt"]),
    (["estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--micro-batch", "3"],
     ["must divide the per-GPU batch", "1024"]),
    (["estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "3"], ["does not divide over 3"]),
    (["estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--mfu", "0"], ["--mfu"]),
    (["space", "--model", "gpt-5", "--gpus", "1"], ["unknown model", "vit-large"]),
    (["space", "--model", "pythia-1b", "--gpus", "0"], ["--gpus must be at least 1"]),
    (["space", "--model", "pythia-1b", "--gpus", "1", "--gpu", "v100"], ["unknown GPU", "a100-80gb"]),
])
def test_bad_input_exits_2_naming_the_valid_choices(capsys, argv: list[str], names: list[str]) -> None:
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    for name in names:
        assert name in err, (name, err)


def test_missing_required_arguments_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["estimate", "--model", "pythia-1b"])
    assert exc.value.code == 2
    assert "--gpu" in capsys.readouterr().err


# --- as a program ----------------------------------------------------------------------------------------

def test_python_dash_m_runs_estimate() -> None:
    ok = subprocess.run([sys.executable, "-m", "academic_bench", "estimate", "--model", "roberta-large",
                         "--gpu", "a6000", "--gpus", "2", "--json"], cwd=ROOT, capture_output=True, text=True,
                        timeout=300)
    assert ok.returncode == 0, ok.stderr
    d = json.loads(ok.stdout)
    assert d["model"] == "roberta-large" and d["n_gpus"] == 2 and d["max_micro_batch"] is not None


def test_a_reader_that_stops_early_gets_no_traceback():
    """`academic-bench models | head -1`: the reader closes the pipe; the command ends quietly with status 0."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "academic_bench", "models"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # before the command writes: its first write meets a closed pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
