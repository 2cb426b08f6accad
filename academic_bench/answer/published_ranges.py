"""A predicted answer on a GPU the study never measured, widened by what the published check observed at the same
distance from the measured GPU, and labelled so.

The published check (``published_check``) sets the study's predictions beside training throughput others
published; ``published_family.by_distance`` sums its ratios (published / predicted throughput, i.e. the predicted
time over the published one) up by how far each prediction was carried: the same architecture, one generation,
two or more, another vendor. An answer carried as far is taken to err as those points did: the true days lie
between ``days / high`` and ``days / low`` of the observed ratios, and the answer's range is widened to hold that
span (``widen``). The central value stays the transfer model's: no prediction is tuned on the points that check it.

Why here, at the top of ``answer``: the published check reads answers (a published decoder is predicted by the
work model or by size from the kept grid), so the models below it cannot read the check without a cycle. The check
is computed once after the answers are written (``write_shipped``: ``store.write_shipped``, then the check on those
answers, kept in the same answers.json under ``published_by_distance``), and ``answer()`` and the book's grid read
it from there and widen what they show. Where the kept file has no such table (answers of another folder of runs),
it is computed once and kept in the user's cache, keyed as the answers are.
"""
from __future__ import annotations

import json
import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from ..predict.ranges import held
from .types import Answer


def distance_records(root: str | os.PathLike | None = None) -> tuple[dict, ...]:
    """``published_family.by_distance`` of the published check on the answers of ``root``, as records: kept in
    answers.json where ``write_shipped`` put it, else computed once and kept in the cache folder."""
    from ..analysis.frame import runs_root
    from .store import content_key, published_distance

    kept = published_distance(root)
    if kept is not None:
        return kept
    runs = runs_root(root).resolve()
    return _cached(str(runs), content_key(runs))


@lru_cache(maxsize=4)
def _cached(runs: str, key: str) -> tuple[dict, ...]:
    from ..catalog.env import cache_dir

    path = cache_dir() / f"published-distance-{key}.json"
    try:
        return tuple(json.loads(path.read_text()))
    except (OSError, ValueError):
        pass
    records = compute_records(runs)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(list(records)))
    except OSError:  # a read-only home: computed each time
        pass
    return records


def compute_records(root: str | os.PathLike | None = None) -> tuple[dict, ...]:
    """The published check per distance (``published_family.by_distance``) as plain records."""
    from .published_check import published_check
    from ..predict.published_family import by_distance

    frame = by_distance(published_check(None if root is None else str(root)))
    return tuple({k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
                 for r in frame.to_dict("records"))


def write_shipped(root: str | os.PathLike | None = None) -> Path:
    """Compute the answers of ``root`` and keep them (``store.write_shipped``), then the published check on those
    answers per distance, kept in the same file (``store.keep_published_distance``)."""
    from . import store

    path = store.write_shipped(root)
    store.keep_published_distance(root, compute_records(root))
    return path


def _source(a: Answer, root: str | os.PathLike | None) -> tuple[str, int] | None:
    """(GPU, count) of the measured setup a predicted answer was carried from, read off its label ('h100x1'), as
    a run folder's name states them (``catalog.hardware.setup_gpus``): no run is read, so that an answer kept for a
    catalog model is widened without loading the runs."""
    import re

    from ..catalog.hardware import setup_gpus

    gpus = setup_gpus(a.source_setup) if a.source_setup else ()
    count = re.search(r"x(\d+)(?=$|[-_.])", a.source_setup or "")
    return (gpus[0], int(count.group(1))) if gpus and count else None


def widen(a: Answer, records: tuple[dict, ...] | list[dict], root: str | os.PathLike | None = None) -> Answer:
    """``a`` with its range widened by the published check at its distance (module docstring) and labelled, where
    it is predicted on a GPU the study never measured; any other answer as it is."""
    from ..catalog.hardware import catalog as study_gpus, get_gpu
    from ..predict.published_family import distance

    if a.kind != "predicted" or a.days is None:
        return a
    measured_gpus = set(study_gpus())  # the GPUs the study measured: their own held-out checks hold there
    source = _source(a, root)
    if a.gpu in measured_gpus or source is None:
        return a
    d = distance(source[0], a.gpu)
    name = get_gpu(source[0]).name.replace("NVIDIA ", "")
    row = next((r for r in records if r["distance"] == d), None)
    head = f"predicted from {source[1]} x {name} measurements; never measured on this GPU"
    if row is None or not row.get("points"):
        check = f"no published point checks a prediction carried this far ({d}): its range is the study's own checks'"
        return replace(a, rests_on=f"{head}; {check}; {a.rests_on}")
    check = (f"checked against {row['points']} published points carried as far ({d}: {row['generations']}) "
             f"(median ratio {row['median']:.2f}, {row['low']:.2f} to {row['high']:.2f}; published over predicted "
             "throughput)")
    low = min(a.days_low if a.days_low is not None else a.days, a.days / max(float(row["high"]), 1.0))
    high = max(a.days_high if a.days_high is not None else a.days, a.days / min(float(row["low"]), 1.0))
    words = (f"{a.range_basis}; widened to hold the published points' ratios at this distance ({d}: days / "
             f"{row['high']:.2f} to days / {row['low']:.2f})")
    low, words = held(low, a.days, a.mfu, words)  # no end of a range claims an MFU no real run passes
    return replace(a, rests_on=f"{head}; {check}; {a.rests_on}", days_low=low, days_high=high, range_basis=words)


def every_answer(root: str | os.PathLike | None = None) -> tuple[Answer, ...]:
    """Every kept answer, the study's GPUs' (``store.grid``) then the catalog's other GPUs' (``store.other_gpus``),
    each as ``answer()`` gives it (a prediction on a GPU never measured widened, ``widen``): what the book's grid
    and explorers show."""
    from .store import grid, other_gpus

    records = distance_records(root)
    return tuple(widen(a, records, root) if a.kind == "predicted" else a for a in (*grid(root), *other_gpus(root)))
