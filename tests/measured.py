"""Fields of a synthetic measured row that agree with themselves: phase times that give its step, and the figures
the study derives from them (``measure.extrapolation.step_figures``), as every reader now re-derives them.

    make_row(config, setup=..., outcome="ok", **measured_fields(config, 8, mfu=0.4))
"""
from __future__ import annotations

import pytest

from academic_bench.catalog.config import Config
from academic_bench.measure.extrapolation import model_flops_per_step, peak_flops, step_figures


def step_at_mfu(config: Config, mfu: float) -> float:
    """The step time at which ``config`` runs at ``mfu`` of its GPUs' dense peak."""
    return model_flops_per_step(config) / (mfu * config.n_gpus * peak_flops(config))


def measured_fields(config: Config, micro_batch: int, *, step: float | None = None, mfu: float | None = None,
                    timing: str = "synced", n: int = 5) -> dict:
    """micro_batch, gas, times and every derived figure of a row whose step is ``step`` seconds (or runs at
    ``mfu``): a tenth of it the optimizer step, the rest shared by the micro-steps."""
    if (step is None) == (mfu is None):
        raise ValueError("give the step time or the MFU")
    step = step_at_mfu(config, mfu) if step is None else step
    gas = config.per_gpu_batch // micro_batch
    optimizer = step / 10
    micro = (step - optimizer) / gas
    phases = {"boundary": micro, "optimizer": optimizer}
    if timing == "synced":
        phases.update({"accumulate_first": micro} if gas >= 2 else {}, **({"accumulate": micro} if gas >= 3 else {}))
    stats = {k: {"median": v, "min": v, "max": v, "n": n, "mean": v} for k, v in phases.items()}
    return {**step_figures(config, micro_batch, phases, phases, phases, timing), "times": stats}


@pytest.fixture
def typed_figures(monkeypatch):
    """For tests of what readers do with a row's figures, on synthetic rows whose figures are typed in (no phase
    times behind them): readers take them as given. What re-deriving them rejects is tested on rows of their own
    (test_check_run, test_export, test_trust)."""
    from academic_bench.answer import export
    from academic_bench.analysis import frame

    monkeypatch.setattr(frame, "rejection", lambda row: None)
    monkeypatch.setattr(export, "rejection", lambda row: None)
