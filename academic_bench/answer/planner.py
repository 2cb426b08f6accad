"""Beyond the nine models: how many days a decoder of any size would take on a setup, with a range.

The forecast is ``days = model FLOPs / (GPUs x dense peak x MFU) / 86400``. The FLOPs follow the project's
convention (DESIGN.md, ``estimate.dense_flops_terms``): per token ``6 x (parameters - input embedding) + 12 x
layers x attention width x sequence``, the attention width (heads x head size) the hidden size unless given. The
MFU is the study's answer for the catalog decoders on the same setup (``by_size``: interpolated in log(parameters)
between the answered sizes that bracket it, held at the nearest size outside them, and said so), labelled
"measured" where every point it rests on is measured on that setup, else "predicted". An MFU held at the cap
(``transfer.MFU_CAP``), as the answers it rests on are, makes the days a lower bound, and the plan says so
(``capped``). A plan between a held answer and a slower one has its MFU below the cap but the high end of its range
at it: the fast end of its range (``days_low``) is then a lower bound, and the plan says that instead
(``fast_end_capped``). A setup with no answered decoder gets only the analytic lower bound (100% of peak), which
is never an answer.

Layers and hidden size, when not given, come from a fixed aspect ratio (hidden = 128 x layers, which gives
Pythia-1B's 16 x 2048 within 10% for 1B parameters): only the attention term of the FLOPs depends on them.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from ..cost.model import check_gpus, gpu_key
from ..catalog.hardware import catalog as gpu_catalog, get_gpu
from ..catalog.units import SECONDS_PER_DAY
from ..estimate.stats import dense_flops_terms
from ..predict.transfer import MFU_CAP
from .by_size import SizeMFU, mfu_by_size, mfu_range
from .compute import GPU_COUNTS
from .types import Answer

ASPECT = 128  # hidden / layers for a decoder whose shape is not given
DEFAULT_VOCAB = 50_304  # Pythia's (padded) vocabulary


# --- FLOPs ---------------------------------------------------------------------------------------------------

def decoder_shape(params: float) -> tuple[int, int]:
    """(layers, hidden) of a decoder of ``params`` parameters at hidden = 128 x layers (params ~ 12 L H^2)."""
    _positive("parameter count", params)
    layers = max(1, round((params / (12 * ASPECT**2)) ** (1 / 3)))
    return layers, ASPECT * layers


def decoder_flops_terms(params: float, layers: int | None = None, hidden: int | None = None,
                        vocab: int = DEFAULT_VOCAB, attention_width: int | None = None) -> tuple[float, float]:
    """(FLOPs per token that do not depend on the sequence, FLOPs per token per sequence position): the study's
    dense convention (``estimate.dense_flops_terms``) with the weights of the matrix products taken as
    ``params - vocab x hidden`` (one input embedding table) and the attention width as ``hidden`` where not
    given (heads x head size is the hidden size unless a config states a head size of its own)."""
    _positive("parameter count", params)
    if layers is None or hidden is None:
        layers, hidden = decoder_shape(params)
    base, per_position = dense_flops_terms(max(params - vocab * hidden, 0.0), layers, attention_width or hidden)
    return float(base), float(per_position)


def decoder_flops_per_token(params: float, seq_len: int, layers: int | None = None, hidden: int | None = None,
                            vocab: int = DEFAULT_VOCAB, attention_width: int | None = None) -> float:
    _positive("sequence length", seq_len)
    base, per_position = decoder_flops_terms(params, layers, hidden, vocab, attention_width)
    return base + per_position * seq_len


def peak_flops(gpu: str, precision: str) -> float:
    """Dense peak FLOP/s of ``gpu`` for a training precision."""
    # fp32 recipes run at the TF32 rate: the free-lunch methods switch TF32 on (paper Sec 3.2.1).
    return get_gpu(gpu_key(gpu)).peak_flops(precision, tf32=True)


def _positive(label: str, value: float) -> None:
    if value is None or not isinstance(value, (int, float, np.number)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{label} must be a positive number, got {value!r}")


# --- the plan -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    params: float
    tokens: float
    seq_len: int
    gpu: str
    n_gpus: int
    precision: str
    flops: float
    days: float | None
    days_low: float | None  # at the highest MFU of the points used
    days_high: float | None  # at the lowest
    days_at_peak: float  # 100% MFU: the analytic lower bound, never an answer
    mfu: SizeMFU | None
    note: str
    label: str | None = None  # "measured" or "predicted"; None: only the lower bound
    capped: bool = False  # the MFU is at ``transfer.MFU_CAP``, as its answers' are: the days are a lower bound
    fast_end_capped: bool = False  # the range's highest MFU is at the cap: ``days_low`` is a lower bound

    def to_dict(self) -> dict:
        return asdict(self)


def plan_decoder(params: float, tokens: float, gpu: str, n_gpus: int, seq_len: int = 2048,
                 layers: int | None = None, hidden: int | None = None, precision: str = "bf16",
                 root: str | None = None, answers: Iterable[Answer] | None = None) -> Plan:
    """Days to train a decoder of ``params`` parameters on ``tokens`` tokens on ``n_gpus`` x ``gpu``."""
    from .store import grid, other_gpus

    _positive("training tokens", tokens)
    key, n = gpu_key(gpu), check_gpus(n_gpus)
    flops = decoder_flops_per_token(params, seq_len, layers, hidden) * tokens
    at_peak = flops / (n * peak_flops(key, precision)) / SECONDS_PER_DAY
    # The catalog decoders' kept answers on every catalog GPU (the study's and the others'), by size.
    s = mfu_by_size(tuple(answers) if answers is not None else (*grid(root), *other_gpus(root)), key, n, params)
    if s is None:
        return Plan(params, tokens, seq_len, key, n, precision, flops, None, None, None, at_peak, None,
                    f"no catalog decoder is answered on {n} x {key}: only the analytic lower bound "
                    f"({at_peak:,.1f} days at 100% of peak), which is no answer")
    capped, fast_end_capped = at_cap(s.mfu), at_cap(s.high)
    note = f"MFU {s.mfu:.0%} ({s.kind}) from {s.basis}" + capped_words(capped, fast_end_capped)
    return Plan(params, tokens, seq_len, key, n, precision, flops, at_peak / s.mfu, at_peak / s.high,
                at_peak / s.low, at_peak, s, note, s.kind, capped, fast_end_capped)


# What a plan says where its MFU is at the cap (the explorer's answer line says the same in the browser).
CAPPED_WORDS = "; capped at {cap:.0%} MFU: a lower bound"
# What it says where only the high end of its range is (its days between a held answer's and a slower one's).
FAST_END_CAPPED_WORDS = "; the fast end of the range is capped at {cap:.0%} MFU: a lower bound"


def capped_words(capped: bool, fast_end_capped: bool) -> str:
    """The words a plan's answer ends with: the central days held at the cap, else only the fast end of the range
    (the high MFU is never below the central one, so a capped plan's fast end is capped too), else nothing."""
    if capped:
        return CAPPED_WORDS.format(cap=MFU_CAP)
    return FAST_END_CAPPED_WORDS.format(cap=MFU_CAP) if fast_end_capped else ""


# A held answer's MFU is rated on its held step (``transfer.min_step_s``), and that division can round below the cap
# by an ulp: an MFU this close to the cap is at it.
CAP_ROUNDING = 1e-9


def at_cap(mfu: float) -> bool:
    """Whether an MFU is at ``transfer.MFU_CAP``: an answer held there (its scaled step was faster, ``transfer``)
    is a lower bound on the days, and so is a plan that takes its MFU."""
    return mfu >= MFU_CAP - CAP_ROUNDING


def answer_capped(a: Answer) -> tuple[bool, bool]:
    """(the central days held at the cap, the fast end of the range at it) of an answer, as ``capped_words`` takes
    them: only a predicted answer is held (a measured one is what ran; the paper's days are the paper's)."""
    if a.kind != "predicted" or a.mfu is None:
        return False, False
    return at_cap(a.mfu), at_cap(mfu_range(a)[1])


def plan_table(params: float, tokens: float, seq_len: int = 2048, gpus: Iterable[str] | None = None,
               counts: Iterable[int] = GPU_COUNTS, root: str | None = None, **kwargs) -> pd.DataFrame:
    """``plan_decoder`` for every setup, one row each (setups with no answered decoder keep only the bound)."""
    from .store import grid

    answers = grid(root)
    rows = []
    for g in gpus or gpu_catalog():
        for n in counts:
            p = plan_decoder(params, tokens, g, n, seq_len, root=root, answers=answers, **kwargs)
            rows.append({"gpu": p.gpu, "n_gpus": p.n_gpus, "days": p.days, "days_low": p.days_low,
                         "days_high": p.days_high, "days_at_peak": p.days_at_peak,
                         "mfu": p.mfu.mfu if p.mfu else None, "mfu_low": p.mfu.low if p.mfu else None,
                         "mfu_high": p.mfu.high if p.mfu else None, "mfu_basis": p.mfu.basis if p.mfu else None,
                         "label": p.label, "capped": p.capped,
                         "fast_end_capped": p.fast_end_capped, "note": p.note})
    return pd.DataFrame(rows)
