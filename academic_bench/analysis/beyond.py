"""Beyond the paper: what each switch a lab would add today buys, per model and GPU, read from the runs.

A row with a switch beyond the paper (``methods.BEYOND_SWITCHES``) is never one of the replication's
(``counted.measured_rows`` leaves it out). Here each counts by the same rule as every result, its method class
validated within 3% on its setup by the engine revision that made it, and is set beside its *paper counterpart*:
the same configuration with the switches off, a result on the same setup. Each switch's loss parity against the
free lunch (``scripts/offline-gpu/loss_parity.py``, ``<setup>/evidence/parity/<switch>.json``) says whether its
numbers may be recommended: a set whose switches all passed may; one with a failing switch never is; one with a
switch not checked yet waits.

The decoders measured from a config.json (``<setup>/evidence/decoders/results.jsonl``) join the setups' rows here
when their config and training settings are kept beside them (``decoder_rows``).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd

from ..catalog.methods import BEYOND_SWITCHES, FREE_LUNCH, Methods, methods_spec
from .counted import measured_rows, results, validation_state
from .facts import mfu_on_dense16
from .frame import METHOD_COLUMNS, SETTING, frame_from_rows, runs_root

PARITY_COLUMNS = ["setup", "switch", "passed", "tolerance", "window_steps", "largest_window_difference",
                  "largest_noise_difference", "steps", "device", "file"]
GAIN_COLUMNS = ["setup", *SETTING, "config_id", "methods", "methods_label", "switches", "validation", "micro_batch",
                "gas", "step_time_s", "days", "mfu", "peak_memory_gb", "paper_methods_label", "paper_step_time_s",
                "paper_days", "paper_peak_memory_gb", "speedup", "memory_saved", "parity", "parity_words"]
PARITY_STATES = ("passed", "failed", "not checked yet")
# The study's grid beyond the paper: the Pythia models by size on one GPU of each Hopper kind (FP8 needs one).
STUDY_MODELS = ("pythia-160m", "pythia-1b", "pythia-2.8b", "pythia-6.9b")
STUDY_GPUS = ("h100-80gb", "h200")


def parity_frame(root: str | Path | None = None) -> pd.DataFrame:
    """Every loss-parity check kept under ``<setup>/evidence/parity/`` (dry runs on a CPU are no evidence and are
    left out): the switch, its verdict, the tolerance it was held to and the largest window difference."""
    rows = []
    for path in sorted(runs_root(root).glob("*/evidence/parity/*.json")):
        r = json.loads(path.read_text())
        if r.get("dry_run"):
            continue
        rows.append({"setup": path.parents[2].name, "switch": r["switch"], "passed": bool(r["passed"]),
                     "tolerance": r["tolerance"]["relative"], "window_steps": r["tolerance"]["window_steps"],
                     "largest_window_difference": r["largest_window_difference"],
                     "largest_noise_difference": r.get("largest_noise_difference"), "steps": r["steps"],
                     "device": r["device"], "file": str(path.relative_to(runs_root(root)))})
    return pd.DataFrame(rows, columns=PARITY_COLUMNS)


def parity_verdict(parity: pd.DataFrame, switches: list[str], setup: str) -> tuple[str, str]:
    """(``PARITY_STATES`` entry, words) for a set of switches on a setup: each switch's check on the setup, else
    on another setup (named), combined: "failed" if any failed, "passed" if all passed, else "not checked yet"."""
    said, states = [], []
    for switch in switches:
        mine = parity[parity["switch"] == switch]
        mine = mine.assign(other=mine["setup"] != setup).sort_values(["other", "setup"])
        if mine.empty:
            states.append("not checked yet")
            said.append(f"{switch}: not checked yet")
            continue
        r = mine.iloc[0]
        where = f" (checked on {r['setup']})" if r["setup"] != setup else ""
        states.append("passed" if r["passed"] else "failed")
        said.append(f"{switch}: {'passed' if r['passed'] else 'FAILED'}, largest {r['window_steps']}-step "
                    f"difference {r['largest_window_difference']:.2%} against {r['tolerance']:.0%} allowed{where}")
    state = "failed" if "failed" in states else "passed" if set(states) == {"passed"} else "not checked yet"
    return state, "; ".join(said)


def decoder_rows(root: str | Path | None = None) -> list[dict]:
    """The rows of each decoder measured from a config.json with a switch beyond the paper, with its other rows
    (its paper counterparts), each decoder registered first with the config and training settings its estimate was
    made with (``<setup>/evidence/decoders/<name>/{config,estimate}.json``, on any setup), so that its figures can
    be re-derived; a decoder whose rows those settings do not give is left out."""
    from ..catalog.models.from_config import ConfigError, decoder_spec
    from ..results import ResultStore

    runs = runs_root(root)
    rows = [row for path in sorted(runs.glob("*/evidence/decoders/results.jsonl")) for row in ResultStore(path).rows()]
    wanted = {r["config"]["model"] for r in rows if Methods.from_dict(r["config"]["methods"]).beyond_paper}
    keys = set()
    for estimate in sorted(runs.glob("*/evidence/decoders/*/estimate.json")):
        if not any(k.split("@")[0] == estimate.parent.name for k in wanted):
            continue  # building a decoder on the meta device takes seconds: only those with rows to read
        a = json.loads(estimate.read_text())["architecture"]
        try:
            keys.add(decoder_spec(estimate.with_name("config.json"), seq_len=a["seq_len"], tokens=a["tokens"],
                                  global_batch=a["global_batch"], precision=a["precision"]).spec.key)
        except (ConfigError, KeyError):
            continue
    return [r for r in rows if r["config"]["model"] in keys & wanted]


def decoder_frame(root: str | Path | None = None) -> pd.DataFrame:
    """``decoder_rows`` as a frame, each measured row's figures re-derived (``frame.runs_frame``'s rule): joined to
    the setups' frame, what ``gains`` reads for the decoders."""
    from ..results import rows_to_read

    return frame_from_rows(rows_to_read(decoder_rows(root)), checked=True)


def gains(df: pd.DataFrame, parity: pd.DataFrame) -> pd.DataFrame:
    """Per measured row beyond the paper: its validation state on its setup, its step time, days, MFU (dense
    16-bit basis, as every MFU shown) and peak memory, beside its paper counterpart's (a result on the same setup,
    or none yet), the ``speedup`` (the counterpart's step time over its own), the share of peak memory saved, and
    the loss parity of its switches (``parity_verdict``). Fastest first within a setting."""
    mine = measured_rows(df, beyond_paper=True)
    if mine.empty:
        return pd.DataFrame(columns=GAIN_COLUMNS)
    paper = results(df)
    out = []
    state = validation_state(df)
    for i, r in mine.iterrows():
        m = Methods(**{c: r[c] for c in METHOD_COLUMNS})
        twin = paper[(paper["setup"] == r["setup"]) & (paper["model"] == r["model"]) & (paper["gpu"] == r["gpu"])
                     & (paper["n_gpus"] == r["n_gpus"]) & (paper["methods_label"] == m.paper_methods().label())]
        twin = twin.sort_values("step_time_s").head(1)
        verdict, words = parity_verdict(parity, m.beyond_switches(), str(r["setup"]))
        t = twin.iloc[0] if len(twin) else None
        out.append({**{k: r[k] for k in ("setup", *SETTING, "config_id", "methods_label", "micro_batch", "gas",
                                         "step_time_s", "days", "peak_memory_gb")},
                    "methods": methods_spec(m), "switches": "+".join(m.beyond_switches()), "validation": state[i],
                    "mfu": float(mfu_on_dense16(mine.loc[[i]]).iloc[0]),
                    "paper_methods_label": m.paper_methods().label(),
                    "paper_step_time_s": None if t is None else t["step_time_s"],
                    "paper_days": None if t is None else t["days"],
                    "paper_peak_memory_gb": None if t is None else t["peak_memory_gb"],
                    "parity": verdict, "parity_words": words})
    g = pd.DataFrame(out, columns=GAIN_COLUMNS)
    for col in ("paper_step_time_s", "paper_days", "paper_peak_memory_gb", "mfu"):
        g[col] = pd.to_numeric(g[col], errors="coerce").astype("float64")
    g["speedup"] = g["paper_step_time_s"] / g["step_time_s"]
    g["memory_saved"] = 1 - g["peak_memory_gb"] / g["paper_peak_memory_gb"]
    return g.sort_values([*SETTING, "setup", "step_time_s"], kind="stable").reset_index(drop=True)


SAME_MACHINE_COLUMNS = ["setup", "folder", "pair", *SETTING, "switches", "micro_batch", "paper_step_time_s",
                        "step_time_s", "speedup", "file"]


def same_machine_gains(root: str | Path | None = None) -> pd.DataFrame:
    """Switches beyond the paper timed beside their paper counterpart on one machine, in turn
    (``<setup>/evidence/<folder>-ab/<pair>/results.jsonl``, one pair a folder): per switch row, its step and its
    counterpart's at the same micro-batch (the median where a pair timed it more than once), and the ``speedup``
    (the counterpart's step over the switch's), which no machine-to-machine difference enters. Only measured
    synchronized step rows count, each stored row once."""
    from ..results import ResultStore, duplicates, status_of

    out = []
    for path in sorted(runs_root(root).glob("*/evidence/*-ab/*/results.jsonl")):
        stored = ResultStore(path).rows()
        again = duplicates(stored)
        rows = [r for i, r in enumerate(stored) if i not in again and r["mode"] == "step" and r["timing"] == "synced"
                and status_of(r) == "measured" and not r["config"].get("tiny")]
        methods = [Methods.from_dict(r["config"]["methods"]) for r in rows]
        for r, m in zip(rows, methods):
            twins = [t["step_time_s"] for t, tm in zip(rows, methods) if tm == m.paper_methods()
                     and t["config"]["model"] == r["config"]["model"] and t["micro_batch"] == r["micro_batch"]]
            if m.beyond_switches() and twins:
                c = r["config"]
                out.append({"setup": r["setup"], "folder": path.parent.parent.name, "pair": path.parent.name,
                            "model": c["model"], "gpu": c["gpu"], "n_gpus": c["n_gpus"],
                            "switches": "+".join(m.beyond_switches()), "micro_batch": r["micro_batch"],
                            "paper_step_time_s": float(pd.Series(twins).median()), "step_time_s": r["step_time_s"],
                            "file": path.relative_to(runs_root(root)).as_posix()})
    g = pd.DataFrame(out, columns=SAME_MACHINE_COLUMNS)
    g["speedup"] = pd.to_numeric(g["paper_step_time_s"]) / pd.to_numeric(g["step_time_s"])
    return g


def not_measured(g: pd.DataFrame, grid: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The (model, GPU, switch) cells of ``grid`` that no validated row measures alone on one GPU yet."""
    done = {(r.model, r.gpu, r.switches) for r in g.itertuples()
            if r.validation == "validated" and int(r.n_gpus) == 1} if not g.empty else set()
    return [cell for cell in grid if cell not in done]


def switch_alone(switch: str) -> Methods:
    """Free-lunch with one switch beyond the paper (``BEYOND_SWITCHES``) on: a cell of the study's grid."""
    field, on = BEYOND_SWITCHES[switch]
    return replace(FREE_LUNCH, **{field: on})


def out_of_memory(df: pd.DataFrame, grid: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
    """The cells of ``grid`` whose switch alone on free-lunch (one GPU) was measured out of memory, with the row's
    reason: a measured outcome, not a cell still to measure (``df``: the runs' frame, the latest row of each
    configuration)."""
    found = {}
    rows = df[(df["outcome"] == "oom") & (df["n_gpus"] == 1) & (df["mode"] == "step")]
    for model, gpu, switch in grid:
        label = switch_alone(switch).label()
        hit = rows[(rows["model"] == model) & (rows["gpu"] == gpu) & (rows["methods_label"] == label)]
        if len(hit):
            found[(model, gpu, switch)] = str(hit.iloc[-1]["reason"])
    return found


def study_grid() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str, str]]]:
    """The study's cells beyond the paper: ([(model, GPU, switch)] for each switch alone on free-lunch that applies
    to the model on one GPU of the kind, [(model, GPU, switch, why not)] for the others), by ``Config``'s rules."""
    from ..catalog.config import Config  # the catalog's models: loaded when the grid is asked for

    cells, excluded = [], []
    for model in STUDY_MODELS:
        for gpu in STUDY_GPUS:
            for switch in BEYOND_SWITCHES:
                why = Config(model, gpu, 1, methods=switch_alone(switch)).methods_reason()
                (excluded.append((model, gpu, switch, why)) if why else cells.append((model, gpu, switch)))
    return cells, excluded
