"""Plans of configurations, run one after another into the results store, resumable and optionally pruned.

Presets: ``naive`` (all methods off), ``free-lunch`` (compile + kernels + TF32), ``exhaustive`` (every
memory-saving combination with free-lunch on: 12 valid on one GPU, 22 on more, and the excluded ones recorded
as ``invalid`` rows with their rule) and ``smart`` (the same candidates, fastest-looking first, skipping those
that cannot fit or cannot win; see ``SmartPruner``).

Smart skips are *not* rows of the store: a skipped configuration was never attempted, and a later exhaustive
sweep into the same store must still measure it (the store's ids are what a resumed sweep skips). Each skip is
appended to ``<results stem>.skipped.jsonl`` beside the store, with its reason, and counted in the summary.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import psutil

from .config import Config
from .hardware import get_gpu
from .launch import (DEFAULT_REPS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, EXECUTORS, TIMED_OOM_NOTE, WORKER_MODULE,
                     Rendezvous, run)
from .methods import FREE_LUNCH, NAIVE, Methods, all_memory_combinations, exclusion_reason
from .models import get_model
from .results import (RETRY_OUTCOMES, ResultStore, _clean, append_line, fastest_row, is_not_run, latest_skips,
                      now_iso, read_lines, set_aside_reason, skip_is_latest, skip_key, state_of,
                      synced_micro_batches)

SWEEP_PRESETS = ("naive", "free-lunch", "exhaustive", "smart")
# How much memory each sharding saves (ZeRO-2 ~ FSDP shard-grad-op, ZeRO-3 ~ FSDP full-shard).
SHARD_LEVEL = {"none": 0, "zero1": 1, "zero2": 2, "fsdp_shard_grad_op": 2, "zero3": 3, "fsdp_full_shard": 3}
FIT_MARGIN = 0.10  # skip as "cannot fit" only when the model predicts 10% more than the GPU holds


# --- plans --------------------------------------------------------------------------------------------

def _model_list(models: str | Sequence[str]) -> list[str]:
    names = [m.strip() for m in models.split(",")] if isinstance(models, str) else list(models)
    return [get_model(m).key for m in names if m]


def speed_rank(m: Methods) -> tuple:
    """A guess of how slow a memory-saving combination is (lower first): offloading moves the optimizer to
    the CPU, checkpointing recomputes the forward pass, deeper sharding adds communication."""
    return (m.offload, m.checkpointing, SHARD_LEVEL[m.sharding], m.uses_fsdp)


def plan(models: str | Sequence[str], gpu: str, n_gpus: int, preset: str, tiny: bool = False, nodes: int = 1,
         micro_batch: int | None = None) -> list[Config]:
    """The configurations a preset measures (exhaustive and smart include the invalid ones, last for smart)."""
    if preset not in SWEEP_PRESETS:
        raise ValueError(f"unknown sweep preset {preset!r}; choose one of: {', '.join(SWEEP_PRESETS)}")
    gpu = get_gpu(gpu).key
    configs = []
    for model in _model_list(models):
        if preset in ("naive", "free-lunch"):
            methods = [NAIVE if preset == "naive" else FREE_LUNCH]
        else:
            methods = all_memory_combinations(FREE_LUNCH)
            if preset == "smart":
                methods.sort(key=lambda m: (exclusion_reason(m, n_gpus) is not None, speed_rank(m)))
        configs += [Config(model, gpu, n_gpus, nodes, m, micro_batch, tiny) for m in methods]
    return configs


# --- smart pruning ------------------------------------------------------------------------------------

def _setting(c: Config) -> tuple:
    m = c.methods
    return (c.model, c.gpu, c.n_gpus, c.nodes, c.tiny, c.micro_batch, m.compile, m.kernels, m.tf32)


def saves_at_least(a: Methods, b: Methods) -> bool:
    """a saves at least as much memory as b in every dimension (checkpointing, sharding depth, offloading)."""
    return (a.checkpointing >= b.checkpointing and SHARD_LEVEL[a.sharding] >= SHARD_LEVEL[b.sharding]
            and a.offload >= b.offload)


def saves_more(a: Methods, b: Methods) -> bool:
    return saves_at_least(a, b) and not saves_at_least(b, a)


def _oom_above_smallest(row: dict) -> bool:
    """Out of memory when timed at a searched micro-batch above 1: it says nothing about smaller sizes."""
    return row["outcome"] == "oom" and row["config"].get("micro_batch") is None and (row.get("micro_batch") or 0) > 1


def _power_of_two_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


class SmartPruner:
    """Skips candidates that cannot fit or cannot win, with a reason for each.

    Rules (candidates compared only within one setting: model, GPU, count, free-lunch switches):
    1. cannot fit: the memory model predicts that micro-batch 1 needs more than the GPU's memory (+10%), or
       that the states a node's ranks offload need more than the host memory of the machine running the sweep
       (seen on one H100 with 128 GiB: Pythia-6.9B's ZeRO-1 offload was killed by the out-of-memory killer);
    2. cannot fit: a measured configuration that saves at least as much memory ran out at micro-batch 1;
    3. cannot win: a measured configuration that saves less memory already runs the whole per-GPU batch in one
       micro-batch (or the micro-batch is fixed), so more memory saving can only add overhead;
    4. cannot win: the memory model predicts no larger micro-batch than for a measured configuration that saves
       less memory (predictions compared with predictions, so the model's bias cancels), so again only overhead;
    5. cannot finish: a configuration that saves less memory ran at least this sweep's time limit without a
       result. Saving more memory adds recomputation, transfers or communication, and lets the micro-batch
       search go on to larger sizes, so it would not finish within the same limit either (a retry with a longer
       ``timeout_s`` tries it again; the same saving through another library is still tried, as in rule 3).
    Without the memory model (``estimate``), rules 1 and 4 are off and the summary says so.
    """

    def __init__(self, use_memory_model: bool = True, timeout_s: float = DEFAULT_TIMEOUT_S,
                 host_memory_gb: float | None = None) -> None:
        self.measured: dict[tuple, list[tuple[Config, dict]]] = {}
        self.timeout_s = timeout_s
        self.host_gb = host_memory_gb if host_memory_gb is not None else psutil.virtual_memory().total / 1e9
        self.estimate = None
        if use_memory_model:
            try:
                from . import estimate

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
            if row["outcome"] == "oom" and not _oom_above_smallest(row) and saves_at_least(o, m):
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


# --- running -------------------------------------------------------------------------------------------

def skipped_path(out: str | os.PathLike) -> Path:
    out = Path(out)
    return out.with_name(out.stem + ".skipped.jsonl")


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
    if _oom_above_smallest(row) and not any(t.get("note") == TIMED_OOM_NOTE for t in row.get("mbs_search") or []):
        return True
    want = (micro_batches or {}).get(row["config_id"]) if row["timing"] == "unsynced" else None
    return want is not None and row.get("micro_batch") != want


def _best(rows: list[dict]) -> dict[str, dict]:
    """Each model's fastest measured row (``results.fastest_row``), summarized."""
    by_model: dict[str, list[dict]] = {}
    for r in rows:
        by_model.setdefault(r["config"]["model"], []).append(r)
    best = {model: fastest_row(mine) for model, mine in by_model.items()}
    return {model: {"config_id": r["config_id"], "label": Methods.from_dict(r["config"]["methods"]).label(),
                    "micro_batch": r["micro_batch"], "gas": r["gas"], "step_time_s": r["step_time_s"],
                    "days": r["days"]}
            for model, r in best.items() if r is not None}


def run_sweep(configs: Sequence[Config], out: str | os.PathLike, setup: str, *, search: str,
              timing: str = "synced", validate: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S,
              executor: str = "local", device: str | None = None, progress: bool = True,
              budget_s: float | None = None, warmup: int = DEFAULT_WARMUP, reps: int = DEFAULT_REPS,
              rdzv: Rendezvous | None = None, slurm_params: dict[str, Any] | None = None,
              retry: Sequence[str] = (), micro_batches: dict[str, int] | None = None,
              worker: str = WORKER_MODULE) -> dict:
    """Run every configuration not yet in the store at ``out``; returns a summary.

    Resumable: configurations with a row of this timing and mode are skipped, unless its outcome is listed
    in ``retry`` (e.g. ``("error", "timeout")``: a new attempt adds a row beside the old one) or the row only
    records that a time budget never started it (``results.is_not_run``), or it is an unsynced row at another
    micro-batch than its synced twin's (``_stale``). Ctrl-C or SIGTERM stop the running configuration (killing
    its processes, writing no row for it) and re-raise; every finished configuration's row is already on disk.
    ``budget_s`` stops launching new configurations once spent.
    ``worker``: the module torchrun runs in each rank (an instrumented one, e.g. the tests' faulty worker).
    ``micro_batches`` maps a
    configuration id to a micro-batch already found for it, which is then used without a new search; for an
    unsynced timing it defaults to the micro-batches of the store's synced rows.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    store, out = ResultStore(out), Path(out)
    mode = "validate" if validate else "step"
    bad = set(retry) - set(RETRY_OUTCOMES)
    if bad:
        raise ValueError(f"cannot retry {', '.join(sorted(bad))}; choose from: {', '.join(RETRY_OUTCOMES)}")
    stored = store.rows()
    if micro_batches is None and timing == "unsynced":
        micro_batches = synced_micro_batches(stored)
    # The latest row of each configuration decides (an older real failure must not stand in for a newer row
    # that is set aside or left unstarted).
    last_row = {r["config_id"]: r for r in stored if r["timing"] == timing and r["mode"] == mode}
    existing = {cid: r for cid, r in last_row.items()
                if r["outcome"] not in retry and not is_not_run(r) and not _stale(r, micro_batches)
                and not set_aside_reason(r)}
    pruner = SmartPruner(timeout_s=timeout_s) if search == "smart" else None
    skip_file = skipped_path(out)
    already_skipped = latest_skips(s for _, s in read_lines(skip_file)) if pruner and skip_file.exists() else {}
    planned_ids = {c.id for c in configs}
    for c in configs:
        if pruner and c.id in existing:
            pruner.observe(c, existing[c.id])
    summary: dict[str, Any] = {
        "setup": setup, "search": search, "timing": timing, "mode": mode, "results": str(out),
        "skipped_file": str(skip_file) if pruner else None, "planned": len(configs),
        "resumed": len(planned_ids & set(existing)), "ran": 0, "outcomes": Counter(), "skipped": [],
        "skip_reasons": Counter(), "not_run": [],
        "memory_model": (pruner.estimate is not None) if pruner else None}
    bar = _Progress(len(configs) - summary["resumed"], progress, budget_s)
    t0 = time.monotonic()
    kwargs = dict(setup=setup, search=search, timing=timing, validate=validate, timeout_s=timeout_s,
                  device=device, warmup=warmup, reps=reps, rdzv=rdzv)
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
                why = pruner.skip(c) if pruner else None
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
                store.append(row)
                summary["ran"] += 1
                summary["outcomes"][row["outcome"]] += 1
                if pruner:
                    pruner.observe(c, row)
                bar.done(c, row["outcome"])
    finally:  # on Ctrl-C/SIGTERM the exception goes on: the running configuration was killed, rows are on disk
        bar.close()
        summary["elapsed_s"] = round(time.monotonic() - t0, 1)
    rows = [r for r in store.rows() if r["config_id"] in planned_ids and r["timing"] == timing and r["mode"] == mode]
    summary["outcomes_all"] = dict(Counter(state_of(r) for r in rows))
    summary["outcomes"] = dict(summary["outcomes"])
    summary["skip_reasons"] = dict(summary["skip_reasons"])
    # An unsynchronised clock misses GPU work: its fastest row is no result, so it names no "best".
    summary["best"] = _best(rows) if timing == "synced" else {}
    return summary


def _record_skip(path: Path, c: Config, setup: str, timing: str, mode: str, why: tuple[str, str],
                 already: dict[tuple, Mapping], row: dict | None) -> None:
    """Append the skip, once per configuration: again only when a row has come since the last one (a retried
    failure the search now decides against) or when the rule that skips it changed (a changed memory model, say),
    so that the file's latest word on it is this decision."""
    import json

    entry = {"config_id": c.id, "config": c.to_dict(), "label": c.methods.label(), "setup": setup,
             "search": "smart", "timing": timing, "mode": mode, "category": why[0], "reason": why[1],
             "at": now_iso()}
    last = already.get(skip_key(entry))
    if last is not None and skip_is_latest(last, row) and last.get("category") == why[0]:
        return
    append_line(path, (json.dumps(_clean(entry), separators=(",", ":")) + "\n").encode())
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
    for model, b in s.get("best", {}).items():
        lines.append(f"best for {model}: {b['label']} at micro-batch {b['micro_batch']} x {b['gas']} accumulation, "
                     f"{b['step_time_s']:.4g} s/step, {b['days']:.3g} days")
    return "\n".join(lines)
