"""The fit of what each switch beyond the paper changes in the work model's step (``switch_work``, whose docstring
says what is fitted) to the study's measured rows of each switch alone on the catalog decoders."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping

import numpy as np
import pandas as pd

from ..catalog.methods import FREE_LUNCH
from .decoder_work import predict_on_setup
from .switch_work import FITTED, block_share

if TYPE_CHECKING:
    from .work_evidence import Evidence


def _switch_rows(runs: pd.DataFrame, points: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per fitted switch: the counted rows of it alone on free-lunch, one GPU, of a profiled catalog decoder."""
    from ..analysis import results
    from ..analysis.beyond import switch_alone

    rows = results(runs, beyond_paper=True)
    rows = rows[(rows["n_gpus"] == 1) & rows["setup"].isin(set(points["setup"]))
                & rows["model"].isin(set(points["model"]))]
    out = {}
    for switch in FITTED:
        out[switch] = rows[rows["methods_label"] == switch_alone(switch).label()]
    return out


def base_scale(runs: pd.DataFrame, points: pd.DataFrame, setup: str, model: str, evidence) -> float:
    """The model's fastest measured free-lunch step on ``setup`` over the work model's prediction of it (1 where
    none is measured): the work model's own error for that decoder there."""
    from ..analysis import results

    paper = results(runs)
    free = paper[(paper["setup"] == setup) & (paper["model"] == model) & (paper["n_gpus"] == 1)
                 & (paper["methods_label"] == FREE_LUNCH.label())].sort_values("step_time_s")
    if free.empty:
        return 1.0
    r = free.iloc[0]
    p = predict_on_setup(model, setup, points, int(r["micro_batch"]), int(r["gas"]), evidence=evidence)
    return float(r["step_time_s"]) / p.step_s


def fit_switches(runs: pd.DataFrame, points: pd.DataFrame, evidence) -> dict[str, dict]:
    """Per switch of ``FITTED`` with enough counted rows in ``runs``: what it changes (``fit``), each row's kinds
    scaled by its decoder's measured free-lunch step over the work model's (``base_scale``)."""
    return fit(_switch_rows(runs, points), points, evidence,
               lambda setup, model: base_scale(runs, points, setup, model, evidence))


def fitted_model(root: str | None = None) -> tuple[pd.DataFrame, "Evidence"]:
    """The work model as the runs under ``root`` give it: its calibration points and its evidence, with what each
    switch beyond the paper changes fitted after the points (``fit_switches``)."""
    from dataclasses import replace

    from ..analysis import profiles, runs_frame
    from .decoder_work import calibration_points
    from .work_evidence import runs_evidence

    evidence = runs_evidence(root)
    points = calibration_points(profiles(root), evidence)
    return points, replace(evidence, switches=fit_switches(runs_frame(root), points, evidence))


def fit(rows_by_switch: Mapping[str, pd.DataFrame], points: pd.DataFrame, evidence,
        scale: Callable[[str, str], float]) -> dict[str, dict]:
    """Per switch with at least as many rows (setup, model, micro_batch, gas, step_time_s) as unknowns: its fitted
    shares (module docstring), ``rows``, how many rows they come from, and ``max_error``, the largest relative
    error of the fit on them. ``scale(setup, model)`` multiplies the work model's seconds of that decoder there."""
    fitted = {}
    for switch, rows in rows_by_switch.items():
        unknowns = FITTED[switch]
        if len(rows) < len(unknowns):
            continue
        lhs, rest, measured = [], [], []
        for r in rows.itertuples():
            p = predict_on_setup(r.model, r.setup, points, int(r.micro_batch), int(r.gas), evidence=evidence)
            s = {k: v * scale(r.setup, r.model) for k, v in p.seconds.items()}
            changed = [s["loss"]] if switch == "fused-ce" else [s["matmul"] * block_share(r.model), s["memory"]]
            lhs.append(changed)
            # The step without the part the switch changes: for FP8 its casts come on top of the memory kind.
            rest.append(sum(s.values()) - changed[0])
            measured.append(float(r.step_time_s))
        a, rest_s, m = np.array(lhs), np.array(rest), np.array(measured)
        if switch == "fused-ce":  # a median share: one row's error in the rest of the step does not swing it
            x = np.array([float(np.clip(np.median((m - rest_s) / a[:, 0]), 0.0, 1.0))])
        else:
            x = np.linalg.lstsq(a, m - rest_s, rcond=None)[0]
        fitted[switch] = {**{k: float(v) for k, v in zip(unknowns, x)}, "rows": int(len(rows)),
                          "max_error": float(np.max(np.abs((a @ x + rest_s) / m - 1)))}
    return fitted
