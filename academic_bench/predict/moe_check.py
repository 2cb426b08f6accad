"""The mixtures of experts measured on one GPU, each beside the estimate committed before it ran.

Each setup's ``evidence/moe/NAME/estimate.json`` is ``academic-bench estimate --model .../NAME/config.json --json``
for that setup's GPU, written before any of NAME's rows there; ``evidence/moe/results.jsonl`` holds the rows (the
configs themselves live in h100x1's ``evidence/moe/``). An estimate speaks for a row only where the row ran the
settings the estimate's answer chose; rows of other settings (naive, bf16 weights) are shown without one. The
experts' kernel that ran is each row's ``ran.experts``: rows made before the study ran torch's grouped GEMM at the
autocast dtype say ``grouped_mm`` and ran transformers' fallback (``measure.experts``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

COLUMNS = ["model", "setup", "gpu", "methods", "experts", "weights", "micro_batch", "measured_step_s",
           "validated_error", "estimated_step_s", "estimated_low_s", "estimated_high_s", "estimated_methods",
           "error", "outcome", "reason"]


def _estimate(folder: Path) -> dict | None:
    path = folder / "estimate.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    answer, steps = data.get("answer") or {}, data["flops"]["steps"]
    if answer.get("days") is None:
        return None
    per_step = 86400 / steps
    return {"estimated_step_s": answer["days"] * per_step, "estimated_low_s": answer["days_low"] * per_step,
            "estimated_high_s": answer["days_high"] * per_step,
            "estimated_methods": (answer.get("settings") or {}).get("methods")}


def moe_measured(root: str | os.PathLike | None = None) -> pd.DataFrame:
    """Every mixture-of-experts row of every setup (``COLUMNS``), in the order measured; ``error`` is the
    estimate's step over the measured one, minus 1, where the estimate speaks for the row."""
    from ..analysis import runs_root
    from ..catalog.methods import Methods, methods_spec
    from ..results.store import read_lines

    base = Path(root) if root is not None else runs_root()
    out = []
    for results in sorted(base.glob("*/evidence/moe/results.jsonl")):
        folder = results.parent
        for _, r in read_lines(results):
            name = r["config"]["model"].split("@")[0]
            methods = methods_spec(Methods(**r["config"]["methods"]))
            ran, validate = r.get("ran") or {}, r.get("validate") or {}
            est = _estimate(folder / name) or {}
            speaks = est.get("estimated_methods") == methods and r["outcome"] == "ok"
            step = r.get("step_time_s")
            out.append({"model": name, "setup": r.get("setup"), "gpu": r["config"]["gpu"], "methods": methods,
                        "experts": ran.get("experts"), "weights": ran.get("weights"),
                        "micro_batch": r.get("micro_batch"), "measured_step_s": step,
                        "validated_error": validate.get("rel_error"),
                        **(est if speaks else {}),
                        "error": est["estimated_step_s"] / step - 1 if speaks and step else None,
                        "outcome": r["outcome"], "reason": r.get("reason") or ""})
    return pd.DataFrame(out, columns=COLUMNS)
