"""Published points of the families the study predicts from a catalog model (``catalog.published.FAMILIES``), and
the published check per GPU generation and per model family.

A published encoder (BERT-large, at its own sequence length and head) is predicted from the catalog's
RoBERTa-large: the study's measured free-lunch step of RoBERTa-large without sharding or offloading (the method
the published runs used: one GPU, or plain data parallelism) is carried to the published GPU and count by the
transfer model (``transfer.predict``), and its sequences per second per GPU are scaled by the model FLOPs of a
RoBERTa-large sequence (``estimate.flops_per_sample``) over those of the published sequence (the same blocks,
its own head and length, ``estimate.stats.dense_flops_terms``): the published point is assumed to reach the MFU
that the carried step reaches. Nothing is fitted to a published point.

Vision points (timm's RTX 3090 benchmark in fp16 autocast) are not predicted: the study measured ViT-L/16 and
ConvNeXt-XL in fp32 (TF32), the paper's recipe, and the transfer model carries a step between GPUs, not between
precisions; the reason stands beside each point.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import pandas as pd

from ..catalog.hardware import UnknownGPUError, get_gpu
from .transfer import Prediction

# The catalog model each published family is predicted from.
FAMILY_MODEL = {"encoder": "roberta-large", "vit": "vit-large", "convnext": "convnext-xlarge"}
# Heads of the published encoders: the output width of the matrix product on top of the blocks (BERT's
# bert_config.json vocabulary for the masked-LM head; the start and end logits of SQuAD's head).
ENCODER_HEAD = {"BERT-large (pre-training)": 30522, "BERT-large (SQuAD fine-tuning)": 2}
# The GPU generations in order (data/gpus.csv's ``architecture``), for the distance between two GPUs.
GENERATIONS = ("volta", "turing", "ampere", "ada", "hopper", "blackwell")
# How many generations each architecture is from Volta: Ada (GeForce and workstation cards) and Hopper (data
# centre) are the one generation after Ampere, announced the same year, and Blackwell follows both. The order
# above alone would put Hopper two generations from Ampere.
GENERATION_STEP = {"volta": 0, "turing": 1, "ampere": 2, "ada": 3, "hopper": 3, "blackwell": 4}
TARGET_MEDIAN = (0.90, 1.10)
TARGET_WORST = (0.75, 1.33)
MIN_POINTS = 3
# Why a point misses, where the evidence is known (keyed by the point's source): set beside the point in the
# table, never used to change a prediction. Each reason rests on the source's own files (the csv's notes).
MISS_REASONS: dict[str, str] = {
    # NVIDIA-NeMo/Automodel, branch blog/transformers-v5-automodel: bench_v5.py and benchmark_results.md.
    "NeMo AutoModel blog benchmark, Transformers v5 (FSDP2, no expert parallelism)": (
        "published slower than predicted: transformers runs eagerly there (no torch.compile, where the study "
        "predicts free-lunch's compiled step) and its pretrained router sees random tokens with no balanced "
        "routing forced (an earlier run of the same script spread from 2,476 to 3,817 tokens/s per GPU over its "
        "timed steps), where the study charges each expert the tokens balanced routing sends it"),
    # bench_automodel.py: ep_size 8, dispatcher deepep, fake_balanced_gate True, TransformerEngine attention and linear.
    "NeMo AutoModel blog benchmark, NeMo AutoModel (expert parallelism 8, DeepEP, TransformerEngine)": (
        "published faster than predicted: expert parallelism keeps 16 of the 128 experts on each GPU and sends the "
        "tokens to them (DeepEP), where the study, which has no expert parallelism, predicts FSDP full-shard and "
        "charges the all-gather of every expert's weights in each step, about half the predicted step at one "
        "sequence per GPU; TransformerEngine's kernels besides"),
}


def generation(gpu: str) -> str:
    """The architecture of a published point's GPU (data/gpus.csv), or ``not in the catalog``."""
    try:
        return get_gpu(gpu).architecture
    except UnknownGPUError:
        return "not in the catalog"


def distance(source_gpu: str, target_gpu: str) -> str:
    """How far a prediction carries: ``same GPU``, ``same architecture``, ``one generation``, ``two or more
    generations`` or ``another vendor`` (an architecture outside NVIDIA's ``GENERATIONS``)."""
    if source_gpu == target_gpu:
        return "same GPU"
    a, b = generation(source_gpu), generation(target_gpu)
    if a not in GENERATIONS or b not in GENERATIONS:
        return "another vendor"
    if a == b:
        return "same architecture"
    gap = max(1, abs(GENERATION_STEP[a] - GENERATION_STEP[b]))  # Ada beside Hopper: another line, one step
    return "one generation" if gap == 1 else "two or more generations"


def encoder_flops_per_sequence(model: str, seq_len: int) -> float:
    """Model FLOPs (forward and backward) of one sequence of a published encoder: RoBERTa-large's blocks with the
    published head (``ENCODER_HEAD``) at ``seq_len``, by the study's dense convention."""
    from ..estimate import model_stats
    from ..estimate.stats import dense_flops_terms

    st = model_stats(FAMILY_MODEL["encoder"])
    layers = len(st.block_params)
    # As ``estimate.flops_per_sample`` counts the catalog's RoBERTa-large, with the published head for its own.
    matmul = st.params - st.input_embedding + ENCODER_HEAD[model] * st.hidden
    fixed, per_position = dense_flops_terms(matmul, layers, st.attention_width)
    return (fixed + per_position * seq_len) * seq_len


def source_row(model: str, gpu: str, root: str | None = None) -> pd.Series | None:
    """The measured free-lunch configuration of ``model`` without sharding, offloading or checkpointing (complete
    search), on the setup whose GPU is nearest the target (same GPU, same architecture, nearest memory)."""
    from .transfer_validation import configurations

    c = configurations(root)
    if c.empty:
        return None
    mine = c[(c["model"] == model) & (c["methods_label"] == "free-lunch") & (c["n_gpus"] == 1)]
    if mine.empty:
        return None
    target = get_gpu(gpu)
    return min((r for _, r in mine.iterrows()),
               key=lambda r: (r["gpu"] != target.key, get_gpu(r["gpu"]).architecture != target.architecture,
                              abs(get_gpu(r["gpu"]).memory_gb - target.memory_gb), str(r["setup"])))


def predict_family_point(row: pd.Series, out: dict, root: str | os.PathLike | None = None) -> dict:
    """A published point of a family other than the decoders beside the study's prediction (``out``: the
    point's ``POINT_COLUMNS`` so far, published in samples per second per GPU)."""
    from ..catalog.models import get_model

    family, gpu, n = str(row["family"]), str(row["gpu"]), int(row["n_gpus"])
    out = {**out, "published": float(row["samples_per_s_per_gpu"])}
    try:
        get_gpu(gpu)
    except UnknownGPUError:
        return {**out, "why_not": f"GPU {gpu!r} is not in data/gpus.csv"}
    model = FAMILY_MODEL[family]
    if family != "encoder":
        return {**out, "why_not": f"not predictable: the study measured {model} in "
                                  f"{get_model(model).recipe.precision} (TF32), the paper's recipe, and the transfer "
                                  f"model carries a step between GPUs, not to {row['precision']}"}
    if str(row["model"]) not in ENCODER_HEAD:
        return {**out, "why_not": f"no head of {row['model']!r} in ENCODER_HEAD"}
    if str(row["method"]) not in ("none", "ddp"):
        return {**out, "why_not": f"{row['method']!r}: an encoder is predicted for one GPU or plain data parallelism"}
    carried = carried_encoder(gpu, n, encoder_flops_per_sequence(str(row["model"]), int(row["seq_len"])), root)
    if isinstance(carried, str):
        return {**out, "kind": "none", "why_not": carried}
    predicted = carried.sequences_per_s_per_gpu
    return {**out, "predicted": predicted, "ratio": out["published"] / predicted, "kind": "predicted",
            "by": carried.by, "source_gpu": str(carried.source["gpu"]), "predicted_mfu": carried.carried.mfu,
            "published_mfu": carried.carried.mfu * out["published"] / predicted}


@dataclass(frozen=True)
class CarriedEncoder:
    """An encoder's training rate predicted from RoBERTa-large's measured step (``carried_encoder``)."""

    sequences_per_s_per_gpu: float
    carried: Prediction  # RoBERTa-large's step carried to the target GPU and count
    source: pd.Series  # the measured configuration it was carried from (``source_row``)
    by: str


def carried_encoder(gpu: str, n_gpus: int, flops_per_sequence: float,
                    root: str | os.PathLike | None = None) -> CarriedEncoder | str:
    """Sequences per second per GPU of an encoder whose sequence costs ``flops_per_sequence`` model FLOPs, on
    ``n_gpus`` x ``gpu``: RoBERTa-large's measured free-lunch step without sharding or offloading carried there by
    the transfer model, its sequences per second scaled by RoBERTa-large's FLOPs per sequence over the encoder's
    (the encoder is assumed to reach the MFU the carried step reaches); or why not, in words."""
    from ..catalog.models import get_model
    from ..estimate import flops_per_sample
    from .transfer_validation import prediction_of, measured

    model = FAMILY_MODEL["encoder"]
    where = None if root is None else str(root)
    src = source_row(model, gpu, where)
    if src is None:
        return f"no complete free-lunch measurement of {model}"
    p = prediction_of(src, measured(where)[1], gpu, n_gpus, where)[0]
    if p.step_time_s is None:
        return p.basis
    per_gpu = get_model(model).recipe.global_batch / (n_gpus * p.step_time_s)  # RoBERTa-large's sequences
    return CarriedEncoder(per_gpu * flops_per_sample(model) / flops_per_sequence, p, src,
                          f"transfer model from {src['setup']} ({model}, free-lunch), by model FLOPs per sequence")


TABLE_COLUMNS = ["by", "group", "points", "predicted", "median", "low", "high", "target", "outside"]


def _summary(by: str, group: str, g: pd.DataFrame) -> dict:
    r = g[g["ratio"].notna()]
    ratios = r["ratio"].astype(float)
    if len(r) < MIN_POINTS:
        target = f"fewer than {MIN_POINTS} points"
    else:
        held = (TARGET_MEDIAN[0] <= ratios.median() <= TARGET_MEDIAN[1]
                and TARGET_WORST[0] <= ratios.min() and ratios.max() <= TARGET_WORST[1])
        target = "met" if held else "missed"
    outside = r[(ratios < TARGET_WORST[0]) | (ratios > TARGET_WORST[1])]
    words = [f"{o.model} on {o.n_gpus} x {o.gpu} ({o.ratio:.2f}"
             + (f": {MISS_REASONS[o.source]}" if o.source in MISS_REASONS else "") + ")"
             for o in outside.itertuples()]
    return {"by": by, "group": group, "points": len(g), "predicted": len(r),
            "median": float(ratios.median()) if len(r) else math.nan,
            "low": float(ratios.min()) if len(r) else math.nan, "high": float(ratios.max()) if len(r) else math.nan,
            "target": target, "outside": "; ".join(words)}


def by_generation_and_family(frame: pd.DataFrame) -> pd.DataFrame:
    """The published check (``published_check.published_check``) per GPU generation and per model family
    (``TABLE_COLUMNS``): points, points predicted, the median predicted/published ratio (``ratio``: the predicted
    time per sample over the published one), its lowest and highest, whether the target holds (median within
    ``TARGET_MEDIAN``, every point within ``TARGET_WORST``, for groups of ``MIN_POINTS`` or more predicted points)
    and the points outside ``TARGET_WORST`` with their reason where known (``MISS_REASONS``)."""
    f = frame.assign(generation=frame["gpu"].map(generation))
    order = {g: i for i, g in enumerate(GENERATIONS)}
    rows = [_summary("generation", gen, g) for gen, g in
            sorted(f.groupby("generation"), key=lambda kv: order.get(kv[0], len(order)))]
    rows += [_summary("family", fam, g) for fam, g in f.groupby("family", sort=False)]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def by_distance(frame: pd.DataFrame) -> pd.DataFrame:
    """The predicted published points per distance from the GPU their prediction was carried from
    (``distance``): points, the median ratio and its lowest and highest, and the generations they are on."""
    r = frame[frame["ratio"].notna() & frame["source_gpu"].astype(str).ne("")]
    r = r.assign(distance=[distance(s, g) for s, g in zip(r["source_gpu"], r["gpu"])],
                 generation=r["gpu"].map(generation))
    out = r.groupby("distance").agg(points=("ratio", "size"), median=("ratio", "median"), low=("ratio", "min"),
                                    high=("ratio", "max"),
                                    generations=("generation", lambda s: ", ".join(sorted(set(s)))))
    return out.reset_index()
