"""Steps the study measured at fixed micro-batches below a search's optimum, and the one a carried step starts from.

A search keeps the micro-batch that gives the shortest step, and the transfer model carries that step to another
GPU and micro-batch by charging the GPU's idle time per micro-step (``transfer.predict``). A smaller micro-batch
costs more than that charge: its kernels run less efficiently too, and the host keeps the GPU waiting longer
(``notebooks/runs/h100x1/evidence/encoders/``: RoBERTa-large's free-lunch step timed at micro-batches 4 to 32 on one
H100, after ``plan-microbatch.sh`` stated the charged steps, and profiled at each by ``plan-profiles.sh``;
``transfer_validation.idle_charge_check`` sets the two side by side).

Rows of ``academic-bench bench --micro-batch M`` kept apart from a setup's search (``<setup>/MICRO_BATCH_FILE``)
are such steps. A step carried to another micro-batch (a published run's, or the one the memory model fits on the
target) starts from the measured row of the same setup, model and methods whose micro-batch is nearest it
(``nearest_measured``), split by its own kernel profile where one exists (``transfer.source_from_row``,
``wall_from_step``), and the idle-time charge covers only the difference left. The rule rests on those measurements
alone; the published points only check it.
"""
from __future__ import annotations

import numbers
from functools import lru_cache

import pandas as pd

from .transfer import micro_batch_distance

MICRO_BATCH_FILE = "evidence/encoders/results-microbatch.jsonl"


def fixed_micro_batch_rows(root: str | None = None) -> pd.DataFrame:
    """The rows of every setup's ``MICRO_BATCH_FILE`` that count as results (``analysis.results``: read beside the
    setup's own rows, so that its validations of the method class speak for them), in the frame of
    ``analysis.runs_frame``. Cached per runs folder (``root``, else $ACADEMIC_BENCH_RUNS or the shipped runs): the
    frame is shared, read it without changing it."""
    from ..analysis import runs_root

    return _rows_in(str(runs_root(root).resolve()))


@lru_cache(maxsize=8)
def _rows_in(root: str) -> pd.DataFrame:
    from ..analysis import frame_from_rows, results, runs_frame, runs_root
    from ..results import ResultStore, rows_to_read

    extra = [r for path in sorted(runs_root(root).glob(f"*/{MICRO_BATCH_FILE}"))
             for r in rows_to_read(ResultStore(path).rows())]
    if not extra:
        return frame_from_rows([])
    ids = {r["config_id"] for r in extra}
    both = pd.concat([runs_frame(root), frame_from_rows(extra, checked=True)], ignore_index=True)
    counted = results(both)
    return counted[counted["config_id"].isin(ids)].reset_index(drop=True)


def nearest_measured(src: pd.Series, micro_batch: int, root: str | None = None) -> pd.Series:
    """``src`` (a search's row) or the fixed-micro-batch row of the same setup, model and methods whose micro-batch is
    nearest ``micro_batch`` by ratio (a tie goes to the larger, the search's side)."""
    if not (isinstance(micro_batch, numbers.Integral) and micro_batch >= 1):
        raise ValueError(f"a micro-batch is a whole number of samples, at least 1; got {micro_batch!r}")
    rows = fixed_micro_batch_rows(root)
    candidates = [src, *(r for _, r in rows[same_setting(rows, src)].iterrows())]
    return min(candidates, key=lambda r: (micro_batch_distance(int(r["micro_batch"]), micro_batch),
                                          -int(r["micro_batch"])))


def same_setting(frame: pd.DataFrame, row: pd.Series) -> pd.Series:
    """Which rows of ``frame`` are of ``row``'s setup, model, methods and GPU count (a boolean mask)."""
    return ((frame["setup"] == row["setup"]) & (frame["model"] == row["model"])
            & (frame["methods_label"] == row["methods_label"]) & (frame["n_gpus"] == row["n_gpus"]))
