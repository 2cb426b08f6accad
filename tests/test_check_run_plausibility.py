"""``check-run`` warns, naming both figures, where a measured row is faster than the study's own prediction for its
configuration by more than the prediction's range: every phase of a row scaled by 0.85, consistently, so that
its figures re-derive from its phases (no error), is caught by the prediction from the other setups."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from academic_bench.cli import main
from academic_bench.measure.extrapolation import rederive
from academic_bench.results import row_faults, status_of
from academic_bench.results.trust import FIGURES

RUNS = Path(__file__).resolve().parents[1] / "notebooks/runs"
SETUP = "h200x1"
SCALE = 0.85


def _scaled(value, factor: float):
    if isinstance(value, dict):
        return {k: (v if k == "n" else _scaled(v, factor)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scaled(v, factor) for v in value]
    return value * factor if isinstance(value, float) else value


def _forged(row: dict) -> dict:
    """``row`` with every phase time scaled and its figures re-derived from them, as the study derives them."""
    row = {**row, "times": _scaled(row["times"], SCALE)}
    again = rederive(row)
    row.update({k: again[k] for k in FIGURES if k != "mfu"})
    stored, today = row["model_flops_per_step"], again["model_flops_per_step"]
    row["mfu"] = again["mfu"] * stored / today  # the MFU of the count the row was written with (results.trust)
    return row


def test_a_row_faster_than_the_study_s_prediction_by_more_than_its_range_is_warned_with_both_figures(
        tmp_path, capsys):
    folder = tmp_path / SETUP
    (folder / "evidence").mkdir(parents=True)
    for name in ("results.skipped.jsonl", "benchmark.ipynb", "evidence/README.md"):
        shutil.copy(RUNS / SETUP / name, folder / name)
    rows = [json.loads(line) for line in (RUNS / SETUP / "results.jsonl").read_text().splitlines() if line.strip()]
    m = lambda r: r["config"]["methods"]  # noqa: E731
    at = max(i for i, r in enumerate(rows) if status_of(r) == "measured" and r["timing"] == "synced"  # the latest
             and r["mode"] == "step" and r["config"]["model"] == "pythia-1b" and m(r)["compile"]
             and m(r)["sharding"] == "none" and not m(r)["checkpointing"] and not m(r)["offload"])
    rows[at] = forged = _forged(rows[at])
    assert row_faults(forged) == []  # the forgery re-derives: no error of the row's own figures catches it
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    rc = main(["check-run", str(folder), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert rc in (0, None) and report["ok"]
    faster = [p for p in report["problems"] if "faster than the study's prediction" in p["what"]]
    assert [p["level"] for p in faster] == ["warning"]
    assert forged["config_id"] in faster[0]["where"]
    assert f"measured {forged['days']:,.2f} days" in faster[0]["what"] and "range" in faster[0]["what"]
