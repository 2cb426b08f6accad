"""The probe of one process measuring a model's configurations in turn (``scripts/offline-gpu/one_process_probe.py``),
run on the CPU with a tiny model: a first line for the process's start, then one line per configuration with its
outcome, step, search and the phases of its own wall time (``measure.wall``), each configuration's phases counted
afresh."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(300)
def test_the_probe_measures_each_configuration_in_turn_in_one_process(tmp_path):
    out = tmp_path / "pythia-160m.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "scripts/offline-gpu/one_process_probe.py"), "pythia-160m",
                           str(out), "cpu", "naive,naive+ckpt"], env=env, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-2000:]
    first, *lines = [json.loads(s) for s in out.read_text().splitlines()]
    assert first["model"] == "pythia-160m" and first["process_ready_s"] > 0
    assert [ln["methods"] for ln in lines] == ["naive", "naive + ckpt"]
    for ln in lines:
        assert ln["outcome"] == "ok" and ln["step_time_s"] > 0 and ln["micro_batch"]
        assert [ln["micro_batch"], "ok"] in ln["mbs_search"]  # the search's log kept: the size found ran in it
        spent = sum(ln["phases"].values())
        assert 0 < spent <= ln["measured_s"] + 1e-6  # each configuration's own phases, not the process's so far
