"""Plans of configurations, run one after another into the results store, resumable and optionally pruned.

    run_sweep(configs, out, setup, SweepOptions(search="smart")) -> SweepSummary

in four steps: ``plan_sweep`` (which configurations the store already answers and which to measure), the filter
(``SweepFilter``: a time budget spent, or the smart search's rules, skip a configuration), the runs (one
``launch.run`` each, its row into the store), and the summary (``summary.SweepSummary``).

Presets: ``naive`` (all methods off), ``free-lunch`` (compile + kernels + TF32), ``exhaustive`` (every
memory-saving combination with free-lunch on: 12 valid on one GPU, 22 on more, and the excluded ones recorded
as ``invalid`` rows with their rule) and ``smart`` (the same candidates, fastest-looking first, skipping those
that cannot fit or cannot win; see ``smart.SmartPruner``). The plans are ``plans.plan``.

Smart skips are *not* rows of the store: a skipped configuration was never attempted, and a later exhaustive
sweep into the same store must still measure it (the store's ids are what a resumed sweep skips). Each skip is
appended to ``<results stem>.skipped.jsonl`` beside the store, with its reason, and counted in the summary.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..catalog.config import Config
from ..launch import (DEFAULT_REPS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, EXECUTORS, TIMED_OOM_NOTE, WORKER_MODULE,
                     WORKSHOP_PATH, NoGPUError, Rendezvous, machine_cannot_run, run)
from ..results import (ALL, DEFAULT_RUNS, MEMORY_WALL, PREDICTED_STOP, RETRY_CHOICES, UNCOMMITTED, ResultStore, Spread,
                      append_line, is_not_run, is_uncommitted, json_safe, latest_rows, latest_skips, load_runs,
                      make_row, now_iso, read_lines, set_aside_reason, skip_is_latest, skip_key, skipped_path, state_of,
                      step_ceiling, step_spreads, stopped_on_prediction, synced_micro_batches, unchecked_at_wall)
from .smart import SmartPruner, oom_above_smallest
from .summary import Progress, SweepSummary, best_per_model, format_summary

__all__ = ["Interrupted", "SELECTS", "SweepOptions", "SweepPlan", "SweepSummary", "format_summary", "log_path",
           "plan_sweep", "record_not_run", "run_sweep"]


# The ``retry`` choices that select rows by what they record rather than by their outcome.
SELECTS = {UNCOMMITTED: is_uncommitted, PREDICTED_STOP: stopped_on_prediction, MEMORY_WALL: unchecked_at_wall}


@dataclass(frozen=True)
class SweepOptions:
    """How each configuration of a sweep is measured and recorded: the search label its rows carry (``smart`` also
    prunes), the timing and mode, the time limit of each, where it runs (``executor``: ``launch.EXECUTORS``;
    ``device``; ``rdzv``, several nodes; ``slurm_params``), the repetitions, and the module each rank runs
    (``worker``: an instrumented one, e.g. the tests' faulty worker)."""

    search: str
    timing: str = "synced"
    validate: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    executor: str = "local"
    device: str | None = None
    warmup: int = DEFAULT_WARMUP
    reps: int = DEFAULT_REPS
    rdzv: Rendezvous | None = None
    slurm_params: dict[str, Any] | None = None
    worker: str = WORKER_MODULE

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ValueError(f"unknown executor {self.executor!r}; choose one of: {', '.join(EXECUTORS)}")

    @property
    def mode(self) -> str:
        return "validate" if self.validate else "step"

    @property
    def writes_rows(self) -> bool:
        """Whether this node writes rows (node 0 of several, or the only one)."""
        return self.rdzv is None or self.rdzv.node_rank == 0


def log_path(out: str | os.PathLike, config: Config, timing: str, mode: str) -> Path:
    """Where a configuration's full log goes: ``logs/`` beside the store, one file per attempt."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return Path(out).parent / "logs" / f"{config.id}-{timing}-{mode}-{stamp}.log"


class Interrupted(KeyboardInterrupt):
    """SIGTERM during a sweep: stop like Ctrl-C, killing the running configuration's processes."""


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Interrupted(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stale(row: dict, micro_batches: dict[str, int] | None) -> bool:
    """An unsynced row at another micro-batch than its synced twin's latest: it times other work, so the
    pair is timed again. Or a row that ran out of memory when timed at a searched micro-batch above 1 before
    the timed run fell back to half that size (no note in its search log): measured again, it gets a size."""
    if oom_above_smallest(row) and not any(t.get("note") == TIMED_OOM_NOTE for t in row.get("mbs_search") or []):
        return True
    want = (micro_batches or {}).get(row["config_id"]) if row["timing"] == "unsynced" else None
    return want is not None and row.get("micro_batch") != want


def _ceiling(gpu: str, out: Path) -> float | None:
    """The smart search's rule 6 ceiling for ``gpu``: from a GEMM sweep kept beside the setup folder of ``out``,
    else from the study's shipped runs (an H100's sweep serves the H200, the same chip)."""
    ceiling = step_ceiling(gpu, out.resolve().parent.parent)
    return ceiling if ceiling is not None else step_ceiling(gpu, Path(DEFAULT_RUNS))


def _spread(stored: list[dict]) -> Spread:
    """The ties of the smart search's rules: per kind of step, the machine-to-machine spread of this file's rows
    and the study's shipped runs read together (a fresh file has no repeated measurement of its own; a row in both,
    as in a notebook's file among the shipped runs, is one measurement: ``results.repeated_measurements``)."""
    return step_spreads([*stored, *load_runs()])


@dataclass
class SweepPlan:
    """What a sweep measures, decided from the store before any launch. ``configs``: each planned configuration
    once, in order; ``latest``: the latest row of each of this timing and mode (an older real failure must not
    stand in for a newer row that is set aside or left unstarted); ``standing``: those rows that answer for their
    configuration, which is then not measured again (resumed); ``from_scratch``: ``retry`` "all", where nothing
    measured stands in for a measurement or a decision (only ``invalid`` rows stand); ``micro_batches``: the sizes
    to time without a search."""

    configs: list[Config]
    latest: dict[str, dict]
    standing: dict[str, dict]
    from_scratch: bool
    micro_batches: dict[str, int] | None

    def to_measure(self) -> list[Config]:
        return [c for c in self.configs if c.id not in self.standing]

    def asked_again(self, c: Config) -> bool:
        """A measured configuration asked for again: measured, not pruned (a skip would stand in the skips file
        against the result it was asked to check)."""
        return not self.from_scratch and c.id in self.latest and self.latest[c.id]["outcome"] == "ok"


def plan_sweep(configs: Sequence[Config], stored: list[dict], timing: str, mode: str, retry: Sequence[str] = (),
               micro_batches: dict[str, int] | None = None) -> SweepPlan:
    """Which of ``configs`` the rows ``stored`` already answer (``SweepPlan``). A row stands unless its outcome is
    listed in ``retry`` (e.g. "error"; a retry choice of ``SELECTS`` selects rows by what they record), it only
    records that a time budget never started it (``results.is_not_run``), it is set aside, or it is an unsynced row
    at another micro-batch than its synced twin's (``_stale``); with ``retry`` "all", only ``invalid`` rows stand.
    For an unsynced timing ``micro_batches`` defaults to the micro-batches of the store's synced rows."""
    bad = set(retry) - set(RETRY_CHOICES)
    if bad:
        raise ValueError(f"cannot retry {', '.join(sorted(bad))}; choose from: {', '.join(RETRY_CHOICES)}")
    if micro_batches is None and timing == "unsynced":
        micro_batches = synced_micro_batches(stored)
    latest = {r["config_id"]: r for r in stored if r["timing"] == timing and r["mode"] == mode}
    from_scratch = ALL in retry
    standing = {cid: r for cid, r in latest.items() if r["outcome"] == "invalid"} if from_scratch else {
        cid: r for cid, r in latest.items()
        if r["outcome"] not in retry and not is_not_run(r) and not _stale(r, micro_batches)
        and not set_aside_reason(r) and not any(SELECTS[k](r) for k in retry if k in SELECTS)}
    planned = list({c.id: c for c in configs}.values())  # each once, at its first place
    return SweepPlan(planned, latest, {c.id: standing[c.id] for c in planned if c.id in standing}, from_scratch,
                     micro_batches)


@dataclass
class SweepFilter:
    """Which planned configurations are not launched: those a spent time budget leaves (``budget_s`` from ``t0``),
    and with a ``pruner`` (the smart search) those its rules skip, each skip recorded in ``skip_file`` once per
    decision (``_record_skip``)."""

    plan: SweepPlan
    pruner: SmartPruner | None
    skip_file: Path
    budget_s: float | None
    t0: float = field(default_factory=time.monotonic)
    recorded: dict[tuple, Mapping] = field(default_factory=dict)  # the skips file's latest word per configuration

    def __post_init__(self) -> None:
        # A search from scratch records each of its skips, whatever an older search recorded.
        if self.pruner and self.skip_file.exists() and not self.plan.from_scratch:
            self.recorded = latest_skips(s for _, s in read_lines(self.skip_file))
        for c in self.plan.configs:
            if self.pruner and c.id in self.plan.standing:
                self.pruner.observe(c, self.plan.standing[c.id])

    def budget_spent(self) -> bool:
        return self.budget_s is not None and time.monotonic() - self.t0 > self.budget_s

    def skip(self, c: Config) -> tuple[str, str] | None:
        """The smart search's (rule, reason) for not measuring ``c``, or None."""
        return self.pruner.skip(c) if self.pruner and not self.plan.asked_again(c) else None

    def observe(self, c: Config, row: dict) -> None:
        if self.pruner:
            self.pruner.observe(c, row)


def _smart_pruner(options: SweepOptions, out: Path, stored: list[dict]) -> SmartPruner | None:
    if options.search != "smart":
        return None
    # The pruner asks for the ceiling at every checkpointed candidate: each GPU's GEMM sweeps are read once.
    return SmartPruner(timeout_s=options.timeout_s, ceiling=lru_cache(maxsize=None)(partial(_ceiling, out=out)),
                       spread=_spread(stored))


def run_sweep(configs: Sequence[Config], out: str | os.PathLike, setup: str, options: SweepOptions | None = None, *,
              retry: Sequence[str] = (), micro_batches: dict[str, int] | None = None, budget_s: float | None = None,
              not_run_reason: str | None = None, since: str | None = None, progress: bool = True,
              **option_fields: Any) -> SweepSummary:
    """Run every configuration of ``configs`` the store at ``out`` does not already answer; returns a summary.

    ``options`` (or its fields as keywords, ``SweepOptions``): how each is measured. Resumable: which rows stand
    and which ``retry`` asks for again is ``plan_sweep``'s ("all": every configuration, as in an empty store, the
    smart search's rules deciding from this run's measurements alone). ``micro_batches`` maps a configuration id to
    a micro-batch already found for it, which is then timed without a new search. Ctrl-C or SIGTERM stop the
    running configuration (killing its processes, writing no row for it) and re-raise; every finished
    configuration's row is already on disk. ``budget_s`` stops launching new configurations once spent; with
    ``not_run_reason`` each one it never started gets a 'not run' row with that reason (``record_not_run``, on node 0
    only; the summary's ``not_run_rows`` counts them; a search from scratch's supersedes an older measurement);
    ``since`` (an ISO time, default this call's start): when the search began, so that a search from scratch
    supersedes only rows older than itself. A failure that shows this machine can run no configuration at all (no
    driver, no GPU: ``launch.machine_cannot_run``) stops the sweep with ``NoGPUError`` naming it, its row written.
    A row the store cannot take is written beside it (``ResultStore.keep``), and the summary's
    ``written_elsewhere`` says where."""
    options = options or SweepOptions(**option_fields)
    since = since or now_iso()
    store, out = ResultStore(out), Path(out)
    stored = store.rows()
    plan = plan_sweep(configs, stored, options.timing, options.mode, retry, micro_batches)
    pruner = _smart_pruner(options, out, stored)
    skip_file = skipped_path(out)
    summary = SweepSummary(setup=setup, device=options.device, search=options.search, timing=options.timing,
                           mode=options.mode, results=str(out), skipped_file=str(skip_file) if pruner else None,
                           planned=len(configs), resumed=len(plan.standing),
                           memory_model=(pruner.estimate is not None) if pruner else None)
    sift = SweepFilter(plan, pruner, skip_file, budget_s)
    try:
        _run_plan(plan, sift, store, out, setup, options, summary, progress)
    finally:  # on Ctrl-C/SIGTERM the exception goes on: the running configuration was killed, rows are on disk
        summary.elapsed_s = round(time.monotonic() - sift.t0, 1)
    if not_run_reason and summary.not_run and options.writes_rows:
        summary.not_run_rows = record_not_run(out, setup, configs, summary.not_run, not_run_reason,
                                              search=options.search, timing=options.timing, mode=options.mode,
                                              from_scratch=plan.from_scratch, since=since)
    return _summarise(summary, store, plan, options)


def _run_plan(plan: SweepPlan, sift: SweepFilter, store: ResultStore, out: Path, setup: str, options: SweepOptions,
              summary: SweepSummary, progress: bool) -> None:
    """Launch each configuration the filter lets through, its row into the store, its outcome into ``summary``."""
    todo = plan.to_measure()
    bar = Progress(len(todo), progress, sift.budget_s)
    launches = dict(setup=setup, search=options.search, timing=options.timing, validate=options.validate,
                    timeout_s=options.timeout_s, device=options.device, warmup=options.warmup, reps=options.reps,
                    rdzv=options.rdzv, worker=options.worker)
    try:
        with _sigterm_as_interrupt():
            for i, c in enumerate(todo):
                if sift.budget_spent():
                    summary.not_run.append(c.id)
                    bar.done(c, "not run (budget spent)")
                    continue
                why = sift.skip(c)
                if why:
                    _record_skip(sift.skip_file, c, setup, options.timing, options.mode, why, sift.recorded,
                                 plan.latest.get(c.id))
                    summary.skipped.append({"config_id": c.id, "label": c.methods.label(), "reason": why[1]})
                    summary.skip_reasons[why[0]] += 1
                    bar.done(c, "skipped")
                    continue
                bar.start(c)
                size = {"micro_batch": plan.micro_batches[c.id]} if (plan.micro_batches or {}).get(c.id) else {}
                row = run(c, executor=options.executor, folder=out.parent / "submitit",
                          slurm_params=options.slurm_params, log_path=log_path(out, c, options.timing, options.mode),
                          **launches, **size)
                if row is None:  # a node other than 0 of a multi-node run writes nothing
                    bar.done(c, "done (node > 0)")
                    continue
                where = _store_row(store, out, row, summary)
                sift.observe(c, row)
                bar.done(c, row["outcome"])
                cannot = machine_cannot_run(row)
                if cannot:
                    raise NoGPUError(f"stopped after {c.model} {c.methods.label()} ({c.id}), which shows that this "
                                     f"machine cannot run any configuration: {cannot}. Its row is kept in {where}; "
                                     f"the {len(todo) - i - 1} configuration(s) left were not started. On a machine "
                                     f"without a GPU, take the workshop path: {WORKSHOP_PATH}")
    finally:
        bar.close()


def _store_row(store: ResultStore, out: Path, row: dict, summary: SweepSummary) -> Path:
    """Append ``row`` (its log named relative to the store) and count it; returns where it was written."""
    if row.get("log"):
        row["log"] = os.path.relpath(row["log"], out.parent)
    where, why = store.keep(row)
    if why:
        summary.written_elsewhere.append(str(where))
        print(f"could not append to {why}; the row of {row['config_id']} is kept in {where}", file=sys.stderr)
    summary.ran += 1
    summary.outcomes[row["outcome"]] += 1
    return where


def _summarise(summary: SweepSummary, store: ResultStore, plan: SweepPlan, options: SweepOptions) -> SweepSummary:
    """The latest row of each planned configuration (one measured again speaks for it, not its superseded row):
    their states, and each model's best."""
    planned = {c.id for c in plan.configs}
    rows = [r for r in latest_rows(store.rows())
            if r["config_id"] in planned and r["timing"] == options.timing and r["mode"] == options.mode]
    summary.outcomes_all = dict(Counter(state_of(r) for r in rows))
    # An unsynchronised clock misses GPU work: its fastest row is no result, so it names no "best".
    summary.best = best_per_model(rows, options.device) if options.timing == "synced" else {}
    return summary


def record_not_run(out: str | os.PathLike, setup: str, configs: Sequence[Config], ids: Iterable[str], reason: str,
                   *, search: str, timing: str, mode: str, from_scratch: bool = False, since: str | None = None) -> int:
    """A 'not run' row (``reason`` starting ``NOT_RUN_PREFIX``) for each of ``ids`` among ``configs`` that a time
    budget left unstarted; an excluded combination gets its ``invalid`` row instead, which costs no time. Returns
    how many 'not run' rows were written. A configuration with a row of ``setup`` is left as it is (its row is the
    latest word), except in a search from scratch (``from_scratch``: ``retry`` "all"), where a step measurement older than
    the search (started before ``since``, an ISO time) must not stand in for one the search never made: its 'not
    run' row supersedes it, so the search shows as unfinished and a resumed one measures it (the older row stays in
    the file). A validation is never superseded so: it checks the engine, not the search, and a later row of its
    revision would hide it (``rows_to_read``)."""
    store = ResultStore(out)
    latest = {r["config_id"]: r for r in latest_rows(store.rows())
              if r.get("setup") == setup and r["timing"] == timing and r["mode"] == mode}

    def older(row: Mapping) -> bool:  # a measurement this search did not make
        return (from_scratch and mode == "step" and row["outcome"] != "invalid" and not is_not_run(row)
                and (since is None or str(row.get("started_at") or "") < since))

    by_id = {c.id: c for c in configs}
    n = 0
    for cid in dict.fromkeys(ids):
        last = latest.get(cid)
        if last is not None and not set_aside_reason(last) and not older(last):
            continue
        config = by_id[cid]
        refused = config.refusal()
        outcome, why = ("invalid", refused) if refused else ("not run", reason)
        store.append(make_row(config, setup=setup, outcome=outcome, reason=why, timing=timing, mode=mode,
                              search=search))
        n += 1 if outcome == "not run" else 0
    return n


def _record_skip(path: Path, c: Config, setup: str, timing: str, mode: str, why: tuple[str, str],
                 already: dict[tuple, Mapping], row: dict | None) -> None:
    """Append the skip, once per configuration: again only when a row has come since the last one (a retried
    failure the search now decides against) or when the decision changed: another rule, or the same rule on
    other figures (a changed memory model, a re-measured row it compares with, a wider spread), so that the
    file's latest word on it is this decision with its reasons."""
    entry = {"config_id": c.id, "config": c.to_dict(), "label": c.methods.label(), "setup": setup,
             "search": "smart", "timing": timing, "mode": mode, "category": why[0], "reason": why[1],
             "at": now_iso()}
    last = already.get(skip_key(entry))
    if last is not None and skip_is_latest(last, row) and (last.get("category"), last.get("reason")) == why:
        return
    append_line(path, (json.dumps(json_safe(entry), separators=(",", ":")) + "\n").encode())
    already[skip_key(entry)] = entry
