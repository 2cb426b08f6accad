"""The one-launch engine checked against the two-launch engine it replaced, on the same configurations and the same
machine: on one GPU, one process now searches the micro-batch and times the size it found, also after a trial
that ran out of memory (``measure.worker.measure``); before, a trial that ran out of memory sent the timing to
fresh processes, for fear that the memory it left behind would skew the step. The rows are the engine check's
own files under ``notebooks/runs/<setup>/evidence/engine/`` (outside the setup's results): ``results-one-launch.jsonl``
(``bench`` and ``sweep`` as they run now) and ``results-two-launch.jsonl`` (``bench --fresh-after-oom``)."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..measure.wall import WARMUP_COUNTED
from .frame import frame_from_rows, runs_root
from .search import exhaustive_ids

ONE_LAUNCH = "results-one-launch*.jsonl"
TWO_LAUNCH = "results-two-launch.jsonl"
LAUNCH_CHECK_COLUMNS = ["setup", "model", "methods_label", "micro_batch", "one_step_s", "two_step_s", "step_change",
                        "one_s", "two_s"]
SEARCH_COST_COLUMNS = ["setup", "model", "commit", "date", "ended_at", "configurations", "of", "median_s", "total_s",
                       "slowest", "slowest_s", "slowest_in_blocks", "measured_share"]
# The phases of a configuration's wall time (``measure.wall.PHASES``) that are measured GPU work: the micro-batch
# search's trial steps (the first of which compiles a fresh model) and the timed repetitions (a warm-up block kept as
# one among them: ``spent_of``). The rest (start and imports, build, warm-up, teardown) is the engine's overhead.
GPU_WORK_PHASES = ("trials", "timed")


def engine_evidence_rows(pattern: str, root: str | Path | None = None) -> list[dict]:
    """The rows of every setup's engine-check files matching ``pattern`` under ``evidence/engine/``, files in name
    order."""
    from ..results import ResultStore

    return [r for path in sorted(runs_root(root).glob(f"*/evidence/engine/{pattern}")) for r in ResultStore(path).rows()]


def _ran(pattern: str, root: str | Path | None) -> pd.DataFrame:
    """The synchronized step rows that ran (measured, or out of memory) in the engine check's files."""
    return _synced_steps(engine_evidence_rows(pattern, root), ("ok", "oom"))


def spent_of(row: dict) -> dict[str, float] | None:
    """A row's ``wall_breakdown``, with a warm-up block that its timing kept as a timed repetition counted as
    ``timed``: the engine books it there and says so (``measure.wall.WARMUP_BOOKED``); a row written before has
    it under ``warmup``, the block being all of that phase (one warm-up before blocks), and its note ends with
    ``WARMUP_COUNTED``. None where the row records no breakdown."""
    spent = row.get("wall_breakdown")
    if not spent:
        return None
    notes = (row.get("ran") or {}).get("notes") or []
    if not any(n.endswith(WARMUP_COUNTED) for n in notes):
        return dict(spent)
    return {**spent, "warmup": 0.0, "timed": spent.get("timed", 0.0) + spent.get("warmup", 0.0)}


def _gpu_work_s(row: dict) -> float:
    """The seconds of a row's wall time that were measured GPU work (``GPU_WORK_PHASES`` of ``spent_of``), or NaN
    where it records none."""
    spent = spent_of(row)
    return sum(spent.get(p, 0.0) for p in GPU_WORK_PHASES) if spent else math.nan


def _synced_steps(rows: list[dict], outcomes: tuple[str, ...]) -> pd.DataFrame:
    """The synchronized step rows among ``rows`` whose outcome is one of ``outcomes``, as a frame, with the engine's
    commit and the seconds of measured GPU work of each (``_gpu_work_s``)."""
    if not rows:
        return pd.DataFrame()
    df = frame_from_rows(rows).assign(commit=[_commit_of(r) for r in rows],
                                      gpu_work_s=[_gpu_work_s(r) for r in rows])
    return df[(df["timing"] == "synced") & (df["mode"] == "step") & df["outcome"].isin(outcomes)]


def launch_check(root: str | Path | None = None) -> pd.DataFrame:
    """Each configuration measured both ways on one machine: its step time and wall time with one launch and with
    two, and the step's relative change (one over two, minus 1). The one-launch row taken beside its two-launch twin
    is the first of the same configuration by the same commit of the engine (``ONE_LAUNCH``'s files in name order);
    a later engine's search of that configuration has no twin."""
    one, two = _ran(ONE_LAUNCH, root), _ran(TWO_LAUNCH, root)
    if one.empty or two.empty:
        return pd.DataFrame(columns=LAUNCH_CHECK_COLUMNS)
    keys = ["setup", "config_id", "commit"]
    m = one.drop_duplicates(keys).merge(two.drop_duplicates(keys, keep="last"), on=keys, suffixes=("", "_two"))
    out = pd.DataFrame({"setup": m["setup"], "model": m["model"], "methods_label": m["methods_label"],
                        "micro_batch": m["micro_batch"], "one_step_s": m["step_time_s"],
                        "two_step_s": m["step_time_s_two"], "one_s": m["duration_s"], "two_s": m["duration_s_two"]})
    out["step_change"] = out["one_step_s"] / out["two_step_s"] - 1
    return out[LAUNCH_CHECK_COLUMNS].reset_index(drop=True)


def search_cost(root: str | Path | None = None) -> pd.DataFrame:
    """What the one-launch engine spent per model and per commit of the engine (a search of the same model at a
    later commit is a row of its own, so that the engine's cost can be followed from one to the next): how many of
    the exhaustive search's valid configurations ran (``of``: ``search.exhaustive_ids``), the median and the total
    wall time of one configuration (launch, search, build, compile and timing), the costliest configuration, its
    time and whether its steady phase was timed as whole blocks (``timed_as_blocks``), when the last one
    started (``date``: its day; ``ended_at``: the time the rows are in order of), and the share of the summed wall
    time that was measured GPU work (``measured_share``: ``_gpu_work_s`` of the rows counted; NaN where one of them
    records no breakdown). Within one commit a configuration
    counts once, as its first row (files in name order: a search resumed on a second machine adds only what the
    first did not measure); a search resumed by another commit is two partial ones."""
    rows = engine_evidence_rows(ONE_LAUNCH, root)
    one = _synced_steps(rows, ("ok", "oom"))
    if one.empty:
        return pd.DataFrame(columns=SEARCH_COST_COLUMNS)
    blocks = {(r.get("setup"), _commit_of(r), r["config_id"]) for r in rows
              if r["outcome"] == "ok" and timed_as_blocks(r)}
    one = one.drop_duplicates(["setup", "commit", "config_id"])
    out = []
    for (setup, model, commit, gpu, n_gpus), d in one.groupby(["setup", "model", "commit", "gpu", "n_gpus"],
                                                              sort=True):
        slowest = d.loc[d["duration_s"].idxmax()]
        last = str(d["started_at"].max())
        out.append({"setup": setup, "model": model, "commit": commit, "date": last[:10], "ended_at": last,
                    "configurations": len(d), "of": len(exhaustive_ids(model, gpu, n_gpus)),
                    "median_s": d["duration_s"].median(), "total_s": d["duration_s"].sum(),
                    "slowest": slowest["methods_label"], "slowest_s": slowest["duration_s"],
                    "slowest_in_blocks": (setup, commit, slowest["config_id"]) in blocks,
                    # NaN where a row of the search records no breakdown (a sum with NaN is NaN)
                    "measured_share": d["gpu_work_s"].sum(skipna=False) / d["duration_s"].sum()})
    return pd.DataFrame(out, columns=SEARCH_COST_COLUMNS).sort_values(["setup", "model", "ended_at"], kind="stable",
                                                                      ignore_index=True)


CHECK_SEARCH_COLUMNS = ["setup", "check", "folder", "model", "commit", "configurations", "median_s", "total_s"]


def check_searches(check: str, root: str | Path | None = None) -> pd.DataFrame:
    """The whole searches of one check of the engine's cost on one machine (``evidence/engine-cost/<check>/``), one
    row per folder directly under it that holds a ``results.jsonl`` (its ``plan.sh`` says what each ran): the
    engine's commit, how many configurations it measured, and the median and total of their wall times."""
    from ..results import ResultStore

    out = []
    for path in sorted(runs_root(root).glob(f"*/evidence/engine-cost/{check}/*/results.jsonl")):
        d = _synced_steps(ResultStore(path).rows(), ("ok", "oom"))
        for (setup, model, commit), g in ([] if d.empty else d.groupby(["setup", "model", "commit"], sort=True)):
            out.append({"setup": setup, "check": check, "folder": path.parent.name, "model": model, "commit": commit,
                        "configurations": len(g), "median_s": g["duration_s"].median(),
                        "total_s": g["duration_s"].sum()})
    return pd.DataFrame(out, columns=CHECK_SEARCH_COLUMNS)


FORKED_AB_COLUMNS = ["setup", "model", "side", "wall_s", "configurations", "median_s", "total_s"]


def forked_ab(root: str | Path | None = None) -> pd.DataFrame:
    """The forked-worker launcher's A/B (``evidence/engine/forked-ab/``: each model's whole exhaustive search with
    workers forked from one preloading process, ``on``, and started afresh, ``off``, on one machine): the search's
    wall time as its ``walls.txt`` line gives it, and the configurations it measured with their median and total
    wall times."""
    from ..results import ResultStore

    out = []
    for walls in sorted(runs_root(root).glob("*/evidence/engine/forked-ab/walls.txt")):
        for line in walls.read_text().splitlines():
            parts = line.split()  # "MODEL on|off exhaustive rc=0 wall_s=425"
            if len(parts) != 5 or parts[2] != "exhaustive":
                continue
            model, side, wall = parts[0], parts[1], float(parts[4].split("=")[1])
            d = _synced_steps(ResultStore(walls.parent / side / "results.jsonl").rows(), ("ok", "oom"))
            d = d[d["model"] == model] if not d.empty else d
            out.append({"setup": walls.parents[3].name, "model": model, "side": side, "wall_s": wall,
                        "configurations": len(d), "median_s": d["duration_s"].median() if len(d) else float("nan"),
                        "total_s": d["duration_s"].sum() if len(d) else 0.0})
    return pd.DataFrame(out, columns=FORKED_AB_COLUMNS)


ENGINE_CHANGE_COLUMNS = ["setup", "check", "model", "methods_label", "micro_batch", "before", "after", "before_s",
                         "after_s", "before_step_s", "after_step_s", "step_change"]


def _short_commit(commit: str | None) -> str | None:
    """A commit by its first 7 hex digits, as git prints it (a job may record the whole hash or the short one),
    keeping a ``+dirty`` mark: a run of uncommitted changes is not the commit's."""
    if not commit:
        return None
    head, plus, rest = commit.partition("+")
    return head[:7] + plus + rest


def _commit_of(row: dict) -> str:
    """The engine's commit that measured ``row`` (``_short_commit``), or 'unknown' where the row names none."""
    return _short_commit((row.get("env") or {}).get("git_commit")) or "unknown"


def engine_changes(root: str | Path | None = None) -> pd.DataFrame:
    """Each change of the engine's cost checked on one machine: every folder under a setup's
    ``evidence/engine-cost/`` (itself included) holding ``before/results.jsonl`` and ``after/results.jsonl``, the
    same configurations measured by the engine at two commits, interleaved (its ``plan*.sh`` says how), paired by
    configuration: the commits, the wall time of each (``duration_s``: launch, search, build, compile, timing and
    exit) and the step's relative change (after over before, minus 1)."""
    from ..results import ResultStore

    out = []
    for before in sorted(runs_root(root).glob("*/evidence/engine-cost/**/before/results.jsonl")):
        after = before.parent.parent / "after" / "results.jsonl"
        if not after.exists():
            continue
        b, a = (_synced_steps(ResultStore(p).rows(), ("ok",)) for p in (before, after))
        if b.empty or a.empty:
            continue
        m = b.merge(a, on=["setup", "config_id"], suffixes=("", "_after"))
        check = "/".join(before.parent.parent.relative_to(runs_root(root)).parts[2:])  # under evidence/
        for _, r in m.iterrows():
            out.append({"setup": r["setup"], "check": check, "model": r["model"], "methods_label": r["methods_label"],
                        "micro_batch": r["micro_batch"], "before": r["commit"], "after": r["commit_after"],
                        "before_s": r["duration_s"],
                        "after_s": r["duration_s_after"], "before_step_s": r["step_time_s"],
                        "after_step_s": r["step_time_s_after"],
                        "step_change": r["step_time_s_after"] / r["step_time_s"] - 1})
    return pd.DataFrame(out, columns=ENGINE_CHANGE_COLUMNS)


def _with_samples(rows: list[dict]) -> list[dict]:
    """The synchronized measurements that count (``status_of``: neither set aside nor a tiny workshop run) and
    kept every phase's samples beside its summary (``timing.summary``)."""
    from ..results import status_of

    return [r for r in rows if status_of(r) == "measured" and r.get("timing") == "synced"
            and not r["config"].get("tiny") and r.get("times")
            and all(t.get("samples") is not None for t in r["times"].values())]


FEWER_REPS_COLUMNS = ["setup", "model", "methods_label", "micro_batch", "reps", "step_s", "fewer_step_s", "change"]


def timed_as_blocks(row: dict) -> bool:
    """Whether a row's steady phase was timed as one block of micro-steps (``timing.steady_block``: DeepSpeed
    ZeRO-3 with offload), whose repetitions are ``timing.BLOCK_REPS`` rather than ``DEFAULT_REPS``."""
    from ..catalog.config import Config
    from ..measure.timing import steady_block

    return bool(row.get("gas")) and steady_block(Config.from_dict(row["config"]), int(row["gas"])) > 1


def fewer_reps(rows: list[dict], reps: int, blocks: bool | None = None) -> pd.DataFrame:
    """How far each synchronized measured row's step would move had its timing stopped after its first ``reps``
    repetitions: the step rebuilt (``extrapolation.rebuilt_step``) from the median of each phase's first ``reps``
    samples beside the step the row holds (``change``: relative). Only measurements that count (``status_of``:
    neither set aside nor a tiny workshop run) that stored their samples (``timing.summary``) and took more than
    ``reps`` repetitions; with ``blocks`` True only those timed as blocks (``timed_as_blocks``), False the others."""
    import statistics

    from ..catalog.methods import Methods
    from ..measure.extrapolation import rebuilt_step

    out = []
    for r in _with_samples(rows):
        if blocks is not None and timed_as_blocks(r) != blocks:
            continue
        times = r["times"]
        taken = max(len(t["samples"]) for t in times.values())
        if taken <= reps:
            continue
        fewer = rebuilt_step({k: statistics.median(t["samples"][:reps]) for k, t in times.items()}, int(r["gas"]),
                             "synced")
        out.append({"setup": r.get("setup"), "model": r["config"]["model"], "methods_label": Methods.from_dict(
                    r["config"]["methods"]).label(), "micro_batch": r["micro_batch"], "reps": taken,
                    "step_s": r["step_time_s"], "fewer_step_s": fewer, "change": fewer / r["step_time_s"] - 1})
    return pd.DataFrame(out, columns=FEWER_REPS_COLUMNS)


TIMING_SHARE_COLUMNS = ["setup", "model", "methods_label", "reps", "timing_s", "duration_s", "share"]


def timing_share(rows: list[dict]) -> pd.DataFrame:
    """What timing cost each measured synchronized row that kept its samples (``timing.summary``): the
    repetitions it took, the seconds its timing took (``ran.timing_s``: the build at the size found where the
    search did not keep it, warm-up and repetitions) and their share of the configuration's wall time
    (``duration_s``)."""
    from ..catalog.methods import Methods

    out = []
    for r in _with_samples(rows):
        ran = r.get("ran") or {}
        if not ran.get("timing_s") or not r.get("duration_s"):
            continue
        out.append({"setup": r.get("setup"), "model": r["config"]["model"],
                    "methods_label": Methods.from_dict(r["config"]["methods"]).label(),
                    "reps": max(len(t["samples"]) for t in r["times"].values()), "timing_s": ran["timing_s"],
                    "duration_s": r["duration_s"], "share": ran["timing_s"] / r["duration_s"]})
    return pd.DataFrame(out, columns=TIMING_SHARE_COLUMNS)


def wall_breakdown(rows: list[dict]) -> tuple[pd.DataFrame, int]:
    """Where the engine's wall time went, per method class (``methods.validation_class``), over the rows (tiny
    workshop runs left out) that record it (``wall_breakdown``, ``measure.wall.PHASES``): how many configurations,
    their median wall time, and each phase's share of their summed wall time. Also how many rows have no record:
    those made before the engine kept one, whose time is known only in total (``duration_s``)."""
    from ..measure.wall import PHASES
    from ..results.state import validation_class_of

    counted = [r for r in rows if not (r.get("config") or {}).get("tiny") and r.get("duration_s")]
    kept = [{**r, "wall_breakdown": spent_of(r)} for r in counted if r.get("wall_breakdown")]
    columns = ["method_class", "configurations", "median_s", *PHASES]
    by: dict[str, list[dict]] = {}
    for r in kept:
        by.setdefault(validation_class_of(r), []).append(r)
    out = []
    for cls, mine in sorted(by.items()):
        total = sum(r["duration_s"] for r in mine)
        out.append({"method_class": cls, "configurations": len(mine),
                    "median_s": float(pd.Series([r["duration_s"] for r in mine]).median()),
                    **{p: sum(r["wall_breakdown"].get(p, 0.0) for r in mine) / total for p in PHASES}})
    return pd.DataFrame(out, columns=columns), len(counted) - len(kept)


ONE_PROCESS_COLUMNS = ["setup", "model", "methods_label", "fresh_micro_batch", "one_micro_batch", "fresh_step_s",
                       "one_step_s", "step_change", "inside_spread", "engine_measured", "engine_spread", "after_zero3",
                       "host_gb_after", "fresh_s", "one_s"]
ONE_PROCESS_SEARCH_COLUMNS = ["setup", "model", "side", "configurations", "of", "wall_s", "median_s", "outside_share",
                              "rc"]


def _probe_lines(root: str | Path | None) -> list[tuple[Path, list[dict]]]:
    """Each model's file of the one-process probe (``evidence/engine/one-process/MODEL.jsonl``, written by
    ``scripts/offline-gpu/one_process_probe.py``): its path and its lines after the first (which says when the
    process was ready), one per configuration."""
    import json

    return [(path, [json.loads(s) for s in path.read_text().splitlines()[1:] if s.strip()])
            for path in sorted(runs_root(root).glob("*/evidence/engine/one-process/*.jsonl"))]


def one_process(root: str | Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A model's exhaustive configurations measured in turn by one process (``_probe_lines``) against the engine's
    process per configuration on the same machine kind, engine revision and configurations (the cost rows,
    ``results-one-launch.cost-*.jsonl``, latest per configuration). Returns (per configuration: both micro-batches
    and steps, the step's change, whether the one-process step lies inside the fresh row's spread of repetitions, and
    each side's seconds, how many times the engine measured the configuration at that micro-batch (its searches in
    ``results-one-launch*.jsonl``, ``results.repeated_measurements``) and how far those steps spread (largest over
    smallest, less one), whether DeepSpeed's ZeRO-3 had run in the process before it and the host memory left
    available after it; per search: the configurations both sides ran, of the engine's whole search, each side's wall
    time, the median configuration, the share of the wall outside measured GPU work, ``GPU_WORK_PHASES``, and the
    probe's exit status). A search's wall is, for the engine, its paired rows' summed ``duration_s``; for the probe,
    the process's whole life as its ``walls.txt`` line gives it."""
    fresh = {(r["setup"], r["config_id"]): r for r in engine_evidence_rows("results-one-launch.cost-*.jsonl", root)
             if r.get("outcome") == "ok"}  # files in name order: the latest cost search's row of a configuration
    from ..results import engine_revision, repeated_measurements
    from ..results.spread import work_id

    # Every step the engine measured of a configuration at a micro-batch, over all its searches: how far its own
    # measurements of one configuration spread.
    repeats = repeated_measurements(engine_evidence_rows("results-one-launch*.jsonl", root))
    per, searches = [], []
    for path, lines in _probe_lines(root):
        setup, model = path.parents[3].name, path.stem
        walls = path.parent / "walls.txt"  # "MODEL one process rc=0 wall_s=612", a line per model
        said = dict(w.split("=", 1) for p in (walls.read_text().splitlines() if walls.exists() else [])
                    if p.split()[:1] == [model] for w in p.split() if "=" in w)
        wall, rc = float(said.get("wall_s", math.nan)), float(said.get("rc", math.nan))
        # Whether DeepSpeed's ZeRO-3 had run in this process before the configuration: its engine replaces
        # torch.nn.functional.linear for the whole process ("This will persist unless manually reset", DeepSpeed's
        # partition_parameters.py), so every later configuration's linear layers run through DeepSpeed's.
        ran, zero3_ran = [], False
        for ln in lines:
            if ln.get("outcome") == "ok" and ln.get("step_time_s"):
                ran.append({**ln, "one_s": ln["measured_s"] + ln["freed_s"], "after_zero3": zero3_ran})
            zero3_ran = zero3_ran or "ZeRO-3" in str(ln.get("methods"))
        pairs = [(ln, fresh.get((setup, ln["config"]))) for ln in ran]
        for ln, f in pairs:
            if f is None:
                continue
            lo, hi = f.get("step_time_spread") or [f["step_time_s"]] * 2
            steps = repeats.get((setup, work_id(f), f["micro_batch"], engine_revision(f)), [f["step_time_s"]])
            per.append({"setup": setup, "model": model, "methods_label": ln["methods"],
                        "fresh_micro_batch": f["micro_batch"], "one_micro_batch": ln["micro_batch"],
                        "fresh_step_s": f["step_time_s"], "one_step_s": ln["step_time_s"],
                        "step_change": ln["step_time_s"] / f["step_time_s"] - 1,
                        "inside_spread": lo <= ln["step_time_s"] <= hi, "engine_measured": len(steps),
                        "engine_spread": max(steps) / min(steps) - 1, "after_zero3": ln["after_zero3"],
                        "host_gb_after": ln.get("host_available_gb_after", math.nan),
                        "fresh_s": f["duration_s"], "one_s": ln["one_s"]})
        rows = [f for _, f in pairs if f is not None]
        whole = sum(1 for (s, _), f in fresh.items() if s == setup and f["config"]["model"] == model)
        if rows:
            total = sum(r["duration_s"] for r in rows)
            searches.append({"setup": setup, "model": model, "side": "a process per configuration",
                             "configurations": len(rows), "of": whole, "wall_s": total,
                             "median_s": float(pd.Series([r["duration_s"] for r in rows]).median()),
                             "outside_share": 1 - sum(_gpu_work_s(r) for r in rows) / total, "rc": math.nan})
        if ran:
            work = sum(ln["phases"].get(p, 0.0) for ln in ran for p in GPU_WORK_PHASES)
            searches.append({"setup": setup, "model": model, "side": "one process", "configurations": len(ran),
                             "of": whole, "wall_s": wall,
                             "median_s": float(pd.Series([ln["one_s"] for ln in ran]).median()),
                             "outside_share": math.nan if math.isnan(wall) else 1 - work / wall, "rc": rc})
    return pd.DataFrame(per, columns=ONE_PROCESS_COLUMNS), pd.DataFrame(searches, columns=ONE_PROCESS_SEARCH_COLUMNS)
