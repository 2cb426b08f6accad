"""The study's answer for a catalog model on a setup, computed from the shipped runs in the one order of sources
(``types.KINDS``): measured, else predicted by the transfer model from a measured configuration, else the paper's
Table 1 cell where its implied MFU is plausible, else none with the reason.

``compute_grid`` answers every catalog model on every catalog GPU and count at once, sharing what each answer
reads (the measured rows, the profiles, the paper's cells, the held-out checks); ``grid`` keeps its result.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable

import pandas as pd

from ..catalog.hardware import get_gpu
from ..catalog.methods import Methods, methods_spec, validation_class
from ..predict.ranges import observed_errors, stated_range
from ..predict.transfer import Prediction, methods_of_row
from .types import Answer, Fitting, Settings

GPU_COUNTS = (1, 2, 4, 8)  # the machines the paper priced (Appendix H), as cost.GPU_COUNTS


def export_command(model: str, gpu: str, n_gpus: int) -> str:
    """The command that writes an answer's settings as a training configuration (``export --best``)."""
    return (f"academic-bench export --best --model {model} --gpu {gpu} --gpus {n_gpus} "
            f"--out export/{model}-{n_gpus}x{gpu}")


def settings_of(model: str, gpu: str, n_gpus: int, methods: Methods | None, micro_batch, gas) -> Settings | None:
    if methods is None:
        return None
    return Settings(methods=methods_spec(methods), methods_label=methods.label(),
                    micro_batch=None if micro_batch is None or pd.isna(micro_batch) else int(micro_batch),
                    gas=None if gas is None or pd.isna(gas) else int(gas),
                    export_command=export_command(model, gpu, n_gpus))


def costs(gpu: str, n_gpus: int, days: float | None) -> dict:
    """Rental, owned (per experiment + energy) and purchase at the default assumptions (``cost.Assumptions``)."""
    if days is None:
        return {}
    from ..cost import cost_of

    try:
        c = cost_of(gpu, n_gpus, days)
    except ValueError:  # no price listed for the GPU
        return {}
    return {"rental_usd": c.cloud_usd, "owned_usd": c.owned_per_experiment_usd, "purchase_usd": c.purchase_usd}


@dataclass(frozen=True)
class Checks:
    """The error the study's own held-out checks observed, per kind of carry (another GPU, another count)."""

    other_gpu: str
    other_count: str

    def for_carry(self, source_gpu: str, source_n: int, gpu: str, n_gpus: int) -> str:
        said = ([self.other_gpu] if source_gpu != gpu else []) + ([self.other_count] if source_n != n_gpus else [])
        return "; ".join(said) or "the measured setup itself"


def held_out_checks(root: str | None = None) -> Checks:
    from ..predict.transfer_validation import error_summary, h100_to_h200, one_to_two_gpus

    def words(frame: pd.DataFrame, what: str) -> str:
        s = error_summary(frame)
        if not s["models"]:
            return f"{what}: no held-out check yet"
        return (f"{what}: median |error| {s['median_abs_error']:.1%}, worst {s['worst_abs_error']:.1%} over "
                f"{s['models']} models, {s['in_range']} of them inside the model's own span")
    return Checks(words(h100_to_h200(root), "another GPU (h200x1 predicted from h100x1)"),
                  words(one_to_two_gpus(root), "another count (h200x2 predicted from h200x1)"))


def work_model_checks(root: str | os.PathLike | None = None) -> str:
    """The work model's error on the decoders outside the catalog whose estimate was kept before they ran: the
    estimates' own (held out), beside today's work model at the micro-batch each ran with (which has seen them)."""
    from ..predict.work_validation import config_decoders

    d = config_decoders(None if root is None else str(root))
    held = d[d["work_model_held_out"].astype(bool)] if len(d) else d
    if held.empty:
        return "work model: no held-out check yet"
    e, now = held["abs_error"], held["work_model_error"].abs()
    return (f"work model on {len(held)} decoders estimated before they ran: median |error| {e.median():.1%}, "
            f"worst {e.max():.1%} (today's model, changed after they ran, at the micro-batch each ran with: median "
            f"{now.median():.1%}, worst {now.max():.1%})")


def catalog_answer(model: str, gpu: str, n_gpus: int, root: str | None = None,
                   checks: Checks | None = None, cells: pd.DataFrame | None = None,
                   errors: pd.DataFrame | None = None) -> Answer:
    """The answer for a catalog model on ``n_gpus`` x ``gpu`` (keys already checked), the replication's
    (``replication_answer``), with what the switches beyond the paper buy beside it (``beyond_paper``)."""
    from .beyond_paper import beyond_gains, beyond_paper_of

    refuse_gpu(model, gpu)
    a = replication_answer(model, gpu, n_gpus, root, checks, cells, errors)
    beside = beyond_paper_of(a, beyond_gains(root), lambda m, mbs, gas: settings_of(model, gpu, n_gpus, m, mbs, gas))
    return replace(a, beyond_paper=beside)


def refuse_gpu(model: str, gpu: str) -> None:
    """Another vendor's GPU (no published point checks a prediction there), or a precision of ``model``'s recipe
    the GPU lacks (bf16 before Ampere): a ValueError with the reason ``estimate`` gives, which names the
    alternative."""
    from ..catalog.methods import precision_reason, vendor_reason
    from ..catalog.models import get_model

    refusal = vendor_reason(get_gpu(gpu)) or precision_reason(get_model(model).recipe.precision, get_gpu(gpu))
    if refusal:
        raise ValueError(refusal)


def variant_answer(model: str, gpu: str, n_gpus: int) -> Answer:
    """No answer for a catalog model in a precision not its recipe's (``models.at_precision``), with the reason and
    the lower bound at 100% of that precision's peak: the study answers the recipe, and measures the variant beside
    it (the published check carries the vision models' 16-bit rows, ``predict.published_vision``). A precision the
    GPU lacks is refused as the recipe's would be (``refuse_gpu``)."""
    from ..catalog.models import get_model, recipe_model
    from ..estimate import analytic_days

    spec, recipe = get_model(model), get_model(recipe_model(model)).recipe
    refuse_gpu(model, gpu)
    why = (f"the study answers {recipe_model(model)} in its recipe's {recipe.precision}; in "
           f"{spec.recipe.precision} it is measured beside the answer, never as one")
    return Answer(model=model, gpu=gpu, n_gpus=n_gpus, kind="none", days=None, days_low=None, days_high=None,
                  mfu=None, settings=None, rests_on=why, bound_days=float(analytic_days(model, gpu, n_gpus, mfu=1.0)))


def replication_answer(model: str, gpu: str, n_gpus: int, root: str | None = None,
                       checks: Checks | None = None, cells: pd.DataFrame | None = None,
                       errors: pd.DataFrame | None = None) -> Answer:
    """The replication's answer for a catalog model on ``n_gpus`` x ``gpu``, from the paper's methods only.
    ``checks``, ``cells`` (``analysis.paper_cells("table1")``) and ``errors`` (``ranges.observed_errors``,
    computed here by default; ``store.observed`` keeps them) are computed once by ``compute_grid``."""
    from ..analysis import MFU_IMPLAUSIBLE, paper_cells
    from ..estimate import analytic_days
    from ..predict.transfer_validation import measured

    cells = paper_cells("table1") if cells is None else cells
    cell = cells[(cells["model"] == model) & (cells["gpu"] == gpu) & (cells["n_gpus"] == n_gpus)
                 & cells["days"].notna()]
    paper_days = float(cell["days"].iloc[0]) if len(cell) else None
    paper_mfu = float(cell["mfu"].iloc[0]) if len(cell) else None
    base = dict(model=model, gpu=gpu, n_gpus=n_gpus, paper_days=paper_days, paper_mfu=paper_mfu,
                paper_cell=f"Table 1, {model}, {n_gpus} x {gpu}" if len(cell) else None,
                bound_days=float(analytic_days(model, gpu, n_gpus, mfu=1.0)))
    best, _ = measured(root)
    mine = best[(best["model"] == model) & (best["gpu"] == gpu) & (best["n_gpus"] == n_gpus)] if len(best) else best
    if len(mine):
        r = mine.sort_values(["days", "config_id"]).iloc[0]  # two setups of the same GPUs and count: the faster
        days = float(r["days"])
        # The spread of the timed repetitions (the days themselves where a row has none).
        lo, hi = (days * float(r[c]) / float(r["step_time_s"]) if pd.notna(r[c]) else days
                  for c in ("step_lo_s", "step_hi_s"))
        methods = methods_of_row(r)
        return Answer(kind="measured", days=days, days_low=lo, days_high=hi, mfu=float(r["mfu"]),
                      settings=settings_of(model, gpu, n_gpus, methods, r["micro_batch"], r["gas"]),
                      rests_on=f"measured on {r['setup']} ({methods.label()}), row {r['config_id']}",
                      range_basis="the spread of the measured step's timed repetitions",
                      rows=(str(r["config_id"]),), source_setup=str(r["setup"]), **costs(gpu, n_gpus, days), **base)
    p = weighed_prediction(model, gpu, n_gpus, root)
    if p is not None and p.days is not None:
        src = best[(best["setup"] == p.source_setup) & (best["model"] == model)]
        checks = checks or held_out_checks(root)
        # The prediction's own MFU; where its source row has no FLOPs count, the MFU its days imply.
        mfu = p.mfu if p.mfu is not None and p.mfu == p.mfu else base["bound_days"] / p.days
        same_arch = bool(len(src)) and get_gpu(p.gpu).architecture == get_gpu(str(src["gpu"].iloc[0])).architecture
        rng = stated_range(observed_errors(root) if errors is None else errors, "transfer model",
                           validation_class(p.methods, n_gpus), p.methods.offload, same_arch)
        low, high, words = rng.bounds(p.days, p.days_low, p.days_high, mfu)
        return Answer(kind="predicted", days=p.days, days_low=low, days_high=high, mfu=mfu,
                      range_basis=words, range_error=rng.error,
                      settings=settings_of(model, gpu, n_gpus, p.methods, p.micro_batch, p.gas),
                      rests_on=p.basis, rows=tuple(str(c) for c in src["config_id"]), source_setup=p.source_setup,
                      by="transfer model",
                      stated_error=checks.for_carry(str(src["gpu"].iloc[0]) if len(src) else "",
                                                    int(src["n_gpus"].iloc[0]) if len(src) else n_gpus, gpu, n_gpus),
                      **costs(gpu, n_gpus, p.days), **base)
    if paper_mfu is not None and paper_mfu <= MFU_IMPLAUSIBLE:
        return Answer(kind="paper", days=paper_days, days_low=None, days_high=None, mfu=paper_mfu, settings=None,
                      rests_on="the paper's Table 1 (its timings did not synchronise with the GPU: likely too few "
                               "days)", **costs(gpu, n_gpus, paper_days), **base)
    fits = None
    if paper_mfu is not None:
        why = (f"the paper's cell implies MFU {paper_mfu:.0%}, above {MFU_IMPLAUSIBLE:.0%}: not an answer; nothing "
               "measured or predicted")
    elif p is not None:
        fits = smallest_fitting(model, gpu, n_gpus)
        why = f"{p.basis}; {fits.words()}"
    else:
        why = "nothing measured for this model, no prediction, and no cell in the paper's Table 1"
    return Answer(kind="none", days=None, days_low=None, days_high=None, mfu=None, settings=None, rests_on=why,
                  fits_from=fits, **base)


def weighed_prediction(model: str, gpu: str, n_gpus: int, root: str | None = None) -> Prediction | None:
    """The fastest prediction over every method class the method-cost model charges: the measured configuration
    carried by the transfer model (``transfer_validation.predict_setting``), beside the same source re-priced with
    each of the paper's memory-saving combinations valid on ``n_gpus`` (``other_methods.predict_with_methods``,
    at the largest micro-batch the memory model lets each fit on the target). A combination the study measured
    on a single GPU (offloading) is thus weighed against sharding on several GPUs, which fits where plain data
    parallelism does not. A re-priced combination replaces the carried (measured) one only where it is faster by
    more than the machine-to-machine spread of the steps involved (``results.faster_beyond_spread``, as the study
    judges every gain between rows): inside it, the method-cost model cannot tell them apart, and the measured
    configuration stands. None where the model has no complete search."""
    from ..catalog.methods import search_space
    from ..predict.method_costs import host_rates_of
    from ..predict.other_methods import gpu_optimizer_rate, predict_with_methods
    from ..predict.transfer import source_from_row
    from ..results import faster_beyond_spread
    from ..predict.transfer_validation import choose_source, configurations, measured, predict_setting

    first = predict_setting(model, gpu, n_gpus, root)
    row = choose_source(model, gpu, n_gpus, root)
    if row is None:
        return first
    rows = configurations(root)
    src = source_from_row(row.to_dict(), measured(root)[1])
    try:
        host_rates = host_rates_of(rows)
    except ValueError:  # nothing offloaded to take the host optimizer's rate from: offloading is not weighed
        host_rates = None
    gpu_rate = gpu_optimizer_rate(rows[rows["setup"] == row["setup"]])
    base = replace(src.methods, checkpointing=False, sharding="none", offload=False)
    carried = first if first is not None and first.days is not None and _host_fits(model, gpu, n_gpus, first.methods) \
        else None
    found = [carried] if carried is not None else []
    for m in search_space(n_gpus, base)[0]:
        if (first is not None and m == first.methods) or (m.offload and host_rates is None):
            continue
        q = predict_with_methods(src, m, gpu, n_gpus, host_rates or {}, gpu_rate)
        if q.days is not None:
            found.append(q)
    if not found:  # where the carried configuration's offloaded states outgrow the host, say so
        return first if first is None or first.days is None else \
            predict_with_methods(src, first.methods, gpu, n_gpus, host_rates or {}, gpu_rate)
    fastest = min(found, key=lambda q: q.days)
    if carried is None or fastest is carried:
        return fastest
    spread = _step_spreads(root).of(carried.methods.offload, fastest.methods.offload)
    return fastest if faster_beyond_spread(fastest.days, carried.days, spread) else carried


def _host_fits(model: str, gpu: str, n_gpus: int, methods: Methods) -> bool:
    """Whether the states ``methods`` offload fit the host of the machine the answer stands for (unknown: yes)."""
    from ..catalog.config import Config
    from ..estimate import host_fits

    return host_fits(Config(model, gpu, n_gpus, methods=methods))


@lru_cache(maxsize=4)
def _step_spreads(root: str | None):
    from ..analysis import step_spreads

    return step_spreads(root)


def smallest_fitting(model: str, gpu: str, n_gpus: int) -> Fitting:
    """Where nothing fits ``n_gpus`` x ``gpu``: the smallest setup that would by the memory model, with any of the
    paper's memory-saving combinations (more of the same GPU first, up to ``GPU_COUNTS``' largest, then the
    catalog GPU of the least memory that fits at that count)."""
    from ..catalog.config import Config
    from ..catalog.hardware import every_gpu
    from ..catalog.methods import free_lunch_for, hardware_reason, methods_spec, search_space
    from ..catalog.models import get_model
    from ..estimate import max_micro_batch

    def fitting(g, n: int) -> str | None:
        for m in search_space(n, free_lunch_for(g))[0]:
            if max_micro_batch(Config(model, g.key, n, methods=m), g.memory_gb) is not None \
                    and _host_fits(model, g.key, n, m):
                return methods_spec(m)
        return None

    target = get_gpu(gpu)
    for n in (c for c in GPU_COUNTS if c > n_gpus):
        m = fitting(target, n)
        if m:
            return Fitting(gpu, n_gpus, n, gpu, m)
    precision = get_model(model).recipe.precision
    n = max(GPU_COUNTS[-1], n_gpus)
    for g in sorted(every_gpu().values(), key=lambda g: (g.memory_gb, g.key)):
        if g.memory_gb > target.memory_gb and not hardware_reason(free_lunch_for(g), g, precision):
            m = fitting(g, n)
            if m:
                return Fitting(gpu, n_gpus, n, g.key, m)
    return Fitting(gpu, n_gpus, n)


def compute_grid(models: Iterable[str] | None = None, gpus: Iterable[str] | None = None,
                 counts: Iterable[int] = GPU_COUNTS, root: str | None = None,
                 checks: Checks | None = None, errors: pd.DataFrame | None = None) -> list[Answer]:
    """``catalog_answer`` for every model, GPU and count (catalog order); ``errors``: the held-out predictions'
    errors (``ranges.observed_errors``, computed here by default)."""
    from ..catalog.hardware import catalog as gpu_catalog
    from ..catalog.models import CATALOG

    from ..analysis import paper_cells

    checks = checks or held_out_checks(root)
    cells = paper_cells("table1")
    errors = observed_errors(root) if errors is None else errors
    return [catalog_answer(m, g, int(n), root, checks, cells, errors) for m in (models or CATALOG)
            for g in (gpus or gpu_catalog()) for n in counts]


def other_gpu_answers(models: Iterable[str] | None = None, counts: Iterable[int] = GPU_COUNTS,
                      root: str | None = None, checks: Checks | None = None,
                      errors: pd.DataFrame | None = None) -> tuple[list[Answer], list[dict]]:
    """``catalog_answer`` for every catalog model on every GPU of data/gpus.csv outside the study's (file order),
    and the cells it refuses, each {model, gpu, n_gpus, reason}: a GPU refuses a recipe it cannot run (bf16 before
    Ampere), and such a cell has no answer to keep (``estimate`` names the alternative)."""
    from ..analysis import paper_cells
    from ..catalog.hardware import catalog as gpu_catalog, every_gpu
    from ..catalog.models import CATALOG

    checks = checks or held_out_checks(root)
    cells = paper_cells("table1")
    errors = observed_errors(root) if errors is None else errors
    answers, refused = [], []
    for m in (models or CATALOG):
        for g in (k for k in every_gpu() if k not in gpu_catalog()):
            for n in counts:
                try:
                    answers.append(catalog_answer(m, g, int(n), root, checks, cells, errors))
                except ValueError as exc:
                    refused.append({"model": m, "gpu": g, "n_gpus": int(n), "reason": str(exc)})
    return answers, refused


def nan_to_none(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x
