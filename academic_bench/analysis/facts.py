"""Facts about the catalog's models (steps, precision, FLOPs of the whole recipe, the paper's Figure 9) and the
display labels of models and GPUs that every table and chart uses."""
from __future__ import annotations

import hashlib
import math
import os
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ..hardware import catalog as gpu_catalog


CACHE_ENV = "ACADEMIC_BENCH_CACHE"  # set by the book build: a folder where slow, derived tables are kept
_FACTS_INPUTS = ("models/*.py", "estimate/*.py", "answer/planner.py", "config.py", "data/paper_figure9_flops.csv")


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
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        df.to_csv(tmp, index=False)
        tmp.replace(cached)
    return df


def _count_model_facts() -> pd.DataFrame:
    from .. import paper
    from ..models import CATALOG
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
    """A short display name for a GPU key ('h100-80gb' -> 'H100 80GB')."""
    g = gpu_catalog().get(key)
    return g.name.replace("NVIDIA ", "").replace("GeForce ", "") if g else str(key)


def model_label(key: str) -> str:
    facts = _model_facts().set_index("model")
    return str(facts["display"].get(key, key))
