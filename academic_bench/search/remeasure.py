"""Measuring again exactly the stored rows a rule selects (``to_remeasure``): each under the search, timing and mode
that made it, through ``sweep.run_sweep`` (``remeasure``), e.g. the rows whose micro-batch search stopped on the
memory model's prediction, or the measured rows no validation speaks for."""
from __future__ import annotations

import os
import time
from typing import Any, Collection, Sequence

from ..catalog.config import Config
from ..launch import default_device
from ..results import REMEASURE_CHOICES, UNVALIDATED, ResultStore, is_not_run, latest_rows
from .sweep import SELECTS, SweepOptions, SweepSummary, run_sweep

__all__ = ["remeasure", "to_remeasure"]


def to_remeasure(rows: list[dict], retry: str, ids: Collection[str] | None = None) -> list[dict]:
    """The latest rows (``results.latest_rows``) that ``retry`` (one of ``REMEASURE_CHOICES``) selects, e.g.
    ``PREDICTED_STOP``: each setup's rows whose micro-batch search stopped on a prediction; ``MEMORY_WALL``: those
    timed near their GPU's capacity before the engine checked the memory wall. ``UNVALIDATED`` is decided by the
    store's validations, which a reader above this layer weighs (``analysis.counted.unvalidated_rows``): it
    selects the measured synchronized rows of the configurations ``ids`` names."""
    if retry not in REMEASURE_CHOICES:
        raise ValueError(f"cannot retry {retry}; choose from: {', '.join(REMEASURE_CHOICES)}")
    if retry == UNVALIDATED and ids is None:
        raise ValueError(f"retry {UNVALIDATED} needs the configuration ids the store's validations leave "
                         "uncounted (analysis.counted.unvalidated_rows)")
    wanted = set(ids or ())
    select = (lambda r: r["config_id"] in wanted and r["outcome"] == "ok" and r["timing"] == "synced"
              and r["mode"] == "step") if retry == UNVALIDATED else SELECTS.get(retry)
    return [r for r in latest_rows(rows) if not is_not_run(r) and (select(r) if select else r["outcome"] == retry)]


def remeasure(out: str | os.PathLike, setup: str, retry: str, *, budget_s: float | None = None,
              models: list[str] | None = None, ids: Collection[str] | None = None, progress: bool = True,
              **options: Any) -> list[SweepSummary]:
    """Measure again exactly the rows of the store at ``out`` of ``setup`` that ``retry`` selects
    (``to_remeasure``), each under the search, timing and mode that made it (so that naive, smart and
    exhaustive searches stay comparable), then the unsynchronized timings of those configurations that the new
    synchronized rows leave at another micro-batch (``_stale``). ``run_sweep`` gets only the selected
    configurations and retries the outcomes their rows have, so exactly those are measured again, whatever rule
    selected them. One ``run_sweep`` summary per group, all within
    ``budget_s``; ``models`` (default all) keeps only those models' rows; ``ids``: for ``UNVALIDATED``, the
    configurations to measure again (``to_remeasure``); ``options``: the fields of ``SweepOptions`` other than the
    search, timing and validation, which each group's rows give."""
    t0 = time.monotonic()
    latest = [r for r in latest_rows(ResultStore(out).rows()) if r.get("setup") == setup
              and (models is None or r["config"]["model"] in models)]
    rows = [r for r in to_remeasure(latest, retry, ids) if r["timing"] == "synced"]
    twins = [r for r in latest if r["timing"] == "unsynced" and r["config_id"] in {x["config_id"] for x in rows}]
    groups: dict[tuple, list[Config]] = {}
    again: dict[tuple, set[str]] = {}  # per group, the outcomes of its selected rows: what run_sweep runs again
    for r in [*rows, *twins]:  # synced first: an unsynced twin runs at the new synced row's micro-batch
        steps = ((r.get("validate") or {}).get("steps") or 3) if r["mode"] == "validate" else 0
        key = (r["search"], r["timing"], steps)
        groups.setdefault(key, []).append(Config.from_dict(r["config"]))
        if r["timing"] == "synced":  # a twin runs only where the new synced row left it stale (``_stale``)
            again.setdefault(key, set()).add(r["outcome"])
    _check_packages([c for configs in groups.values() for c in configs], options.get("device") or default_device())
    summaries = []
    for (search, timing, steps), configs in groups.items():
        left = None if budget_s is None else max(0.0, budget_s - (time.monotonic() - t0))
        measured = SweepOptions(search=search, timing=timing, validate=steps, **options)
        summaries.append(run_sweep(configs, out, setup, measured, budget_s=left, progress=progress,
                                   retry=tuple(sorted(again.get((search, timing, steps), ())))))
    return summaries


def _check_packages(configs: Sequence[Config], device: str) -> None:
    """A row measured again where its packages do not import would become an 'unsupported' row that supersedes
    the measured one: refused before any work, naming what is missing and the rows that need it."""
    from ..catalog.methods import missing_packages

    missing: dict[str, set[str]] = {}
    for c in configs:
        for module in missing_packages(c.methods, c.spec.kernel, device):
            missing.setdefault(module, set()).add(f"{c.model} {c.methods.label()}")
    if missing:
        needs = "; ".join(f"{m} (for {', '.join(sorted(who))})" for m, who in sorted(missing.items()))
        raise ValueError(f"the rows to measure again need modules that do not import here: {needs}. Install them "
                         "(Mamba's kernels: scripts/offline-gpu/install_mamba.sh) or leave those models out with "
                         "--models")
