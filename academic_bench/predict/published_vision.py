"""A published vision point (timm's training benchmark, fp16 autocast) predicted from the study's 16-bit rows of
the same architecture.

The study answers ConvNeXt-XL and ViT-L/16 in their recipe's fp32 (TF32), and the transfer model carries a step
between GPUs, not between precisions. The same models measured in bf16 or fp16 (``models.at_precision``: a key of
their own, ``vit-large@bf16``; ``bench --precision bf16``, its rows kept in ``<setup>/evidence/vision16/``) carry
to a published GPU as every other row does (``transfer.predict``, at the published micro-batch), and their images
per second per GPU are the prediction. An fp16 row carries to any GPU; a bf16 row to a GPU whose bf16 tensor rate is
its fp16 rate (data/gpus.csv: Ampere and later), on both GPUs, so that the matrix products it timed run at the rate
the published fp16 products run at. The basis says which row carried.

Only the catalog's own architectures are predicted (``SAME_ARCHITECTURE``): a published model of another width
or depth would rest on the assumption that it reaches the catalog model's MFU, which no row of the study checks.
"""
from __future__ import annotations

import os

import pandas as pd

from ..catalog.hardware import get_gpu
from ..catalog.models import SIXTEEN_BIT, at_precision, get_model
from .work_validation import UNALIGNED_KERNEL

VISION_RESULTS = "evidence/vision16/results.jsonl"  # the 16-bit rows of the vision models, per setup
VISION_PROFILES = "evidence/vision16/profiles.jsonl"  # and their kernel profiles
# timm's names of the catalog's architectures (the same blocks, widths, depth and patch: timm's vit.py, deit.py and
# convnext.py), but for the head: ImageNet-1k's 1,000 classes against the catalog's 21,841 and 21,843, a part in a
# thousand of a step's model FLOPs (tests/test_published_vision.py counts both), so the catalog model's images per
# second stand for the published model's. DeiT III adds per-channel scales (layer scale), no matrix product.
SAME_ARCHITECTURE = {"vit_large_patch16_224": "vit-large", "deit3_large_patch16_224": "vit-large",
                     "convnext_xlarge_in22ft1k": "convnext-xlarge"}
# The study's methods nearest the published runs, in order: timm's benchmark at PyTorch 1.10 to 1.12 ran eagerly (no
# torch.compile before PyTorch 2.0, timm's attention then its own matrix products), which is naive's eager step;
# free-lunch's compiled step where no naive row was measured.
METHODS = ("naive", "free-lunch")


def sixteen_bit_frame(root: str | os.PathLike | None = None, every: bool = False) -> pd.DataFrame:
    """Every setup's 16-bit vision rows (``VISION_RESULTS``) as the runs frame reads rows (``analysis.frame_from_rows``,
    each measured row's figures re-derived), with ``validation``: whether the row's method class was validated on its
    setup within the study's tolerance by the rows of these files (``analysis.validation_state``, by the latest
    validation). ``every``: each row the files keep, also those a later row of the same configuration replaced (a
    validation fed fp32 images before the one fed uint8), so that every validation can be counted."""
    from ..analysis import frame_from_rows, runs_root
    from ..analysis.counted import validation_state
    from ..results import ResultStore, rows_to_read

    rows = [r for path in sorted(runs_root(root).glob(f"*/{VISION_RESULTS}")) for r in ResultStore(path).rows()]
    df = frame_from_rows(rows if every else rows_to_read(rows), checked=True)
    return df.assign(validation=validation_state(df))


def sixteen_bit_validations(df: pd.DataFrame | None = None, missed: bool = False,
                            root: str | os.PathLike | None = None, every: bool = False) -> pd.DataFrame:
    """The validations among the 16-bit vision rows ``df`` (``sixteen_bit_frame(root, every)`` by default): the rows that
    timed sustained steps beside the extrapolated one (``validate_rel_error``); with ``missed``, only those whose
    method class missed the validation tolerance on its setup (``validation``). The one selection of them: why a
    vision point has no source (``sixteen_bit_source``) and the book's count of validations both read it."""
    df = sixteen_bit_frame(root, every) if df is None else df
    if df.empty:
        return df
    done = df[df["validate_rel_error"].notna()]
    return done[done["validation"] == "missed"] if missed else done


def validations_by_feed(df: pd.DataFrame | None = None, root: str | os.PathLike | None = None) -> pd.DataFrame:
    """The 16-bit vision validations (``sixteen_bit_validations`` of ``every`` row by default) grouped by how their sustained run fed the images
    (``validate_images``: fp32 before the engine fed uint8), each group's own errors against the tolerance, whatever
    its method class's state: ``images``, ``validations``, ``within`` (how many held the tolerance), ``least`` and
    ``most`` (the smallest and largest absolute error). fp32 first."""
    from ..results.spread import within_tolerance
    from ..measure.images import FP32_IMAGES

    v = sixteen_bit_validations(df, root=root, every=True)
    cols = ["images", "validations", "within", "least", "most"]
    if v.empty:
        return pd.DataFrame(columns=cols)
    err = v["validate_rel_error"].abs()
    out = [{"images": fed, "validations": len(e), "within": int(within_tolerance(e).sum()),
            "least": e.min(), "most": e.max()}
           for fed, e in err.groupby(v["validate_images"].fillna(FP32_IMAGES))]
    return pd.DataFrame(out, columns=cols).sort_values("images", key=lambda s: s != FP32_IMAGES, kind="stable")


def _same_rate(gpu: str) -> bool:
    """The GPU's bf16 tensor rate is its fp16 rate (data/gpus.csv's dense peaks)."""
    peaks = get_gpu(gpu).peak_tflops
    return bool(peaks.get("bf16")) and peaks.get("bf16") == peaks.get("fp16")


def sixteen_bit_source(model: str, gpu: str, root: str | os.PathLike | None = None) -> pd.Series | str:
    """The validated one-GPU 16-bit row of catalog ``model`` that carries to ``gpu`` (a bf16 row only between GPUs
    whose bf16 and fp16 rates agree), by ``METHODS``' order, fp16 before bf16 (the published precision), then the
    setup whose GPU is nearest the target (same GPU, same architecture, nearest memory); or why there is none."""
    keys = {at_precision(model, p): p for p in SIXTEEN_BIT}
    df = sixteen_bit_frame(root)
    df = df[df["model"].isin(keys)] if not df.empty else df
    if df.empty:
        return (f"no 16-bit row of {model} ({', '.join(keys)}) in `{_where(root, '<setup>')}`: `academic-bench bench "
                f"--model {model} --precision bf16` measures one")
    ok = df[(df["outcome"] == "ok") & (df["timing"] == "synced") & df["mode"].isin(["step", "validate"])
            & df["days"].notna() & ~df["tiny"].astype(bool) & (df["n_gpus"] == 1) & df["methods_label"].isin(METHODS)
            & (df["validation"] == "validated")]
    carries = [keys[m] == "fp16" or (_same_rate(g) and _same_rate(gpu)) for m, g in zip(ok["model"], ok["gpu"])]
    ok = ok[pd.Series(carries, index=ok.index, dtype=bool)]
    if ok.empty:
        return (f"no validated one-GPU {' or '.join(METHODS)} row of {model} in 16 bits that carries to {gpu} "
                f"(a bf16 row needs a GPU whose bf16 and fp16 rates agree) in "
                + " or ".join(f"`{_where(root, s)}`" for s in sorted(set(df["setup"]))) + _missed(df))
    target = get_gpu(gpu)
    return min((r for _, r in ok.iterrows()),
               key=lambda r: (METHODS.index(r["methods_label"]), keys[r["model"]] != "fp16", r["gpu"] != target.key,
                              get_gpu(r["gpu"]).architecture != target.architecture,
                              abs(get_gpu(r["gpu"]).memory_gb - target.memory_gb), r["days"], str(r["config_id"])))


def _where(root: str | os.PathLike | None, setup: str) -> str:
    """The file of ``setup``'s 16-bit vision rows, from the repository root where the runs lie under it."""
    from ..analysis import runs_root
    from ..catalog.env import REPO_ROOT

    path = runs_root(root) / setup / VISION_RESULTS
    try:
        return str(path.resolve().relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return str(path)


def _missed(df: pd.DataFrame) -> str:
    """What the rows whose validation missed say (their sustained steps against their timed ones), or ""."""
    from ..results.spread import VALIDATION_TOLERANCE

    missed = sixteen_bit_validations(df, missed=True)
    if missed.empty:
        return ""
    signed = missed["validate_rel_error"]
    errors = signed.abs()
    # rel_error is (timed - sustained) / sustained: below 0 the timed step was the shorter
    side = "shorter than" if (signed < 0).all() else "longer than" if (signed > 0).all() else "off"
    by = f"{errors.min():.1%}" if len(missed) == 1 else f"{errors.min():.1%} to {errors.max():.1%}"
    each, used = ("each ", "none is") if len(missed) > 1 else ("", "it is not")
    return (f": {len(missed)} measured, {each}outside the {VALIDATION_TOLERANCE:.0%} validation tolerance (the timed "
            f"step {by} {side} its sustained steps' median), so {used} used")


def vision_profiles(root: str | os.PathLike | None = None) -> pd.DataFrame:
    """The setups' profiles (``analysis.profiles``) and beside them the 16-bit vision rows' own
    (``VISION_PROFILES``, the latest of each configuration and micro-batch): without its own, a 16-bit row's step
    would be split as the median of its setup's profiles, most of them decoders', whose matrix products take a
    larger share than an eager 16-bit vision step's."""
    from ..analysis import latest_profiles, profile_frame, profiles, runs_root
    from ..results import read_lines

    own = [p for path in sorted(runs_root(root).glob(f"*/{VISION_PROFILES}")) for _, p in read_lines(path)]
    return pd.concat([profiles(None if root is None else str(root)), profile_frame(latest_profiles(own))],
                     ignore_index=True)


def vision_point(row: pd.Series, published: float, root: str | os.PathLike | None = None,
                 profiles: pd.DataFrame | None = None) -> dict:
    """The prediction of a published vision point (``row``: data/published_throughput.csv's, ``published`` its images
    per second per GPU) as ``published_check``'s columns (``predicted``, ``ratio``, ``kind``, ``by``,
    ``source_gpu``, the MFUs), or ``why_not``. ``profiles``: ``vision_profiles(root)``, read here where not given
    (``published_check`` reads them once for all its points)."""
    from .transfer import SPLIT_WORDS, predict, source_from_row

    family, name, gpu, n = str(row["family"]), str(row["model"]), str(row["gpu"]), int(row["n_gpus"])
    model = SAME_ARCHITECTURE.get(name)
    if model is None:
        same = [k for k, m in SAME_ARCHITECTURE.items() if get_model(m).family == family]
        display = ", ".join(dict.fromkeys(get_model(SAME_ARCHITECTURE[k]).display for k in same))
        return {"why_not": f"not predictable: {name} is another architecture than the study's {display} (timm's "
                           f"{', '.join(same)}); carried by model FLOPs it would be assumed to reach their MFU, "
                           "which no row checks"}
    if str(row["method"]) not in ("none", "ddp"):
        return {"why_not": f"{row['method']!r}: a vision point is predicted for one GPU or plain data parallelism"}
    src = sixteen_bit_source(model, gpu, root)
    if isinstance(src, str):
        return {"why_not": f"not predictable: the study answers {model} in {get_model(model).recipe.precision} "
                           f"(TF32), the paper's recipe, and the transfer model carries a step between GPUs, not to "
                           f"{row['precision']}; {src}"}
    where = None if root is None else str(root)
    source = source_from_row(src.to_dict(), vision_profiles(where) if profiles is None else profiles)
    p = predict(source, gpu, n, micro_batch=int(row["micro_batch"]), runs=where)
    if p.step_time_s is None:
        return {"kind": "none", "why_not": p.basis}
    predicted = get_model(model).recipe.global_batch / (n * p.step_time_s)
    precision = get_model(str(src["model"])).recipe.precision
    rates = ("" if precision == "fp16" else
             "; the published run's fp16 autocast taken at the bf16 row's rate: the two GPUs' bf16 and fp16 tensor "
             "rates agree (data/gpus.csv)")
    return {"predicted": predicted, "ratio": published / predicted, "kind": "predicted",
            "by": (f"transfer model from {src['setup']} ({src['model']}, {src['methods_label']}: its {precision} "
                   f"row {src['config_id']}, its step split by {SPLIT_WORDS[source.split_basis]}{rates})"),
            "source_gpu": str(src["gpu"]), "predicted_mfu": p.mfu, "published_mfu": p.mfu * published / predicted}


# Kernels that do a step's matrix products or convolutions below the tensor-core rate: cuDNN's depthwise kernels
# (a channel multiplier of one, "c1_k1") run on CUDA cores, and the unaligned products (``UNALIGNED_KERNEL``: eager
# attention over 197 tokens, no multiple of 8, picks "align1") load fewer elements at a time. The transfer model
# carries them, with every kernel of their kind, by the ratio of the GPUs' tensor-core matrix-product rates.
LOW_RATE = UNALIGNED_KERNEL.pattern + r"|_c1_k1"


def low_rate_kernels(gpu: str = "rtx3090", root: str | os.PathLike | None = None) -> pd.DataFrame:
    """For each vision model whose published points on ``gpu`` are predicted: the profile of the 16-bit row that
    carries them (``sixteen_bit_source``); its seconds per profiled step (of ``images``) in the kinds the transfer
    model carries by the matrix-product rate (``kernels.FLOP_KINDS``); those of its top kernels that match
    ``LOW_RATE``, and their share (a lower bound: a profile names only its kernels of at least
    ``measure.profile.TOP_MIN_SHARE`` of the step); and the ratios by which a part is carried to ``gpu``
    (``gpu_ratios.part_ratios``: ``flop_ratio`` the one they are carried by, ``cuda_ratio`` the CUDA cores' fp32
    peaks, ``memory_ratio`` the memory-bound kernels'). It explains a miss; nothing predicts from it."""
    import re

    from ..analysis import latest_profiles, runs_root
    from ..catalog.kernels import FLOP_KINDS
    from ..results import read_lines
    from .gpu_ratios import part_ratios

    own = latest_profiles([p for path in sorted(runs_root(root).glob(f"*/{VISION_PROFILES}"))
                           for _, p in read_lines(path)])
    by_id = {str(p["config_id"]): p for p in own}
    rows = []
    for model in dict.fromkeys(SAME_ARCHITECTURE.values()):
        src = sixteen_bit_source(model, gpu, root)
        profile = None if isinstance(src, str) else by_id.get(str(src["config_id"]))
        if profile is None:
            continue
        flop_s = sum(k["seconds"] for k in profile["kinds"] if k["kind"] in FLOP_KINDS)
        low_s = sum(t["seconds"] for t in profile["top"]
                    if t["kind"] in FLOP_KINDS and re.search(LOW_RATE, t["name"]))
        precision = get_model(str(src["model"])).recipe.precision
        ratios, _ = part_ratios(get_gpu(str(src["gpu"])), get_gpu(gpu), precision, False,
                                None if root is None else str(root))
        rows.append({"model": model, "config_id": str(src["config_id"]), "source_gpu": str(src["gpu"]),
                     "images": int(profile["micro_batch"]) * int(profile["gas"]),
                     "flop_s": flop_s, "low_rate_s": low_s, "share": low_s / flop_s if flop_s else 0.0,
                     "flop_ratio": ratios["flop"], "cuda_ratio": ratios["scan"], "memory_ratio": ratios["memory"]})
    return pd.DataFrame(rows)
