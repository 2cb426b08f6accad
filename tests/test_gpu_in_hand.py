"""The GPU that ran: ``bench``, ``sweep`` and ``notebook`` refuse a ``--gpu`` other than the GPU in hand before any
work (exit 2, naming both), unless ``--allow-gpu-mismatch``, which every row then records; readers reject those
rows. The GPU in hand is faked here (nvidia-smi's answer), so these run on the CPU."""
from __future__ import annotations

import json

import pytest

from academic_bench.cli import bench as bench_cli
from academic_bench import cli
from academic_bench.catalog.env import GPU_MISMATCH_ENV, capture_env
from academic_bench.launch import gpu_in_hand
from academic_bench.results import ResultStore, device_fault, make_row

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def on_h100(monkeypatch):
    """A machine whose GPU is an H100 (as nvidia-smi and torch would say), and no override set."""
    import torch

    from academic_bench.catalog import env

    for module in (env, gpu_in_hand):
        monkeypatch.setattr(module, "gpu_info", lambda: (H100, "580.00"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(GPU_MISMATCH_ENV, "0")
    capture_env.cache_clear()
    yield
    capture_env.cache_clear()


def _no_work(*args, **kwargs):
    raise AssertionError("work started despite a GPU that is not the one named")


BENCH = ["bench", "--model", "pythia-160m", "--gpu", "h200", "--gpus", "1", "--methods", "naive"]
SWEEP = ["sweep", "--model", "pythia-160m", "--gpu", "h200", "--gpus", "1", "--preset", "naive"]


@pytest.mark.parametrize("argv", [BENCH, SWEEP], ids=["bench", "sweep"])
def test_another_gpu_than_the_one_in_hand_stops_before_any_work(on_h100, monkeypatch, tmp_path, capsys, argv):
    monkeypatch.setattr(bench_cli, "run", _no_work)
    monkeypatch.setattr(bench_cli, "run_sweep", _no_work)
    out = tmp_path / "results.jsonl"
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--gpu h200" in err and H100 in err and "h100-80gb" in err and "--allow-gpu-mismatch" in err
    assert not out.exists()


def test_profile_stops_before_profiling_and_offers_no_override(on_h100, monkeypatch, tmp_path, capsys):
    """A profile is filed under its ``--gpu``'s name and calibrates the work model there: another card's kernels
    would be read as that GPU's. ``profile`` has no override (its readers could not set such entries aside), so
    the message does not offer one."""
    from academic_bench.measure import profile

    monkeypatch.setattr(profile, "profile_step", _no_work)
    out = tmp_path / "h200x1" / "profiles.jsonl"
    argv = ["profile", "--model", "pythia-160m", "--gpu", "h200", "--gpus", "1", "--methods", "naive",
            "--micro-batch", "4", "--out", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "--gpu h200" in err and H100 in err and "pass --gpu h100-80gb" in err
    assert "--allow-gpu-mismatch" not in err
    assert not out.exists()


def test_the_notebook_stops_before_papermill_starts(on_h100, monkeypatch, tmp_path, capsys):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", _no_work)
    assert cli.main(["notebook", "--setup", "h200x1", "--gpu", "h200", "--models", "pythia-160m",
                     "--output-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "h200" in err and H100 in err
    assert not (tmp_path / "h200x1" / "benchmark.ipynb").exists()


def test_the_gpu_in_hand_passes(on_h100, monkeypatch, tmp_path):
    ran = []
    monkeypatch.setattr(bench_cli, "run", lambda config, **kw: ran.append(config) or make_row(
        config, setup=kw["setup"], outcome="error", reason="stub"))
    # The check passes and the run happens (the stub's row measured nothing: exit 1, not the refusal's 2).
    assert cli.main([*BENCH[:4], "h100-80gb", *BENCH[5:], "--out", str(tmp_path / "r.jsonl")]) == 1
    assert [c.gpu for c in ran] == ["h100-80gb"]


def test_an_override_runs_and_is_recorded_in_the_row_which_readers_reject(on_h100, monkeypatch, tmp_path):
    monkeypatch.setattr(bench_cli, "run", lambda config, **kw: make_row(config, setup=kw["setup"], outcome="error",
                                                                         reason="stub"))
    out = tmp_path / "h200x1" / "results.jsonl"
    assert cli.main([*BENCH, "--out", str(out), "--allow-gpu-mismatch"]) == 1  # ran; the stub measured nothing
    row = ResultStore(out).rows()[0]
    assert row["env"]["gpu_mismatch_allowed"] is True and row["env"]["gpu_name"] == H100
    fault = device_fault(row)
    assert fault is not None and "overridden" in fault.what and H100 in fault.what


def test_the_cpu_is_never_compared(on_h100):
    gpu_in_hand.check_gpu_in_hand("h200", "cpu")  # a tiny workshop run names a GPU it does not run on
