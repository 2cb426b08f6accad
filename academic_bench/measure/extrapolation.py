"""From phase times to the row's numbers: the step time rebuilt from the phases' medians, throughput, MFU, days,
and the memory model's prediction beside the measured peak."""
from __future__ import annotations

import statistics

from ..config import Config
from ..units import days_for
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
    from ..hardware import get_gpu

    return get_gpu(cfg.gpu).peak_flops(cfg.recipe.precision, tf32=cfg.methods.tf32)


def extrapolate(cfg: Config, mbs: int, phases: dict[str, list[float]], timing: str) -> dict:
    """Step time from phase medians, and what follows from it: throughput, MFU, days."""
    gas = cfg.per_gpu_batch // mbs
    med = {k: statistics.median(v) for k, v in phases.items() if v}
    if timing == "unsynced":  # the paper: every micro-step timed as a synchronizing one, means not medians
        mean = {k: statistics.fmean(v) for k, v in phases.items()}
        step = mean["boundary"] * gas + mean["optimizer"]
        spread = [min(phases["boundary"]) * gas + min(phases["optimizer"]),
                  max(phases["boundary"]) * gas + max(phases["optimizer"])]
    else:  # the first accumulating micro-step once, the steady one GAS - 2 times (``step_phases``)
        def rebuilt(t: dict[str, float]) -> float:
            return (t.get("accumulate_first", 0.0) + max(gas - 2, 0) * t.get("accumulate", 0.0) + t["boundary"]
                    + t["optimizer"])

        step = rebuilt(med)
        spread = [rebuilt({k: min(v) for k, v in phases.items() if v}),
                  rebuilt({k: max(v) for k, v in phases.items() if v})]
    r = cfg.recipe
    flops, peak = model_flops_per_step(cfg), peak_flops(cfg)
    mfu = flops / (step * cfg.n_gpus * peak) if flops and peak else None
    days = days_for(r.steps, step)
    return {"micro_batch": mbs, "gas": gas, "step_time_s": step, "step_time_spread": spread,
            "throughput": r.global_batch * r.items_per_sample / step, "throughput_unit": f"{r.unit}/s",
            "model_flops_per_step": flops, "peak_flops": peak, "mfu": mfu,
            "days": days, "gpu_days": days * cfg.n_gpus,
            "times": {k: summary(v) for k, v in phases.items() if v}}


def predicted_memory_gb(cfg: Config, mbs: int) -> float | None:
    """The memory model's prediction of peak allocated memory (comparable with max_memory_allocated)."""
    try:
        from ..estimate import predict_memory

        return predict_memory(cfg, mbs).allocated / 1e9
    except Exception:  # noqa: BLE001  (the prediction is reported beside the measurement, never required)
        return None
