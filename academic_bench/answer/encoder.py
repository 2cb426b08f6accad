"""The study's answer for an encoder outside the catalog (BERT, RoBERTa, ModernBERT), described by a Hugging Face
config.json (``catalog.models.encoder_config``: built on the meta device, never downloaded), trained as a masked
language model on a number of tokens in sequences of a length.

As a decoder outside the catalog is answered from the Pythia decoders' evidence (``decoder``), an encoder is
answered from RoBERTa-large's, by the one path the published check already predicts BERT-large from
(``published_family.carried_encoder``): RoBERTa-large's measured free-lunch step without sharding or offloading,
carried to the GPU and count by the transfer model, its sequences per second scaled by the model FLOPs of a
RoBERTa-large sequence over the encoder's (the study's dense convention with the masked-LM head,
``estimate.flops_per_sample``). The encoder is assumed to reach the MFU the carried step reaches; nothing is
fitted to it.

Its range is the error that very path showed on the published BERT-large points (``published_errors``: published
throughput over predicted, every point the published check predicts), widened to the transfer model's own span
where that is wider. An encoder larger than RoBERTa-large or longer than any checked sequence is refused, as a
decoder beyond the evidence is (``decoder.evidence_span``), and so are methods or a precision the evidence did not
measure.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from ..catalog.methods import FREE_LUNCH, Methods, methods_spec
from .compute import costs, settings_of
from .decoder import fit_problem
from ..predict.published_family import FAMILY_MODEL, carried_encoder
from .types import Answer, Fitting

BY = "RoBERTa-large by model FLOPs"
# Precisions whose tensor-core peak is RoBERTa-large's fp16 recipe's on every GPU that has them.
SIXTEEN_BIT = ("fp16", "bf16")


@dataclass(frozen=True)
class PublishedErrors:
    """The published encoder points the carried path predicts: how many, and the lowest and highest ratio of
    published to predicted throughput (= predicted days over the days the published rate implies)."""

    points: int
    low: float
    high: float

    def words(self) -> str:
        return (f"the {self.points} published BERT-large points this path predicts (data/published_throughput.csv) "
                f"ran at {self.low:.2f}-{self.high:.2f} x the predicted throughput")


@lru_cache(maxsize=4)
def published_errors(root: str | None = None) -> PublishedErrors | None:
    """The ratios of the published check's encoder points (``published_check.predict_point``), or None where
    fewer than ``ranges.MIN_POINTS`` are predicted."""
    from ..catalog.published import load_published_throughput
    from .published_check import predict_point
    from ..predict.ranges import MIN_POINTS

    published = load_published_throughput()
    ratios = [r for _, row in published[published["family"] == "encoder"].iterrows()
              for r in [predict_point(row, root)["ratio"]] if r == r]
    if len(ratios) < MIN_POINTS:
        return None
    return PublishedErrors(len(ratios), min(ratios), max(ratios))


def _beyond_evidence(params: float, seq_len: int) -> str | None:
    """Why an encoder of ``params`` parameters at ``seq_len`` is beyond the encoders any prediction was checked
    against (RoBERTa-large, measured; the published BERT-large points, of its shape), or None."""
    from ..catalog.models import get_model
    from ..catalog.published import load_published_throughput
    from ..estimate import model_stats

    model = FAMILY_MODEL["encoder"]
    largest = float(model_stats(model).params)
    published = load_published_throughput()
    longest = max([int(get_model(model).recipe.seq_len),
                   *published.loc[published["family"] == "encoder", "seq_len"].astype(int)])
    if params > largest:
        return (f"{params / 1e6:,.0f}M parameters is beyond the largest encoder any prediction of the study was "
                f"checked against ({model}, {largest / 1e6:,.0f}M): no answer rests on evidence there")
    if seq_len > longest:
        return (f"a sequence of {seq_len:,} tokens is beyond the longest any encoder prediction was checked at "
                f"({longest:,}): no answer rests on evidence there")
    return None


def encoder_answer(key: str, gpu: str, n_gpus: int, root: str | os.PathLike | None = None,
                   facts: dict | None = None, methods: Methods = FREE_LUNCH) -> Answer:
    """The answer for the registered encoder ``key`` (``encoder_config.encoder_spec(...).spec.key``) on ``n_gpus``
    x ``gpu`` with ``methods`` (free-lunch only: the settings RoBERTa-large's carried step was measured with), at
    the largest micro-batch the memory model fits."""
    from ..catalog.models import get_model
    from ..catalog.units import SECONDS_PER_DAY
    from ..estimate import analytic_days, flops_per_sample, max_micro_batch, model_stats
    from ..catalog.config import Config
    from ..catalog.hardware import get_gpu

    spec = get_model(key)
    r = spec.recipe
    where = None if root is None else str(root)
    bound = float(analytic_days(spec, gpu, n_gpus, mfu=1.0))
    base = dict(model=key, gpu=gpu, n_gpus=n_gpus, bound_days=bound, extra=dict(facts or {}))
    source = get_model(FAMILY_MODEL["encoder"]).display
    if methods != FREE_LUNCH:
        return _none(f"an encoder is answered from {source}'s measured free-lunch step (no checkpointing, sharding "
                     f"or offloading); {methods_spec(methods)} is not carried from it: ask with --methods "
                     "free-lunch", base)
    if r.precision not in SIXTEEN_BIT:
        measured_in = get_model(FAMILY_MODEL["encoder"]).recipe.precision
        return _none(f"it trains in {r.precision}; {source}'s measured step is 16-bit ({measured_in}), and the "
                     "transfer model carries a step between GPUs, not between precisions", base)
    beyond = _beyond_evidence(float(model_stats(spec).params), int(r.seq_len))
    if beyond:
        return _none(beyond, base)
    unfit = fit_problem(key, gpu, n_gpus, methods)
    if unfit:
        why, fits = unfit
        return _none(why, base, fits)
    mbs = max_micro_batch(Config(key, gpu, n_gpus, methods=methods), get_gpu(gpu).memory_gb)
    carried = carried_encoder(gpu, n_gpus, flops_per_sample(spec), where, micro_batch=mbs)  # at its own micro-batch
    if isinstance(carried, str):
        return _none(f"{source}'s step cannot be carried to {n_gpus} x {gpu}: {carried}", base)
    step_s = r.global_batch / (n_gpus * carried.sequences_per_s_per_gpu)
    days = r.steps * step_s / SECONDS_PER_DAY
    p = carried.carried
    low, high = days * p.step_low_s / p.step_time_s, days * p.step_high_s / p.step_time_s
    errors = published_errors(where)
    if errors is not None:  # published/predicted = predicted days / the published rate's days
        low, high = min(low, days / errors.high), max(high, days / errors.low)
        basis = (f"{errors.words()}, widened to the transfer model's own span where wider")
    else:
        basis = "the transfer model's own span (too few published encoder points predicted to check it)"
    mfu = float(flops_per_sample(spec)) * r.global_batch / (step_s * n_gpus * get_gpu(gpu).peak_flops(r.precision))
    per_gpu = r.global_batch // n_gpus
    rests_on = (f"{source}'s measured step on {carried.source['setup']} (free-lunch, micro-batch "
                f"{int(carried.source['micro_batch'])}), carried to {n_gpus} x {gpu} ({p.basis}), its sequences per "
                f"second scaled by model FLOPs per sequence: the encoder is assumed to reach the MFU "
                f"{source} reaches ({p.mfu:.1%}); the published check predicts BERT-large the same way")
    return Answer(kind="predicted", days=days, days_low=low, days_high=high, mfu=mfu, range_basis=basis,
                  range_error=None, settings=settings_of(key, gpu, n_gpus, methods, mbs, max(1, per_gpu // mbs)),
                  rests_on=rests_on, source_setup=str(carried.source["setup"]), by=BY, stated_error=None,
                  **costs(gpu, n_gpus, days), **base)


def _none(why: str, base: dict, fits: Fitting | None = None) -> Answer:
    return Answer(kind="none", days=None, days_low=None, days_high=None, mfu=None, settings=None, rests_on=why,
                  fits_from=fits, **base)
