"""The benchmark notebook's sweeps under one time budget (its parameters are in ``search.params``; the papermill
runner that executes it, ``academic-bench notebook``, is ``search.papermill_runner``).

    run_benchmark(setup=..., models=[...], ...)  what notebooks/benchmark.ipynb calls (the notebook stays thin)

What a run shows (its tables and chart) is in ``runs_report``, the runs README in ``runs_readme``: the layer above.

Time budget: the notebook passes what is left of ``time_budget_s`` to each sweep, which starts no new
configuration once it is spent (a configuration already running may finish, up to ``timeout_s``); a validation,
whose length is known from the measurement it checks, starts only if it can end within the budget. Every
configuration the notebook planned but never started then gets a row of its own, outcome ``not run`` with a
reason starting ``not run:``, so every model the notebook was asked about leaves a row: a measurement, or a
classified failure with its reason. Running the notebook again into the same folder resumes: configurations
with a row are skipped, except those never started (always measured now) and those whose outcome is listed in
the ``retry`` parameter; a new attempt adds a row, and readers take the latest row of each configuration. A
search from scratch (``retry`` "all") that its budget cut short writes its 'not run' rows over step measurements
older than the run too, so they do not pass for this search's, and running again finishes it.
"""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from ..catalog.config import Config, run_name
from ..catalog.methods import Methods
from .params import ENV_SOFTWARE, MODEL_LISTS, RESULTS_FILE, check_parameters, resolve_gpu
from ..catalog.env import capture_env
from ..results import (ALL, setup_refusal, ENGINE_REVISION, NOT_RUN_PREFIX, ResultStore, engine_revision, fastest_row, now_iso,
                      latest_rows, status_of, synced_micro_batches, validation_class_of)

if TYPE_CHECKING:
    from .summary import SweepSummary

log = logging.getLogger(__name__)

# --- running the sweeps ---------------------------------------------------------------------------------------

@dataclass
class Phase:
    """One sweep of the notebook: configurations run with one search label, timing and mode."""

    title: str
    configs: list[Config]
    search: str
    timing: str = "synced"
    validate: int = 0
    expected_s: float | None = None  # how long the phase should take, where known (validations)

    @property
    def mode(self) -> str:
        return "validate" if self.validate else "step"


@dataclass
class BenchmarkRun:
    """What ``run_benchmark`` did: where the results are, and each phase's sweep summary."""

    setup: str
    results: Path
    models: list[str]
    summaries: list["SweepSummary | None"] = field(default_factory=list)  # None: a phase the budget never started
    not_run: int = 0

    def rows(self) -> list[dict]:
        return latest_rows(ResultStore(self.results).rows())


def plan_phases(p: dict[str, Any], gpu: str) -> list[Phase]:
    """The sweeps, in order: each preset for every model (breadth first, so a short budget still reaches every
    model), the exhaustive search for ``exhaustive_models``, then the synced/unsynced pairs (eager: naive,
    compiled: free-lunch) for ``unsynced_models``. Validation is planned after these, from their results."""
    from .plans import plan

    n, tiny = p["n_gpus"], p["tiny"]
    phases = [Phase(f"{preset} for {', '.join(p['models'])}", plan(p["models"], gpu, n, preset, tiny), preset)
              for preset in p["preset"]]
    extra = [m for m in p["exhaustive_models"] if not ("exhaustive" in p["preset"] and m in p["models"])]
    if extra:
        phases.append(Phase(f"exhaustive for {', '.join(extra)}", plan(extra, gpu, n, "exhaustive", tiny),
                            "exhaustive"))
    for preset in ("naive", "free-lunch"):
        models = p["unsynced_models"]
        if not models:
            break
        missing = [m for m in models if not (preset in p["preset"] and m in p["models"])]
        if missing:  # the synced half of each pair
            phases.append(Phase(f"{preset} (synced half of the pair) for {', '.join(missing)}",
                                plan(missing, gpu, n, preset, tiny), preset))
        phases.append(Phase(f"{preset}, timed without synchronising, for {', '.join(models)}",
                            plan(models, gpu, n, preset, tiny), preset, timing="unsynced"))
    return phases


def _not_run_reason(budget_s: float, expected_s: float | None = None) -> str:
    if expected_s is not None:
        return (f"{NOT_RUN_PREFIX} the notebook's time budget (time_budget_s={budget_s:g}) had less left than "
                f"this configuration's expected {expected_s:.0f} s; it was never launched")
    return (f"{NOT_RUN_PREFIX} the notebook's time budget (time_budget_s={budget_s:g}) was spent before this "
            "configuration started; it was never launched")


def _record_not_run(out: Path, setup: str, phase: Phase, ids: Iterable[str], budget_s: float,
                    from_scratch: bool = False, since: str | None = None) -> int:
    """A row for each planned configuration the budget left unstarted (``sweep.record_not_run``)."""
    from .sweep import record_not_run

    return record_not_run(out, setup, phase.configs, ids, _not_run_reason(budget_s, phase.expected_s),
                          search=phase.search, timing=phase.timing, mode=phase.mode, from_scratch=from_scratch,
                          since=since)


def _paired(phase: Phase, out: Path) -> tuple[list[Config], dict[str, int] | None]:
    """The phase's configurations, and for an unsynced phase the synced twins' micro-batches: only the
    configurations whose synced twin ran ok are timed, because an unsynced timing is only shown beside its
    twin, at the twin's micro-batch (it would otherwise search one of its own and pair with nothing). No row
    is written for the others: a later run times them."""
    if phase.timing != "unsynced":
        return list(phase.configs), None
    paired = synced_micro_batches(ResultStore(out).rows())
    lonely = [c for c in phase.configs if c.id not in paired]
    if lonely:
        print(f"not timed unsynced, because the synced twin has no ok row to pair with: "
              f"{'; '.join(f'{c.model} {c.methods.label()}' for c in lonely)} (a later run times them once it has)",
              flush=True)
    return [c for c in phase.configs if c.id in paired], paired


def _run_phase(phase: Phase, out: Path, setup: str, deadline: float | None, budget_s: float | None,
               timeout_s: float, device: str, retry: Sequence[str],
               since: str | None = None) -> tuple["SweepSummary | None", int]:
    """One phase's sweep within what is left of the budget, and its 'not run' rows; ``since``: when the notebook's
    run began (a search from scratch supersedes only rows older than that, never its own earlier phases')."""
    from .sweep import SweepOptions, run_sweep

    print(f"\n== {phase.title} ({phase.search}, {phase.timing}, {phase.mode}): {len(phase.configs)} configurations",
          flush=True)
    left = None if deadline is None else deadline - time.monotonic()
    # A configuration whose length is known (a validation) starts only if it can end within the budget: the
    # budget is what the caller planned the machine's time with, and a run cut off later leaves nothing.
    if left is not None and (left <= 0 or (phase.expected_s is not None and phase.expected_s > left)):
        summary = None
        n = _record_not_run(out, setup, phase, [c.id for c in phase.configs], budget_s or 0,
                            from_scratch=ALL in retry, since=since)
    else:
        configs, micro_batches = _paired(phase, out)
        options = SweepOptions(search=phase.search, timing=phase.timing, validate=phase.validate,
                               timeout_s=timeout_s, device=device)
        summary = run_sweep(configs, out, setup, options, budget_s=left, retry=tuple(retry),
                            micro_batches=micro_batches, since=since,
                            not_run_reason=_not_run_reason(budget_s or 0, phase.expected_s)) if configs else None
        if summary:
            print(summary.text(), flush=True)
        n = (summary.not_run_rows or 0) if summary else 0
    if n:
        why = "the time budget was spent" if phase.expected_s is None else \
            f"the budget left is shorter than the {phase.expected_s:.0f} s it needs"
        print(f"{n} configuration(s) not run: {why}; each has a 'not run' row saying so "
              "(running the notebook again measures them)", flush=True)
    return summary, n


def best_row(rows: Sequence[dict], model: str) -> dict | None:
    """The synced, step-mode, measured row of ``model`` with the fewest days (any search), of the paper's methods:
    a row with a switch beyond the paper is measured beside the replication, never its best."""
    return fastest_row(rows, lambda r: r["config"]["model"] == model and r["timing"] == "synced"
                       and r["mode"] == "step" and r["days"] is not None
                       and not Methods.from_dict(r["config"]["methods"]).beyond_paper)


def validation_phases(p: dict[str, Any], out: Path) -> list[Phase]:
    """For each of ``validate_models``: its best configuration, at its measured micro-batch, run for
    ``validate_steps`` real optimizer steps (the extrapolation's check). Each is expected to take as long as
    the measurement it checks plus the steps it adds."""
    rows = latest_rows(ResultStore(out).rows())
    phases = []
    for model in p["validate_models"]:
        best = best_row(rows, model)
        if best is None:
            print(f"\n== validation of {model}: no configuration of it ran ok, so there is nothing to validate",
                  flush=True)
            continue
        config = replace(Config.from_dict(best["config"]), micro_batch=best["micro_batch"])
        expected = (best["duration_s"] or 0.0) + p["validate_steps"] * (best["step_time_s"] or 0.0)
        phases.append(Phase(f"validation of {model}'s best ({config.methods.label()}, micro-batch "
                            f"{best['micro_batch']})", [config], best["search"], validate=p["validate_steps"],
                            expected_s=expected))
    return phases


def validation_net_phases(p: dict[str, Any], out: Path) -> list[Phase]:
    """The validation net (with ``validate_classes``): for each method class (``methods.validation_class``)
    that has a configuration measured by this engine revision in this run's results and no validation by it yet,
    the configuration of the
    class that is cheapest to validate (its measurement's duration plus ``validate_steps`` steps), at its
    measured micro-batch. So every method class that ran on a setup is checked against sustained training."""
    if not p["validate_classes"]:
        return []
    rows = [r for r in latest_rows(ResultStore(out).rows())
            if status_of(r) == "measured" and r["timing"] == "synced"]
    cls = validation_class_of

    def cost(r: dict) -> float:
        return (r["duration_s"] or 0.0) + p["validate_steps"] * (r["step_time_s"] or 0.0)

    # A validation speaks for the engine revision that made it (``analysis.validation_state``): a class counts as
    # done only where this engine validated it, and only this engine's measurements can be validated by it.
    done = {cls(r) for r in rows if r["mode"] == "validate" and r.get("validate")  # not one a deadline skipped
            and engine_revision(r) == ENGINE_REVISION}
    candidates = sorted((r for r in rows if r["mode"] == "step" and r["micro_batch"] and cls(r) not in done
                         and engine_revision(r) == ENGINE_REVISION),
                        key=lambda r: (cost(r), r["config_id"]), reverse=True)
    cheapest = {cls(r): r for r in candidates}  # the cheapest of each class comes last, and stays
    phases = []
    for name, r in sorted(cheapest.items()):
        config = replace(Config.from_dict(r["config"]), micro_batch=r["micro_batch"])
        # Search "single": a validation of its own, not of a model's best (``setup_parameters`` tells them apart).
        phases.append(Phase(f"validation net: {name} ({config.model} {config.methods.label()}, micro-batch "
                            f"{r['micro_batch']})", [config], "single", validate=p["validate_steps"],
                            expected_s=cost(r)))
    return phases


@contextmanager
def _text_progress_bars() -> Iterator[None]:
    """The sweeps' bars as text (stderr) rather than widgets: papermill echoes text to the runner's console as
    it comes, and the saved notebook keeps the bar's last state (a widget's saved output is its first frame)."""
    import importlib
    import warnings

    std = importlib.import_module("tqdm.std")
    with warnings.catch_warnings():  # in a kernel without ipywidgets tqdm.auto warns "IProgress not found":
        warnings.simplefilter("ignore", std.TqdmWarning)  # noise here, where no widget is wanted
        auto = importlib.import_module("tqdm.auto")
    saved, auto.tqdm = auto.tqdm, std.tqdm
    try:
        yield
    finally:
        auto.tqdm = saved


def run_benchmark(**params: Any) -> BenchmarkRun:
    """Run the notebook's sweeps (keyword arguments: ``PARAMETERS``) into ``<output_dir>/results.jsonl``."""
    p = check_parameters(params)
    gpu = resolve_gpu(p["gpu"], p["device"])
    refused = setup_refusal(p["setup"], gpu, p["tiny"], p["device"])  # a GPU's setup takes its runs only
    if refused:
        raise ValueError(f"setup {refused}")
    out = Path(p["output_dir"]) / RESULTS_FILE
    out.parent.mkdir(parents=True, exist_ok=True)
    budget = p["time_budget_s"]
    deadline = None if budget is None else time.monotonic() + budget
    started = now_iso()  # what a search from scratch measures from here on is its own
    phases = plan_phases(p, gpu)  # every name and combination is checked before the first launch
    all_models = list(dict.fromkeys(m for k in MODEL_LISTS for m in p[k]))
    run = BenchmarkRun(p["setup"], out, all_models)
    on = (run_name("models", gpu, p["n_gpus"], True, p["device"]) if p["tiny"]
          else f"{p['n_gpus']} x {gpu} on {p['device']}")
    print(f"setup {p['setup']}: {on}; "
          f"budget {'none' if budget is None else f'{budget:g} s'}, {p['timeout_s']:g} s per configuration; "
          f"results in {out}", flush=True)
    env = capture_env()
    print("environment: " + ", ".join(f"{k} {env[k]}" for k in ("gpu_name", "driver", "cuda", *ENV_SOFTWARE,
                                                                "package_version", "git_commit")), flush=True)
    with _text_progress_bars():
        for phase in phases:
            summary, n = _run_phase(phase, out, p["setup"], deadline, budget, p["timeout_s"], p["device"],
                                    p["retry"], started)
            run.summaries.append(summary)
            run.not_run += n
        for plan in (validation_phases, validation_net_phases):  # each planned from the results before it
            for phase in plan(p, out):
                summary, n = _run_phase(phase, out, p["setup"], deadline, budget, p["timeout_s"], p["device"],
                                        p["retry"], started)
                run.summaries.append(summary)
                run.not_run += n
    missing = [m for m in all_models if not any(r["config"]["model"] == m for r in run.rows())]
    if missing:  # every model must leave a row: a measurement or a failure with its reason
        raise RuntimeError(f"no result row for {', '.join(missing)} in {out}")
    return run


__all__ = ["BenchmarkRun", "Phase", "run_benchmark"]
