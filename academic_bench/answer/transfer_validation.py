"""The transfer model (``transfer``) checked against measurements it did not see, and the measured configuration
each prediction starts from.

- ``held_out``: predict one measured setup from another (h100x1 -> h200x1: same peak FLOP/s, more memory and
  bandwidth; h200x1 -> h200x2: one GPU to two, the collectives from the communication model) for every model
  whose search is complete on both, and compare with the target's measured answer. Nothing is fitted on the
  target: each prediction uses the source setup's best row and profiles and the GPU catalog only.
- ``paper_beside_predictions``: the paper's Table 1 cells whose implied MFU is plausible (<= 0.6), beside our
  prediction for the same cell (the ratio is context, not a target: the paper's clock under-counts).
- ``choose_source``/``predict_setting``: the measured configuration a prediction for any (model, GPU, count)
  rests on, used by the study's answer (``academic_bench.answer``).
"""
from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..catalog.hardware import get_gpu
from .transfer import Prediction, methods_of_row, predict, source_from_row

VALIDATION_COLUMNS = ["model", "source_setup", "target_setup", "source_methods", "target_methods", "split_basis",
                      "predicted_micro_batch", "measured_micro_batch", "predicted_step_s", "measured_step_s",
                      "predicted_days", "predicted_days_low", "predicted_days_high", "measured_days", "predicted_mfu",
                      "measured_mfu", "capped", "in_range", "error", "abs_error"]
PAPER_MFU_PLAUSIBLE = 0.6  # the paper's cells shown beside predictions: implied MFU at most this
PAPER_COLUMNS = ["model", "gpu", "n_gpus", "paper_days", "paper_mfu", "source_setup", "predicted_days",
                 "predicted_days_low", "predicted_days_high", "predicted_mfu", "capped", "ratio"]


@lru_cache(maxsize=8)
def _complete_rows(root: str | None = None) -> pd.DataFrame:
    """The synchronized ok step rows of every setup and model whose search is complete. Cached per runs folder:
    the planner asks for many settings."""
    from ..analysis import results, runs_frame, skipped_frame
    from .measured import answers

    df = runs_frame(root)
    if df.empty:
        return df
    done = answers(df, skipped_frame(root))
    done = done[done["status"] == "search complete"][["setup", "model"]]
    return results(df).merge(done, on=["setup", "model"])


@lru_cache(maxsize=8)
def measured(root: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the best row per setup and model whose search is complete, the profiles): what predictions rest on."""
    from ..analysis import SETTING, fastest, profiles

    rows = _complete_rows(root)
    if rows.empty:
        return rows, pd.DataFrame()
    return fastest(rows, ["setup", *SETTING]).reset_index(drop=True), profiles(root)


@lru_cache(maxsize=8)
def configurations(root: str | None = None) -> pd.DataFrame:
    """The fastest row of every measured method combination per setup and model whose search is complete: what
    a prediction falls back on where the best configuration does not fit the target (``predict_setting``)."""
    from ..analysis import SETTING, fastest

    rows = _complete_rows(root)
    return rows if rows.empty else fastest(rows, ["setup", *SETTING, "methods_label"]).reset_index(drop=True)


def _prediction(row: pd.Series, prof: pd.DataFrame, gpu: str, n_gpus: int) -> tuple[Prediction, str]:
    src = source_from_row(row.to_dict(), prof)
    return predict(src, gpu, n_gpus), src.split_basis


def held_out(source_setup: str, target_setup: str, root: str | None = None) -> pd.DataFrame:
    """Per model whose search is complete on both setups: the prediction of ``target_setup`` from
    ``source_setup``'s best configuration beside the target's measured best. ``error`` = predicted days /
    measured days - 1; ``in_range``: the measured days lie within the predicted range."""
    best, prof = measured(root)
    if best.empty:
        return pd.DataFrame(columns=VALIDATION_COLUMNS)
    src, tgt = best[best["setup"] == source_setup], best[best["setup"] == target_setup].set_index("model")
    rows = []
    for _, s in src[src["model"].isin(tgt.index)].iterrows():
        t = tgt.loc[s["model"]]
        p, basis = _prediction(s, prof, str(t["gpu"]), int(t["n_gpus"]))
        rows.append({"model": s["model"], "source_setup": source_setup, "target_setup": target_setup,
                     "source_methods": s["methods_label"], "target_methods": t["methods_label"],
                     "split_basis": basis, "predicted_micro_batch": p.micro_batch,
                     "measured_micro_batch": int(t["micro_batch"]), "predicted_step_s": p.step_time_s,
                     "measured_step_s": float(t["step_time_s"]), "predicted_days": p.days,
                     "predicted_days_low": p.days_low, "predicted_days_high": p.days_high,
                     "measured_days": float(t["days"]), "predicted_mfu": p.mfu, "measured_mfu": float(t["mfu"]),
                     "capped": p.capped})
    from ..catalog.models import model_rank

    out = pd.DataFrame(rows, columns=VALIDATION_COLUMNS)
    out = out.iloc[sorted(range(len(out)), key=lambda i: model_rank(out["model"].iloc[i]))]  # catalog order
    return add_errors(out.reset_index(drop=True))


def add_errors(frame: pd.DataFrame) -> pd.DataFrame:
    """``error``, ``abs_error`` and ``in_range`` computed from each row's predicted and measured days."""
    out = frame.copy()
    pred, meas = out["predicted_days"].astype(float), out["measured_days"].astype(float)
    out["error"] = pred / meas - 1
    out["abs_error"] = out["error"].abs()
    out["in_range"] = (out["predicted_days_low"].astype(float) <= meas) & (meas <= out["predicted_days_high"])
    return out


def error_summary(frame: pd.DataFrame) -> dict[str, float | int]:
    """Models compared, median and worst |error|, and how many measured days fall in the predicted range."""
    e = frame["abs_error"].dropna()
    return {"models": int(len(e)), "median_abs_error": float(e.median()) if len(e) else math.nan,
            "worst_abs_error": float(e.max()) if len(e) else math.nan,
            "in_range": int(frame.loc[e.index, "in_range"].sum()) if len(e) else 0}


def h100_to_h200(root: str | None = None) -> pd.DataFrame:
    """The held-out check on one GPU: h200x1 predicted from h100x1 alone."""
    return held_out("h100x1", "h200x1", root)


def one_to_two_gpus(root: str | None = None) -> pd.DataFrame:
    """The held-out check of the communication model: h200x2 predicted from h200x1 (models whose search is
    complete on both; empty with the columns when none is)."""
    return held_out("h200x1", "h200x2", root)


def choose_source(model: str, gpu: str, n_gpus: int, root: str | None = None) -> pd.Series | None:
    """The measured configuration (complete search) a prediction for ``model`` on ``n_gpus`` x ``gpu`` starts
    from: the same GPU at the nearest count first, then the same architecture, then the nearest memory size (so
    the micro-batch changes least), then the nearest count; None where the model has no complete search."""
    best, _ = measured(root)
    if best.empty:
        return None
    mine = best[best["model"] == model]
    if mine.empty:
        return None
    target = get_gpu(gpu)

    def rank(r: pd.Series) -> tuple:
        g = get_gpu(str(r["gpu"]))
        return (g.key != target.key, g.architecture != target.architecture, abs(g.memory_gb - target.memory_gb),
                abs(math.log(int(r["n_gpus"]) / n_gpus)), str(r["setup"]))

    return min((r for _, r in mine.iterrows()), key=rank)


@lru_cache(maxsize=1024)
def predict_setting(model: str, gpu: str, n_gpus: int, root: str | None = None) -> Prediction | None:
    """The transfer model's prediction for a catalog model on ``n_gpus`` x ``gpu`` from ``choose_source``
    (cached, as ``measured`` is: a prediction is a frozen value)."""
    row = choose_source(model, gpu, n_gpus, root)
    if row is None:
        return None
    prof = measured(root)[1]
    first = _prediction(row, prof, gpu, n_gpus)[0]
    if first.step_time_s is not None:
        return first
    # The best configuration fits no micro-batch on the target (a smaller GPU, or plain data parallelism's
    # buckets): the source's other measured combinations, fastest first, the first that fits.
    others = configurations(root)
    others = others[(others["setup"] == row["setup"]) & (others["model"] == model)
                    & (others["methods_label"] != row["methods_label"])].sort_values(["days", "config_id"])
    for _, other in others.iterrows():
        p = _prediction(other, prof, gpu, n_gpus)[0]
        if p.step_time_s is not None:
            return replace(p, basis=f"{p.basis}; the fastest measured there ({row['methods_label']}) fits no "
                                    "micro-batch on the target")
    return first


SETUPS_COLUMNS = ["target_setup", "model", "methods", "method_class", "source_setup", "source_methods",
                  "split_basis", "same_architecture", "predicted_micro_batch", "measured_micro_batch",
                  "predicted_days", "predicted_days_low", "predicted_days_high", "measured_days", "repricing_error",
                  "why_not", "in_range", "error", "abs_error"]
CLASS_TARGET = {"median": 0.07, "worst": 0.15}  # issue 36's target per method class: median and worst |error|
CLASS_COLUMNS = ["method_class", "configurations", "predicted", "median_abs_error", "worst_abs_error",
                 "median_met", "worst_met"]


def setups_held_out(root: str | None = None) -> pd.DataFrame:
    """Every counted configuration of every setup (the fastest row per model and methods) predicted from the
    other setups' measurements only (``other_methods.predict_from_others``: the same configuration carried by
    the transfer model, else the model's configuration nearest in methods re-priced and carried; the profiles,
    host and GPU optimizer rates all from the other setups), or ``why_not``. ``method_class`` is the study's
    validation class. ``repricing_error``, for a re-priced prediction whose source methods were also measured on
    the target setup: the re-pricing alone, on the target's own GPU from that row (what the methods' costs
    miss, apart from the carry to another GPU)."""
    from ..analysis import SETTING, counted, fastest, profiles, runs_frame
    from ..catalog.methods import validation_class
    from .other_methods import predict_from_others

    rows = counted.results(runs_frame(root))
    if rows.empty:
        return pd.DataFrame(columns=SETUPS_COLUMNS)
    rows = fastest(rows, ["setup", *SETTING, "methods_label"]).reset_index(drop=True)
    prof = profiles(root)
    out = []
    for _, t in rows.iterrows():
        rest = prof[prof["setup"] != t["setup"]] if len(prof) else prof
        p, rests_on = predict_from_others(t, rows[rows["setup"] != t["setup"]], rest)
        entry = {"target_setup": t["setup"], "model": t["model"], "methods": t["methods_label"],
                 "method_class": validation_class(methods_of_row(t), int(t["n_gpus"])),
                 "measured_micro_batch": int(t["micro_batch"]), "measured_days": float(t["days"]), **rests_on}
        if p is not None and p.days is not None:
            entry.update(predicted_micro_batch=p.micro_batch, predicted_days=p.days, predicted_days_low=p.days_low,
                         predicted_days_high=p.days_high)
        elif p is not None:
            entry["why_not"] = p.basis
        here = rows[(rows["setup"] == t["setup"]) & (rows["model"] == t["model"])
                    & (rows["methods_label"] == rests_on.get("source_methods"))]
        if len(here) and rests_on["source_methods"] != t["methods_label"]:
            q, _ = predict_from_others(t, here, rest, rows[rows["setup"] != t["setup"]])
            entry["repricing_error"] = q.step_time_s / float(t["step_time_s"]) - 1 if q and q.step_time_s else None
        out.append(entry)
    return add_errors(pd.DataFrame(out).reindex(columns=SETUPS_COLUMNS))[SETUPS_COLUMNS]


def by_method_class(frame: pd.DataFrame) -> pd.DataFrame:
    """``setups_held_out`` per method class: configurations, how many were predicted, the median and worst
    |error|, and whether each meets ``CLASS_TARGET``."""
    rows = []
    for cls, g in frame.groupby("method_class", sort=True):
        e = g["abs_error"].dropna()
        med, worst = (float(e.median()), float(e.max())) if len(e) else (math.nan, math.nan)
        rows.append({"method_class": cls, "configurations": len(g), "predicted": len(e), "median_abs_error": med,
                     "worst_abs_error": worst, "median_met": med <= CLASS_TARGET["median"],
                     "worst_met": worst <= CLASS_TARGET["worst"]})
    return pd.DataFrame(rows, columns=CLASS_COLUMNS)


def paper_beside_predictions(root: str | None = None, max_mfu: float = PAPER_MFU_PLAUSIBLE) -> pd.DataFrame:
    """The paper's Table 1 cells whose implied MFU is at most ``max_mfu``, each beside our prediction for the same
    model and setup (``predict_setting``). ``ratio`` = predicted days / the paper's days."""
    from ..analysis import paper_cells

    cells = paper_cells("table1")
    cells = cells[cells["days"].notna() & (cells["mfu"] <= max_mfu)]
    rows = []
    for c in cells.itertuples():
        p = predict_setting(c.model, c.gpu, int(c.n_gpus), root)
        if p is None or p.days is None:
            continue
        rows.append({"model": c.model, "gpu": c.gpu, "n_gpus": int(c.n_gpus), "paper_days": float(c.days),
                     "paper_mfu": float(c.mfu), "source_setup": p.source_setup, "predicted_days": p.days,
                     "predicted_days_low": p.days_low, "predicted_days_high": p.days_high, "predicted_mfu": p.mfu,
                     "capped": p.capped, "ratio": p.days / float(c.days)})
    return pd.DataFrame(rows, columns=PAPER_COLUMNS)


DECODER_TOLERANCE = 0.15  # the study's target for a config.json decoder's days (issue of the estimate command)
DECODER_COLUMNS = ["decoder", "architecture", "params", "seq_len", "setup", "gpu", "n_gpus", "estimated_with",
                   "predicted_days", "predicted_days_low", "predicted_days_high", "predicted_mfu", "measured_days",
                   "measured_mfu", "micro_batch", "in_range", "error", "abs_error", "within", "work_model_days",
                   "work_model_error", "work_model_held_out", "predicted_memory_gb", "measured_memory_gb",
                   "memory_error"]
WORK_MODEL = "work model"  # how an estimate.json made with decoder_work names its MFU's source


def _decoder_key(config: Path, architecture: dict) -> str | None:
    """The key of the decoder ``config`` describes, registered with the settings its estimate was made with
    (``architecture`` of its estimate.json); None where the config is gone or broken."""
    from ..catalog.models.from_config import ConfigError, decoder_spec

    a = architecture
    try:
        return decoder_spec(config, seq_len=a["seq_len"], tokens=a["tokens"], global_batch=a["global_batch"],
                            precision=a["precision"]).spec.key
    except ConfigError:
        return None


def config_decoders(root: str | None = None) -> pd.DataFrame:
    """Decoders outside the catalog, from their config.json: the days ``academic-bench estimate --model
    PATH/config.json`` gave before they ran (``<setup>/evidence/decoders/<name>/estimate.json``, kept as written;
    ``estimated_with`` says by which method), beside the days their measurement gives
    (``<setup>/evidence/decoders/results.jsonl``, rows of ``academic-bench bench --model PATH/config.json``; a
    row's model key is ``<name>@<digest>``). Their rows stay out of the setup's results, so no estimate or answer
    of the study rests on them. ``within``: |error| <= ``DECODER_TOLERANCE``. ``work_model_days`` is today's
    work-model answer (``decoder_work``) for every decoder; ``work_model_held_out`` is True only where the estimate
    kept was made by the work model, i.e. before the decoder was measured. ``memory_error`` sets the memory
    model's prediction at the micro-batch that ran beside the peak the run allocated."""
    import json

    from ..analysis import profiles, runs_root
    from ..catalog.methods import Methods
    from .decoder_work import calibration_points, predict_decoder
    from ..results import ResultStore, status_of

    out = []
    points = calibration_points(profiles(root))
    for path in sorted(runs_root(root).glob("*/evidence/decoders/results.jsonl")):
        for row in ResultStore(path).rows():
            name = row["config"]["model"].split("@")[0]
            estimate = path.parent / name / "estimate.json"
            if status_of(row) != "measured" or not estimate.exists():
                continue
            if Methods.from_dict(row["config"]["methods"]).beyond_paper:
                continue  # measured beside the free lunch the estimate is of (``analysis.beyond``)
            e = json.loads(estimate.read_text())
            if (e["gpu"], e["n_gpus"]) != (row["config"]["gpu"], row["config"]["n_gpus"]):
                continue  # an estimate for another setting says nothing about this row
            a = e["architecture"]
            key = _decoder_key(estimate.with_name("config.json"), a)
            now = predict_decoder(key, e["gpu"], e["n_gpus"], points) if key else None
            made_by = str(e["mfu"].get("source", ""))
            method = WORK_MODEL if made_by.startswith(WORK_MODEL) else "MFU interpolated in parameters"
            out.append({"decoder": name, "architecture": a["model_type"], "params": e["params"],
                        "seq_len": a["seq_len"], "setup": row["setup"], "gpu": row["config"]["gpu"],
                        "n_gpus": row["config"]["n_gpus"], "estimated_with": method, "predicted_days": e["days"],
                        "predicted_days_low": e["days_range"][0],
                        "predicted_days_high": e["days_range"][1], "predicted_mfu": e["mfu"]["value"],
                        "measured_days": row["days"], "measured_mfu": row["mfu"], "micro_batch": row["micro_batch"],
                        "work_model_days": now.days if now is not None and now.days is not None else math.nan,
                        "work_model_held_out": method == WORK_MODEL,
                        # The memory model at the micro-batch that ran, beside the peak the run allocated.
                        "predicted_memory_gb": row.get("predicted_memory_gb"),
                        "measured_memory_gb": max((p for p in row.get("peak_memory_gb") or [] if p is not None),
                                                  default=None)})
    if not out:
        return pd.DataFrame(columns=DECODER_COLUMNS)
    frame = add_errors(pd.DataFrame(out))
    frame["within"] = frame["abs_error"] <= DECODER_TOLERANCE
    frame["work_model_error"] = frame["work_model_days"].astype(float) / frame["measured_days"].astype(float) - 1
    frame["memory_error"] = (frame["predicted_memory_gb"].astype(float) / frame["measured_memory_gb"].astype(float)
                             - 1)
    return frame[DECODER_COLUMNS]


WORK_MODEL_COLUMNS = ["setup", "gpu", "model", "micro_batch", "predicted_step_s", "predicted_step_low_s",
                      "predicted_step_high_s", "profiled_step_s", "in_range", "error", "abs_error"]


def work_model_leave_one_out(root: str | None = None) -> pd.DataFrame:
    """The work model (``decoder_work``) on the catalog decoders it is calibrated on, each left out in turn: its
    profiled step on a setup predicted from the rates of the setup's other profiled decoders, at its own
    micro-batch."""
    from ..analysis import profiles
    from .decoder_work import calibration_points, predict_on_setup

    prof = profiles(root)
    points = calibration_points(prof)
    rows = []
    for _, r in points.iterrows():
        others = points[(points["setup"] == r["setup"]) & (points["model"] != r["model"])]
        if others.empty:
            continue
        p = predict_on_setup(r["model"], r["setup"], points, int(r["micro_batch"]), int(r["gas"]),
                             leave_out=r["model"])
        rows.append({"setup": r["setup"], "gpu": r["gpu"], "model": r["model"], "micro_batch": int(r["micro_batch"]),
                     "predicted_step_s": p.step_s, "predicted_step_low_s": p.low_s, "predicted_step_high_s": p.high_s,
                     "profiled_step_s": r["step_wall_s"]})
    if not rows:
        return pd.DataFrame(columns=WORK_MODEL_COLUMNS)
    out = pd.DataFrame(rows)
    out["error"] = out["predicted_step_s"] / out["profiled_step_s"] - 1
    out["abs_error"] = out["error"].abs()
    out["in_range"] = ((out["predicted_step_low_s"] <= out["profiled_step_s"])
                       & (out["profiled_step_s"] <= out["predicted_step_high_s"]))
    return out[WORK_MODEL_COLUMNS]


BY_KIND_COLUMNS = ["decoder", "setup", "micro_batch", "kind", "predicted_s", "profiled_s", "error"]


def by_kind(decoder_profiles: pd.DataFrame, keys: dict[str, str], points: pd.DataFrame) -> pd.DataFrame:
    """Each profiled decoder's step, kind of work by kind (``decoder_work.KINDS``, and ``step``): the work model's
    seconds (``predict_on_setup`` at the profile's micro-batch, from ``points``) beside the profile's.
    ``decoder_profiles`` has ``analysis.profiles``' columns; ``keys`` maps each profile's model to the registered
    decoder key the work model counts."""
    from .decoder_work import KINDS, PROFILE_KINDS, predict_on_setup

    rows = []
    for (setup, config_id, model), g in decoder_profiles.groupby(["setup", "config_id", "model"]):
        first = g.iloc[0]
        if model not in keys or not (points["setup"] == setup).any():
            continue
        pred = predict_on_setup(keys[model], setup, points, int(first["micro_batch"]), int(first["gas"]))
        seconds = g.groupby("kind")["seconds"].sum()
        profiled = {k: float(seconds.reindex(list(names)).fillna(0).sum()) for k, names in PROFILE_KINDS.items()}
        profiled["idle"] = max(0.0, float(first["step_wall_s"]) - float(first["busy_s"]))
        parts = [(k, pred.seconds[k], profiled[k]) for k in KINDS]
        parts.append(("step", pred.step_s, float(first["step_wall_s"])))
        rows += [{"decoder": model.split("@")[0], "setup": setup, "micro_batch": int(first["micro_batch"]), "kind": k,
                  "predicted_s": p, "profiled_s": m} for k, p, m in parts]
    out = pd.DataFrame(rows, columns=BY_KIND_COLUMNS[:-1])
    out["error"] = out["predicted_s"] / out["profiled_s"].where(out["profiled_s"] > 0) - 1
    return out[BY_KIND_COLUMNS]


def work_model_by_kind(root: str | None = None) -> pd.DataFrame:
    """``by_kind`` for the decoders outside the catalog profiled on a setup (``academic-bench profile --model
    PATH/config.json --out <setup>/evidence/decoders/profiles.jsonl``, the latest profile of each configuration),
    each registered from the config.json and settings its estimate was made with."""
    import json

    from ..analysis import profile_frame, profiles, runs_root
    from .decoder_work import calibration_points
    from ..results import read_lines

    frames, keys = [], {}
    for path in sorted(runs_root(root).glob("*/evidence/decoders/profiles.jsonl")):
        entries = list({p["config_id"]: p for _, p in read_lines(path)}.values())
        frames.append(profile_frame(entries))
        for model in {p["config"]["model"] for p in entries}:
            estimate = path.parent / model.split("@")[0] / "estimate.json"
            key = _decoder_key(estimate.with_name("config.json"),
                               json.loads(estimate.read_text())["architecture"]) if estimate.exists() else None
            if key:
                keys[model] = key
    if not frames:
        return pd.DataFrame(columns=BY_KIND_COLUMNS)
    return by_kind(pd.concat(frames), keys, calibration_points(profiles(root)))
