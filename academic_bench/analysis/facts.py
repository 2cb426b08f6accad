"""Facts about the catalog's models (steps, precision, FLOPs of the whole recipe, the paper's Figure 9) and the
display labels of models and GPUs that every table and chart uses."""
from __future__ import annotations

import hashlib
import math
import os
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..catalog.hardware import catalog as gpu_catalog
from ..catalog.json_cache import write_atomic


CACHE_ENV = "ACADEMIC_BENCH_CACHE"  # set by the book build: a folder where slow, derived tables are kept
_FACTS_INPUTS = ("catalog/models/*.py", "estimate/*.py", "answer/planner.py", "catalog/config.py", "data/paper_figure9_flops.csv")


def _facts_key() -> str:
    here = Path(__file__).resolve().parents[1]  # the package: its models, estimate and data
    h = hashlib.sha256()
    for pattern in _FACTS_INPUTS:
        for path in sorted(here.glob(pattern)):
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def _model_facts() -> pd.DataFrame:
    """Per catalog model: steps, precision, our-convention total FLOPs (or NaN) and the paper's Figure 9(a).

    Counting FLOPs builds every model on the meta device (seconds each); during a book build the table is
    kept in the build's cache folder, keyed by the code and data it depends on, so pages share one count.
    """
    folder = os.environ.get(CACHE_ENV)
    cached = Path(folder) / f"model-facts-{_facts_key()}.csv" if folder else None
    if cached is not None and cached.exists():
        return pd.read_csv(cached)
    df = _count_model_facts()
    if cached is not None:
        write_atomic(cached, df.to_csv(index=False))
    return df


def _count_model_facts() -> pd.DataFrame:
    from ..catalog import paper
    from ..catalog.models import CATALOG
    from ..estimate import model_flops_per_step

    fig9 = paper.load_flops().set_index("model")["training_flops"]
    rows = []
    for key, spec in CATALOG.items():
        per_step = float(model_flops_per_step(key))
        rows.append({"model": key, "display": spec.display, "family": spec.family, "steps": spec.recipe.steps,
                     "precision": spec.recipe.precision,
                     "flops_ours": per_step * spec.recipe.steps if per_step else math.nan,
                     "flops_fig9": float(fig9.get(key, math.nan))})
    return pd.DataFrame(rows)


def model_facts() -> pd.DataFrame:
    return _model_facts().copy()


# --- labels for tables ---------------------------------------------------------------------------------------

def gpu_label(key: str) -> str:
    """A short display name for a GPU key ('h100-80gb' -> 'H100 80GB'), the study's or one known to the
    transfer model only (data/gpus.csv)."""
    from ..catalog.hardware import UnknownGPUError, get_gpu

    try:
        g = get_gpu(str(key))
    except UnknownGPUError:
        return str(key)
    return g.name.replace("NVIDIA ", "").replace("GeForce ", "")


def setup_label(gpu: str, n_gpus: int) -> str:
    """'4 x H100 80GB SXM': how tables, charts and prose name a setup."""
    return f"{int(n_gpus)} x {gpu_label(gpu)}"


def model_label(key: str) -> str:
    facts = _model_facts().set_index("model")
    return str(facts["display"].get(key, key))


# --- one MFU basis, one rounding -----------------------------------------------------------------------------

MFU_DIGITS = 2  # every MFU the book, the run pages and the notebook print has two decimals


def dense16_peak(gpu: str) -> float:
    """The GPU's dense 16-bit (bf16, else fp16) tensor-core peak in FLOP/s: the study's one basis for an MFU it
    shows, whatever precision ran."""
    peaks = gpu_catalog()[gpu].peak_tflops
    return float(peaks.get("bf16") or peaks["fp16"]) * 1e12


def mfu_on_dense16(df: pd.DataFrame, mfu: str = "mfu", peak: str = "peak_flops", gpu: str = "gpu") -> pd.Series:
    """``df[mfu]`` (rated against ``df[peak]``, the peak of the precision that ran, as a row stores it) re-rated
    against the dense 16-bit peak, so that an fp32 run and a bf16 run of the same speed show the same MFU. The
    one function every shown MFU goes through; the plausibility check alone reads the stored one."""
    if df.empty:
        return pd.Series(dtype="float64", index=df.index)
    return df[mfu] * df[peak] / df[gpu].map(dense16_peak)


def shown_mfu(df: pd.DataFrame, **columns: str) -> pd.Series:
    """``mfu_on_dense16`` rounded as every page prints it (``MFU_DIGITS``)."""
    return mfu_on_dense16(df, **columns).round(MFU_DIGITS)
