"""Plans of configurations, run one after another into the results store, resumable and optionally pruned.

Presets: ``naive`` (all methods off), ``free-lunch`` (compile + kernels + TF32), ``exhaustive`` (every
memory-saving combination with free-lunch on: 12 valid on one GPU, 22 on more, and the excluded ones recorded
as ``invalid`` rows with their rule) and ``smart`` (the same candidates, fastest-looking first, skipping those
that cannot fit or cannot win; see ``smart.SmartPruner``). The plans are ``plans.plan``.

Smart skips are *not* rows of the store: a skipped configuration was never attempted, and a later exhaustive
sweep into the same store must still measure it (the store's ids are what a resumed sweep skips). Each skip is
appended to ``<results stem>.skipped.jsonl`` beside the store, with its reason, and counted in the summary.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from functools import lru_cache, partial
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..catalog.config import Config
from ..launch import (DEFAULT_REPS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, EXECUTORS, TIMED_OOM_NOTE, WORKER_MODULE,
                     WORKSHOP_PATH, NoGPUError, Rendezvous, machine_cannot_run, run)
from ..catalog.methods import Methods
from ..results import (ALL, DEFAULT_RUNS, MEMORY_WALL, PREDICTED_STOP, RETRY_CHOICES, UNCOMMITTED, ResultStore, Spread,
                      append_line, fastest_row, is_not_run, is_uncommitted, json_safe, latest_rows, latest_skips,
                      load_runs, make_row, now_iso, read_lines, set_aside_reason, skip_is_latest, skip_key,
                      skipped_path, state_of, step_ceiling, step_spreads, stopped_on_prediction, synced_micro_batches,
                      unchecked_at_wall)
from .smart import SmartPruner, oom_above_smallest

__all__ = ["Interrupted", "SELECTS", "format_summary", "log_path", "record_not_run", "run_sweep"]


# The ``retry`` choices that select rows by what they record rather than by their outcome.
SELECTS = {UNCOMMITTED: is_uncommitted, PREDICTED_STOP: stopped_on_prediction, MEMORY_WALL: unchecked_at_wall}


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


def _fmt_duration(s: float) -> str:
    s = max(0, int(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


@dataclass
class _Progress:
    """tqdm bar: the configuration running, the last outcome, and the time left."""

    total: int
    enabled: bool
    budget_s: float | None

    def __post_init__(self) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, unit="config", disable=not self.enabled, dynamic_ncols=True)
        self.t0 = time.monotonic()

    def start(self, c: Config) -> None:
        self.bar.set_description(f"{c.model} {c.methods.label()}")

    def done(self, c: Config, outcome: str) -> None:
        self.bar.update(1)
        left = ""
        if self.budget_s is not None:
            left = f", budget left {_fmt_duration(self.budget_s - (time.monotonic() - self.t0))}"
        self.bar.set_postfix_str(f"last: {c.model} {c.methods.label()}: {outcome}{left}")

    def close(self) -> None:
        self.bar.close()


def _stale(row: dict, micro_batches: dict[str, int] | None) -> bool:
    """An unsynced row at another micro-batch than its synced twin's latest: it times other work, so the
    pair is timed again. Or a row that ran out of memory when timed at a searched micro-batch above 1 before
    the timed run fell back to half that size (no note in its search log): measured again, it gets a size."""
    if oom_above_smallest(row) and not any(t.get("note") == TIMED_OOM_NOTE for t in row.get("mbs_search") or []):
        return True
    want = (micro_batches or {}).get(row["config_id"]) if row["timing"] == "unsynced" else None
    return want is not None and row.get("micro_batch") != want


def _best(rows: list[dict], device: str | None = None) -> dict[str, dict]:
    """Each model's fastest measured row (``results.fastest_row``), summarized."""
    by_model: dict[str, list[dict]] = {}
    for r in rows:
        by_model.setdefault(r["config"]["model"], []).append(r)
    best = {model: fastest_row(mine) for model, mine in by_model.items()}
    return {model: {"config_id": r["config_id"], "label": Methods.from_dict(r["config"]["methods"]).label(),
                    "name": Config.from_dict(r["config"]).name(device), "tiny": bool(r["config"].get("tiny")),
                    "micro_batch": r["micro_batch"], "gas": r["gas"], "step_time_s": r["step_time_s"],
                    "days": r["days"]}
            for model, r in best.items() if r is not None}


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


def run_sweep(configs: Sequence[Config], out: str | os.PathLike, setup: str, *, search: str,
              timing: str = "synced", validate: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S,
              executor: str = "local", device: str | None = None, progress: bool = True,
              budget_s: float | None = None, warmup: int = DEFAULT_WARMUP, reps: int = DEFAULT_REPS,
              rdzv: Rendezvous | None = None, slurm_params: dict[str, Any] | None = None,
              retry: Sequence[str] = (), micro_batches: dict[str, int] | None = None,
              not_run_reason: str | None = None, since: str | None = None, worker: str = WORKER_MODULE) -> dict:
    """Run every configuration not yet in the store at ``out``; returns a summary.

    Resumable: configurations with a row of this timing and mode are skipped, unless its outcome is listed
    in ``retry`` (e.g. ``("error", "timeout")``: a new attempt adds a row beside the old one; "uncommitted": the
    row names no commit, ``results.is_uncommitted``; "predicted-stop": its micro-batch search stopped on the memory
    model's prediction, ``results.stopped_on_prediction``; "memory-wall": it may have been timed at the memory
    wall and was never checked, ``results.unchecked_at_wall``; "all": every configuration, as in an empty store, the
    smart search's rules deciding from this run's measurements alone; a configuration its budget never reached
    is in the summary's ``not_run`` like any other, and with ``not_run_reason`` its 'not run' row supersedes an
    older measurement, ``record_not_run``) or the row only
    records that a time budget never started it (``results.is_not_run``), or it is an unsynced row at another
    micro-batch than its synced twin's (``_stale``). Ctrl-C or SIGTERM stop the running configuration (killing
    its processes, writing no row for it) and re-raise; every finished configuration's row is already on disk.
    ``budget_s`` stops launching new configurations once spent; with ``not_run_reason`` each one it never
    started gets a 'not run' row with that reason (``record_not_run``, on node 0 only; the summary's
    ``not_run_rows`` counts them); ``since`` (an ISO time, default this call's start): when the search began, so
    that a search from scratch supersedes only rows older than itself.
    A failure that shows this machine can run no
    configuration at all (no driver, no GPU: ``launch.machine_cannot_run``) stops the sweep with ``NoGPUError``
    naming it, its row kept. A row the store cannot take is written beside it (``ResultStore.keep``), and the
    summary's ``kept_elsewhere`` says where.
    ``worker``: the module each rank runs (an instrumented one, e.g. the tests' faulty worker).
    ``micro_batches`` maps a
    configuration id to a micro-batch already found for it, which is then used without a new search; for an
    unsynced timing it defaults to the micro-batches of the store's synced rows.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    since = since or now_iso()
    store, out = ResultStore(out), Path(out)
    mode = "validate" if validate else "step"
    bad = set(retry) - set(RETRY_CHOICES)
    if bad:
        raise ValueError(f"cannot retry {', '.join(sorted(bad))}; choose from: {', '.join(RETRY_CHOICES)}")
    stored = store.rows()
    if micro_batches is None and timing == "unsynced":
        micro_batches = synced_micro_batches(stored)
    # The latest row of each configuration decides (an older real failure must not stand in for a newer row
    # that is set aside or left unstarted).
    last_row = {r["config_id"]: r for r in stored if r["timing"] == timing and r["mode"] == mode}
    fresh = ALL in retry  # a search from scratch: nothing measured stands in for a measurement or a decision
    existing = {cid: r for cid, r in last_row.items() if r["outcome"] == "invalid"} if fresh else {
        cid: r for cid, r in last_row.items()
        if r["outcome"] not in retry and not is_not_run(r) and not _stale(r, micro_batches)
        and not set_aside_reason(r) and not any(SELECTS[k](r) for k in retry if k in SELECTS)}
    # The pruner asks for the ceiling at every checkpointed candidate: each GPU's GEMM sweeps are read once.
    pruner = (SmartPruner(timeout_s=timeout_s, ceiling=lru_cache(maxsize=None)(partial(_ceiling, out=out)),
                          spread=_spread(stored)) if search == "smart" else None)
    skip_file = skipped_path(out)
    # A search from scratch records each of its skips, whatever an older search recorded.
    already_skipped = (latest_skips(s for _, s in read_lines(skip_file))
                       if pruner and skip_file.exists() and not fresh else {})
    planned_ids = {c.id for c in configs}
    for c in configs:
        if pruner and c.id in existing:
            pruner.observe(c, existing[c.id])
    summary: dict[str, Any] = {
        "setup": setup, "device": device, "search": search, "timing": timing, "mode": mode, "results": str(out),
        "skipped_file": str(skip_file) if pruner else None, "planned": len(configs),
        "resumed": len(planned_ids & set(existing)), "ran": 0, "outcomes": Counter(), "skipped": [],
        "skip_reasons": Counter(), "not_run": [], "kept_elsewhere": [],
        "memory_model": (pruner.estimate is not None) if pruner else None}
    bar = _Progress(len(configs) - summary["resumed"], progress, budget_s)
    t0 = time.monotonic()
    # A preloading process pays for its start only across several configurations (``run_config``'s ``preload``):
    # those still to measure that start a worker at all (an invalid one is refused before any).
    to_launch = {c.id for c in configs if c.id not in existing and c.refusal() is None}
    kwargs = dict(setup=setup, search=search, timing=timing, validate=validate, timeout_s=timeout_s,
                  device=device, warmup=warmup, reps=reps, rdzv=rdzv, preload=len(to_launch) > 1)
    seen: set[str] = set()
    try:
        with _sigterm_as_interrupt():
            for c in configs:
                if c.id in existing or c.id in seen:
                    continue
                seen.add(c.id)
                if budget_s is not None and time.monotonic() - t0 > budget_s:
                    summary["not_run"].append(c.id)
                    bar.done(c, "not run (budget spent)")
                    continue
                # A measured configuration asked for again is measured, not pruned: a skip would stand in the
                # skips file against the result it was asked to check.
                remeasured = not fresh and c.id in last_row and last_row[c.id]["outcome"] == "ok"
                why = pruner.skip(c) if pruner and not remeasured else None
                if why:
                    _record_skip(skip_file, c, setup, timing, mode, why, already_skipped, last_row.get(c.id))
                    summary["skipped"].append({"config_id": c.id, "label": c.methods.label(), "reason": why[1]})
                    summary["skip_reasons"][why[0]] += 1
                    bar.done(c, "skipped")
                    continue
                bar.start(c)
                extra: dict[str, Any] = {"worker": worker}
                if micro_batches and micro_batches.get(c.id):
                    extra["micro_batch"] = micro_batches[c.id]
                row = run(c, executor=executor, folder=out.parent / "submitit", slurm_params=slurm_params,
                          log_path=log_path(out, c, timing, mode), **kwargs, **extra)
                if row is None:  # a node other than 0 of a multi-node run writes nothing
                    bar.done(c, "done (node > 0)")
                    continue
                if row.get("log"):
                    row["log"] = os.path.relpath(row["log"], out.parent)
                where, why = store.keep(row)
                if why:
                    summary["kept_elsewhere"].append(str(where))
                    print(f"could not append to {why}; the row of {c.id} is kept in {where}", file=sys.stderr)
                summary["ran"] += 1
                summary["outcomes"][row["outcome"]] += 1
                if pruner:
                    pruner.observe(c, row)
                bar.done(c, row["outcome"])
                cannot = machine_cannot_run(row)
                if cannot:
                    left = sum(1 for x in configs if x.id not in existing and x.id not in seen)
                    raise NoGPUError(f"stopped after {c.model} {c.methods.label()} ({c.id}), which shows that this "
                                     f"machine cannot run any configuration: {cannot}. Its row is kept in {where}; "
                                     f"the {left} configuration(s) left were not started. On a machine without a "
                                     f"GPU, take the workshop path: {WORKSHOP_PATH}")
    finally:  # on Ctrl-C/SIGTERM the exception goes on: the running configuration was killed, rows are on disk
        bar.close()
        summary["elapsed_s"] = round(time.monotonic() - t0, 1)
    if not_run_reason and summary["not_run"] and (rdzv is None or rdzv.node_rank == 0):  # node 0 writes the rows
        summary["not_run_rows"] = record_not_run(out, setup, configs, summary["not_run"], not_run_reason,
                                                 search=search, timing=timing, mode=mode, fresh=fresh, since=since)
    # The latest row of each configuration: one measured again speaks for it, not its superseded row.
    rows = [r for r in latest_rows(store.rows())
            if r["config_id"] in planned_ids and r["timing"] == timing and r["mode"] == mode]
    summary["outcomes_all"] = dict(Counter(state_of(r) for r in rows))
    summary["outcomes"] = dict(summary["outcomes"])
    summary["skip_reasons"] = dict(summary["skip_reasons"])
    # An unsynchronised clock misses GPU work: its fastest row is no result, so it names no "best".
    summary["best"] = _best(rows, device) if timing == "synced" else {}
    return summary


def record_not_run(out: str | os.PathLike, setup: str, configs: Sequence[Config], ids: Iterable[str], reason: str,
                   *, search: str, timing: str, mode: str, fresh: bool = False, since: str | None = None) -> int:
    """A 'not run' row (``reason`` starting ``NOT_RUN_PREFIX``) for each of ``ids`` among ``configs`` that a time
    budget left unstarted; an excluded combination gets its ``invalid`` row instead, which costs no time. Returns
    how many 'not run' rows were written. A configuration with a row of ``setup`` is left as it is (its row is the
    latest word), except in a search from scratch (``fresh``: ``retry`` "all"), where a step measurement older than
    the search (started before ``since``, an ISO time) must not stand in for one the search never made: its 'not
    run' row supersedes it, so the search shows as unfinished and a resumed one measures it (the older row stays in
    the file). A validation is never superseded so: it checks the engine, not the search, and a later row of its
    revision would hide it (``rows_to_read``)."""
    store = ResultStore(out)
    latest = {r["config_id"]: r for r in latest_rows(store.rows())
              if r.get("setup") == setup and r["timing"] == timing and r["mode"] == mode}

    def older(row: Mapping) -> bool:  # a measurement this search did not make
        return (fresh and mode == "step" and row["outcome"] != "invalid" and not is_not_run(row)
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
    import json

    entry = {"config_id": c.id, "config": c.to_dict(), "label": c.methods.label(), "setup": setup,
             "search": "smart", "timing": timing, "mode": mode, "category": why[0], "reason": why[1],
             "at": now_iso()}
    last = already.get(skip_key(entry))
    if last is not None and skip_is_latest(last, row) and (last.get("category"), last.get("reason")) == why:
        return
    append_line(path, (json.dumps(json_safe(entry), separators=(",", ":")) + "\n").encode())
    already[skip_key(entry)] = entry


def format_summary(s: dict) -> str:
    """The summary for people: what ran, what it gave, what was skipped and why, the best per model."""
    lines = [f"{s['planned']} planned, {s['resumed']} already in {s['results']}, {s['ran']} ran "
             f"({', '.join(f'{k}: {v}' for k, v in s['outcomes'].items()) or 'none'}) in "
             f"{_fmt_duration(s.get('elapsed_s', 0))}"]
    if s.get("skipped_file") is not None:
        lines.append(f"smart: skipped {len(s['skipped'])} ("
                     + (", ".join(f"{k}: {v}" for k, v in s["skip_reasons"].items()) or "none") + ")"
                     + ("" if s.get("memory_model") else "; the memory model was not available"))
        lines += [f"  {k['label']}: {k['reason']}" for k in s["skipped"]]
    if s["not_run"]:
        lines.append(f"{len(s['not_run'])} not run: the time budget was spent (re-run to continue)")
    if s.get("kept_elsewhere"):
        lines.append(f"{len(s['kept_elsewhere'])} row(s) could not be appended to {s['results']} and are kept in: "
                     + ", ".join(s["kept_elsewhere"]))
    for model, b in s.get("best", {}).items():
        # a tiny variant's days are the tiny recipe's, no answer for the full model: only its step is shown
        days = f", {b['days']:.3g} days" if not b.get("tiny") else ""
        lines.append(f"best for {b.get('name', model)}: {b['label']} at micro-batch {b['micro_batch']} x {b['gas']} "
                     f"accumulation, {b['step_time_s']:.4g} s/step{days}")
    if "outcomes_all" in s and not s["outcomes_all"].get("ok"):
        lines.append("no configuration was measured")
    return "\n".join(lines)
