"""The study's answer to its question: how many days would pre-training model M take on N GPUs of type G, with
which settings, at what cost, and what does the answer rest on?

``answer(model, gpu, n_gpus)`` is the one function every surface asks (the commands, the book's pages and
explorers, ``export --best``); ``Answer`` is the one type it returns. The order of sources is stated once, in
``types.KINDS`` / ``SOURCE_ORDER``. The predictions it composes (the transfer and work models, method
costs, their checks and ranges) are in ``predict/``, the layer below.

| module | holds |
| --- | --- |
| ``types`` | ``Answer``, ``Settings``, ``BeyondPaper``, the kinds and the order of sources |
| ``compute`` | a catalog model's answer from the runs (measured, predicted, paper, none), the whole grid |
| ``beyond_paper`` | what the switches beyond the paper buy beside a catalog model's answer (``analysis.beyond``) |
| ``store`` | the grid computed once and kept, keyed by the content of the runs |
| ``by_size`` | a decoder of any size on a setup, from the catalog decoders answered on that setup |
| ``decoder`` | a decoder from a config.json: the work model, else by size |
| ``published_check`` | the answers beside training throughput others published, per GPU type |
| ``budget`` | what a budget buys today: the fastest machine within each budget, the cheapest within each deadline |
| ``survey_days`` | the survey's generations and memory sizes beside the days the answer gives on them |
| ``published_ranges`` | a prediction on a GPU never measured, widened by the published check at its distance |
"""
from __future__ import annotations

import os

from .types import BEYOND_STATUSES, KINDS, SOURCE_ORDER, Answer, BeyondPaper, Settings

__all__ = ["BEYOND_STATUSES", "KINDS", "SOURCE_ORDER", "Answer", "BeyondPaper", "Settings", "answer", "answers_frame",
           "grid"]


def answer(model: str, gpu: str, n_gpus: int, root: str | os.PathLike | None = None) -> Answer:
    """The study's answer for catalog ``model`` on ``n_gpus`` x ``gpu`` (none for the model in another precision
    than its recipe's: ``compute.variant_answer``). An unknown model or GPU, or a count below 1, raises with the
    valid choices named."""
    from ..catalog.models import is_variant
    from ..cost.model import check_gpus, gpu_key, model_key
    from .compute import GPU_COUNTS, catalog_answer, variant_answer
    from .store import grid as kept, observed, other_gpus

    from .published_ranges import distance_records, widen

    if is_variant(model):  # a catalog model in a precision not its recipe's: measured beside the answers
        return variant_answer(str(model).lower(), gpu_key(gpu), check_gpus(n_gpus))
    m, g, n = model_key(model), gpu_key(gpu), check_gpus(n_gpus)
    found = None
    if n in GPU_COUNTS:
        found = next((a for a in (*kept(root), *other_gpus(root)) if (a.model, a.gpu, a.n_gpus) == (m, g, n)), None)
    if found is None:
        found = catalog_answer(m, g, n, None if root is None else str(root), errors=observed(root))
    # A prediction on a GPU the study never measured: its range widened by the published check at its distance
    # (``published_ranges``), applied here because that check reads the answers kept below.
    if found.kind == "predicted":
        found = widen(found, distance_records(root), root)
    return found


def grid(root: str | os.PathLike | None = None) -> tuple[Answer, ...]:
    """Every catalog model on every catalog GPU and count, answered (``store.grid``)."""
    from .store import grid as kept

    return kept(root)


def answers_frame(answers=None, root: str | os.PathLike | None = None):
    """The answers as a pandas frame, one row each, the settings' fields flattened (``methods``,
    ``methods_label``, ``micro_batch``, ``gas``, ``export_command``), and beside them ``beyond_paper_status``,
    ``beyond_paper_days`` and ``beyond_paper_words`` (``BeyondPaper``)."""
    import pandas as pd

    rows = []
    for a in (grid(root) if answers is None else answers):
        d = a.to_dict()
        s = d.pop("settings") or {}
        d.pop("extra", None)
        b = d.pop("beyond_paper", None) or {}
        d.update(beyond_paper_status=b.get("status"), beyond_paper_days=b.get("days"),
                 beyond_paper_words=a.beyond_paper.words() if a.beyond_paper else None)
        d["rows"] = ",".join(d["rows"])
        rows.append({**d, **{k: s.get(k) for k in Settings.__dataclass_fields__}})
    return pd.DataFrame(rows)
