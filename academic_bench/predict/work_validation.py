"""The work model (``decoder_work``) checked against measurements: the decoders outside the catalog whose days were
estimated before they ran (``config_decoders``), each profiled catalog decoder predicted from the others' rates
(``work_model_leave_one_out``), and each profiled decoder's step kind of work by kind (``work_model_by_kind``).
"""
from __future__ import annotations

import math
import re
from typing import Mapping

import pandas as pd

from .transfer_validation import add_errors
from .work_evidence import PLAIN, Evidence

DECODER_TOLERANCE = 0.15  # the study's target for a config.json decoder's days (issue of the estimate command)
# The targets for the decoders estimated with the work model across shapes (the study's issue on predictions,
# item 4): the median and the worst |error| of their days.
SHAPES_MEDIAN_TARGET = 0.06
SHAPES_WORST_TARGET = 0.12
DECODER_COLUMNS = ["decoder", "architecture", "params", "seq_len", "vocab", "setup", "gpu", "n_gpus",
                   "estimated_with", "predicted_days", "predicted_days_low", "predicted_days_high", "predicted_mfu",
                   "measured_days", "measured_mfu", "micro_batch", "in_range", "error", "abs_error", "within",
                   "work_model_days", "work_model_error", "work_model_held_out", "across_shapes", "variant_of",
                   "predicted_memory_gb", "measured_memory_gb", "memory_error", "weights"]
WORK_MODEL = "work model"  # how an estimate.json made with decoder_work names its MFU's source


def _made_by(estimate: dict) -> tuple[str, float]:
    """(what an estimate.json's days rest on, the MFU they imply): its answer's ``by`` and ``mfu``, or, in the
    files written before the estimate carried the answer, its ``mfu`` block's ``source`` and ``value``."""
    if "answer" in estimate:
        return str(estimate["answer"].get("by") or ""), float(estimate["answer"]["mfu"])
    return str(estimate["mfu"].get("source", "")), float(estimate["mfu"]["value"])


def config_decoders(root: str | None = None) -> pd.DataFrame:
    """Decoders outside the catalog, from their config.json: the days ``academic-bench estimate --model
    PATH/config.json`` gave before they ran (``<setup>/evidence/decoders/<name>/estimate.json``, kept as written;
    ``estimated_with`` says by which method), beside the days their measurement gives
    (``<setup>/evidence/decoders/results.jsonl``, rows of ``academic-bench bench --model PATH/config.json``; a
    row's model key is ``<name>@<digest>``). Their rows stay out of the setup's results, so no estimate or answer
    of the study rests on them. ``within``: |error| <= ``DECODER_TOLERANCE``. ``work_model_days`` is today's
    work model (``decoder_work``) for every decoder at the micro-batch that ran (the step alone: the rows measured
    before the build was made fp32 trained purely in 16 bits, whose memory lets a larger micro-batch fit than
    today's build, ``analysis.memory_check``); ``work_model_held_out`` is True only where the estimate
    kept was made by the work model, i.e. before the decoder was measured; ``across_shapes`` only where that
    estimate also carries the study's one answer (``answer``), i.e. was made by the work model across shapes (the
    matrix-product rate by size, attention at the sequence asked), the check ``shapes_summary`` reads.
    ``variant_of`` names the measured decoder a row changes one thing of, to tell a miss's causes apart
    (``variant_base``), else missing. ``memory_error`` sets today's memory model's prediction at the micro-batch that
    ran, with the weights it ran with (``analysis.memory_check.built_weights``), beside the peak the run
    allocated; ``weights`` the dtype the run's weights were built in (``built_weights``)."""
    import json

    from ..analysis import profiles, runs_root
    from ..analysis.memory_check import built_weights, decoder_key, memory_gb
    from ..catalog.methods import Methods
    from .decoder_work import calibration_points, predict_decoder
    from ..results import ResultStore, recounted, status_of
    from .work_evidence import runs_evidence

    out = []
    evidence = runs_evidence(None if root is None else str(root))
    points = calibration_points(profiles(root), evidence)
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
            key = decoder_key(estimate.with_name("config.json"), a)
            ran = Methods.from_dict(row["config"]["methods"])
            config = estimate.with_name("config.json")
            weights = built_weights(row, json.loads(config.read_text()) if config.exists() else None)
            now = predict_decoder(key, e["gpu"], e["n_gpus"], points, ran, evidence=evidence,
                                  micro_batch=int(row["micro_batch"]), weights=weights) if key else None
            made_by, estimated_mfu = _made_by(e)
            method = WORK_MODEL if made_by.startswith(WORK_MODEL) else "MFU interpolated in parameters"
            out.append({"decoder": name, "architecture": a["model_type"], "params": e["params"],
                        "seq_len": a["seq_len"], "vocab": a.get("vocab"), "setup": row["setup"],
                        "gpu": row["config"]["gpu"],
                        "n_gpus": row["config"]["n_gpus"], "estimated_with": method, "predicted_days": e["days"],
                        "predicted_days_low": e["days_range"][0],
                        "predicted_days_high": e["days_range"][1], "predicted_mfu": estimated_mfu,
                        "measured_days": row["days"], "weights": weights,
                        # today's count of its FLOPs (its spec registered above by ``decoder_key``)
                        "measured_mfu": recounted(row).get("mfu", row["mfu"]), "micro_batch": row["micro_batch"],
                        "work_model_days": now.days if now is not None and now.days is not None else math.nan,
                        "work_model_held_out": method == WORK_MODEL,
                        "across_shapes": method == WORK_MODEL and "answer" in e,
                        # Today's memory model at the micro-batch that ran, with the weights it ran with, beside
                        # the peak the run allocated.
                        "predicted_memory_gb": memory_gb(key, row["config"]["gpu"], row["config"]["n_gpus"], ran,
                                                         row["micro_batch"], weights) if key else None,
                        "measured_memory_gb": max((p for p in row.get("peak_memory_gb") or [] if p is not None),
                                                  default=None)})
    if not out:
        return pd.DataFrame(columns=DECODER_COLUMNS)
    frame = add_errors(pd.DataFrame(out))
    frame["within"] = frame["abs_error"] <= DECODER_TOLERANCE
    frame["work_model_error"] = frame["work_model_days"].astype(float) / frame["measured_days"].astype(float) - 1
    frame["memory_error"] = (frame["predicted_memory_gb"].astype(float) / frame["measured_memory_gb"].astype(float)
                             - 1)
    # Each decoder's config.json read once per setup (a decoder measured twice has two rows), for its variants.
    measured: dict[str, dict[str, tuple[dict, int]]] = {}
    for setup, name, seq_len in frame[["setup", "decoder", "seq_len"]].drop_duplicates().itertuples(index=False):
        config = _config(runs_root(root) / setup / "evidence" / "decoders", name)
        if config is not None:
            measured.setdefault(setup, {})[name] = (config, seq_len)
    frame["variant_of"] = [variant_base(r.decoder, measured.get(r.setup, {})) for r in frame.itertuples()]
    return frame[DECODER_COLUMNS]


def _config(folder, name: str) -> dict | None:
    """``folder/name/config.json`` as a dict; None where it is gone."""
    import json

    path = folder / name / "config.json"
    return json.loads(path.read_text()) if path.exists() else None


def variant_base(name: str, measured: dict[str, tuple[dict, int]]) -> str | None:
    """The measured decoder that ``name`` is a variant of: the longest other measured name it extends
    (``gpt2-vocab50304`` extends ``gpt2``) whose config.json differs from its own, the sequence length it trained
    at being the same. ``measured``: the setup's decoders with a config.json, each with it and its sequence
    length. A folder that copies its base's config.json to train it at another length (``gemma-2b-seq4096``) is
    a new configuration of it, not a variant."""
    if name not in measured:
        return None
    config, seq_len = measured[name]
    for base in sorted((b for b in measured if name.startswith(b + "-")), key=len, reverse=True):
        if measured[base][0] != config and measured[base][1] == seq_len:
            return base
    return None


VARIANT_COLUMNS = ["setup", "decoder", "variant_of", "change", "speedup", "error", "base_error",
                   "base_unaligned_share"]
# Kernels cuBLAS/CUTLASS pick when an operand's leading size is no multiple of 8 bf16 elements (16 bytes, the
# Tensor Cores' multiple: ``catalog.models.from_config.TENSOR_CORE_MULTIPLE``): their names carry the alignment
# they settle for ("..._align1").
UNALIGNED_KERNEL = re.compile(r"_align[124](?!\d)")


def variants(decoders: pd.DataFrame, root: str | None = None) -> pd.DataFrame:
    """Each variant in ``config_decoders`` (``variant_of``) beside its base on the same setup (its latest row):
    what it changes (``config_change``), how much faster it trained (``speedup``: the base's measured days over
    its own), both estimates' errors, and the share of the base's profiled step its top kernels for unaligned
    operands took (``unaligned_share``; NaN without a profile of the base)."""
    from ..analysis import runs_root

    rows = decoders[decoders["variant_of"].notna()] if len(decoders) else decoders
    shares: dict[tuple[str, str], float] = {}  # each base's profile read once, however many variants it has
    out = []
    for r in rows.itertuples():
        base = decoders[(decoders["decoder"] == r.variant_of) & (decoders["setup"] == r.setup)]
        if base.empty:
            continue
        b = base.iloc[-1]  # the latest: rows keep the order of the results file
        folder = runs_root(root) / r.setup / "evidence" / "decoders"
        if (r.setup, r.variant_of) not in shares:
            shares[(r.setup, r.variant_of)] = unaligned_share(folder, r.variant_of)
        out.append({"setup": r.setup, "decoder": r.decoder, "variant_of": r.variant_of,
                    "change": config_change(folder, r.variant_of, r.decoder),
                    "speedup": float(b["measured_days"]) / float(r.measured_days), "error": r.error,
                    "base_error": float(b["error"]), "base_unaligned_share": shares[(r.setup, r.variant_of)]})
    return pd.DataFrame(out, columns=VARIANT_COLUMNS)


def unaligned_share(folder, name: str) -> float:
    """The share of ``name``'s latest profiled step (``folder/profiles.jsonl``) that its top kernels for unaligned
    operands (``UNALIGNED_KERNEL``; the profile names its largest kernels only, so this is a lower bound) took;
    NaN without a profile of it."""
    from ..results import read_lines

    path = folder / "profiles.jsonl"
    mine = [e for _, e in read_lines(path) if e["config"]["model"].split("@")[0] == name] if path.exists() else []
    if not mine:
        return math.nan
    e = mine[-1]
    return sum(k["seconds"] for k in e["top"] if UNALIGNED_KERNEL.search(k["name"])) / float(e["step_wall_s"])


def config_change(folder, base: str, variant: str) -> str:
    """What a variant changes in its base's config.json, e.g. 'vocab_size 50257 -> 50304'."""
    a, b = _config(folder, base), _config(folder, variant)
    return "; ".join(f"{k} {a.get(k)} -> {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))


def shapes_summary(decoders: pd.DataFrame) -> dict:
    """The check of the work model across shapes: the ``config_decoders`` rows marked ``across_shapes``, variants
    left out (``variants`` shows them); their count, median and worst |error| of the days, each against its
    target, how many were measured inside their estimated range, and the rows past the worst target (``misses``,
    worst first)."""
    rows = decoders[decoders["across_shapes"].astype(bool)] if len(decoders) else decoders
    if "variant_of" in rows:  # each decoder once: a variant made to tell a miss's causes apart is shown apart
        rows = rows[rows["variant_of"].isna()]
    if rows.empty:
        return {"n": 0, "median_abs_error": math.nan, "worst_abs_error": math.nan, "median_met": False,
                "worst_met": False, "in_range": 0, "misses": rows}
    median, worst = float(rows["abs_error"].median()), float(rows["abs_error"].max())
    return {"n": len(rows), "median_abs_error": median, "worst_abs_error": worst,
            "median_met": median <= SHAPES_MEDIAN_TARGET, "worst_met": worst <= SHAPES_WORST_TARGET,
            "in_range": int(rows["in_range"].astype(bool).sum()),
            "misses": rows[rows["abs_error"] > SHAPES_WORST_TARGET].sort_values("abs_error", ascending=False)}


WORK_MODEL_COLUMNS = ["setup", "gpu", "model", "micro_batch", "predicted_step_s", "predicted_step_low_s",
                      "predicted_step_high_s", "profiled_step_s", "in_range", "error", "abs_error"]


def work_model_leave_one_out(root: str | None = None) -> pd.DataFrame:
    """The work model (``decoder_work``) on the catalog decoders it is calibrated on, each left out in turn: its
    profiled step on a setup predicted from the rates of the setup's other profiled decoders, at its own
    micro-batch."""
    from ..analysis import profiles
    from .decoder_work import calibration_points, predict_on_setup
    from .work_evidence import runs_evidence

    evidence = runs_evidence(None if root is None else str(root))
    points = calibration_points(profiles(root), evidence)
    rows = []
    for _, r in points.iterrows():
        others = points[(points["setup"] == r["setup"]) & (points["model"] != r["model"])]
        if others.empty:
            continue
        p = predict_on_setup(r["model"], r["setup"], points, int(r["micro_batch"]), int(r["gas"]),
                             leave_out=r["model"], evidence=evidence)
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


def by_kind(decoder_profiles: pd.DataFrame, keys: dict[str, str], points: pd.DataFrame,
            evidence: Evidence = PLAIN, weights: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Each profiled decoder's step, kind of work by kind (``work_units.KINDS``, and ``step``): the work model's
    seconds (``predict_on_setup`` at the profile's micro-batch, from ``points`` made with ``evidence``) beside the
    profile's. ``decoder_profiles`` has ``analysis.profiles``' columns; ``keys`` maps each profile's model to the
    registered decoder key the work model counts; ``weights`` the dtype each profile's model was built in (fp32
    where it names none)."""
    from .decoder_work import PROFILE_KINDS, predict_on_setup
    from .work_units import KINDS

    rows = []
    for (setup, config_id, model), g in decoder_profiles.groupby(["setup", "config_id", "model"]):
        first = g.iloc[0]
        if model not in keys or not (points["setup"] == setup).any():
            continue
        pred = predict_on_setup(keys[model], setup, points, int(first["micro_batch"]), int(first["gas"]),
                                evidence=evidence, weights=(weights or {}).get(model, "float32"))
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
    from ..analysis import profiles
    from .decoder_work import calibration_points
    from .work_evidence import decoder_profiles, runs_evidence

    frame, keys, shapes = decoder_profiles(root)
    if frame.empty:
        return pd.DataFrame(columns=BY_KIND_COLUMNS)
    evidence = runs_evidence(None if root is None else str(root))
    return by_kind(frame, keys, calibration_points(profiles(root), evidence), evidence,
                   {m: s["weights"] for m, s in shapes.items()})


SWITCH_CHECK_COLUMNS = ["decoder", "setup", "gpu", "methods_label", "micro_batch", "predicted_step_s",
                        "measured_step_s", "error", "free_lunch_error", "effect_error"]


def switch_check(root: str | None = None) -> pd.DataFrame:
    """The switches beyond the paper as the work model charges them (``switch_work``, fitted to the catalog
    decoders' rows only) on the decoders outside the catalog measured with them: each such row's step predicted
    at the micro-batch that ran, beside the measured step (``error``); ``free_lunch_error``, the same decoder's
    measured free-lunch step's error on the setup, and ``effect_error``, the error of the switch's predicted
    speed-up over free-lunch (so that the work model's error for the decoder is not taken for the switch's)."""
    from ..analysis.beyond import decoder_rows
    from ..catalog.methods import FREE_LUNCH, Methods
    from ..results import latest_rows, status_of
    from .decoder_work import predict_decoder
    from .switch_fit import fitted_model

    points, evidence = fitted_model(None if root is None else str(root))
    measured = [r for r in latest_rows(decoder_rows(root)) if status_of(r) == "measured" and r["mode"] == "step"
                and r["timing"] == "synced" and r["config"]["n_gpus"] == 1]
    rows = []
    for r in measured:
        m = Methods.from_dict(r["config"]["methods"])
        key = r["config"]["model"]
        free = [f for f in measured if f["config"]["model"] == key and f["setup"] == r["setup"]
                and Methods.from_dict(f["config"]["methods"]) == FREE_LUNCH]
        if not m.beyond_paper or not free:
            continue
        p = predict_decoder(key, r["config"]["gpu"], 1, points, m, evidence=evidence,
                            micro_batch=int(r["micro_batch"]))
        if p is None:
            continue
        f = free[-1]
        name = key.split("@")[0]
        pf = predict_decoder(key, f["config"]["gpu"], 1, points, FREE_LUNCH, evidence=evidence,
                             micro_batch=int(f["micro_batch"]))
        error = p.step_time_s / float(r["step_time_s"]) - 1
        free_error = pf.step_time_s / float(f["step_time_s"]) - 1
        rows.append({"decoder": name, "setup": r["setup"], "gpu": r["config"]["gpu"],
                     "methods_label": m.label(), "micro_batch": int(r["micro_batch"]),
                     "predicted_step_s": p.step_time_s, "measured_step_s": float(r["step_time_s"]),
                     "error": error, "free_lunch_error": free_error,
                     "effect_error": (1 + error) / (1 + free_error) - 1})
    return pd.DataFrame(rows, columns=SWITCH_CHECK_COLUMNS)
