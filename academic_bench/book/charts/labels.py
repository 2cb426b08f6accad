"""What a cell of ours may claim: a setting counts as optimised only where its smart search is complete.

``answers.answers`` gives each setup and model a status ("search complete", "naive only", "search unfinished",
...). The book's pages draw and tabulate our optimised numbers from ``optimised_runs`` only, and name the others
with ``unoptimised_note``, so a naive-only or unfinished setting is never shown as a fastest configuration.
"""
from __future__ import annotations

import pandas as pd

OPTIMISED = "search complete"


def search_status(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setup and model: ``answers.answers`` (status, and days etc. where the search is complete)."""
    from ...analysis import skipped_frame
    from ...predict.measured import answers

    return answers(runs, skipped_frame())


def optimised_runs(runs: pd.DataFrame, status: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of ``runs`` whose setup and model have a complete search (an optimum, not a fastest-so-far)."""
    status = search_status(runs) if status is None else status
    if runs.empty or status.empty:
        return runs.iloc[:0]
    keys = set(map(tuple, status.loc[status["status"] == OPTIMISED, ["setup", "model"]].to_numpy()))
    return runs[[(s, m) in keys for s, m in zip(runs["setup"], runs["model"])]]


def unoptimised(status: pd.DataFrame) -> pd.DataFrame:
    """The settings of ours that are not optimised (naive only, search unfinished, ...), with their status."""
    from ...predict.measured import ANSWERED

    return status[~status["status"].isin(ANSWERED)]


def unoptimised_note(status: pd.DataFrame) -> str:
    """A sentence naming the settings left out as not optimised, by status ("" when there are none)."""
    from .tables import count

    left = unoptimised(status)
    if left.empty:
        return ""
    by = left.groupby("status", sort=False)
    parts = [f"{s} ({', '.join(f'{n} on {h}' for n, h in zip(g['model_name'], g['hardware']))})" for s, g in by]
    return (f"{count(len(left), 'setting')} of ours are not optimised yet, so the tables of our days leave them "
            f"out and never count them as a fastest configuration: " + "; ".join(parts) + ".")


# --- one MFU basis for comparisons across methods -----------------------------------------------------------

from ...analysis import dense16_peak, mfu_on_dense16 as on_dense16  # noqa: E402,F401 (one definition, re-exported)


def peak_name(gpu: str, peak_flops: float) -> str:
    """Which of the GPU's peaks (fp32, tf32, bf16...) ``peak_flops`` is: the precision a run was rated at."""
    from ...catalog.hardware import catalog

    if peak_flops != peak_flops:
        return ""
    names = [k for k, v in catalog()[gpu].peak_tflops.items() if abs(v * 1e12 - peak_flops) < 1e9]
    return "/".join(names)


# --- the two clocks, compared per configuration ------------------------------------------------------------

def clock_ratio_summary(pairs: pd.DataFrame) -> dict:
    """What ``analysis.sync_pairs`` allows one to say: per configuration, its unsynchronised days over its
    synchronised days (a ratio of one configuration's own pair, never a ratio of two medians taken separately),
    and the median, least and most of that ratio over the configurations; ``middle`` is the configuration whose
    ratio is the median one (the lower middle for an even count)."""
    if pairs.empty:
        return {}
    ratio = pairs["days_unsynced"] / pairs["days_synced"]
    ordered = pairs.assign(ratio=ratio).sort_values(["ratio", "config_id"])
    return {"n": len(pairs), "median": float(ratio.median()), "least": float(ratio.min()),
            "most": float(ratio.max()), "middle": ordered.iloc[(len(ordered) - 1) // 2]}
