"""What a reader may take from a measured row: its figures re-derived, not trusted.

A row's step time, spread, throughput, MFU and days are recomputed from what its timing recorded (each phase's
summary in ``times``, its micro-batch) and its configuration's recipe, by the same function that wrote them
(``measure.extrapolation.rederive``); a row whose stored figures disagree was edited after it was measured (a
step time typed in as 0.5 s while its phases give 26 s); where the phases' samples are stored beside their summary,
the summary is recomputed from them too (``sample_faults``). A synchronized MFU above ``MFU_IMPLAUSIBLE`` is a timing
error, and a row whose reported GPU is not the one its configuration names describes another machine. Each
such fault names the field (``row_faults``); readers set the row aside with them (``rejection``), so that it is
never a result, and ``check-run`` reports each as an error. A line stored twice (``duplicates``) is one
measurement.

A row's model FLOPs are the study's count of its model (``estimate``), not a measurement: a row keeps the count of
the code that wrote it, and its stored MFU is checked against that count. Readers take the FLOPs and MFU of
today's count (``recounted``), so that a corrected count (attention over heads x head size, not the hidden size,
which moved Qwen3-4B's FLOPs) reaches every row without editing a stored one.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

MFU_IMPLAUSIBLE = 0.75  # above this fraction of the dense spec peak, a synchronized timing is a measurement error
# What well-tuned large-scale training reported, set beside that line in the book: (what ran, its MFU, the
# references.bib key of the paper that reports it).
PUBLISHED_LARGE_SCALE_MFU = (("PaLM 540B", 0.462, "chowdhery2023palm"),
                             ("a 530B GPT on 2,240 A100s", 0.542, "korthikanti2022reducing"))


def large_scale_mfu_words() -> str:
    """``PUBLISHED_LARGE_SCALE_MFU`` as the book says it: '46.2% (PaLM 540B) and 54.2% (a 530B GPT on ...)'."""
    return " and ".join(f"{mfu:.1%} ({what})" for what, mfu, _ in PUBLISHED_LARGE_SCALE_MFU)
# The figures are recomputed by the same code from the same stored numbers: only the last bits of a float may
# differ (JSON keeps every float exactly), so any edit of a figure shows.
REL_TOLERANCE = 1e-6
FIGURES = ("gas", "step_time_s", "step_time_spread", "throughput", "mfu", "days", "gpu_days")
REJECTED_PREFIX = "rejected:"


@dataclass(frozen=True)
class Fault:
    """One reason a row is not a result: the field it is in and what is wrong."""

    field: str
    what: str

    def line(self) -> str:
        return f"{self.field}: {self.what}"


def _agree(stored: Any, again: Any) -> bool:
    if isinstance(again, (list, tuple)):
        return (isinstance(stored, (list, tuple)) and len(stored) == len(again)
                and all(_agree(s, a) for s, a in zip(stored, again)))
    if stored is None or again is None:
        return stored is None and again is None
    if isinstance(stored, bool) or not isinstance(stored, (int, float)):
        return False
    return math.isclose(stored, again, rel_tol=REL_TOLERANCE, abs_tol=1e-12)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


def figure_faults(row: Mapping) -> list[Fault]:
    """The stored figures of a measured row that its phases and recipe do not give (empty when all agree)."""
    from ..measure.extrapolation import rederive

    try:
        again = rederive(row)
    except Exception as exc:  # noqa: BLE001  (anything missing or malformed means the figures cannot be checked)
        return [Fault("times", f"the figures cannot be re-derived from the phases and the recipe "
                               f"({type(exc).__name__}: {exc})")]
    stored, today = row.get("model_flops_per_step"), again.get("model_flops_per_step")
    if again.get("mfu") is not None and _count(stored) and _count(today):
        again = {**again, "mfu": again["mfu"] * stored / today}  # the MFU of the count the row was written with
    faults = [Fault(k, f"stored {_show(row.get(k))}, but its phases and recipe give {_show(again[k])}")
              for k in FIGURES if not _agree(row.get(k), again[k])]
    val = row.get("validate") or {}
    for k, v in (again.get("validate") or {}).items():
        if not _agree(val.get(k), v):
            faults.append(Fault(f"validate.{k}", f"stored {_show(val.get(k))}, but its phases and sustained step "
                                                 f"give {_show(v)}"))
    return faults


def _count(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def recounted(row: Mapping) -> dict:
    """A row's ``model_flops_per_step`` and ``mfu`` under today's count of its model's FLOPs (module docstring):
    the MFU scaled by today's count over the stored one, its step time unchanged. Empty where the row stores no
    FLOPs or MFU (tiny rows, rows that measured nothing) or its model cannot be counted here (a decoder from a
    config.json not registered in this process): readers then keep what it stores."""
    from ..catalog.config import Config
    from ..measure.extrapolation import model_flops_per_step

    stored, mfu = row.get("model_flops_per_step"), row.get("mfu")
    if not _count(stored) or not isinstance(mfu, (int, float)) or isinstance(mfu, bool):
        return {}
    try:
        today = model_flops_per_step(Config.from_dict(row["config"]))
    except Exception:  # noqa: BLE001  (an unknown model or a malformed config: nothing to count it with)
        return {}
    if not _count(today):
        return {}
    # The same count keeps the stored MFU to the last bit (x * a / a need not give x back).
    return {"model_flops_per_step": today, "mfu": mfu if today == stored else mfu * today / stored}


def sample_faults(row: Mapping) -> list[Fault]:
    """The phases whose summary the samples stored beside it do not give (rows written before the samples were
    kept have none, and nothing to compare)."""
    from ..measure.timing import summary

    faults = []
    for phase, t in sorted((row.get("times") or {}).items()):
        if not isinstance(t, Mapping) or t.get("samples") is None:
            continue
        try:
            again = summary([float(v) for v in t["samples"]])
        except (TypeError, ValueError, statistics.StatisticsError) as exc:
            faults.append(Fault(f"times.{phase}", f"its samples cannot be summarised ({type(exc).__name__})"))
            continue
        wrong = [k for k in ("median", "min", "max", "n", "mean") if not _agree(t.get(k), again[k])]
        if wrong:
            faults.append(Fault(f"times.{phase}", f"stored {', '.join(wrong)} that its samples do not give"))
    return faults


def mfu_fault(row: Mapping) -> Fault | None:
    """A synchronized MFU above ``MFU_IMPLAUSIBLE`` (of today's FLOPs count, ``recounted``): a timing error, not a result. The
    unsynchronized timing (the paper's method, shown only beside its synchronized twin) is exempt: it
    under-counts by design."""
    if row.get("timing") == "unsynced":
        return None
    mfu = recounted(row).get("mfu", row.get("mfu"))
    if isinstance(mfu, (int, float)) and mfu > MFU_IMPLAUSIBLE:
        return Fault("mfu", f"synchronized MFU {mfu:.2f} is above {MFU_IMPLAUSIBLE:.2f} of the dense peak: a "
                            "timing error, not a result")
    return None


def device_fault(row: Mapping) -> Fault | None:
    """A row whose environment reports a GPU other than the one its configuration (its setup) names. Tiny rows
    are workshop runs, on whatever device, and rows without a reported GPU have nothing to compare."""
    from ..catalog.hardware import get_gpu, match_name

    cfg, env = row.get("config") or {}, row.get("env") or {}
    name = env.get("gpu_name")
    if cfg.get("tiny") or not name or not cfg.get("gpu"):
        return None
    found = match_name(str(name))
    if found is not None and found.key == str(cfg["gpu"]).lower():
        return None
    try:
        named = f"{cfg['gpu']} ({get_gpu(str(cfg['gpu'])).name})"
    except KeyError:
        named = repr(cfg["gpu"])
    override = " (ran with the GPU check overridden)" if env.get("gpu_mismatch_allowed") else ""
    return Fault("env.gpu_name", f"the reported device {name!r} is not the setup's GPU {named}{override}: its "
                                 "figures are another machine's")


def setup_refusal(setup: str, gpu: str | None, tiny: bool, device: str | None) -> str | None:
    """Why a run of ``gpu`` (a tiny variant or not, on ``device``) may not be kept under ``setup``, or None. A
    folder whose name names a GPU (``catalog.hardware.setup_gpus``: h100x1) is that GPU's evidence: a tiny model,
    a run on the CPU or on another GPU would stand among its rows as if that GPU had made it (a workshop run
    appended to the shipped H100 rows passed every check)."""
    from ..catalog.hardware import setup_gpus

    named = setup_gpus(setup)
    if not named:
        return None
    what = ("a tiny model" if tiny else "a run on the CPU" if device == "cpu" else
            f"a run of {gpu}" if gpu and str(gpu).lower() not in named else None)
    if what is None:
        return None
    return (f"{setup!r} names the GPU {' or '.join(named)}: its folder holds that GPU's measurements only, and "
            f"{what} is not one; keep it in a folder of its own (e.g. --setup cpu-tiny, or --out under "
            "notebooks/runs/cpu-tiny/)")


def setup_fault(row: Mapping, setup: str) -> Fault | None:
    """A row that ran (on the CPU, as a tiny model or on another GPU) which the folder ``setup`` may not hold
    (``setup_refusal``)."""
    cfg, env = row.get("config") or {}, row.get("env") or {}
    tiny, device = bool(cfg.get("tiny")), env.get("device")
    # a row whose reported GPU is not the one its configuration names is ``device_fault``'s, once
    gpu = None if device_fault(row) is not None else cfg.get("gpu")
    why = setup_refusal(setup, gpu, tiny, device)
    field = "config.tiny" if tiny else "env.device" if device == "cpu" else "config.gpu"
    return Fault(field, why) if why else None


def row_faults(row: Mapping) -> list[Fault]:
    """Every reason a measured row (outcome ok) is no result: figures that disagree with its phases, an
    implausible MFU, another GPU than its setup's. Empty for a row that passes, and for rows that measured
    nothing."""
    if row.get("outcome") != "ok":
        return []
    faults = figure_faults(row) + sample_faults(row)
    faults += [f for f in (mfu_fault(row), device_fault(row)) if f is not None]
    return faults


def rejection(row: Mapping) -> str | None:
    """Why readers set a measured row aside (``row_faults`` in one line), or None when it may be a result."""
    faults = row_faults(row)
    return f"{REJECTED_PREFIX} " + "; ".join(f.line() for f in faults) if faults else None


def duplicates(rows: Iterable[Mapping]) -> dict[int, int]:
    """{index of a row: index of the earlier row it repeats}: the same row, key for key, stored twice (one
    measurement; a re-measurement differs at least in its start and its times)."""
    first: dict[str, int] = {}
    repeats = {}
    for i, r in enumerate(rows):
        key = json.dumps(r, sort_keys=True, default=str)
        if key in first:
            repeats[i] = first[key]
        else:
            first[key] = i
    return repeats
