"""The study's answer for a decoder outside the catalog, described by a Hugging Face config.json (built on the
meta device by ``models.from_config``, never downloaded), trained on a number of tokens in sequences of a length.

The one order of sources, as for a catalog model (a decoder outside the catalog is never measured by the study's
runs, so it starts at the predictions):

1. the **work model** (``decoder_work``): the decoder's work counted by kind at the rates of the catalog decoders'
   kernel profiles, with free-lunch settings in bf16, carried to other GPUs and counts by the transfer model;
2. the **catalog decoders' answers on the same setup**, interpolated by size (``by_size``) where the work model
   does not apply (another precision, a mixture of experts, no profile);
3. none, with the reason.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache

from ..catalog.hardware import get_gpu
from ..catalog.methods import FREE_LUNCH, Methods, parse_methods, validation_class
from .compute import costs, settings_of, smallest_fitting
from ..predict.ranges import stated_range
from .types import Answer, Fitting


@dataclass(frozen=True)
class Span:
    """The largest decoder and the longest sequence whose training the study's predictions were checked against."""

    params: float
    params_of: str
    seq_len: int
    seq_len_of: str


def evidence_span(root: str | os.PathLike | None = None) -> Span:
    return _span(None if root is None else str(root))


@lru_cache(maxsize=4)
def _span(root: str | None) -> Span:
    """How far the predictions for a decoder rest on evidence: the catalog decoders the study measures, the
    decoders of its runs' evidence (``<setup>/evidence/decoders/*/estimate.json``, measured beside their estimate)
    and the training throughput others published, which the study's predictions are checked against
    (data/published_throughput.csv, ``published_check``). Beyond the largest of them in parameters or sequence
    length a prediction is an extrapolation no check has reached (a 35-trillion-parameter model, a sequence of
    ten million tokens)."""
    import json
    import math

    from ..analysis import runs_root
    from ..catalog.models import CATALOG
    from ..catalog.published import load_published_throughput
    from .by_size import DECODER_FAMILIES

    seen: list[tuple[float, int, str]] = [(float(m.paper_params), int(m.recipe.seq_len), m.key)
                                          for m in CATALOG.values() if m.family in DECODER_FAMILIES]
    for path in sorted(runs_root(root).glob("*/evidence/decoders/*/estimate.json")):
        a = json.loads(path.read_text()).get("architecture") or {}
        if a.get("params") and a.get("seq_len"):
            seen.append((float(a["params"]), int(a["seq_len"]), f"{path.parent.name} (the study's evidence)"))
    published = load_published_throughput()
    # The decoders' points only: the span is of decoders (an encoder's or image model's point has another shape).
    for row in published[published["family"] == "decoder"].itertuples(index=False):
        params = float(row.params) if isinstance(row.params, (int, float)) and math.isfinite(row.params) else 0.0
        seen.append((params, int(row.seq_len), f"{row.model} (published, {row.source})"))
    big, long = max(seen, key=lambda x: x[0]), max(seen, key=lambda x: x[1])
    return Span(params=big[0], params_of=big[2], seq_len=long[1], seq_len_of=long[2])


def _beyond_evidence(params: float, seq_len: int, root: str | os.PathLike | None) -> str | None:
    """Why a decoder of ``params`` parameters at ``seq_len`` is beyond the evidence (``evidence_span``), or None."""
    span = evidence_span(root)
    if params > span.params:
        return (f"{params / 1e9:,.3g}B parameters is beyond the largest decoder whose training any prediction of "
                f"the study was checked against ({span.params_of}, {span.params / 1e9:.3g}B): no answer rests on "
                "evidence there")
    if seq_len > span.seq_len:
        return (f"a sequence of {seq_len:,} tokens is beyond the longest any prediction of the study was checked "
                f"at ({span.seq_len:,}, {span.seq_len_of}): no answer rests on evidence there")
    return None


def fit_problem(key: str, gpu: str, n_gpus: int, methods: Methods) -> tuple[str, Fitting | None] | None:
    """Why ``methods`` cannot train the decoder on ``n_gpus`` x ``gpu`` by the memory model (no micro-batch fits),
    naming what would fit instead, and where no combination fits there, the smallest setup that would
    (``compute.smallest_fitting``, kept as the refusal's ``fits_from``); or None."""
    from ..catalog.config import Config
    from ..catalog.methods import methods_spec, search_space
    from ..estimate import GIB, max_micro_batch, predict_memory, usable_bytes

    config = Config(key, gpu, n_gpus, methods=methods)
    memory = get_gpu(gpu).memory_gb
    if max_micro_batch(config, memory) is not None:
        return None
    need = predict_memory(config, 1).total / GIB
    base = replace(methods, checkpointing=False, sharding="none", offload=False)
    fits = [methods_spec(m) for m in search_space(n_gpus, base)[0]
            if max_micro_batch(replace(config, methods=m), memory) is not None]
    smallest = None if fits else smallest_fitting(key, gpu, n_gpus)
    instead = (f"predicted to fit instead: --methods {', '.join(fits[:4])}" + (" and more" if len(fits) > 4 else "")
               if fits else smallest.words())
    return (f"its settings ({methods_spec(methods)}) do not fit by the memory model: {need:.1f} of "
            f"{usable_bytes(memory) / GIB:.1f} GiB usable at micro-batch 1; {instead}", smallest)


def decoder_answer(key: str, gpu: str, n_gpus: int, root: str | os.PathLike | None = None,
                   facts: dict | None = None, methods: Methods = FREE_LUNCH, micro_batch: int | None = None,
                   expert_parallel: bool = False) -> Answer:
    """The answer for the registered decoder ``key`` (``models.from_config.decoder_spec(...).spec.key``) on
    ``n_gpus`` x ``gpu`` with ``methods`` (free-lunch, and any memory-saving methods on top, each charged by the
    work model: ``decoder_work.predict_decoder``, ``method_costs``), at ``micro_batch`` per GPU where it is given,
    else at the largest the memory model fits. ``expert_parallel``: a mixture's experts spread over the GPUs, as a
    published run had them (``predict.expert_parallel``: only to predict such a run)."""
    from ..predict.decoder_work import not_modelled, predict_decoder
    from ..predict.switch_work import why_not_charged
    from ..estimate import analytic_days, model_stats
    from ..catalog.models import get_model
    from .by_size import mfu_by_size
    from .store import checks, grid, observed, work_model

    spec = get_model(key)
    bound = float(analytic_days(spec, gpu, n_gpus, mfu=1.0))
    base = dict(model=key, gpu=gpu, n_gpus=n_gpus, bound_days=bound, extra=dict(facts or {}))
    params = float(model_stats(spec).params)
    beyond = _beyond_evidence(params, int(spec.recipe.seq_len or 0), root)
    if beyond:
        return _none(beyond, base)
    why_not_work = not_modelled(key) or (None if spec.recipe.precision == "bf16" else
                                         f"the work model's profiles are bf16; this decoder trains in "
                                         f"{spec.recipe.precision}") or (
        None if methods.free_lunch else "the work model's profiles are of the free-lunch settings")
    points, host_rates, evidence = work_model(root)  # kept with the answers: the runs are not read again
    # A fused loss or FP8 products change kinds of work the model counts, by shares fitted to the study's rows of
    # each switch (``switch_work``); bf16 weights change none.
    why_not_work = why_not_work or why_not_charged(methods, evidence.switches)
    if why_not_work is None:
        p = predict_decoder(key, gpu, n_gpus, points, methods, host_rates, micro_batch=micro_batch,
                            evidence=evidence, expert_parallel=expert_parallel)
        if p is None and spec.moe is not None and micro_batch is None and not any(methods.memory_saving[::2]) \
                and methods.sharding == "none":
            # A mixture of experts keeps every expert's states: where the free-lunch settings alone do not fit,
            # the fastest memory-saving combination the work model predicts is the answer's settings.
            p, methods = _fastest_fitting(key, gpu, n_gpus, points, methods, host_rates, evidence)
            if p is None:  # the dense decoders' MFU by size says nothing of a mixture that cannot run here
                fits = smallest_fitting(key, gpu, n_gpus)
                return _none(f"no setting of the paper fits the GPUs and, offloading, the host: {fits.words()}",
                             base, fits)
        if p is not None and p.days is not None:
            profiled = str(points.loc[points["setup"] == p.source_setup, "gpu"].iloc[0])
            rng = stated_range(observed(root), "work model", validation_class(methods, n_gpus), methods.offload,
                               get_gpu(profiled).architecture == get_gpu(gpu).architecture)
            low, high, words = rng.bounds(p.days, p.days_low, p.days_high, p.mfu)
            return Answer(kind="predicted", days=p.days, days_low=low, days_high=high, mfu=p.mfu,
                          range_basis=words, range_error=rng.error,
                          settings=settings_of(key, gpu, n_gpus, methods, p.micro_batch, p.gas),
                          rests_on=p.basis, source_setup=p.source_setup, by="work model",
                          stated_error=checks(root).get("work_model"), **costs(gpu, n_gpus, p.days), **base)
        why_not_work = "no profile calibrates it, or no micro-batch fits" if p is None else p.basis
    s = mfu_by_size(grid(root), gpu, n_gpus, params)
    if s is not None and s.basis.startswith("extrapolated"):  # an MFU held outside the sizes answered there
        return _none(f"the work model does not apply ({why_not_work}), and {s.basis.replace('extrapolated: ', '')}"
                     " is an MFU no measurement of this size supports", base)
    if s is not None:
        days = bound / s.mfu
        nearest = next(a for a in grid(root) if (a.model, a.gpu, a.n_gpus) == (s.points[0], gpu, n_gpus))
        # The methods of the nearest catalog decoder's answer; its micro-batch is for its own shape, so none.
        settings = nearest.settings and replace(nearest.settings, micro_batch=None, gas=None, export_command="")
        m = parse_methods(settings.methods) if settings else methods
        unfit = fit_problem(key, gpu, n_gpus, m)  # settings that cannot run are no answer
        if unfit:
            why, fits = unfit
            return _none(f"the work model does not apply ({why_not_work}); the settings of {nearest.model}'s answer "
                         f"on this setup: {why}", base, fits)
        rng = stated_range(observed(root), "catalog decoders by size", validation_class(m, n_gpus), m.offload, True)
        low, high, words = rng.bounds(days, bound / s.high, bound / s.low, s.mfu)
        return Answer(kind="predicted", days=days, days_low=low, days_high=high, mfu=s.mfu, settings=settings,
                      range_basis=words, range_error=rng.error,
                      rests_on=f"the catalog decoders' answers on this setup by size: {s.basis} (the work model "
                               f"does not apply: {why_not_work})",
                      by="catalog decoders by size", stated_error=None, **costs(gpu, n_gpus, days), **base)
    return _none(f"the work model does not apply ({why_not_work}) and no catalog decoder is answered on "
                 f"{n_gpus} x {gpu}", base)


def _none(why: str, base: dict, fits: Fitting | None = None) -> Answer:
    return Answer(kind="none", days=None, days_low=None, days_high=None, mfu=None, settings=None, rests_on=why,
                  fits_from=fits, **base)


def _fastest_fitting(key: str, gpu: str, n_gpus: int, points, base: Methods, host_rates, evidence):
    """(the work model's fastest prediction, its methods) over the paper's memory-saving combinations on top of
    ``base`` (``methods.search_space``) whose offloaded states fit the host (``estimate.host_fits``), or
    (None, base) where none fits."""
    from ..catalog.config import Config
    from ..catalog.methods import search_space
    from ..estimate import host_fits
    from ..predict.decoder_work import predict_decoder

    found = [(p, m) for m in search_space(n_gpus, base)[0] if host_fits(Config(key, gpu, n_gpus, methods=m))
             for p in [predict_decoder(key, gpu, n_gpus, points, m, host_rates, evidence=evidence)]
             if p is not None and p.days is not None]
    return min(found, key=lambda pm: pm[0].days) if found else (None, base)
