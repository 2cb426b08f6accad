"""The study's answers set beside training throughput that others measured and published (``catalog.published``).

Each published point is predicted with its own shape (its config in data/published_configs/), sequence length,
micro-batch, accumulation steps, GPU type and count and method, through the one answer for a decoder outside the
catalog (``decoder.decoder_answer``: the work model, the transfer model and ``method_costs``), at the published
micro-batch rather than the one the memory model would choose. Nothing is fitted to these points: the answer
knows them only by their shape and settings.

``ratio`` is the predicted time per token over the published one (published tokens per second per GPU over the
predicted): above 1 the study predicts too slow, below 1 too fast. Where the published figure leaves the optimizer
step out (``optimizer_excluded``: forward and backward alone), the predicted step leaves out the optimizer step the
work model charged in it. The target per GPU type with at least
``MIN_POINTS`` points: median within ``TARGET_MEDIAN``, every point within ``TARGET_WORST``.

A point is not predicted, and says why, where its GPU is not in data/gpus.csv, its shape has no config or one the
study refuses (``catalog.models.from_config.ConfigError``: GPT-OSS's eager-only attention), or its method has a
switch the study has no method for. A mixture of experts' expert parallelism (``ep``) is predicted as the sharding
it runs beside with the experts spread over the GPUs (``predict.expert_parallel``: held whole, never gathered nor
reduced, the tokens sent to them and back), which the study has as no method of its own.
"""
from __future__ import annotations

import math
import os
from dataclasses import replace
from functools import lru_cache

import pandas as pd

from ..catalog.methods import FREE_LUNCH, SHARDINGS, Methods

MIN_POINTS = 3
TARGET_MEDIAN = (0.95, 1.05)
TARGET_WORST = (0.8, 1.25)
POINT_COLUMNS = ["gpu", "n_gpus", "model", "seq_len", "micro_batch", "grad_accum", "method", "source", "url",
                 "published", "predicted", "ratio", "kind", "by", "predicted_mfu", "published_mfu", "why_not",
                 "family", "source_gpu", "mixture"]
GPU_COLUMNS = ["gpu", "points", "predicted", "median", "low", "high", "worst", "target"]


def method_parts(spec: str) -> list[str]:
    """The switches of a published ``method`` (``catalog.published``: joined by ``+``)."""
    return [p.strip() for p in str(spec).split("+") if p.strip()]


def methods_of(spec: str, n_gpus: int) -> tuple[Methods | None, str | None]:
    """The study's methods for a published ``method`` (``catalog.published``), on top of free-lunch (compiled,
    fused kernels, TF32: the study's class closest to a tuned training stack), or None and the switch the study
    has no method for."""
    m = FREE_LUNCH
    parts = method_parts(spec)
    for part in parts:
        if part in ("none", "ddp"):
            m = replace(m, sharding="none")
        elif part in SHARDINGS:
            m = replace(m, sharding=part)
        elif part == "ckpt":
            m = replace(m, checkpointing=True)
        elif part == "bf16w":
            m = replace(m, bf16_weights=True)
        elif part == "offload":
            m = replace(m, offload=True)
        elif part == "compile":
            continue  # free-lunch compiles already
        elif part == "ep":
            continue  # the experts spread over the GPUs the sharding spans: predict_point charges it
        else:
            return None, f"{part!r} is no method of the study"
    if n_gpus > 1 and m.sharding == "none" and "ddp" not in str(spec):
        return None, f"{n_gpus} GPUs without a data-parallel method named"
    if "ep" in parts and (m.sharding == "none" or m.offload):
        # Spread experts are charged beside a sharding on the GPUs alone (predict.expert_parallel).
        return None, "expert parallelism without a sharding of the other weights, or with offloading"
    return m, None


def point_setting(row: pd.Series) -> tuple | str:
    """A published point's GPU, the study's methods for it and its decoder's spec at the point's sequence and batch
    (``decoder_spec``), or why it cannot be predicted (a string)."""
    from ..catalog.hardware import UnknownGPUError, get_gpu
    from ..catalog.models.from_config import ConfigError, decoder_spec
    from ..catalog.published import config_path

    n, mbs, gas, seq = (int(row[k]) for k in ("n_gpus", "micro_batch", "grad_accum", "seq_len"))
    try:
        gpu = get_gpu(str(row["gpu"]))
    except UnknownGPUError:
        return f"GPU {row['gpu']!r} is not in data/gpus.csv"
    config = config_path(str(row["model"]))
    methods, why = methods_of(row["method"], n)
    if config is None or methods is None:
        return why or f"no config of {row['model']!r} in data/published_configs"
    per_gpu = mbs * gas
    try:
        spec = decoder_spec(config, seq_len=seq, tokens=per_gpu * n * seq, global_batch=per_gpu * n,
                            precision="bf16")
    except ConfigError as exc:  # a shape the study refuses (its reason names what it lacks) is not predicted
        return str(exc).split(": ", 1)[-1]
    return gpu, methods, spec


def predict_point(row: pd.Series, root: str | os.PathLike | None = None,
                  vision_profiles: pd.DataFrame | None = None) -> dict:
    """One published point beside the study's answer for it (``POINT_COLUMNS``): a decoder through the one
    answer for a decoder outside the catalog, another family from its catalog model (``published_family``).
    ``vision_profiles``: the profiles a vision point's step is split by (``published_vision.vision_profiles``),
    read where needed if not given."""
    from .decoder import decoder_answer
    from ..predict.published_family import predict_family_point

    out = {k: row[k] for k in ("gpu", "n_gpus", "model", "seq_len", "micro_batch", "grad_accum", "method", "source",
                               "url", "family")}
    out.update(published=float(row["tokens_per_s_per_gpu"]), predicted=math.nan, ratio=math.nan, kind="none",
               by="", predicted_mfu=math.nan, published_mfu=math.nan, why_not="", source_gpu="", mixture=False)
    if row["family"] != "decoder":
        return predict_family_point(row, out, root, vision_profiles)
    n, mbs, gas, seq = (int(row[k]) for k in ("n_gpus", "micro_batch", "grad_accum", "seq_len"))
    setting = point_setting(row)
    if isinstance(setting, str):
        return {**out, "why_not": setting}
    gpu, methods, spec = setting
    out["mixture"] = spec.spec.moe is not None  # a mixture of experts: its ratios are summed up apart too
    spread = "ep" in method_parts(row["method"])  # the experts spread over the GPUs (predict.expert_parallel)
    a = decoder_answer(spec.spec.key, gpu.key, n, root, facts=spec.facts, methods=methods, micro_batch=mbs,
                       expert_parallel=spread)
    if a.days is None:
        return {**out, "kind": a.kind, "why_not": a.rests_on}
    step_s = a.days * 86400 / spec.spec.recipe.steps
    if row.get("optimizer_excluded", False):  # the published figure timed forward and backward alone
        optimizer = _optimizer_s(a, methods, mbs, root, spread)
        if optimizer is None:
            return {**out, "kind": a.kind, "why_not": "its figure leaves the optimizer step out, and only the work "
                                                      "model's answer parts the step's optimizer out"}
        step_s -= optimizer
    predicted = mbs * gas * seq / step_s
    # The published point's own MFU, on the answer's basis: the answer's MFU scales with its tokens per second.
    return {**out, "predicted": predicted, "ratio": out["published"] / predicted, "kind": a.kind, "by": a.by or "",
            "predicted_mfu": a.mfu, "published_mfu": a.mfu * out["published"] / predicted,
            "source_gpu": _setup_gpu(a.source_setup, root)}


def _optimizer_s(a, methods: Methods, micro_batch: int, root: str | os.PathLike | None,
                 expert_parallel: bool = False) -> float | None:
    """The optimizer step's seconds inside the step of a work model answer ``a`` (``decoder_answer`` with
    ``methods`` at ``micro_batch``), or None for an answer of another kind."""
    from ..predict.decoder_work import predict_decoder
    from .store import work_model

    if a.by != "work model":
        return None
    points, host_rates, evidence = work_model(root)
    p = predict_decoder(a.model, a.gpu, a.n_gpus, points, methods, host_rates, micro_batch=micro_batch,
                        evidence=evidence, expert_parallel=expert_parallel)
    return None if p is None or p.optimizer_s is None else float(p.optimizer_s)


def _setup_gpu(setup: str | None, root: str | os.PathLike | None) -> str:
    """The GPU of a measured setup (its rows' ``gpu``), or '' where the answer names none."""
    from ..predict.transfer_validation import configurations

    c = configurations(None if root is None else str(root))
    g = c.loc[c["setup"] == setup, "gpu"] if setup and len(c) else c.iloc[0:0]
    return str(g.iloc[0]) if len(g) else ""


@lru_cache(maxsize=4)
def published_check(root: str | None = None) -> pd.DataFrame:
    """Every published point (``catalog.published.load_published_throughput``) beside the study's answer for it,
    one row each (``POINT_COLUMNS``)."""
    from transformers.initialization import no_init_weights

    from ..catalog.published import load_published_throughput
    from ..predict.published_vision import vision_profiles

    points = load_published_throughput()
    profiles = vision_profiles(root)  # read once: every vision point splits its step by them
    # Each point builds its decoder on the meta device; the weights' initial values are never read, so their
    # initialisation (most of a build's time) is skipped.
    with no_init_weights():
        rows = [predict_point(r, root, profiles) for _, r in points.iterrows()]
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def by_gpu(frame: pd.DataFrame) -> pd.DataFrame:
    """Per GPU type: points published and predicted, the median ratio, its lowest and highest, the worst (the
    farthest from 1, either way) and whether the target holds (``met``, ``missed``, or too few points)."""
    from ..predict.published_family import target_verdict

    rows = []
    for gpu, g in frame.groupby("gpu", sort=False):
        r = g["ratio"].dropna()
        worst = float(r.loc[(r.map(math.log)).abs().idxmax()]) if len(r) else math.nan
        target = target_verdict(r, TARGET_MEDIAN, TARGET_WORST, MIN_POINTS)
        rows.append({"gpu": gpu, "points": len(g), "predicted": len(r),
                     "median": float(r.median()) if len(r) else math.nan,
                     "low": float(r.min()) if len(r) else math.nan, "high": float(r.max()) if len(r) else math.nan,
                     "worst": worst, "target": target})
    return pd.DataFrame(rows, columns=GPU_COLUMNS)


MEMORY_COLUMNS = ["gpu", "n_gpus", "model", "micro_batch", "method", "published_gib", "predicted_gib", "ratio",
                  "gpu_gib", "fits", "source"]
# Settings of a source's runs that the memory model takes, by source. whyNLP/tinyllama's runs use xformers' fused
# SwiGLU (run_clm.sh sets TINY_FUSED_SWIGLU; tinyllama/llama_fused_swiglu.py calls xformers.ops.swiglu), which
# recomputes the MLP's gate-up product in backward instead of saving it; its DeepSpeed runs use its ds_config.json,
# whose "reduce_bucket_size": 2e8 replaces DeepSpeed's default bucket of 5e8 elements (both files at
# github.com/whyNLP/tinyllama, commits 26b6762 and 41c63b3). Its loss stays the study's count: transformers 4.35.2
# (its requirements.txt) makes the logits fp32 and a shifted copy of them before flash-attn's cross-entropy, which
# writes their gradient anew.
SOURCE_COEFFICIENTS = {"whyNLP/tinyllama README, Benchmark": {"recomputed_mlp_product": True},
                       "whyNLP/tinyllama README, Deepspeed Results": {"recomputed_mlp_product": True,
                                                                      "zero_bucket_elements": 2e8}}


def published_memory(points: pd.DataFrame | None = None) -> pd.DataFrame:
    """The memory model beside the GPU memory that published runs took (``memory_gib``; the points that state it):
    each predicted at its own shape, micro-batch, GPU count and method, with weights, gradients and AdamW states in
    bf16 where the run kept them so (its ``precision``: transformers' ``--torch_dtype bfloat16`` without a master
    copy, 8 bytes a parameter), else the study's recipe. ``predicted_gib`` is the model's ``total`` (what must fit:
    the tensors, the CUDA context, workspace and fragmentation); ``fits``: the model's verdict on the published
    micro-batch, which ran (``estimate.max_micro_batch``'s rule). A source's own settings the model reads
    (``SOURCE_COEFFICIENTS``) are taken; otherwise the activations are the study's compiled layer's, whatever stack
    the run used."""
    from transformers.initialization import no_init_weights

    from ..catalog.config import Config
    from ..catalog.published import load_published_throughput
    from ..estimate import COEFFICIENTS, predict_memory, usable_bytes
    from ..estimate.stats import GIB

    points = load_published_throughput() if points is None else points
    rows = []
    with no_init_weights():
        for _, r in points[points["memory_gib"].notna()].iterrows():
            setting = point_setting(r)
            if isinstance(setting, str):
                continue
            gpu, methods, spec = setting
            n, mbs = int(r["n_gpus"]), int(r["micro_batch"])
            pure_bf16 = "optimizer states" in str(r["precision"])
            cfg = Config(spec.spec.key, gpu.key, n, methods=replace(methods, bf16_weights=methods.bf16_weights
                                                                    and not pure_bf16))
            coeffs = replace(COEFFICIENTS, **SOURCE_COEFFICIENTS.get(str(r["source"]), {}))
            total = predict_memory(cfg, mbs, coeffs, weight_bytes=2 if pure_bf16 else 4).total
            rows.append({"gpu": r["gpu"], "n_gpus": n, "model": r["model"], "micro_batch": mbs,
                         "method": r["method"], "published_gib": float(r["memory_gib"]),
                         "predicted_gib": total / GIB, "ratio": total / GIB / float(r["memory_gib"]),
                         "gpu_gib": gpu.memory_gb, "fits": total <= usable_bytes(gpu.memory_gb),
                         "source": r["source"]})
    return pd.DataFrame(rows, columns=MEMORY_COLUMNS)
