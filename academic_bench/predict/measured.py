"""The study's answer to "how many days on my GPUs, with which settings, at what cost?": one row per setup and
model, with days only where the smart search of that setting is complete (``analysis.coverage``).
"""
from __future__ import annotations

import math

import pandas as pd

from ..analysis import SETTING, coverage, fastest, measured_rows, mfu_on_dense16, model_label, results
from ..cost import cloud_cost, setup_label

ANSWER_COLUMNS = ["setup", "model", "gpu", "n_gpus", "model_name", "hardware", "status", "days", "gpu_days",
                  "methods_label", "micro_batch", "gas", "mfu", "cloud_usd"]
ANSWERED = ("search complete", "no configuration fits")  # the statuses whose row answers "how many days, how"
_ANSWER_STATUS = {"complete": "search complete", "no configuration fits": "no configuration fits",
                  "measured, search unfinished": "search unfinished", "failed": "search failed"}


def _cloud_usd(gpu: str, n_gpus: int, days: float) -> float:
    """Renting the GPUs on demand for ``days`` (``cost.cloud_cost``); NaN where no price is listed for the GPU."""
    try:
        return cloud_cost(gpu, n_gpus, days)
    except ValueError:
        return math.nan


def answers(df: pd.DataFrame, skipped: pd.DataFrame) -> pd.DataFrame:
    """Per setup (GPU x count) and model with any synced step row: how many days pre-training takes with the
    fastest configuration measured (``results``), its methods, micro-batch and MFU, and ``cloud_usd``, renting
    the GPUs on demand for those days (GPU-hours x the default price per GPU-hour, ``cost.cloud_cost``).

    Only a setting whose smart search is ``complete`` (``coverage``) has them (``status`` "search complete"): a
    fastest-so-far is no optimum. The other statuses hold no days: "no configuration fits" (the smart search
    found none that fits memory), "search unfinished" (configurations still to run), "search failed", "naive
    only" (the smart search has not run, the naive baseline has), "smart search not run", "no valid result"
    (complete, but no row counts as a result) and "fastest not validated" (complete, but its fastest measurement
    is of a method class the engine revision that made it did not validate: the optimum is not established, and
    the fastest validated row is no answer). ``ANSWERED`` are the statuses that answer the question. Models in
    catalog order (``models.model_rank``), then setups."""
    if df.empty:
        return pd.DataFrame(columns=ANSWER_COLUMNS)
    cov = coverage(df, skipped).set_index(["setup", "model", "search"])["status"]
    key = ["setup", *SETTING]
    best = fastest(results(df), key)
    best = best.assign(mfu=mfu_on_dense16(best)).set_index(key)  # the one basis every shown MFU has
    quickest = fastest(measured_rows(df), key).set_index(key)  # counted or not
    tried = df[(df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"].astype(bool)
               & (df["outcome"] != "invalid")]
    rows = []
    for (setup, model, gpu, n), _ in tried.groupby(key, sort=True):
        smart = cov.get((setup, model, "smart"), "not run yet")
        naive = cov.get((setup, model, "naive"), "not run yet")
        status = _ANSWER_STATUS.get(smart) or ("naive only" if naive != "not run yet" else "smart search not run")
        b = best.loc[(setup, model, gpu, n)] if (setup, model, gpu, n) in best.index else None
        if status == "search complete" and b is None:
            status = "no valid result"
        elif status == "search complete" and quickest.loc[(setup, model, gpu, n), "config_id"] != b["config_id"]:
            status = "fastest not validated"
        row = {"setup": setup, "model": model, "gpu": gpu, "n_gpus": int(n), "model_name": model_label(model),
               "hardware": setup_label(gpu, int(n)), "status": status}
        if status == "search complete":
            row.update({c: b[c] for c in ("days", "gpu_days", "methods_label", "micro_batch", "gas", "mfu")},
                       cloud_usd=_cloud_usd(gpu, int(n), float(b["days"])))
        rows.append(row)
    out = pd.DataFrame(rows, columns=ANSWER_COLUMNS)
    for col in ("n_gpus", "micro_batch", "gas"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("Int64")
    for col in ("days", "gpu_days", "mfu", "cloud_usd"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("float64")
    from ..catalog.models import model_rank  # the catalog loads torch: only when the answer is computed

    order = out["model"].map(model_rank)
    return out.assign(_rank=order).sort_values(["_rank", "setup"], kind="stable").drop(columns="_rank") \
        .reset_index(drop=True)
