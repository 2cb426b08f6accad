"""The survey meets the answer: each GPU generation and memory size respondents report (the paper's Q7-Q15, from
its printed aggregates or a reader's own export) beside the days the study's one answer gives on those GPUs.

A generation choice names catalog GPUs (``analysis.survey.GENERATION_GPUS``); each is answered on 1, 2, 4 and 8
GPUs from the kept answers (``store.grid``, ``store.other_gpus``), or refused with the reason (``store.refused``:
a recipe the GPU cannot run). A respondent's largest memory of a tier says which of a generation's GPUs they may
have: a GPU counts for them where its memory is at most what they reported, the questionnaire's top choice
standing for that much or more.
"""
from __future__ import annotations

import os
from typing import Iterable

import pandas as pd

from .compute import GPU_COUNTS
from .setups import days_source

COLUMNS = ["tier", "generation", "gpu", "memory_gb", "respondents", "share", "with_memory", "source", "n_gpus",
           "typical", "kind", "label", "days", "days_low", "days_high", "capped",
           "fast_end_capped"]


def _lookup(model: str, root) -> tuple[dict, dict]:
    from .published_ranges import every_answer
    from .store import refused

    answers = {(a.gpu, a.n_gpus): a for a in every_answer(root) if a.model == model}  # as answer() gives them
    refusals = {(r["gpu"], int(r["n_gpus"])): r["reason"] for r in refused(root) if r["model"] == model}
    return answers, refusals


def _access(survey: pd.DataFrame | None) -> tuple[pd.DataFrame, dict[str, float | None], str]:
    """Per tier and generation: respondents, share and reported memories; the typical count per tier; the source
    in words. From the paper's printed aggregates when ``survey`` is None."""
    from ..analysis import survey as sv

    if survey is not None:
        return (sv.generation_access(survey), {t: sv.typical_count(survey, t) for t in sv.TIERS},
                f"your export ({len(survey)} respondents)")
    agg = sv.load_paper_aggregates()
    value = dict(zip(agg["key"], agg["value"]))
    rows = [{"tier": t, "generation": c, "respondents": None,
             "share": value.get(sv.PAPER_GENERATION_SHARES.get((t, c), ""), float("nan")), "memory_gb": None}
            for t, choices in sv.GENERATION_GPUS.items() for c in choices]
    typical = {t: (float(value[k]) if (k := sv.PAPER_TYPICAL_COUNT.get(t)) in value else None) for t in sv.TIERS}
    return pd.DataFrame(rows), typical, "the paper's printed aggregates (Sec. 2)"


def survey_days(model: str = "pythia-1b", survey: pd.DataFrame | None = None, counts: Iterable[int] = GPU_COUNTS,
                root: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per tier, generation choice, catalog GPU of it and GPU count (``COLUMNS``): who reports the
    generation (``respondents`` and ``share``, where the source gives them; the paper printed a share only for
    H100 access), ``with_memory`` (those whose reported largest memory holds the GPU's), ``typical`` (the count
    is the most a typical respondent can use for days, the paper's 4 data-centre GPUs or the export's median),
    and the answer: ``kind`` (measured, predicted, paper, none, refused, or "no catalog GPU" for a generation the
    catalog does not hold), ``label`` in words, ``days`` and their range, and ``capped`` and ``fast_end_capped``
    (``planner.answer_capped``): the answer's MFU is held at the cap, so its days are a lower bound and its range
    starts at them; or only its range's fast end is. ``survey``: a validated export
    (``analysis.survey.load_survey``); None for the paper's aggregates."""
    from ..analysis.survey import largest_memory_choice
    from ..catalog.hardware import get_gpu
    from ..analysis.survey import GENERATION_GPUS
    from ..cost.model import model_key
    from .planner import answer_capped

    m = model_key(model)
    access, typical, source = _access(survey)
    answers, refusals = _lookup(m, root)
    counts = tuple(int(n) for n in counts)
    rows = []
    for r in access.itertuples():
        top = largest_memory_choice(r.tier)
        tip = typical.get(r.tier)
        usual = max((n for n in counts if tip is not None and n <= tip), default=None)
        base = {"tier": r.tier, "generation": r.generation, "respondents": r.respondents, "share": r.share,
                "source": source, "capped": False, "fast_end_capped": False}
        gpus = GENERATION_GPUS[r.tier][r.generation]
        if not gpus:
            rows.append({**base, "kind": "no catalog GPU",
                         "label": "no GPU of this generation is in the catalog (data/gpus.csv)"})
            continue
        for g in gpus:
            mem = get_gpu(g).memory_gb
            held = (None if r.memory_gb is None else
                    sum(1 for x in r.memory_gb if x >= mem or (x >= top and mem > top)))
            for n in counts:
                row = {**base, "gpu": g, "memory_gb": mem, "with_memory": held, "n_gpus": n, "typical": n == usual}
                a = answers.get((g, n))
                if (g, n) in refusals:
                    row.update(kind="refused", label=refusals[(g, n)])
                elif a is None:
                    row.update(kind="none", label="not answered on this count")
                elif not a.answered:
                    row.update(kind="none", label=a.rests_on)
                else:
                    row.update(kind=a.kind, label=days_source(a), days=a.days,
                               days_low=a.days_low if a.days_low is not None else a.days,
                               days_high=a.days_high if a.days_high is not None else a.days)
                    row["capped"], row["fast_end_capped"] = answer_capped(a)
                rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
