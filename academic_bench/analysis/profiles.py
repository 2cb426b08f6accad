"""Where a step's time goes: the profiles of each setup (seconds per kind of work, largest kernels) and the
factors that explain an MFU."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from ..catalog.kernels import FLOP_KINDS, KIND_NAMES, kind_of
from ..catalog.methods import Methods

from .counted import results
from .facts import dense16_peak, mfu_on_dense16
from .frame import SETTING, runs_root


PROFILE_COLUMNS = [*SETTING, "setup", "config_id", "methods_label", "micro_batch", "gas", "kind", "seconds", "share",
                   "busy_s", "busy_share", "step_wall_s", "timer", "tiny", "at"]


def _kinds_now(profile: dict) -> dict[str, float]:
    """Seconds per kind of work, sorted with today's patterns (``kernels.KINDS``): the kernels the line
    names (``top``) move to the kind their name has now; the unnamed rest keeps the kind it was given."""
    seconds = dict.fromkeys(KIND_NAMES, 0.0)
    for k in profile["kinds"]:
        seconds[k["kind"]] = seconds.get(k["kind"], 0.0) + k["seconds"]
    for t in profile["top"]:
        seconds[t["kind"]] -= t["seconds"]
        seconds[kind_of(t["name"])] += t["seconds"]
    return {k: max(0.0, v) for k, v in seconds.items()}  # a rounding's -1e-15 is none


LATEST_BY = ("setup", "config_id", "micro_batch")  # what one profile speaks for


def latest_profiles(entries: Iterable[dict], by: Sequence[str] = LATEST_BY) -> list[dict]:
    """The latest of the profile lines ``entries`` (in the order a file keeps them) for each value of ``by``: by
    default each configuration's per setup and micro-batch, so that a configuration profiled at several fixed
    micro-batches keeps one profile at each. Each kept line stands where its key first appeared."""
    return list({tuple(p[k] for k in by): p for p in entries}.values())


def _setup_profiles(root: str | Path | None) -> list[dict]:
    """``latest_profiles`` of the setups' own profile files (``results.load_profiles``)."""
    from ..results import load_profiles

    return latest_profiles(load_profiles(runs_root(root)))


def profiles(root: str | Path | None = None) -> pd.DataFrame:
    """One row per profiled configuration and kind of work (``measure.profile``): the seconds of one training
    step the device spent on it, its ``share`` of the device's busy time, and ``busy_share``, the share of the
    step's wall time the device was busy at all. The latest profile of each configuration counts, its kernels
    sorted with today's patterns (``_kinds_now``)."""
    return profile_frame(_setup_profiles(root))


def profile_frame(entries: list[dict]) -> pd.DataFrame:
    """``profiles``' rows for the given profile lines (``results.append_profile``), e.g. of a file outside the
    setups' own (the decoders measured outside the catalog)."""
    rows = [{"model": p["config"]["model"], "gpu": p["config"]["gpu"], "n_gpus": p["config"]["n_gpus"],
             "setup": p["setup"], "config_id": p["config_id"],
             "methods_label": Methods.from_dict(p["config"]["methods"]).label(), "micro_batch": p["micro_batch"],
             "gas": p["gas"], "kind": kind, "seconds": t, "share": t / p["busy_s"] if p["busy_s"] else 0.0,
             "busy_s": p["busy_s"], "busy_share": p["busy_share"], "step_wall_s": p["step_wall_s"],
             "timer": p["timer"], "tiny": bool(p["config"].get("tiny")), "at": p["at"]}
            for p in entries for kind, t in _kinds_now(p).items()]
    return pd.DataFrame(rows, columns=PROFILE_COLUMNS)


def largest_kernels(root: str | Path | None = None) -> pd.DataFrame:
    """The single kernel (or operator) that takes the most of each profiled configuration's busy time: its
    name, today's kind of work for it, and its share. The latest profile of each configuration counts."""
    cols = ["setup", "config_id", "model", "methods_label", "micro_batch", "timer", "tiny", "name", "kind", "share"]
    rows = [{"setup": p["setup"], "config_id": p["config_id"], "model": p["config"]["model"],
             "methods_label": Methods.from_dict(p["config"]["methods"]).label(),
             "micro_batch": p["micro_batch"], "timer": p["timer"], "tiny": bool(p["config"].get("tiny")),
             "name": p["top"][0]["name"], "kind": kind_of(p["top"][0]["name"]),
             "share": p["top"][0]["seconds"] / p["busy_s"]}
            for p in _setup_profiles(root) if p["top"] and p["busy_s"]]
    return pd.DataFrame(rows, columns=cols)


def mfu_factors(df: pd.DataFrame, prof: pd.DataFrame) -> pd.DataFrame:
    """What holds each profiled configuration's MFU below 1, as three factors whose product is its MFU (times
    the measured over the profiled step time, near 1): the share of the step the device is busy, the share of
    that busy time in the kernels that do the counted FLOPs (``kernels.FLOP_KINDS``), and the rate
    those kernels reach, as a share of the GPU's peak. The MFU and that rate are rated on the dense 16-bit peak
    (``mfu_on_dense16``, ``peak_flops`` that peak), as every MFU the book shows: an fp32 run's factors read as a
    bf16 run's of the same speed. Only profiles at the micro-batch of a measured result (the synced step row of
    the same configuration) count; GPU profiles only."""
    cols = [*SETTING, "setup", "methods_label", "micro_batch", "mfu", "busy_share", "flop_share", "flop_rate",
            "other_kind", "other_share", "step_time_s", "step_wall_s", "peak_flops"]
    gpu = prof[~prof["tiny"] & (prof["timer"] == "gpu kernels")]
    if gpu.empty or df.empty:
        return pd.DataFrame(columns=cols)
    key = ["setup", "config_id", "micro_batch"]
    flop = gpu["kind"].isin(FLOP_KINDS)
    per = gpu.assign(flop_s=gpu["seconds"].where(flop, 0.0)).groupby(key, sort=False).agg(
        busy_s=("busy_s", "first"), busy_share=("busy_share", "first"), step_wall_s=("step_wall_s", "first"),
        flop_s=("flop_s", "sum")).reset_index()
    others = gpu[~flop]
    largest = others.loc[others.groupby(key)["seconds"].idxmax()]
    per = per.merge(largest[[*key, "kind", "share"]].rename(columns={"kind": "other_kind", "share": "other_share"}),
                    on=key)
    rows = results(df)[["setup", "config_id", "micro_batch", *SETTING, "methods_label", "mfu", "step_time_s",
                        "peak_flops"]]
    out = per.merge(rows.astype({"micro_batch": "int64"}), on=key)
    out = out.assign(mfu=mfu_on_dense16(out), peak_flops=out["gpu"].map(dense16_peak))
    out["flop_share"] = out["flop_s"] / out["busy_s"]
    # The counted FLOPs over the time in the FLOP kernels, as a share of the peak: mfu x step time is the
    # step's FLOPs divided by the peak rate.
    out["flop_rate"] = out["mfu"] * out["step_time_s"] / out["flop_s"]
    return out[cols].sort_values(["setup", "model", "mfu"], ascending=[True, True, False]).reset_index(drop=True)


def matmul_check(setup: str, root: str | Path | None = None) -> dict[str, float]:
    """FLOP/s per precision of the dense 8192^3 matrix product measured on a setup's machine, from its
    ``evidence/matmul_peak_check.txt`` (lines like ``matmul 8192^3 bf16: 794.9 TFLOP/s``); empty without one."""
    path = runs_root(root) / setup / "evidence" / "matmul_peak_check.txt"
    if not path.exists():
        return {}
    found = re.findall(r"^matmul \S+ (\w+): ([\d.]+) TFLOP/s", path.read_text(), re.MULTILINE)
    return {precision: float(tflops) * 1e12 for precision, tflops in found}
