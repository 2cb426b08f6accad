"""The answers as setups with every cost column: what the ``plan`` command, the cost and budget explorers and the
cost-benefit page rank. One row per (model, GPU, count) the study answers, with the answer's kind, days, implied
MFU and settings; cells without an answer are left out, and ``unanswered`` names them with the reason.
"""
from __future__ import annotations

import os

import pandas as pd

from .types import Answer


def days_source(a: Answer) -> str:
    """What the days rest on, in a few words: 'measured', 'predicted (transfer model)', 'paper Table 1' (the
    whole of it is the answer's ``rests_on``)."""
    if a.kind == "measured":
        return "measured"
    if a.kind == "predicted":
        return f"predicted ({a.by})"
    return "paper Table 1" if a.kind == "paper" else "no answer"


def answer_setups(models: list[str] | None = None, assumptions=None, root: str | os.PathLike | None = None,
                  answers=None) -> pd.DataFrame:
    """``cost.setups_frame`` of every answered cell (of ``models``, default all), with ``kind``, ``implied_mfu``
    (the answer's MFU), ``implausible`` (always False: an answer never implies more than the plausible MFU),
    ``days_low``/``days_high`` and the settings (``methods_label``, ``micro_batch``, ``gas``)."""
    from ..cost import setups_frame
    from .store import grid

    chosen = [a for a in (grid(root) if answers is None else answers)
              if a.answered and (models is None or a.model in models)]
    days = pd.DataFrame([{"model": a.model, "gpu": a.gpu, "n_gpus": a.n_gpus, "days": a.days,
                          "days_source": days_source(a)} for a in chosen],
                        columns=["model", "gpu", "n_gpus", "days", "days_source"])
    out = setups_frame(days, assumptions)
    if out.empty:
        return out.assign(kind=[], implied_mfu=[], implausible=[], days_low=[], days_high=[], methods_label=[],
                          micro_batch=[], gas=[])
    out["kind"] = [a.kind for a in chosen]
    out["implied_mfu"] = [a.mfu for a in chosen]
    out["implausible"] = False
    out["days_low"] = [a.days_low for a in chosen]
    out["days_high"] = [a.days_high for a in chosen]
    out["methods_label"] = [a.settings.methods_label if a.settings else None for a in chosen]
    out["micro_batch"] = [a.settings.micro_batch if a.settings else None for a in chosen]
    out["gas"] = [a.settings.gas if a.settings else None for a in chosen]
    return out


def unanswered(model: str, root: str | os.PathLike | None = None) -> list[Answer]:
    """The cells of ``model`` the study does not answer, each with its reason (``Answer.rests_on``)."""
    from .store import grid

    return [a for a in grid(root) if a.model == model and not a.answered]
