"""The probe that tells a validation miss of the data path from one of the extrapolation
(``scripts/offline-gpu/data_path_probe.py``), run on the CPU with a tiny model: one record per round with the
extrapolated step, the steps fed by micro-batches pinned in advance and by the DataLoader at each worker count asked
for (``u8:N``: over uint8 images, normalised on the device), and each one's error against the extrapolation,
written where ``$OUT`` says."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(300)
def test_the_probe_times_one_model_fed_four_ways_and_writes_each_ones_error(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PROBE_DEVICE": "cpu", "PROBE_TINY": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "scripts/offline-gpu/data_path_probe.py"), "vit-large@bf16",
                           "naive", "2", "1", "1", "2", "u8:1"], env=env, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads((tmp_path / "data-path-vit-large_bf16-naive.json").read_text())
    assert out["model"] == "vit-large@bf16" and len(out["rounds"]) == 1
    rec = out["rounds"][0]
    for way in ("pinned", "loader_1", "loader_2", "loader_u8_1"):
        steps = rec[f"{way}_steps_s"]
        assert len(steps) == 3 and all(s > 0 for s in steps)
        assert rec[f"error_{way}"] == pytest.approx(rec["extrapolated_step_s"] / statistics.median(steps) - 1)
