"""The loss-parity script (``scripts/offline-gpu/loss_parity.py``) as a dry run on the CPU: free-lunch's CPU twin
against it with a switch beyond the paper, the same weights and batches, the tolerance stated, the curves kept."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "offline-gpu" / "loss_parity.py"


def dry_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PROBE_DEVICE": "cpu", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)


def script():
    spec = importlib.util.spec_from_file_location("loss_parity", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("switch", ["bf16w", "fp8-rowwise"])
def test_the_dry_run_trains_both_and_the_reference_twice_and_writes_the_curves_and_verdict(tmp_path, switch):
    if switch.startswith("fp8") and importlib.util.find_spec("torchao") is None:
        skip_or_fail("torchao is not installed (pip install -e '.[test]')")
    out = tmp_path / "parity" / f"{switch}.json"
    done = dry_run(tmp_path, switch, "3", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["switch"] == switch and r["dry_run"] and r["device"] == "cpu"
    assert r["methods"] == {"reference": "kernels", "switch": f"kernels+{switch}"}
    assert {k: len(v) for k, v in r["losses"].items()} == {"reference": 3, "switch": 3, "reference_repeat": 3}
    assert r["losses"]["reference_repeat"] == r["losses"]["reference"], "the same weights and batches: the same run"
    assert r["tolerance"]["relative"] == script().TOLERANCE and "within" in r["tolerance"]["rule"]
    assert r["passed"] == (r["largest_window_difference"] <= r["tolerance"]["relative"])
    assert "dry run on the CPU, no evidence" in done.stdout and r["tolerance"]["rule"] in done.stdout


def test_a_switch_that_cannot_run_on_the_cpu_or_is_unknown_stops_with_the_reason(tmp_path):
    done = dry_run(tmp_path, "fused-ce", "2")
    assert done.returncode == 2 and "CUDA GPUs only" in done.stderr
    done = dry_run(tmp_path, "turbo", "2")
    assert done.returncode == 2 and "bf16w, fused-ce, fp8-tensorwise, fp8-rowwise" in done.stderr
    assert not list(tmp_path.glob("*.json")), "nothing written"


def test_the_verdict_is_on_window_means():
    mod = script()
    ref = [10.0] * 20
    # one step 5% off inside a window of ten is 0.5% on the window's mean; a whole window 3% off is 3%
    assert max(mod.window_differences([10.5] + [10.0] * 19, ref)) == pytest.approx(0.005)
    assert mod.window_differences([10.0] * 10 + [10.3] * 10, ref) == pytest.approx([0.0, 0.03])
    assert mod.window_differences([10.0] * 5, [10.0] * 5, window=10) == [0.0], "a short run is one short window"


def test_the_batches_are_fresh_every_step_and_learnable():
    """Cycled batches were memorised to a loss near zero, where a relative difference means nothing; random tokens
    cannot be learned at all. The parity's data never repeat and follow a chain a model can learn."""
    mod = script()
    chain = mod.markov_chain(vocab=50304)
    batches = mod.markov_batches(chain, n=12, micro=2, seq=64)
    rows = {tuple(r.tolist()) for b in batches for r in b["input_ids"]}
    assert len(rows) == 24, "no sequence repeats"
    successors = chain[0]
    for b in batches:
        ids = b["input_ids"]
        assert (b["labels"] == ids).all()
        assert (successors[ids[:, :-1]] == ids[:, 1:, None]).any(-1).all(), "every next token is a successor"
    again = mod.markov_batches(chain, n=12, micro=2, seq=64)
    assert all(a["input_ids"].equal(b["input_ids"]) for a, b in zip(batches, again)), "the same for every run"
    import math
    assert 0 < mod.chain_entropy(chain) < math.log(mod.CHAIN_NEXT) < math.log(50304)
