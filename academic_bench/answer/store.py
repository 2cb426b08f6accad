"""The study's answers for every catalog model, GPU and count, computed once from the runs and kept.

Computing them reads every run, profile and held-out check (tens of seconds); a question asked twenty times while
planning must not wait for that. ``grid`` keeps the answers in a JSON file keyed by the content of what they are
computed from (the runs' results, skipped configurations and profiles, the decoders' evidence, the switches' loss
parity, the package's data files, the catalog models' kept facts) and ``GRID_VERSION`` (raised whenever the way an
answer is computed changes):

- the shipped runs' answers are kept in ``notebooks/runs/answers.json``, which ``make book`` writes
  (``write_shipped``) and a test checks is current;
- answers for another folder of runs (``root``, ``$ACADEMIC_BENCH_RUNS``) are kept in the user's cache folder
  (``$XDG_CACHE_HOME/academic-bench``, else ``~/.cache/academic-bench``), one file per content key.

A file whose key differs from the runs' is never read: the answers are computed again.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

from ..catalog.json_cache import cache_file, read_json, write_json
from ..estimate.facts import shipped_digest
from .types import Answer

GRID_VERSION = 9  # 2: the work model's calibration and the host's optimizer rates kept beside the answers;
# 3: each answer carries what the switches beyond the paper buy beside it; 4: a predicted answer's range is the
# error observed for predictions of its kind, the held-out predictions' errors kept with the checks; 5: the work
# model's evidence (the GEMM sweep's rate by size, attention's per-token offset, the measured optima) kept with
# its calibration; 6: what the switches beyond the paper change in the work model's step, kept with its evidence;
# 7: the answers on every GPU of data/gpus.csv outside the study's, and the cells refused there with the reason;
# 8: a predicted answer weighs every memory-saving combination valid on its count (``compute.weighed_prediction``);
# 9: a refusal for memory keeps the smallest setup that would fit (``Answer.fits_from``)
SHIPPED_NAME = "answers.json"
# The published check's vision points read the 16-bit rows (``predict.published_vision``), and the published ranges
# widen the answers by what that check observed.
RUN_FILES = ("*/results.jsonl", "*/results.skipped.jsonl", "*/profiles.jsonl", "*/evidence/decoders/**/*.json*",
             "*/evidence/parity/*.json", "*/evidence/gemm/*.jsonl", "*/evidence/vision16/*.jsonl")


def _runs_root(root: str | os.PathLike | None) -> Path:
    from ..analysis.frame import runs_root

    return runs_root(root).resolve()


def content_key(root: str | os.PathLike | None = None) -> str:
    """A digest of everything the answers are computed from, and ``GRID_VERSION``."""
    runs = _runs_root(root)
    data = Path(__file__).resolve().parent.parent / "data"
    h = hashlib.sha256(f"grid {GRID_VERSION}".encode())
    files = sorted({p for pattern in RUN_FILES for p in runs.glob(pattern) if p.is_file()})
    for path in [*files, *sorted(data.glob("*.csv"))]:
        h.update(str(path.relative_to(runs if path.is_relative_to(runs) else data.parent)).encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    h.update(shipped_digest().encode())  # the models' kept facts (the memory model's inputs), not their key
    return h.hexdigest()[:20]


# The study's grid, the held-out checks' errors in words, ``calibration``, the answers on the catalog's other GPUs
# and the cells refused there (``compute.other_gpu_answers``).
Kept = tuple[tuple[Answer, ...], dict, dict, tuple[Answer, ...], tuple[dict, ...]]


def _read(path: Path, key: str) -> Kept | None:
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("key") != key:
        return None
    return (tuple(Answer.from_dict(a) for a in doc["answers"]), dict(doc["checks"]), dict(doc["work_model"]),
            tuple(Answer.from_dict(a) for a in doc["other_gpus"]), tuple(doc["refused"]))


def calibration(root: str | None = None) -> dict:
    """What the work model (``decoder_work``) takes from the runs, as kept: its evidence besides the profiles
    (``work_evidence.runs_evidence``: the GEMM sweep's rate by size, attention's per-token offset, the measured
    optima; and what each switch beyond the paper changes, ``switch_fit``), its calibration points counted with it
    (seconds per unit of each kind of work, per profiled catalog decoder and setup) and the host's optimizer rates
    of the offloaded runs (``method_costs.measured_host_rates``; None where no counted offloaded run gives them)."""
    from ..predict.method_costs import measured_host_rates
    from ..predict.switch_fit import fitted_model
    from ..predict.work_evidence import evidence_record

    points, evidence = fitted_model(root)
    try:
        rates = measured_host_rates(root)
    except ValueError:
        rates = None
    # Plain numbers (numpy's own scalars have no JSON form), every digit kept.
    records = [{k: v.item() if hasattr(v, "item") else v for k, v in r.items()} for r in points.to_dict("records")]
    return {"points": records, "columns": list(points.columns), "host_rates": rates,
            "evidence": evidence_record(evidence)}


def _compute(runs: Path) -> Kept:
    from .compute import compute_grid, held_out_checks, other_gpu_answers, work_model_checks
    from ..predict.ranges import observed_errors, observed_records

    c = held_out_checks(str(runs))
    errors = observed_errors(str(runs))
    checks = {"other_gpu": c.other_gpu, "other_count": c.other_count, "work_model": work_model_checks(runs),
              "observed": observed_records(errors)}
    others, refused = other_gpu_answers(root=str(runs), checks=c, errors=errors)
    return (tuple(compute_grid(root=str(runs), checks=c, errors=errors)), checks, calibration(str(runs)),
            tuple(others), tuple(refused))


def _write(path: Path, key: str, kept: Kept) -> None:
    from ..catalog.lock import computed_with

    answers, checks, work, others, refused = kept
    doc = {"key": key, "grid_version": GRID_VERSION, "computed_with": computed_with(),
           "note": "The study's answer per catalog model, GPU and count (academic_bench.answer); written by "
                   "`make book` from the runs beside it. Do not edit: a changed run changes the key.",
           "checks": checks, "work_model": work, "answers": [a.to_dict() for a in answers],
           "other_gpus": [a.to_dict() for a in others], "refused": list(refused)}
    if not write_json(path, doc, indent=1, allow_nan=False):
        raise OSError(f"cannot write {path}")


@lru_cache(maxsize=4)
def _grid(runs: Path, key: str) -> Kept:
    found = _read(runs / SHIPPED_NAME, key)
    if found is None:
        cached = cache_file(f"answers-{key}.json")
        found = _read(cached, key)
        if found is None:
            found = _compute(runs)
            try:
                _write(cached, key, found)
            except OSError:  # a read-only home: answer all the same, computed each time
                pass
    return found


def _kept(root: str | os.PathLike | None) -> Kept:
    runs = _runs_root(root)
    return _grid(runs, content_key(runs))


def grid(root: str | os.PathLike | None = None) -> tuple[Answer, ...]:
    """Every catalog model on every catalog GPU and count (``compute.GPU_COUNTS``): one ``Answer`` each."""
    return _kept(root)[0]


def other_gpus(root: str | os.PathLike | None = None) -> tuple[Answer, ...]:
    """Every catalog model on every GPU of data/gpus.csv outside the study's (``catalog.hardware.every_gpu``), on
    each of ``compute.GPU_COUNTS``: one ``Answer`` each, kept beside ``grid`` so that a page asking about them
    waits for no prediction; the cells refused there are in ``refused``."""
    return _kept(root)[3]


def refused(root: str | os.PathLike | None = None) -> tuple[dict, ...]:
    """The cells of the catalog's other GPUs that ``catalog_answer`` refuses, each {model, gpu, n_gpus, reason}
    (a recipe the GPU cannot run, e.g. bf16 before Ampere)."""
    return _kept(root)[4]


def checks(root: str | os.PathLike | None = None) -> dict:
    """The error the study's held-out checks observed: in words, ``other_gpu``, ``other_count``, ``work_model``;
    and every held-out prediction's error, ``observed`` (``ranges.observed_records``), which predicted answers'
    ranges stand for."""
    return _kept(root)[1]


def work_model(root: str | os.PathLike | None = None):
    """The work model's kept calibration: (its points as a frame, the host's optimizer rates or None, the
    ``work_evidence.Evidence`` the points were counted with)."""
    import pandas as pd

    from ..predict.work_evidence import evidence_of

    work = _kept(root)[2]
    return (pd.DataFrame(work["points"], columns=work["columns"]), work["host_rates"],
            evidence_of(work.get("evidence")))


def write_shipped(root: str | os.PathLike | None = None) -> Path:
    """Compute the answers of the runs in ``root`` (default the shipped runs) and keep them beside the runs."""
    runs = _runs_root(root)
    path = runs / SHIPPED_NAME
    _write(path, content_key(runs), _compute(runs))
    _grid.cache_clear()
    return path


def published_distance(root: str | os.PathLike | None = None) -> tuple[dict, ...] | None:
    """The published check per distance kept beside the shipped answers (``published_ranges.write_shipped``), or
    None where the shipped file is not current or holds none."""
    runs = _runs_root(root)
    doc = read_json(runs / SHIPPED_NAME)
    if not isinstance(doc, dict) or doc.get("key") != content_key(runs) or "published_by_distance" not in doc:
        return None
    return tuple(doc["published_by_distance"])


def keep_published_distance(root: str | os.PathLike | None, records) -> None:
    """Keep the published check per distance (records of ``published_family.by_distance``) in the shipped answers'
    file, which must be current (computed by this module; the check itself reads the answers, so it is computed
    after them, above this module: ``published_ranges``)."""
    runs = _runs_root(root)
    path = runs / SHIPPED_NAME
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("key") != content_key(runs):
        raise ValueError(f"{path} is not current: write it first (store.write_shipped)")
    doc["published_by_distance"] = list(records)
    if not write_json(path, doc, indent=1, allow_nan=False):
        raise OSError(f"cannot write {path}")


def shipped_is_current(root: str | os.PathLike | None = None) -> bool:
    runs = _runs_root(root)
    return _read(runs / SHIPPED_NAME, content_key(runs)) is not None


def observed(root: str | os.PathLike | None = None):
    """The held-out predictions' errors that predicted answers' ranges stand for (``ranges.observed_errors``), as
    kept beside the answers, as a frame."""
    from ..predict.ranges import from_records

    return from_records(checks(root).get("observed", []))
