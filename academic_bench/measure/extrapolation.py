"""From phase times to the row's numbers: the step time rebuilt from the phases' medians, throughput, MFU, days,
and the memory model's prediction beside the measured peak."""
from __future__ import annotations

import statistics
from typing import Mapping

from ..catalog.config import Config
from ..catalog.units import days_for
from .timing import summary


def model_flops_per_step(cfg: Config) -> float | None:
    try:
        from ..estimate import model_flops_per_step as flops
    except ImportError:
        return None
    return flops(cfg.spec, tiny=cfg.tiny)


def peak_flops(cfg: Config) -> float | None:
    if cfg.tiny:
        return None
    from ..catalog.hardware import get_gpu

    return get_gpu(cfg.gpu).peak_flops(cfg.recipe.precision, tf32=cfg.methods.tf32)


def rebuilt_step(t: Mapping[str, float], gas: int, timing: str) -> float:
    """A step's time from one statistic per phase (``t``: phase -> seconds). Unsynced (the paper's way): every
    micro-step timed as a synchronizing one. Synced: the first accumulating micro-step once, the steady one
    GAS - 2 times, the boundary and the optimizer (``step_phases``). Where the first accumulating micro-step was not
    timed apart (engine revisions 1 and 2 averaged it into the steady phase) the steady one stands for it, as the
    extrapolation of those revisions did."""
    if timing == "unsynced":
        return t["boundary"] * gas + t["optimizer"]
    first = t.get("accumulate_first", t.get("accumulate", 0.0)) if gas >= 2 else 0.0
    return first + max(gas - 2, 0) * t.get("accumulate", 0.0) + t["boundary"] + t["optimizer"]


def step_figures(cfg: Config, mbs: int, center: Mapping[str, float], low: Mapping[str, float],
                 high: Mapping[str, float], timing: str) -> dict:
    """The row's numbers from per-phase statistics: the step (from ``center``: medians, or means for the
    unsynced timing), its spread (from the minima and maxima), throughput, MFU and days."""
    gas = cfg.per_gpu_batch // mbs
    step = rebuilt_step(center, gas, timing)
    r = cfg.recipe
    flops, peak = model_flops_per_step(cfg), peak_flops(cfg)
    mfu = flops / (step * cfg.n_gpus * peak) if flops and peak else None
    days = days_for(r.steps, step)
    return {"micro_batch": mbs, "gas": gas, "step_time_s": step,
            "step_time_spread": [rebuilt_step(low, gas, timing), rebuilt_step(high, gas, timing)],
            "throughput": r.global_batch * r.items_per_sample / step, "throughput_unit": f"{r.unit}/s",
            "model_flops_per_step": flops, "peak_flops": peak, "mfu": mfu,
            "days": days, "gpu_days": days * cfg.n_gpus}


def extrapolate(cfg: Config, mbs: int, phases: dict[str, list[float]], timing: str) -> dict:
    """Step time from phase medians (means for the unsynced timing), and what follows from it: throughput, MFU,
    days."""
    phases = {k: v for k, v in phases.items() if v}
    center = statistics.fmean if timing == "unsynced" else statistics.median
    return {**step_figures(cfg, mbs, {k: center(v) for k, v in phases.items()},
                           {k: min(v) for k, v in phases.items()}, {k: max(v) for k, v in phases.items()}, timing),
            "times": {k: summary(v) for k, v in phases.items()}}


def relative_error(predicted: float, sustained: float) -> float:
    """How far an extrapolated step is from the sustained one, as a fraction of the sustained step."""
    return (predicted - sustained) / sustained


def rederive(row: Mapping) -> dict:
    """A measured row's numbers again, from what its timing recorded (each phase's summary in ``times``, its
    micro-batch) and its configuration's recipe, through the same ``step_figures`` that wrote them; with a
    validation, its error from its sustained step. Raises KeyError/ValueError where the row lacks what they need."""
    cfg = Config.from_dict(row["config"])
    times = {k: v for k, v in (row.get("times") or {}).items() if v}
    stat = "mean" if row["timing"] == "unsynced" else "median"
    out = step_figures(cfg, int(row["micro_batch"]), {k: v[stat] for k, v in times.items()},
                       {k: v["min"] for k, v in times.items()}, {k: v["max"] for k, v in times.items()},
                       row["timing"])
    val = row.get("validate") or {}
    if val.get("sustained_step_s"):
        out["validate"] = {"predicted_step_s": out["step_time_s"],
                           "rel_error": relative_error(out["step_time_s"], val["sustained_step_s"])}
    return out


def predicted_memory_gb(cfg: Config, mbs: int) -> float | None:
    """The memory model's prediction of peak allocated memory (comparable with max_memory_allocated)."""
    try:
        from ..estimate import predict_memory

        return predict_memory(cfg, mbs).allocated / 1e9
    except Exception:  # noqa: BLE001  (the prediction is reported beside the measurement, never required)
        return None
