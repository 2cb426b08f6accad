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
import numbers
from dataclasses import replace
from functools import lru_cache

import pandas as pd

from ..catalog.hardware import get_gpu
from .fixed_micro_batch import fixed_micro_batch_rows, nearest_measured, same_setting
from .transfer import Prediction, methods_of_row, predict, source_from_row, target_micro_batch

VALIDATION_COLUMNS = ["model", "source_setup", "target_setup", "source_methods", "target_methods", "split_basis",
                      "predicted_micro_batch", "measured_micro_batch", "predicted_step_s", "measured_step_s",
                      "predicted_days", "predicted_days_low", "predicted_days_high", "measured_days", "predicted_mfu",
                      "measured_mfu", "capped", "in_range", "error", "abs_error"]
PAPER_MFU_PLAUSIBLE = 0.6  # the paper's cells shown beside predictions: implied MFU at most this
PAPER_COLUMNS = ["model", "gpu", "n_gpus", "paper_days", "paper_mfu", "paper_peak_flops", "source_setup",
                 "predicted_days", "predicted_days_low", "predicted_days_high", "predicted_mfu",
                 "predicted_peak_flops", "capped", "ratio"]


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


def prediction_of(row: pd.Series, prof: pd.DataFrame, gpu: str, n_gpus: int, root: str | None = None,
                  micro_batch: int | None = None) -> tuple[Prediction, str]:
    """``row``'s configuration predicted on ``n_gpus`` x ``gpu`` (``transfer.predict``: at ``micro_batch`` where a
    caller knows the target's, else the memory model's), and the basis of its split. Where the study measured the
    configuration at fixed micro-batches too, the step is carried from the one nearest the target's
    (``fixed_micro_batch.nearest_measured``)."""
    src = source_from_row(row.to_dict(), prof)
    counted = isinstance(n_gpus, numbers.Integral) or (isinstance(n_gpus, float) and n_gpus.is_integer())
    if micro_batch is None and counted and n_gpus >= 1:  # else ``predict`` says what is wrong with the count
        micro_batch = target_micro_batch(src, get_gpu(gpu).key, int(n_gpus))
    near = row if micro_batch is None else nearest_measured(row, int(micro_batch), root)
    if near is row:
        return predict(src, gpu, n_gpus, micro_batch=micro_batch, runs=root), src.split_basis
    src = source_from_row(near.to_dict(), prof, wall_from_step=True)
    p = predict(src, gpu, n_gpus, micro_batch=micro_batch, runs=root)
    return replace(p, basis=f"{p.basis}; from its step measured at micro-batch {int(near['micro_batch'])}"), \
        src.split_basis


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
        p, basis = prediction_of(s, prof, str(t["gpu"]), int(t["n_gpus"]), root)
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
    first = prediction_of(row, prof, gpu, n_gpus, root)[0]
    if first.step_time_s is not None:
        return first
    # The best configuration fits no micro-batch on the target (a smaller GPU, or plain data parallelism's
    # buckets): the source's other measured combinations, fastest first, the first that fits.
    others = configurations(root)
    others = others[(others["setup"] == row["setup"]) & (others["model"] == model)
                    & (others["methods_label"] != row["methods_label"])].sort_values(["days", "config_id"])
    for _, other in others.iterrows():
        p = prediction_of(other, prof, gpu, n_gpus, root)[0]
        if p.step_time_s is not None:
            return replace(p, basis=f"{p.basis}; the fastest measured there ({row['methods_label']}) fits no "
                                    "micro-batch on the target")
    return first


SETUPS_COLUMNS = ["target_setup", "model", "methods", "method_class", "source_setup", "source_methods",
                  "split_basis", "same_architecture", "predicted_micro_batch", "measured_micro_batch",
                  "predicted_days", "predicted_days_low", "predicted_days_high", "measured_days", "repricing_error",
                  "why_not", "in_range", "error", "abs_error"]
CLASS_TARGET = {"median": 0.07, "worst": 0.15}  # the study's target per method class: median and worst |error|
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
    model and setup (``predict_setting``). ``ratio`` = predicted days / the paper's days. Each MFU is rated on
    the peak of the precision that ran (``paper_peak_flops``; ``predicted_peak_flops``: the one the prediction's
    MFU is rated on), so that a page can re-rate both on the dense 16-bit peak (``analysis.mfu_on_dense16``)."""
    from ..analysis import paper_cells

    cells = paper_cells("table1")
    cells = cells[cells["days"].notna() & (cells["mfu"] <= max_mfu)]
    rows = []
    for c in cells.itertuples():
        p = predict_setting(c.model, c.gpu, int(c.n_gpus), root)
        if p is None or p.days is None:
            continue
        rows.append({"model": c.model, "gpu": c.gpu, "n_gpus": int(c.n_gpus), "paper_days": float(c.days),
                     "paper_mfu": float(c.mfu), "paper_peak_flops": float(c.peak_flops),
                     "source_setup": p.source_setup, "predicted_days": p.days, "predicted_days_low": p.days_low,
                     "predicted_days_high": p.days_high, "predicted_mfu": p.mfu,
                     "predicted_peak_flops": p.peak_flops,
                     "capped": p.capped, "ratio": p.days / float(c.days)})
    return pd.DataFrame(rows, columns=PAPER_COLUMNS)


KIND_RATIO_COLUMNS = ["model", "methods", "part", "source_micro_batch", "target_micro_batch", "source_s", "target_s",
                      "ratio", "model_ratio"]


def kinds_across_gpus(prof: pd.DataFrame, source_setup: str, target_setup: str) -> pd.DataFrame:
    """Where a carry between two GPUs goes wrong, kind by kind: each configuration profiled on both setups (the
    same model and methods, one GPU each, so the same global batch a step), its kernels' seconds a step summed
    over the transfer model's parts (``transfer.part_of``: ``flop``, ``scan`` and ``memory``; the optimizer and
    communication left out, as ``transfer.split_of`` leaves them), the target's over the source's (``ratio``)
    beside the ratio ``transfer.predict`` scales that part by (``gpu_ratios.part_ratios``: ``model_ratio``). ``prof``: ``analysis.profiles``' frame. A diagnosis, not a check: both profiles were
    measured, and nothing is fitted to them."""
    from ..catalog.methods import parse_methods
    from ..catalog.models import get_model
    from .gpu_ratios import part_ratios
    from .transfer import part_of

    if prof.empty:
        return pd.DataFrame(columns=KIND_RATIO_COLUMNS)
    prof = prof[~prof["tiny"].astype(bool) & (prof["n_gpus"] == 1)]
    part = prof["kind"].map(part_of)
    sums = prof.assign(part=part)[part.isin(["flop", "scan", "memory"])].groupby(
        ["setup", "model", "methods_label", "gpu", "micro_batch", "part"])["seconds"].sum().reset_index()
    # One profile per model and methods on a setup (the largest micro-batch where several were profiled), so that
    # each configuration pairs with one on the other setup.
    sums = sums.sort_values("micro_batch").drop_duplicates(["setup", "model", "methods_label", "part"], keep="last")
    src, tgt = (sums[sums["setup"] == s].drop(columns="setup") for s in (source_setup, target_setup))
    both = src.merge(tgt, on=["model", "methods_label", "part"], suffixes=("_source", "_target"))
    rows = []
    for r in both.itertuples():
        if r.seconds_source <= 0:
            continue
        assumed = part_ratios(get_gpu(r.gpu_source), get_gpu(r.gpu_target), get_model(r.model).recipe.precision,
                              parse_methods(r.methods_label).tf32)[0][r.part]
        rows.append({"model": r.model, "methods": r.methods_label, "part": r.part,
                     "source_micro_batch": r.micro_batch_source, "target_micro_batch": r.micro_batch_target,
                     "source_s": r.seconds_source,
                     "target_s": r.seconds_target, "ratio": r.seconds_target / r.seconds_source,
                     "model_ratio": assumed})
    return pd.DataFrame(rows, columns=KIND_RATIO_COLUMNS)


def kinds_summary(frame: pd.DataFrame) -> dict[str, dict]:
    """``kinds_across_gpus`` by part: configurations, the median ``ratio``, the ratio the model takes (the same
    for every configuration of a part where the precision is), and the rows of the least and the most ratio."""
    return {part: {"configurations": len(g), "median": float(g["ratio"].median()),
                   "model": float(g["model_ratio"].median()), "least": g.loc[g["ratio"].idxmin()].to_dict(),
                   "most": g.loc[g["ratio"].idxmax()].to_dict()}
            for part, g in frame.groupby("part")}


def at_micro_batches(row: dict, names: dict[str, str] | None = None) -> str:
    """A ``kinds_across_gpus`` row in words: the model and the micro-batches it was profiled at on each GPU."""
    name = (names or {}).get(row["model"], row["model"])
    return f"{name} at micro-batches {int(row['source_micro_batch'])} and {int(row['target_micro_batch'])}"


MICRO_BATCH_CHECK_COLUMNS = ["setup", "model", "methods", "micro_batch", "measured_step_s", "search_micro_batch",
                             "idle_charge_step_s", "idle_charge_error"]


def idle_charge_check(root: str | None = None) -> pd.DataFrame:
    """Each fixed-micro-batch row beside the step the transfer model carries to it from the search's row of the same
    setup, model and methods on the same GPU, which charges the smaller micro-batch only the GPU's idle time per
    micro-step (``idle_charge_error`` = that step / the measured one - 1): what ``prediction_of``'s start from the
    nearest measured micro-batch corrects."""
    rows, searched, prof = fixed_micro_batch_rows(root), configurations(root), measured(root)[1]
    out = []
    for _, r in rows.iterrows():
        same = searched[same_setting(searched, r)]
        if same.empty:
            continue
        s = same.iloc[0]
        carried = predict(source_from_row(s.to_dict(), prof), str(r["gpu"]), int(r["n_gpus"]),
                          micro_batch=int(r["micro_batch"]), runs=root).step_time_s
        out.append({"setup": r["setup"], "model": r["model"], "methods": r["methods_label"],
                    "micro_batch": int(r["micro_batch"]), "measured_step_s": float(r["step_time_s"]),
                    "search_micro_batch": int(s["micro_batch"]), "idle_charge_step_s": carried,
                    "idle_charge_error": carried / float(r["step_time_s"]) - 1})
    out = pd.DataFrame(out, columns=MICRO_BATCH_CHECK_COLUMNS)
    return out.sort_values(["setup", "model", "micro_batch"], ignore_index=True)
