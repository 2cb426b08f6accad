"""The smart search's pruning: candidates that cannot fit or cannot win are skipped, each with its rule."""
from __future__ import annotations

from typing import Callable

import psutil

from ..catalog.config import Config
from ..catalog.hardware import get_gpu
from ..launch import DEFAULT_TIMEOUT_S
from ..catalog.methods import Methods, exclusion_reason
from ..estimate.stats import RECOMPUTE_FRACTION, recomputed_share
from .plans import saves_at_least, saves_more
from ..results import MFU_IMPLAUSIBLE, Spread, as_spread, is_not_run

FIT_MARGIN = 0.10  # skip as "cannot fit" only when the model predicts 10% more than the GPU holds


def _setting(c: Config) -> tuple:
    m = c.methods
    return (c.model, c.gpu, c.n_gpus, c.nodes, c.tiny, c.micro_batch, m.compile, m.kernels, m.tf32)



def oom_above_smallest(row: dict) -> bool:
    """Out of memory, but never tried at micro-batch 1: timed at a searched size above 1, or a search that could not
    go below a larger size (FP8 training's 16 with Pythia's sequences). It says nothing about smaller sizes."""
    if row["outcome"] != "oom" or row["config"].get("micro_batch") is not None:
        return False
    tried = [t["micro_batch"] for t in row.get("mbs_search") or []]
    return (row.get("micro_batch") or 0) > 1 or (bool(tried) and min(tried) > 1)


def _casts_weights(m: Methods) -> bool:
    """Whether the step casts fp32 weights to bf16 on every micro-step: PyTorch alone (DDP) autocasts them,
    where DeepSpeed's engine and FSDP's mixed precision run the forward and backward on bf16 weights, fp32
    masters kept for the optimizer (``measure.apply``)."""
    return not (m.uses_deepspeed or m.uses_fsdp)


def no_less_work(candidate: Methods, measured: Methods) -> bool:
    """Whether ``candidate``'s step does at least the work of ``measured``'s at the same micro-batch, beyond what
    saving more memory adds: both on bf16 weights, both casting, or a casting candidate beside a measured step on
    bf16 weights. Never a step on bf16 weights beside a casting one: at the same micro-batch ZeRO-1 + offload and
    free-lunch differ within the machine spread either way on the exhaustive searches that ran both, and a step
    through DeepSpeed or FSDP is other work, so it is measured. The switches beyond the paper change the
    micro-step's work either way (FP8 was slower than bf16 on Pythia-160M), so both must have the same ones. A
    step through the other sharding library is other work too: on one H100, Pythia-160M's ckpt + FSDP full-shard
    + offload ran faster than ZeRO-3 + offload, which saves less memory (h100x1/results.jsonl, 2026-12-06)."""
    return (_casts_weights(candidate) >= _casts_weights(measured)
            and candidate.beyond_switches() == measured.beyond_switches()
            and candidate.uses_deepspeed == measured.uses_deepspeed and candidate.uses_fsdp == measured.uses_fsdp)


def _power_of_two_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


class SmartPruner:
    """Skips candidates that cannot fit or cannot win, with a reason for each.

    Rules (candidates compared only within one setting: model, GPU, count, free-lunch switches):
    1. cannot fit: the memory model predicts that micro-batch 1 needs more than the GPU's memory (+10%), or
       that the states a node's ranks offload need more than the host memory of the machine running the sweep
       (seen on one H100 with 128 GiB: Pythia-6.9B's ZeRO-1 offload was killed by the out-of-memory killer);
    2. cannot fit: a measured configuration that saves at least as much memory ran out at micro-batch 1;
    3. cannot win: a measured configuration that saves less memory, through a library doing no more work per
       micro-step (``no_less_work``), already runs the whole per-GPU batch in one micro-batch (or the micro-batch
       is fixed), so more memory saving can only add overhead;
    4. cannot win: the memory model predicts no larger micro-batch than for such a measured configuration
       (predictions compared with predictions, so the model's bias cancels), so again only overhead;
    5. cannot finish: a configuration that saves less memory ran at least this sweep's time limit without a
       result. Saving more memory adds recomputation, transfers or communication, and lets the micro-batch
       search go on to larger sizes, so it would not finish within the same limit either (a retry with a longer
       ``timeout_s`` tries it again; the same saving through another library is still tried).
    6. cannot win (recompute): checkpointing adds one more forward of the checkpointed blocks
       (``estimate.stats.recomputed_share``), so it wins only if the larger micro-batch it allows raises the
       GPU's rate of hardware FLOPs by more than that. A measured configuration that saves less memory, of any
       library, ran the same model FLOPs at MFU ``u`` of the row's peak: to beat it beyond the spread, the
       checkpointed step would need hardware FLOPs at ``u x peak x (1 + recompute) x (1 + spread)`` per second,
       and ``ceiling(gpu)`` (the plateau of the GPU's bf16 matrix-product sweep, ``results.gemm.step_ceiling``)
       says its matrix products do not run that fast. Sharding or offloading beside checkpointing only adds
       time, so the bound holds for them too. Without a ceiling for the GPU the rule is off.
    Without the memory model (``estimate``), rules 1 and 4 are off and the summary says so.

    "Cannot win" means: cannot beat the other configuration by more than the machine-to-machine spread
    (``results.step_spreads``: the wider of the two steps' kinds, on the GPU alone or offloading to the host; one
    figure for both where ``spread`` is a number); inside it the two tie, and the tie goes to the cheaper setting,
    the one that saves less memory. Rules 3 and 4 compare a candidate only with a configuration whose step does no
    more work per micro-step (``no_less_work``): a step on bf16 weights (DeepSpeed, FSDP) is measured after
    free-lunch's autocast over fp32 weights, and judged by another step on bf16 weights (FSDP's offloading by
    DeepSpeed's).
    ``tests/test_smart_rules.py`` checks every rule against every shipped measurement.
    """

    def __init__(self, use_memory_model: bool = True, timeout_s: float = DEFAULT_TIMEOUT_S,
                 host_memory_gb: float | None = None, ceiling: Callable[[str], float | None] | None = None,
                 spread: Spread | float = 0.0) -> None:
        self.measured: dict[tuple, list[tuple[Config, dict]]] = {}
        self.timeout_s = timeout_s
        self.ceiling = ceiling
        self.spread = as_spread(spread)
        self.host_gb = host_memory_gb if host_memory_gb is not None else psutil.virtual_memory().total / 1e9
        self.estimate = None
        if use_memory_model:
            try:
                from .. import estimate

                self.estimate = estimate
            except ImportError:
                self.estimate = None

    def observe(self, config: Config, row: dict) -> None:
        if row.get("outcome") in ("ok", "oom") or (row.get("outcome") == "timeout" and not is_not_run(row)):
            self.measured.setdefault(_setting(config), []).append((config, row))

    def _predicted_gb(self, c: Config, micro_batch: int) -> float | None:
        try:
            mem = self.estimate.predict_memory(c, micro_batch)
        except Exception:  # noqa: BLE001  (no prediction, no skip)
            return None
        total = getattr(mem, "total", mem)
        return float(total) / 1e9 if total is not None else None

    def _host_need_gb(self, c: Config) -> float | None:
        try:
            return float(self.estimate.host_memory_need(c)) / 1e9
        except Exception:  # noqa: BLE001  (no prediction, no skip)
            return None

    def _usable_gb(self, gpu_gb: float) -> float:
        try:
            return float(self.estimate.usable_bytes(gpu_gb)) / 1e9
        except Exception:  # noqa: BLE001  (an estimate without the helper: the nominal size)
            return gpu_gb

    def _predicted_max(self, c: Config) -> int | None:
        try:
            n = self.estimate.max_micro_batch(c, get_gpu(c.gpu).memory_gb)
        except Exception:  # noqa: BLE001
            return None
        return None if n is None else min(int(n), c.per_gpu_batch)

    def skip(self, c: Config) -> tuple[str, str] | None:
        """(category, reason) when ``c`` should be skipped, else None."""
        if exclusion_reason(c.methods, c.n_gpus) is not None:
            return None  # invalid ones get an invalid row, not a skip
        gpu_gb = None if c.tiny else get_gpu(c.gpu).memory_gb
        if self.estimate is not None and gpu_gb is not None:
            need, usable = self._predicted_gb(c, 1), self._usable_gb(gpu_gb)
            if need is not None and need > usable * (1 + FIT_MARGIN):
                return ("cannot fit (memory model)",
                        f"smart: skipped because the memory model predicts {need:.1f} GB at micro-batch 1, more "
                        f"than the {usable:.1f} GB usable on the {gpu_gb:g} GB GPU (+{FIT_MARGIN:.0%} margin)")
            host = self._host_need_gb(c)
            if host is not None and host > self.host_gb:
                return ("cannot fit (host memory model)",
                        f"smart: skipped because the memory model puts the states offloaded on one node at "
                        f"{host:.1f} GB (with DeepSpeed's {self.estimate.HOST_BUFFER_FACTOR:g}x buffer), more "
                        f"than this machine's {self.host_gb:.1f} GB of host memory")
        for other, row in self.measured.get(_setting(c), []):
            m, o = c.methods, other.methods
            if row["outcome"] == "oom" and not oom_above_smallest(row) and saves_at_least(o, m):
                at = "the smallest micro-batch" if c.micro_batch is None else f"micro-batch {c.micro_batch}"
                return ("cannot fit (measured)",
                        f"smart: skipped because {o.label()}, which saves at least as much memory, ran out of "
                        f"memory at {at}")
            if (row["outcome"] == "timeout" and saves_more(m, o)
                    and (row.get("duration_s") or 0) >= self.timeout_s):
                return ("cannot finish (measured)",
                        f"smart: skipped because {o.label()}, which saves less memory, ran "
                        f"{row['duration_s']:.0f} s without a result; saving more memory only adds work, so it "
                        f"would not finish within this sweep's {self.timeout_s:g} s limit either")
            if row["outcome"] != "ok" or not saves_more(m, o):
                continue
            spread = self.spread.of(m.offload, o.offload)
            beyond = self._beyond_ceiling(c, row, spread)
            if beyond is not None:
                needed, ceiling = beyond
                return ("cannot win (recompute)",
                        f"smart: skipped because {o.label()} ran at MFU {row['mfu']:.3f}; with checkpointing's "
                        f"recompute, winning by more than the spread ({spread:.1%}) needs "
                        f"{needed / 1e12:,.0f} TFLOP/s of hardware FLOPs, and this GPU's matrix products run at "
                        f"{ceiling / 1e12:,.0f} TFLOP/s at most")
            if not no_less_work(m, o):
                continue
            if row.get("gas") == 1 or c.micro_batch is not None:
                what = ("already fits the whole per-GPU batch" if c.micro_batch is None
                        else "already runs the same fixed micro-batch")
                return ("cannot win (batch already fits)",
                        f"smart: skipped because {o.label()} {what} ({row['micro_batch']}) at "
                        f"{row['step_time_s']:.4g} s/step; more memory saving only adds overhead")
            if self.estimate is not None and gpu_gb is not None:
                mine, theirs = self._predicted_max(c), self._predicted_max(other)
                if mine is not None and theirs and _power_of_two_floor(mine) <= _power_of_two_floor(theirs):
                    return ("cannot win (no larger micro-batch)",
                            f"smart: skipped because the memory model predicts no larger micro-batch for it "
                            f"(<= {_power_of_two_floor(mine)}) than for {o.label()}, measured at "
                            f"{row['step_time_s']:.4g} s/step; more memory saving would only add overhead")
        return None

    def _beyond_ceiling(self, c: Config, row: dict, spread: float) -> tuple[float, float] | None:
        """Rule 6: (the hardware FLOP/s that the checkpointed ``c`` would need to beat the measured ``row`` of its
        setting beyond ``spread``, the GPU's ceiling) when the first reaches the second; else None. FP8's linear
        layers run faster than the bf16 ceiling, so the rule leaves them."""
        m = c.methods
        if (not m.checkpointing or self.ceiling is None or m.fp8 != "none" or not row.get("mfu")
                or not row.get("peak_flops") or float(row["mfu"]) > MFU_IMPLAUSIBLE):
            return None  # an implausible MFU, a row readers set aside, would otherwise skip every checkpointing
        ceiling = self.ceiling(c.gpu)
        if ceiling is None:
            return None
        try:
            recompute = RECOMPUTE_FRACTION * recomputed_share(c.model)
        except Exception:  # noqa: BLE001  (no count of the recompute, no skip)
            return None
        needed = float(row["mfu"]) * float(row["peak_flops"]) * (1 + recompute) * (1 + spread)
        return (needed, ceiling) if needed >= ceiling else None
