"""Measuring honestly: synchronized against unsynchronized timings, extrapolated steps against sustained
training (the validation net), what an engine correction set aside, the spread of repeated timings, the memory
model against measured peaks, and timings whose MFU cannot be right."""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..catalog.hardware import catalog as gpu_catalog
from ..catalog.methods import Methods
from ..results import SET_ASIDE

from .counted import latest_validations, measured_rows, results, validations
from .frame import METHOD_COLUMNS, MFU_IMPLAUSIBLE, SETTING, frame_from_rows, runs_root

if TYPE_CHECKING:  # imported where used: config loads torch, which the book's pages need not wait for
    from ..catalog.config import Config


# --- measuring honestly ------------------------------------------------------------------------------------

SYNC_COLUMNS = [*SETTING, "setup", "config_id", "methods_label", "micro_batch", "step_synced_s", "step_unsynced_s",
                "days_synced", "days_unsynced", "mfu_synced", "mfu_unsynced", "undercount"]


def sync_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """The same configuration at the same micro-batch timed with and without GPU synchronisation, side by side.

    ``undercount`` = 1 - unsynced/synced step time: the share of the real step time that an unsynchronised
    host timer misses. The same methods at the same micro-batch on one setup count once (the latest pair).
    """
    if df.empty:
        return pd.DataFrame(columns=SYNC_COLUMNS)
    # Tiny rows are workshop runs, not results on the GPU their configuration names (often the CPU's).
    ok = df[(df["mode"] == "step") & (df["outcome"] == "ok") & ~df["tiny"].astype(bool)]
    keys = ["setup", "config_id", "micro_batch"]  # the same work: an unsynced row at another size pairs with none
    cols = keys + SETTING + ["methods_label", "step_time_s", "days", "mfu", "started_at"]
    synced = ok[ok["timing"] == "synced"][cols].sort_values("started_at").groupby(keys).tail(1)
    unsynced = ok[ok["timing"] == "unsynced"][keys + ["step_time_s", "days", "mfu", "started_at"]]
    unsynced = unsynced.sort_values("started_at").groupby(keys).tail(1)
    m = synced.merge(unsynced, on=keys, suffixes=("_synced", "_unsynced"))
    if m.empty:
        return pd.DataFrame(columns=SYNC_COLUMNS)
    m = m.rename(columns={"step_time_s_synced": "step_synced_s", "step_time_s_unsynced": "step_unsynced_s"})
    m["undercount"] = 1 - m["step_unsynced_s"] / m["step_synced_s"]
    # One pair per configuration: the same methods at the same micro-batch on the same setup, timed again under
    # another configuration id (a fixed micro-batch), is the same work and counts once, its latest pair.
    m = m.sort_values("started_at_synced").drop_duplicates(["setup", *SETTING, "methods_label", "micro_batch"],
                                                           keep="last")
    return m[SYNC_COLUMNS].sort_values(SETTING).reset_index(drop=True)


VALIDATION_COLUMNS = [*SETTING, "setup", "methods_label", "validation_class", "engine", "micro_batch",
                      "validate_steps", "predicted_step_s", "sustained_step_s", "sustained_s", "validate_rel_error",
                      "within"]


def validation_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """Every validation, missed ones included: the extrapolated step time next to a sustained run of real
    optimizer steps of the same configuration, with the engine revision it speaks for, how long the sustained
    run was (``sustained_s`` = steps x sustained step) and ``within`` the study's tolerance."""
    v = validations(df)
    if v.empty:
        return pd.DataFrame(columns=VALIDATION_COLUMNS)
    v = v[v["predicted_step_s"].notna()].assign(sustained_s=lambda d: d["validate_steps"] * d["sustained_step_s"])
    return v[VALIDATION_COLUMNS].sort_values([*SETTING, "engine"]).reset_index(drop=True)


NET_COLUMNS = ["setup", "validation_class", "engine", "measured", "validated", "model", "methods_label",
               "micro_batch", "validate_rel_error", "within"]


def validation_net(df: pd.DataFrame) -> pd.DataFrame:
    """Per setup, method class (``methods.validation_class``) and engine revision that has measurements or
    validations: how many synced step measurements that revision made (set-aside ones do not count), whether it
    validated a configuration of the class against sustained training, and the latest validation's error;
    ``within``: inside ``VALIDATION_TOLERANCE``. Only a validated, within row's measurements are results
    (``counted.results``); a class that ran but was never validated at its revision shows ``validated`` False."""
    measured = measured_rows(df)
    val = latest_validations(df)
    key = lambda d: set(zip(d["setup"], d["validation_class"], d["engine"]))  # noqa: E731
    out = []
    for setup, cls, engine in sorted(key(measured) | key(val)):
        n = int(((measured["setup"] == setup) & (measured["validation_class"] == cls)
                 & (measured["engine"] == engine)).sum())
        v = val[(val["setup"] == setup) & (val["validation_class"] == cls) & (val["engine"] == engine)]
        row = {"setup": setup, "validation_class": cls, "engine": engine, "measured": n, "validated": not v.empty}
        if not v.empty:
            last = v.iloc[-1]
            row.update(model=last["model"], methods_label=last["methods_label"], micro_batch=last["micro_batch"],
                       validate_rel_error=last["validate_rel_error"], within=bool(last["within"]))
        out.append(row)
    return pd.DataFrame(out, columns=NET_COLUMNS)


ENGINE_COST_COLUMNS = ["setup", "model", "methods_label", "engine", "micro_batch", "step_time_s", "duration_s",
                       "launches", "search_s", "timing_s"]


def engine_cost(root: str | Path | None = None) -> pd.DataFrame:
    """What one configuration costs the engine, per revision, on the same configurations: the rows of each
    setup's ``evidence/engine/results-revision<N>.jsonl`` (made by the engine checks that the setup's evidence
    README records, outside the setup's results). ``launches``: 1 when the search's stepper was timed in place or
    no search ran (the micro-batch was given), else 2."""
    from .launches import engine_evidence_rows

    rows = engine_evidence_rows("results-revision*.jsonl", root)
    if not rows:
        return pd.DataFrame(columns=ENGINE_COST_COLUMNS)
    df = frame_from_rows(rows)
    ran = [r.get("ran") or {} for r in rows]
    df["launches"] = [1 if x.get("in_place") or r["config"].get("micro_batch") else 2 for x, r in zip(ran, rows)]
    df["search_s"] = [x.get("search_s") for x in ran]
    df["timing_s"] = [x.get("timing_s") for x in ran]
    return df[ENGINE_COST_COLUMNS].sort_values(["setup", "model", "methods_label", "engine"]).reset_index(drop=True)


CONFIGURATION_COST_COLUMNS = ["setup", "engine", "configurations", "median_s", "max_s"]
SMALL_MODEL_PARAMS = 1.1e9  # "models up to 1B": the sizes the engine's cost target speaks of


def configuration_cost(df: pd.DataFrame) -> pd.DataFrame:
    """What measuring one configuration cost, per setup and engine revision: the median and longest wall time
    (``duration_s``: launches, search, build, compile and timing together) of the synchronized step rows that ran
    (measured, or out of memory) for models up to about 1B parameters. Different revisions measured different
    configurations: ``engine_cost`` compares the same ones."""
    from ..catalog.models import get_model

    d = df[(df["timing"] == "synced") & (df["mode"] == "step") & df["outcome"].isin(["ok", "oom"])
           & ~df["tiny"].astype(bool)] if not df.empty else df
    d = d[[get_model(m).paper_params <= SMALL_MODEL_PARAMS for m in d["model"]]] if not d.empty else d
    if d.empty:
        return pd.DataFrame(columns=CONFIGURATION_COST_COLUMNS)
    g = d.groupby(["setup", "engine"], sort=True)["duration_s"]
    out = pd.DataFrame({"configurations": g.size(), "median_s": g.median(), "max_s": g.max()}).reset_index()
    return out[CONFIGURATION_COST_COLUMNS]


SET_ASIDE_COLUMNS = ["setup", "reason", "rows", "configurations"]


def set_aside(df: pd.DataFrame) -> pd.DataFrame:
    """The measurements a correction of the engine set aside, per setup and reason: how many and why (the
    evidence files keep them as written)."""
    a = df[df["outcome"] == SET_ASIDE] if not df.empty else df
    if a.empty:
        return pd.DataFrame(columns=SET_ASIDE_COLUMNS)
    g = a.groupby(["setup", "reason"], sort=True)
    return pd.DataFrame({"rows": g.size(), "configurations": g["config_id"].nunique()}).reset_index()[
        SET_ASIDE_COLUMNS]


VARIANCE_COLUMNS = [*SETTING, "setup", "methods_label", "step_time_s", "relative_spread", "trials", "trial_cv"]


def variance(df: pd.DataFrame) -> pd.DataFrame:
    """Within-run spread of step times ((max - min) / median) and, where a configuration ran more than once,
    the coefficient of variation of its step time across trials."""
    r = results(df)
    if r.empty:
        return pd.DataFrame(columns=VARIANCE_COLUMNS)
    r = r.assign(relative_spread=(r["step_hi_s"] - r["step_lo_s"]) / r["step_time_s"])
    trials = r.groupby(["setup", "config_id"])["step_time_s"].agg(["count", "mean", "std"]).reset_index()
    trials["trial_cv"] = trials["std"] / trials["mean"]
    r = r.merge(trials.rename(columns={"count": "trials"})[["setup", "config_id", "trials", "trial_cv"]],
                on=["setup", "config_id"])
    return r[VARIANCE_COLUMNS].sort_values(SETTING).reset_index(drop=True)


MEMORY_COLUMNS = [*SETTING, "setup", "methods_label", "fp8", "micro_batch", "outcome", "predicted_memory_gb",
                  "predicted_at_run_gb", "peak_memory_gb", "gpu_memory_gb", "error"]


def _config(r) -> Config:
    from ..catalog.config import Config

    methods = Methods(**{c: getattr(r, c) for c in METHOD_COLUMNS})
    return Config(r.model, r.gpu, int(r.n_gpus), int(r.nodes or 1), methods, None, bool(r.tiny))


def _predicted_gb(r, micro_batch: int) -> float:
    """The current memory model's prediction for a row's configuration (the rows keep the one made at run
    time, by whatever version of the model ran then)."""
    from ..estimate import predict_memory

    try:
        return predict_memory(_config(r), int(micro_batch)).allocated / 1e9
    except (KeyError, ValueError):  # a model or GPU no longer in the catalogs
        return math.nan


def memory_model_error(df: pd.DataFrame) -> pd.DataFrame:
    """The memory model's prediction of peak allocated memory next to the measured peak (``error`` = predicted /
    measured - 1), recomputed with the current model (``predicted_at_run_gb``: the one stored at run time),
    plus out-of-memory rows with their prediction at micro-batch 1."""
    if df.empty:
        return pd.DataFrame(columns=MEMORY_COLUMNS)
    r = df[(df["timing"] == "synced") & (df["mode"] == "step") & df["outcome"].isin(["ok", "oom"])
           & ~df["tiny"]].copy()
    r = r[(r["outcome"] == "oom") | r["micro_batch"].notna()]
    r["predicted_at_run_gb"] = r["predicted_memory_gb"]
    r["predicted_memory_gb"] = [_predicted_gb(x, x.micro_batch if x.outcome == "ok" else 1) for x in r.itertuples()]
    r["gpu_memory_gb"] = r["gpu"].map(lambda g: gpu_catalog()[g].memory_gb if g in gpu_catalog() else math.nan)
    r["error"] = r["predicted_memory_gb"] / r["peak_memory_gb"] - 1
    return r[MEMORY_COLUMNS].sort_values(SETTING).reset_index(drop=True)


RESERVE_COLUMNS = [*SETTING, "setup", "methods_label", "mode", "micro_batch", "peak_memory_gb", "peak_reserved_gb",
                   "reserve"]


def allocator_reserve(df: pd.DataFrame) -> pd.DataFrame:
    """How much more the caching allocator reserved than the peak it allocated (``reserve`` = reserved /
    allocated - 1, the highest rank of each), on every ok row that records both: the measured side of the
    memory model's fragmentation allowance (``estimate.Coefficients.fragmentation``)."""
    if df.empty:
        return pd.DataFrame(columns=RESERVE_COLUMNS)
    r = df[(df["outcome"] == "ok") & ~df["tiny"] & df["peak_reserved_gb"].notna() & df["peak_memory_gb"].notna()]
    r = r.assign(reserve=r["peak_reserved_gb"] / r["peak_memory_gb"] - 1)
    return r[RESERVE_COLUMNS].sort_values([*SETTING, "methods_label"]).reset_index(drop=True)


FIT_COLUMNS = [*SETTING, "setup", "methods_label", "micro_batch", "measured", "predicted", "correct"]


def fit_predictions(df: pd.DataFrame) -> pd.DataFrame:
    """Every micro-batch a search tried ('fits' or 'oom', from the rows' ``mbs_search``) beside the memory
    model's verdict: predicted total (with context, workspace and fragmentation) within the usable memory."""
    from ..estimate import predict_memory, usable_bytes

    out = []
    rows = df[(df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"] & df["mbs_search"].notna()]
    for r in rows.itertuples():
        config, usable = _config(r), usable_bytes(gpu_catalog()[r.gpu].memory_gb)
        for attempt in r.mbs_search:
            fits = predict_memory(config, attempt["micro_batch"]).total <= usable
            measured = attempt["outcome"] == "ok"
            out.append({"model": r.model, "gpu": r.gpu, "n_gpus": r.n_gpus, "setup": r.setup,
                        "methods_label": r.methods_label, "micro_batch": attempt["micro_batch"],
                        "measured": "fits" if measured else "oom", "predicted": "fits" if fits else "oom",
                        "correct": fits == measured})
    return pd.DataFrame(out, columns=FIT_COLUMNS)


def implausible(df: pd.DataFrame, column: str = "mfu") -> pd.DataFrame:
    """Rows whose MFU exceeds the plausibility threshold (0.75 of the dense spec peak)."""
    return df[df[column] > MFU_IMPLAUSIBLE] if not df.empty else df


WALL_COLUMNS = ["setup", "model", "methods_label", "search", "micro_batch", "step_time_s", "reserved_share", "state",
                "wall_micro_batch", "wall_step_s", "below_micro_batch", "below_step_s", "below_untimed"]


def memory_wall(root: str | Path | None = None) -> pd.DataFrame:
    """Each latest measured synced step row's standing at the memory wall: "checked" (timed at the wall, so half
    its micro-batch was timed too: ``ran.memory_wall``), "clear" (timed with no allocator retry), "at the wall"
    (the allocator retried at a micro-batch with no smaller one to time: one the configuration sets, or the smallest),
    "unchecked" (of an engine revision that does not count retries, reserved near its GPU's capacity:
    ``results.unchecked_at_wall``, measured again by ``remeasure --retry memory-wall``), or "before the check" (the
    rest of such a revision's rows)."""
    from ..results import latest_rows, load_runs, set_aside_reason, unchecked_at_wall
    from ..results.state import reserved_share

    out = []
    for r in latest_rows(load_runs(runs_root(root))):
        ran, c = r.get("ran") or {}, r.get("config") or {}
        share = reserved_share(r)
        if (r.get("outcome") != "ok" or r.get("timing") != "synced" or r.get("mode") != "step" or c.get("tiny")
                or share is None or set_aside_reason(r)):
            continue
        wall = ran.get("memory_wall") or {}
        state = ("checked" if wall else "clear" if ran.get("alloc_retries") == 0 else
                 "at the wall" if ran.get("alloc_retries") else
                 "unchecked" if unchecked_at_wall(r) else "before the check")
        out.append({"setup": r.get("setup"), "model": c.get("model"),
                    "methods_label": Methods.from_dict(c.get("methods") or {}).label(), "search": r.get("search"),
                    "micro_batch": r.get("micro_batch"), "step_time_s": r.get("step_time_s"),
                    "reserved_share": share, "state": state, "wall_micro_batch": wall.get("micro_batch"),
                    "wall_step_s": wall.get("step_time_s"), "below_micro_batch": wall.get("below_micro_batch"),
                    "below_step_s": wall.get("below_step_time_s"), "below_untimed": _untimed_half(ran, wall)})
    return pd.DataFrame(out, columns=WALL_COLUMNS)


def _untimed_half(ran: dict, wall: dict) -> str | None:
    """Why the half size of a row timed at the memory wall has no step time, as the engine's note says it
    (``measure.worker.time_below_the_wall``: it would not end within the time limit, or ran out of memory);
    None where it was timed."""
    if not wall or wall.get("below_step_time_s") is not None:
        return None
    head = f"micro-batch {wall.get('below_micro_batch')} "
    for note in ran.get("notes") or []:
        for part in str(note).split("; "):
            if part.startswith(head):
                return part[len(head):]
    return "not timed"
