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
from dataclasses import replace

from ..catalog.hardware import get_gpu
from ..catalog.methods import FREE_LUNCH, Methods, parse_methods, validation_class
from .compute import costs, settings_of
from .ranges import stated_range
from .types import Answer


def decoder_answer(key: str, gpu: str, n_gpus: int, root: str | os.PathLike | None = None,
                   facts: dict | None = None, methods: Methods = FREE_LUNCH, micro_batch: int | None = None
                   ) -> Answer:
    """The answer for the registered decoder ``key`` (``models.from_config.decoder_spec(...).spec.key``) on
    ``n_gpus`` x ``gpu`` with ``methods`` (free-lunch, and any memory-saving methods on top, each charged by the
    work model: ``decoder_work.predict_decoder``, ``method_costs``), at ``micro_batch`` per GPU where it is given,
    else at the largest the memory model fits."""
    from .decoder_work import not_modelled, predict_decoder
    from .switch_work import why_not_charged
    from ..estimate import analytic_days, model_stats
    from ..catalog.models import get_model
    from .by_size import mfu_by_size
    from .store import checks, grid, observed, work_model

    spec = get_model(key)
    bound = float(analytic_days(spec, gpu, n_gpus, mfu=1.0))
    base = dict(model=key, gpu=gpu, n_gpus=n_gpus, bound_days=bound, extra=dict(facts or {}))
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
                            evidence=evidence)
        if p is None and spec.moe is not None and micro_batch is None and not any(methods.memory_saving[::2]) \
                and methods.sharding == "none":
            # A mixture of experts keeps every expert's states: where the free-lunch settings alone do not fit,
            # the fastest memory-saving combination the work model predicts is the answer's settings.
            p, methods = _fastest_fitting(key, gpu, n_gpus, points, methods, host_rates, evidence)
        if p is not None and p.days is not None:
            profiled = str(points.loc[points["setup"] == p.source_setup, "gpu"].iloc[0])
            rng = stated_range(observed(root), "work model", validation_class(methods, n_gpus), methods.offload,
                               get_gpu(profiled).architecture == get_gpu(gpu).architecture)
            low, high = rng.apply(p.days, p.days_low, p.days_high)
            return Answer(kind="predicted", days=p.days, days_low=low, days_high=high, mfu=p.mfu,
                          range_basis=rng.words, range_error=rng.error,
                          settings=settings_of(key, gpu, n_gpus, methods, p.micro_batch, p.gas),
                          rests_on=p.basis, source_setup=p.source_setup, by="work model",
                          stated_error=checks(root).get("work_model"), **costs(gpu, n_gpus, p.days), **base)
        why_not_work = "no profile calibrates it, or no micro-batch fits" if p is None else p.basis
    s = mfu_by_size(grid(root), gpu, n_gpus, float(model_stats(spec).params))
    if s is not None:
        days = bound / s.mfu
        nearest = next(a for a in grid(root) if (a.model, a.gpu, a.n_gpus) == (s.points[0], gpu, n_gpus))
        # The methods of the nearest catalog decoder's answer; its micro-batch is for its own shape, so none.
        settings = nearest.settings and replace(nearest.settings, micro_batch=None, gas=None, export_command="")
        m = parse_methods(settings.methods) if settings else methods
        rng = stated_range(observed(root), "catalog decoders by size", validation_class(m, n_gpus), m.offload, True)
        low, high = rng.apply(days, bound / s.high, bound / s.low)
        return Answer(kind="predicted", days=days, days_low=low, days_high=high, mfu=s.mfu, settings=settings,
                      range_basis=rng.words, range_error=rng.error,
                      rests_on=f"the catalog decoders' answers on this setup by size: {s.basis} (the work model "
                               f"does not apply: {why_not_work})",
                      by="catalog decoders by size", stated_error=None, **costs(gpu, n_gpus, days), **base)
    return Answer(kind="none", days=None, days_low=None, days_high=None, mfu=None, settings=None,
                  rests_on=f"the work model does not apply ({why_not_work}) and no catalog decoder is answered on "
                           f"{n_gpus} x {gpu}", **base)


def _fastest_fitting(key: str, gpu: str, n_gpus: int, points, base: Methods, host_rates, evidence):
    """(the work model's fastest prediction, its methods) over the paper's memory-saving combinations on top of
    ``base`` (``methods.search_space``), or (None, base) where none fits."""
    from ..catalog.methods import search_space
    from .decoder_work import predict_decoder

    found = [(p, m) for m in search_space(n_gpus, base)[0]
             for p in [predict_decoder(key, gpu, n_gpus, points, m, host_rates, evidence=evidence)]
             if p is not None and p.days is not None]
    return min(found, key=lambda pm: pm[0].days) if found else (None, base)
