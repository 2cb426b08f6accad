"""Beyond the nine models: how many days an arbitrary decoder would take on a setup, with a range.

The forecast is ``days = model FLOPs / (GPUs x dense peak x MFU) / 86400``. The FLOPs follow the project's
convention (DESIGN.md, ``estimate``): per token ``6 x (parameters - input embedding) + 12 x layers x hidden x
sequence``; for the catalog's models ``estimate`` counts them from the built model.

The MFU is the one *we measured* on that setup for the Pythia decoders, interpolated linearly in
log(parameters) between the two nearest measured sizes (held flat beyond the smallest and largest). Its range is
the lowest and highest MFU of those two sizes (at a measured size, or beyond the ends, of that size and its
neighbours), so the days come with the spread of the measurements they rest on. With no measurement on the
setup it uses the MFU the *transfer model* predicts there for the measured decoders (``transfer``: each measured
step scaled part by part to the target GPU and count, with a range), labelled "predicted" with the setups it rests
on. Only where nothing was measured for any decoder does it fall back to the MFU *implied by the paper's days*
(Table 1), and says so: the paper's timings did not synchronise with the GPU, and many imply more than 75% of
the dense peak, a measurement error, not a result. Such a cell (MFU above ``MFU_IMPLAUSIBLE``) is never an
answer: it stays visible as the paper's (``paper_implied_mfu``, ``model_answer``'s ``paper_mfu``).

``model_answer`` answers a catalog model on a setup with a label: "measured" (a complete search on that setup),
"predicted" (the transfer model, with its range and the setup it rests on) or "paper" (its implied MFU is at
most ``MFU_IMPLAUSIBLE``); ``answer_table`` gives one row per model and setup.

Layers and hidden size, when not given, come from a fixed aspect ratio (hidden = 128 x layers, which gives
Pythia-1B's 16 x 2048 within 10% for 1B parameters): only the attention term of the FLOPs depends on them.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd

from .analysis import MFU_IMPLAUSIBLE
from .cost import GPU_COUNTS, check_gpus, gpu_key
from .units import SECONDS_PER_DAY
from .hardware import catalog as gpu_catalog

ASPECT = 128  # hidden / layers for a decoder whose shape is not given
DEFAULT_VOCAB = 50_304  # Pythia's (padded) vocabulary
DECODER_FAMILIES = ("pythia",)
MFU_SOURCES = ("ours", "predicted", "paper")
LABELS = ("measured", "predicted", "paper")


# --- FLOPs ---------------------------------------------------------------------------------------------------

def decoder_shape(params: float) -> tuple[int, int]:
    """(layers, hidden) of a decoder of ``params`` parameters at hidden = 128 x layers (params ~ 12 L H^2)."""
    _positive("parameter count", params)
    layers = max(1, round((params / (12 * ASPECT**2)) ** (1 / 3)))
    return layers, ASPECT * layers


def decoder_flops_terms(params: float, layers: int | None = None, hidden: int | None = None,
                        vocab: int = DEFAULT_VOCAB) -> tuple[float, float]:
    """(FLOPs per token that do not depend on the sequence, FLOPs per token per sequence position).

    Per token: ``base + per_position x seq_len`` with base = 6 x (params - vocab x hidden) and
    per_position = 12 x layers x hidden (attention scores and values, forward and backward).
    """
    _positive("parameter count", params)
    if layers is None or hidden is None:
        layers, hidden = decoder_shape(params)
    base = 6 * max(params - vocab * hidden, 0.0)
    return base, 12.0 * layers * hidden


def decoder_flops_per_token(params: float, seq_len: int, layers: int | None = None, hidden: int | None = None,
                            vocab: int = DEFAULT_VOCAB) -> float:
    _positive("sequence length", seq_len)
    base, per_position = decoder_flops_terms(params, layers, hidden, vocab)
    return base + per_position * seq_len


def peak_flops(gpu: str, precision: str) -> float:
    """Dense peak FLOP/s of ``gpu`` for a training precision."""
    # fp32 recipes run at the TF32 rate: the free-lunch methods switch TF32 on (paper Sec 3.2.1).
    return gpu_catalog()[gpu_key(gpu)].peak_flops(precision, tf32=True)


def _positive(label: str, value: float) -> None:
    if value is None or not isinstance(value, (int, float, np.number)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{label} must be a positive number, got {value!r}")


# --- MFU points: ours and the paper's ---------------------------------------------------------------------------

# mfu_low/mfu_high: the MFU at the slowest/fastest timed repetition of a measured step (equal to mfu where the
# number has no spread, as the paper's do not).
MFU_COLUMNS = ["model", "params", "gpu", "n_gpus", "mfu", "mfu_low", "mfu_high", "source"]


def measured_mfu(root: str | None = None) -> pd.DataFrame:
    """MFU of our fastest measured setting per (decoder, GPU, count), leaving out settings that are naive only or
    whose smart search is unfinished (``analysis.without_optimum``: their fastest-so-far is no optimum); empty
    with the columns when none."""
    from .analysis import best_per_setting, runs_frame, skipped_frame, without_optimum

    runs = runs_frame(root)
    best = best_per_setting(runs)
    if best.empty:
        return pd.DataFrame(columns=MFU_COLUMNS)
    left_out = without_optimum(runs, skipped_frame(root))
    best = best[[(s, m) not in left_out for s, m in zip(best["setup"], best["model"])]]
    df = best[best["mfu"].notna() & best["model"].map(_is_decoder)].copy()
    df["params"] = df["model"].map(_params)
    # MFU scales with 1 / step time: the spread of the timed repetitions gives the MFU's spread.
    df["mfu_low"] = (df["mfu"] * df["step_time_s"] / df["step_hi_s"]).fillna(df["mfu"])
    df["mfu_high"] = (df["mfu"] * df["step_time_s"] / df["step_lo_s"]).fillna(df["mfu"])
    df["source"] = "ours (" + df["setup"].astype(str) + ")"
    df["n_gpus"] = df["n_gpus"].astype(int)
    return df[MFU_COLUMNS].reset_index(drop=True)


def paper_implied_mfu() -> pd.DataFrame:
    """The MFU the paper's Table 1 days imply for each decoder setting (our FLOPs convention)."""
    from .cost import paper_days
    from .estimate import analytic_days

    days = paper_days()
    days = days[days["model"].map(_is_decoder)]
    rows = []
    for r in days.itertuples():
        at_peak = analytic_days(r.model, r.gpu, int(r.n_gpus), mfu=1.0)
        mfu = at_peak / r.days
        rows.append({"model": r.model, "params": _params(r.model), "gpu": r.gpu, "n_gpus": int(r.n_gpus),
                     "mfu": mfu, "mfu_low": mfu, "mfu_high": mfu, "source": "paper-implied (Table 1)"})
    return pd.DataFrame(rows, columns=MFU_COLUMNS)


def predicted_mfu(gpu: str, n_gpus: int, root: str | None = None) -> pd.DataFrame:
    """The MFU the transfer model predicts for each measured decoder on ``n_gpus`` x ``gpu``
    (``transfer_validation.predict_setting``), its range from the predicted step's range; empty with the columns
    where no decoder has a complete search anywhere."""
    from .models import CATALOG
    from .transfer_validation import predict_setting

    rows = []
    for model in (m for m in CATALOG if _is_decoder(m)):
        p = predict_setting(model, gpu, n_gpus, root)
        if p is None or p.mfu is None:
            continue
        rows.append({"model": model, "params": _params(model), "gpu": p.gpu, "n_gpus": p.n_gpus, "mfu": p.mfu,
                     "mfu_low": p.mfu * p.step_time_s / p.step_high_s, "mfu_high": p.mfu * p.step_time_s / p.step_low_s,
                     "source": f"predicted (transfer model, from {p.source_setup})"})
    return pd.DataFrame(rows, columns=MFU_COLUMNS)


def _is_decoder(model: str) -> bool:
    from .models import CATALOG

    spec = CATALOG.get(model)
    return spec is not None and spec.family in DECODER_FAMILIES


def _params(model: str) -> float:
    from .models import get_model

    return float(get_model(model).paper_params)


# --- interpolation -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MFUEstimate:
    mfu: float
    low: float
    high: float
    source: str  # "ours (...)" or "paper-implied (Table 1)"
    basis: str  # which measured sizes it rests on, in words
    implausible: bool  # any point above MFU_IMPLAUSIBLE
    points: list[dict] = field(default_factory=list)


def interpolate_mfu(points: pd.DataFrame, params: float) -> MFUEstimate:
    """MFU at ``params`` from (params, mfu) points: linear in log(params), flat beyond the ends.

    The range is the lowest and highest MFU among the two sizes it lies between, or, at a measured size or
    beyond the ends, among that size and its neighbours, widened by each point's own spread (``mfu_low``,
    ``mfu_high`` where given).
    """
    _positive("parameter count", params)
    if points.empty:
        raise ValueError("no MFU points to interpolate from")
    points = points.assign(mfu_low=points.get("mfu_low", points["mfu"]),
                           mfu_high=points.get("mfu_high", points["mfu"]))
    best = points.sort_values("mfu").groupby("params").tail(1)  # the best point per size, with its spread
    pts = best.sort_values("params").reset_index(drop=True)
    xs, ys = np.log(pts["params"].to_numpy(float)), pts["mfu"].to_numpy(float)
    x = math.log(params)
    exact = np.flatnonzero(np.isclose(xs, x, rtol=0, atol=1e-9))
    if len(exact):
        i = int(exact[0])
        used, mfu = [i], float(ys[i])
        basis = f"the measured size {_fmt_params(pts['params'].iloc[i])}"
    elif x < xs[0] or x > xs[-1]:
        i = 0 if x < xs[0] else len(xs) - 1
        used, mfu = [i], float(ys[i])
        where = "below" if x < xs[0] else "above"
        basis = f"{where} the measured sizes, held flat at {_fmt_params(pts['params'].iloc[i])}"
    else:
        j = int(np.searchsorted(xs, x))
        i = j - 1
        t = (x - xs[i]) / (xs[j] - xs[i])
        used, mfu = [i, j], float(ys[i] + t * (ys[j] - ys[i]))
        basis = (f"between the measured sizes {_fmt_params(pts['params'].iloc[i])} and "
                 f"{_fmt_params(pts['params'].iloc[j])} (linear in log parameters)")
    # The range: the points the estimate rests on, widened to the neighbouring sizes where it rests on one
    # point (at a measured size, or held flat beyond the ends), so a single point never claims certainty.
    span = used if len(used) == 2 else sorted({max(used[0] - 1, 0), used[0], min(used[0] + 1, len(xs) - 1)})
    near = pts.iloc[span]
    low = float(np.nanmin([near["mfu"].min(), near["mfu_low"].min()]))
    high = float(np.nanmax([near["mfu"].max(), near["mfu_high"].max()]))
    source = ", ".join(sorted(set(points["source"])))
    return MFUEstimate(mfu=mfu, low=low, high=high, source=source, basis=basis,
                       implausible=bool((near["mfu"] > MFU_IMPLAUSIBLE).any()),
                       points=near[["params", "mfu", "mfu_low", "mfu_high"]].to_dict("records"))


def mfu_points(gpu: str, n_gpus: int, prefer: tuple[str, ...] = MFU_SOURCES,
               root: str | None = None) -> pd.DataFrame:
    """The decoder MFU points for one setup from the first source in ``prefer`` that has any. The paper's
    points above ``MFU_IMPLAUSIBLE`` are left out: an impossible MFU is never an answer."""
    key, n = gpu_key(gpu), check_gpus(n_gpus)
    for source in prefer:
        if source not in MFU_SOURCES:
            raise ValueError(f"unknown MFU source {source!r}; choose from: {', '.join(MFU_SOURCES)}")
        if source == "predicted":
            table = predicted_mfu(key, n, root)
        else:
            table = measured_mfu(root) if source == "ours" else paper_implied_mfu()
        if source == "paper":
            table = table[table["mfu"] <= MFU_IMPLAUSIBLE]
        pts = table[(table["gpu"] == key) & (table["n_gpus"] == n)]
        if not pts.empty:
            return pts.reset_index(drop=True)
    return pd.DataFrame(columns=MFU_COLUMNS)


def _fmt_params(p: float) -> str:
    return f"{p / 1e9:.3g}B" if p >= 1e9 else f"{p / 1e6:.3g}M"


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
    days_low: float | None  # at the highest MFU of the nearest points
    days_high: float | None  # at the lowest
    days_at_peak: float  # 100% MFU: the analytic lower bound
    mfu: MFUEstimate | None
    note: str
    label: str | None = None  # "measured", "predicted" or "paper" (LABELS); None: only the lower bound

    def to_dict(self) -> dict:
        return asdict(self)


def plan_decoder(params: float, tokens: float, gpu: str, n_gpus: int, seq_len: int = 2048,
                 layers: int | None = None, hidden: int | None = None, precision: str = "bf16",
                 prefer: tuple[str, ...] = MFU_SOURCES, root: str | None = None) -> Plan:
    """Days to train a decoder of ``params`` parameters on ``tokens`` tokens on ``n_gpus`` x ``gpu``."""
    _positive("training tokens", tokens)
    key, n = gpu_key(gpu), check_gpus(n_gpus)
    flops = decoder_flops_per_token(params, seq_len, layers, hidden) * tokens
    at_peak = flops / (n * peak_flops(key, precision)) / SECONDS_PER_DAY
    pts = mfu_points(key, n, prefer, root)
    if pts.empty:
        return Plan(params, tokens, seq_len, key, n, precision, flops, None, None, None, at_peak, None,
                    f"no measured, predicted or plausible paper MFU for {n} x {key}: only the analytic lower "
                    f"bound ({at_peak:.1f} days at 100% of peak)")
    est = interpolate_mfu(pts, params)
    if est.mfu > MFU_IMPLAUSIBLE:  # interpolating plausible points cannot exceed them; a guard all the same
        est = MFUEstimate(MFU_IMPLAUSIBLE, min(est.low, MFU_IMPLAUSIBLE), min(est.high, MFU_IMPLAUSIBLE), est.source,
                          est.basis + f", capped at {MFU_IMPLAUSIBLE:.0%}", True, est.points)
    label = "measured" if est.source.startswith("ours") else est.source.split(" ")[0].replace("-implied", "")
    note = f"MFU {est.mfu:.0%} from {est.source}, {est.basis}"
    if label == "paper":
        note += ("; the paper's timings did not synchronise with the GPU, so these days are likely too few "
                 f"(its cells above {MFU_IMPLAUSIBLE:.0%} MFU are left out)")
    if est.implausible:
        note += f"; MFU above {MFU_IMPLAUSIBLE:.0%} of peak is a measurement error, not a result"
    return Plan(params, tokens, seq_len, key, n, precision, flops, at_peak / est.mfu, at_peak / est.high,
                at_peak / est.low, at_peak, est, note, label)


def plan_table(params: float, tokens: float, seq_len: int = 2048, gpus: Iterable[str] | None = None,
               counts: Iterable[int] = GPU_COUNTS, root: str | None = None, **kwargs) -> pd.DataFrame:
    """``plan_decoder`` for every setup, one row each (setups with no MFU keep only the lower bound)."""
    rows = []
    for g in gpus or gpu_catalog():
        for n in counts:
            p = plan_decoder(params, tokens, g, n, seq_len, root=root, **kwargs)
            rows.append({"gpu": p.gpu, "n_gpus": p.n_gpus, "days": p.days, "days_low": p.days_low,
                         "days_high": p.days_high, "days_at_peak": p.days_at_peak,
                         "mfu": p.mfu.mfu if p.mfu else None, "mfu_low": p.mfu.low if p.mfu else None,
                         "mfu_high": p.mfu.high if p.mfu else None, "mfu_source": p.mfu.source if p.mfu else None,
                         "implausible": p.mfu.implausible if p.mfu else None, "label": p.label, "note": p.note})
    return pd.DataFrame(rows)


# --- a catalog model's answer, labelled ------------------------------------------------------------------------

ANSWER_TABLE_COLUMNS = ["model", "gpu", "n_gpus", "label", "days", "days_low", "days_high", "mfu", "basis",
                        "paper_days", "paper_mfu"]


@dataclass(frozen=True)
class ModelAnswer:
    model: str
    gpu: str
    n_gpus: int
    label: str | None  # LABELS, or None: no answer (the paper's cell, if any, stays in paper_days/paper_mfu)
    days: float | None
    days_low: float | None
    days_high: float | None
    mfu: float | None  # never above MFU_IMPLAUSIBLE
    basis: str
    paper_days: float | None  # the paper's Table 1 cell, shown as the paper's whatever its MFU
    paper_mfu: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def model_answer(model: str, gpu: str, n_gpus: int, root: str | None = None) -> ModelAnswer:
    """Days for a catalog model on ``n_gpus`` x ``gpu``: measured (its search complete on that setup), else
    predicted by the transfer model (range and the setup it rests on), else the paper's Table 1 days where their
    implied MFU is plausible (at most ``MFU_IMPLAUSIBLE``), else no answer."""
    from .analysis import paper_cells
    from .transfer_validation import measured, predict_setting

    key, n = gpu_key(gpu), check_gpus(n_gpus)
    cells = paper_cells("table1")
    cell = cells[(cells["model"] == model) & (cells["gpu"] == key) & (cells["n_gpus"] == n) & cells["days"].notna()]
    paper_days = float(cell["days"].iloc[0]) if len(cell) else None
    paper_mfu = float(cell["mfu"].iloc[0]) if len(cell) else None
    base = dict(model=model, gpu=key, n_gpus=n, paper_days=paper_days, paper_mfu=paper_mfu)
    best, _ = measured(root)
    if not best.empty:
        mine = best[(best["model"] == model) & (best["gpu"] == key) & (best["n_gpus"] == n)]
        if len(mine):
            r = mine.sort_values("days").iloc[0]  # two setups of the same GPUs and count: the faster answers
            # The spread of the timed repetitions (the days themselves where a row has none).
            lo, hi = (float(r["days"]) * float(r[c]) / float(r["step_time_s"]) if pd.notna(r[c]) else float(r["days"])
                      for c in ("step_lo_s", "step_hi_s"))
            return ModelAnswer(label="measured", days=float(r["days"]), days_low=lo, days_high=hi,
                               mfu=float(r["mfu"]), basis=f"measured on {r['setup']} ({r['methods_label']})", **base)
    p = predict_setting(model, key, n, root)
    if p is not None and p.days is not None:
        return ModelAnswer(label="predicted", days=p.days, days_low=p.days_low, days_high=p.days_high, mfu=p.mfu,
                           basis=p.basis, **base)
    if paper_mfu is not None and paper_mfu <= MFU_IMPLAUSIBLE:
        return ModelAnswer(label="paper", days=paper_days, days_low=None, days_high=None, mfu=paper_mfu,
                           basis="the paper's Table 1 (its timings did not synchronise with the GPU)", **base)
    why = (f"the paper's cell implies MFU {paper_mfu:.0%}, above {MFU_IMPLAUSIBLE:.0%}: not an answer"
           if paper_mfu is not None else "nothing measured, predicted or in the paper's Table 1")
    return ModelAnswer(label=None, days=None, days_low=None, days_high=None, mfu=None, basis=why, **base)


def answer_table(models: Iterable[str] | None = None, gpus: Iterable[str] | None = None,
                 counts: Iterable[int] = GPU_COUNTS, root: str | None = None) -> pd.DataFrame:
    """``model_answer`` for every model, GPU and count: one labelled row each."""
    from .models import CATALOG

    rows = [model_answer(m, g, int(n), root).to_dict() for m in (models or CATALOG)
            for g in (gpus or gpu_catalog()) for n in counts]
    return pd.DataFrame(rows, columns=ANSWER_TABLE_COLUMNS)
