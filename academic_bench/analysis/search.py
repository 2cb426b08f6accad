"""How good is the smart search: its configurations beside the exhaustive search's, with the rules that
skipped the rest (``results.skipped.jsonl``)."""
from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from ..catalog.methods import exclusion_reason
from ..results import SET_ASIDE, Spread, as_spread
from .counted import validation_state
from .frame import SETTING, frame_from_rows, runs_root


# --- how good is the smart search? --------------------------------------------------------------------------

SEARCH_COLUMNS = ["setup", *SETTING, "combinations", "exhaustive_measured", "exhaustive_complete", "exhaustive_best",
                  "exhaustive_offload", "exhaustive_days", "exhaustive_gpu_s", "smart_measured", "smart_skipped",
                  "smart_complete", "smart_best", "smart_offload", "smart_best_search", "smart_days", "smart_gpu_s",
                  "gap", "gpu_time_share", "machine_spread", "tie"]


def step_spreads(root: str | Path | None = None) -> Spread:
    """The machine-to-machine spread of the runs under ``root`` per kind of step (``results.step_spreads``: the
    largest relative difference between synchronized measurements of the same configuration at the same
    micro-batch on one setup, every row read, not only the latest; steps on the GPU alone apart from steps
    offloading to the host), with how many pieces of work each was read from."""
    from ..results import load_runs, step_spreads as spreads_of

    return spreads_of(load_runs(runs_root(root)))


def skipped_frame(root: str | Path | None = None) -> pd.DataFrame:
    """One row per configuration a smart search skipped: setup, config_id, timing, mode, category, reason, and
    when (``at``)."""
    from ..results import load_skipped

    cols = ["setup", "config_id", "search", "timing", "mode", "category", "reason", "at"]
    return pd.DataFrame([{k: s.get(k) for k in cols} for s in load_skipped(runs_root(root))], columns=cols)


class _SearchedSetting(NamedTuple):
    key: tuple  # setup, model, gpu, n_gpus
    valid: set[str]  # ids of the setting's valid combinations
    rows: pd.DataFrame  # the synced step rows measured of them (any search; 'not run' rows left out)
    skipped: set[str]  # ids a smart search skipped
    smart_ran: bool  # whether a smart search ran on the setting at all


def ruled_out_mask(df: pd.DataFrame, skips: Mapping[tuple, Mapping]) -> pd.Series:
    """Which failed rows (timeout, error) a smart search re-deciding the configuration later (a retry) skipped
    as unable to fit: its memory model says why the attempt failed (h100x1's Pythia-6.9B with ZeRO-Offload died
    without a log; the host-memory rule, added since, puts its offloaded states above the machine's memory)."""
    from ..results import is_not_run, skip_is_latest, skip_key

    def ruled_out(row: dict) -> bool:
        skip = skips.get(skip_key(row))
        return (skip is not None and str(skip.get("category")).startswith("cannot fit")
                and row["outcome"] in ("timeout", "error") and not is_not_run(row) and skip_is_latest(skip, row))

    return pd.Series([ruled_out(x) for x in df.to_dict("records")], index=df.index, dtype=bool)


def not_run_mask(df: pd.DataFrame) -> pd.Series:
    """Which rows hold no measurement still to be used: a time budget never started them
    (``results.is_not_run``), or a correction of the engine set their measurement aside
    (``results.set_aside_reason``); either way the configuration is still to measure."""
    return df["status"].isin(["not run", SET_ASIDE]).astype(bool)


def exhaustive_ids(model: str, gpu: str, n_gpus: int) -> set[str]:
    """The ids of the configurations an exhaustive search of the setting measures (its valid combinations)."""
    from ..search.plans import plan  # the model catalog behind it imports torch: loaded only when asked

    return {c.id for c in plan(model, gpu, int(n_gpus), "exhaustive") if exclusion_reason(c.methods, c.n_gpus) is None}


def _exhaustive_settings(df: pd.DataFrame, skipped: pd.DataFrame) -> Iterator[_SearchedSetting]:
    """Each setting with an exhaustive search, with what was measured of it and what smart skipped."""
    ex = df[(df["search"] == "exhaustive") & (df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"]]
    state = validation_state(df)  # only a result can be a search's optimum
    for key, _ in ex.groupby(["setup", *SETTING], sort=True):
        setup, model, gpu, n = key
        valid = exhaustive_ids(model, gpu, n)
        rows = df[(df["setup"] == setup) & df["config_id"].isin(valid) & (df["timing"] == "synced")
                  & (df["mode"] == "step")]
        rows = rows[~not_run_mask(rows)]
        rows = rows.assign(counted=state.loc[rows.index] == "validated")
        skip = skipped[(skipped["setup"] == setup) & (skipped["search"] == "smart") & skipped["config_id"].isin(valid)
                       & (skipped["timing"] == "synced") & (skipped["mode"] == "step")]
        yield _SearchedSetting(key, valid, rows, _standing_skips(skip, rows),
                               not skip.empty or bool((rows["search"] == "smart").any()))


def _standing_skips(skip: pd.DataFrame, rows: pd.DataFrame) -> set[str]:
    """The configurations whose latest word from the smart search is a skip: a skip stands unless a smart search
    measured the configuration after it (a search from scratch, ``retry=["all"]``, decides each one anew; a
    resumed one measures a row set aside). An exhaustive row changes nothing."""
    if "at" not in skip.columns:  # a skip that names no time is the latest word
        return set(skip["config_id"])
    measured_at = {r.config_id: str(r.started_at or "") for r in rows.itertuples() if r.search == "smart"}
    last = skip.assign(at=skip["at"].fillna("~").astype(str)).groupby("config_id")["at"].max()
    return {cid for cid, at in last.items() if measured_at.get(cid, "") < at}


def smart_vs_exhaustive(df: pd.DataFrame, skipped: pd.DataFrame, spread: Spread | float = 0.0) -> pd.DataFrame:
    """Per setting with an exhaustive search: the exhaustive optimum beside the smart search's best, and the GPU
    time each needed (the summed ``duration_s`` of the configurations it measured, whichever search measured
    them first). Smart measures every valid combination whose latest word from it is no skip
    (``_standing_skips``). ``gap`` = smart days / exhaustive days
    - 1; ``gpu_time_share`` = smart GPU time / exhaustive GPU time. Until a search has measured all of its
    configurations (``*_complete``), its figures cover only those measured so far. ``tie``: the smart search's best
    is slower by no more than the spread the two bests compare within (``spread``, per kind of step:
    ``step_spreads``, or one figure for all; kept in the column ``machine_spread``), so one measurement each cannot
    tell the two apart, and the tie goes to the smart search's pick, the cheaper setting (it skips only settings that
    save more memory than one it measured)."""
    out, spread = [], as_spread(spread)
    for (setup, model, gpu, n), valid, rows, skip, smart_ran in _exhaustive_settings(df, skipped):
        smart_ids = valid - skip
        best_ex, best_sm = _fastest_row(rows), _fastest_row(rows[rows["config_id"].isin(smart_ids)])
        ex_s = rows["duration_s"].sum()
        sm_s = rows[rows["config_id"].isin(smart_ids)]["duration_s"].sum()
        out.append({
            "setup": setup, "model": model, "gpu": gpu, "n_gpus": n, "combinations": len(valid),
            "exhaustive_measured": len(rows), "exhaustive_complete": len(rows) == len(valid),
            "exhaustive_best": best_ex["methods_label"] if best_ex is not None else None,
            "exhaustive_offload": bool(best_ex["offload"]) if best_ex is not None else None,
            "exhaustive_days": best_ex["days"] if best_ex is not None else math.nan, "exhaustive_gpu_s": ex_s,
            "smart_measured": int(rows["config_id"].isin(smart_ids).sum()) if smart_ran else 0,
            "smart_skipped": len(skip), "smart_complete": smart_ran and smart_ids <= set(rows["config_id"]),
            "smart_best": best_sm["methods_label"] if smart_ran and best_sm is not None else None,
            "smart_offload": bool(best_sm["offload"]) if smart_ran and best_sm is not None else None,
            "smart_best_search": best_sm["search"] if smart_ran and best_sm is not None else None,
            "smart_days": best_sm["days"] if smart_ran and best_sm is not None else math.nan,
            "smart_gpu_s": sm_s if smart_ran else math.nan,
            "machine_spread": spread.of(*(bool(r["offload"]) for r in (best_ex, best_sm if smart_ran else None)
                                          if r is not None))})
    res = pd.DataFrame(out, columns=SEARCH_COLUMNS)
    res["gap"] = res["smart_days"] / res["exhaustive_days"] - 1
    res["gpu_time_share"] = res["smart_gpu_s"] / res["exhaustive_gpu_s"]
    res["tie"] = (res["gap"] <= res["machine_spread"]).astype(bool)
    return res


COMBINATION_COLUMNS = ["setup", *SETTING, "config_id", "methods_label", "outcome", "micro_batch", "days",
                       "gpu_minutes", "smart", "best"]


def search_combinations(df: pd.DataFrame, skipped: pd.DataFrame) -> pd.DataFrame:
    """Every measured combination of each exhaustive search, one row each: its days, the GPU minutes its
    measurement took, what the smart search did with it (``smart``: "measured" or "skipped"; "not run" where
    no smart search ran on the setting) and whether it is the setting's optimum (``best``)."""
    out = []
    for (setup, model, gpu, n), _, rows, skip, smart_ran in _exhaustive_settings(df, skipped):
        best = _fastest_row(rows)
        for r in rows.itertuples():
            out.append({"setup": setup, "model": model, "gpu": gpu, "n_gpus": n, "config_id": r.config_id,
                        "methods_label": r.methods_label, "outcome": r.outcome, "micro_batch": r.micro_batch,
                        "days": r.days, "gpu_minutes": r.duration_s / 60,
                        "smart": ("skipped" if r.config_id in skip else "measured") if smart_ran else "not run",
                        "best": best is not None and r.config_id == best["config_id"]})
    return pd.DataFrame(out, columns=COMBINATION_COLUMNS)


def _fastest_row(rows: pd.DataFrame) -> pd.Series | None:
    """The fastest row that counts as a result (its class validated by the revision that made it)."""
    ok = rows[(rows["outcome"] == "ok") & rows["days"].notna() & rows["counted"]]
    return None if ok.empty else ok.sort_values(["days", "config_id"]).iloc[0]


REPLAY_COLUMNS = ["setup", *SETTING, "measured", "skipped", "best", "gap", "gpu_time_share", "machine_spread"]


def smart_replayed(root: str | Path | None = None) -> pd.DataFrame:
    """What today's smart rules would measure of each complete exhaustive search under ``root``: the setting's
    configurations in the smart search's order, each either skipped by ``search.smart.SmartPruner`` (with the
    shipped GEMM ceiling and machine spread) or answered with its latest row (whichever search made it), which
    the pruner then sees. A projection before a search from scratch (``retry=["all"]``) measures it; after one,
    its rows are those the replay reads: ``measured`` and
    ``skipped`` count configurations, ``gap`` is the projected best's days over the exhaustive optimum's - 1,
    ``gpu_time_share`` the measured configurations' summed duration over the exhaustive search's, and
    ``machine_spread`` the spread the projected best and the optimum compare within (the wider of their kinds')."""
    from ..catalog.methods import Methods
    from ..results import latest_rows, load_runs, rows_to_read, step_ceiling, step_spreads as spreads_of
    from ..search.plans import plan
    from ..search.smart import SmartPruner

    runs = runs_root(root)
    rows = load_runs(runs)
    spread = spreads_of(rows)
    latest = {(r.get("setup"), r["config_id"]): r for r in latest_rows(rows)
              if r["timing"] == "synced" and r["mode"] == "step"}
    out = []
    frame = frame_from_rows(rows_to_read(rows), checked=True)  # runs_frame's, from the rows read once
    for s in smart_vs_exhaustive(frame, skipped_frame(runs), spread).itertuples():
        if not s.exhaustive_complete:
            continue
        valid = exhaustive_ids(s.model, s.gpu, s.n_gpus)
        pruner = SmartPruner(ceiling=lambda gpu: step_ceiling(gpu, runs), spread=spread, host_memory_gb=math.inf)
        measured = []
        for c in plan(s.model, s.gpu, int(s.n_gpus), "smart"):
            if c.id in valid and pruner.skip(c) is None:
                measured.append(latest[(s.setup, c.id)])
                pruner.observe(c, measured[-1])
        best = min((r["days"] for r in measured if r["outcome"] == "ok" and r.get("days")), default=math.nan)
        pick = next((Methods.from_dict(r["config"]["methods"]) for r in measured if r.get("days") == best), None)
        out.append({"setup": s.setup, "model": s.model, "gpu": s.gpu, "n_gpus": s.n_gpus, "measured": len(measured),
                    "skipped": len(valid) - len(measured), "best": pick.label() if pick else None,
                    "gap": best / s.exhaustive_days - 1,
                    "gpu_time_share": sum(r["duration_s"] or 0 for r in measured) / s.exhaustive_gpu_s,
                    "machine_spread": spread.of(*(o for o in (pick and pick.offload, s.exhaustive_offload)
                                                  if o is not None))})
    return pd.DataFrame(out, columns=REPLAY_COLUMNS)
