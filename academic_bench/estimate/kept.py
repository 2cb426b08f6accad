"""``academic_bench/data/model_facts.json``: the meta-device facts of every catalog model at full size, computed
afresh by asking the estimates every question they answer about it (parameter counts, FLOPs per sample, the
activations of each attention path and precision), and kept (``facts``). ``make book`` rewrites the file when its
key has changed; tests/test_estimate.py checks that it is current and equals a fresh computation.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..catalog.models import CATALOG, variant_keys

from . import facts
from .memory import COEFFICIENTS, activation_profile
from .stats import flops_per_sample, model_stats


def fresh() -> dict:
    """Every fact the estimates ask of each catalog model (full size), in its recipe's precision and in those it
    may also be measured in (``models.at_precision``: the same build, other activation bytes), computed on the meta
    device now."""
    with facts.afresh() as computed:
        for key in [*CATALOG, *variant_keys()]:
            model_stats(key)
            flops_per_sample(key)
            for kernels in (False, True):  # the attention path and activations with and without kernels
                activation_profile(key, False, kernels, COEFFICIENTS)
    return dict(sorted(computed.items()))


def write_shipped(path: Path = facts.SHIPPED) -> Path:
    """Compute the catalog's facts and keep them in ``path`` under today's key."""
    from ..catalog.lock import computed_with

    doc = {"key": facts.content_key(), "facts_version": facts.FACTS_VERSION,
           "note": "Meta-device facts of every catalog model (academic_bench.estimate.facts); written by "
                   "`make book` (academic_bench.estimate.kept.write_shipped). Do not edit: a changed model file "
                   "changes the key.",
           "computed_with": computed_with(),
           "facts": fresh()}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    tmp.replace(path)
    facts.kept.cache_clear()
    return path


def shipped_is_current() -> bool:
    """The shipped file's key is today's (its facts are read)."""
    return bool(facts.kept())
