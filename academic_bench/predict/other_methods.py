"""A measured configuration carried to other memory-saving methods: the prediction for a configuration the study
did not measure anywhere with those methods, from one of the same model it did measure with others.

The measured step is first re-priced on its own GPU and count (``with_methods``), with what each method does
(``method_costs``): the source methods' modelled extras come off (collectives, offloading's host copies), and so
do its optimizer step and, where it checkpointed, the recompute of its blocks; the target methods' recompute,
optimizer step (on the host at the rate the study measured for that library with offloading, else on the GPU at
the rate the source setup measured) and extras go on. The transfer model (``transfer.predict``) then carries that
step to the target GPU and count, at the micro-batch the memory model lets the target methods fit there. Nothing
is fitted: the rates come from rows the caller passes, so a held-out check can leave the target's setup out.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping

import pandas as pd

from ..catalog.hardware import get_gpu
from ..catalog.methods import Methods
from ..estimate.stats import RECOMPUTE_FRACTION, recomputed_share
from .method_costs import collective_s, host_copy_s, host_optimizer_s, optimizer_shards
from .transfer import Prediction, Source, accumulation, methods_of_row, predict, source_from_row


def recompute_factor(model: str, m: Methods) -> float:
    """How much longer the micro-steps' compute is with ``m``'s checkpointing than without (1 without)."""
    return 1.0 + RECOMPUTE_FRACTION * recomputed_share(model) if m.checkpointing else 1.0


def gpu_optimizer_rate(rows: pd.DataFrame) -> float | None:
    """Seconds per parameter of the optimizer step on the GPU, from result rows that did not offload: the median
    of the optimizer phase x the GPUs that shard it / parameters (None where no such row exists)."""
    from ..estimate import model_stats

    rows = rows[~rows["offload"].astype(bool) & rows["optimizer_median_s"].notna()]
    if rows.empty:
        return None
    shards = rows["n_gpus"].where(rows["sharding"] != "none", 1).astype(float)  # as optimizer_shards
    return float((rows["optimizer_median_s"] * shards / rows["model"].map(lambda k: model_stats(k).params)).median())


def _extras_s(src: Source, m: Methods, gas: int) -> float:
    """The modelled seconds per step ``m`` adds on the source's GPUs beyond compute and the optimizer step: the
    collectives and offloading's host copies (``method_costs``)."""
    from ..catalog.models import get_model
    from ..estimate import BYTES, model_stats

    gpu, params = get_gpu(src.gpu), float(model_stats(src.model).params)
    c = BYTES[get_model(src.model).recipe.precision]
    return collective_s(m, src.n_gpus, gpu, params, c, gas) + host_copy_s(m, src.n_gpus, gpu, params, c, gas)


def with_methods(src: Source, methods: Methods, host_rates: Mapping[str, float],
                 gpu_rate: float | None, gas: int | None = None) -> Source:
    """``src`` re-priced with ``methods`` on its own GPUs, at its micro-batch (module docstring): its compute
    without its own methods' recompute and extras, with ``methods``' recompute, optimizer step and extras.
    ``host_rates``: the host optimizer's seconds per parameter per library (``method_costs.host_rates_of``);
    ``gpu_rate``: the GPU optimizer's (``gpu_optimizer_rate``), used where ``src`` offloaded and ``methods`` do
    not (None: the optimizer is left out there, a few milliseconds in the study's rows). ``gas``: the
    accumulation steps the prediction will run (default the source's). ``methods``' extras are charged for that
    many micro-steps: some are paid every micro-step (FSDP's offloaded weights cross PCIe in each one), and the
    transfer model carries the extras (``sync_s``) as they are, whatever micro-batch the target runs."""
    from ..estimate import model_stats

    if methods == src.methods:
        return src
    old = _extras_s(src, src.methods, src.gas)
    compute = max(0.0, src.step_time_s - src.optimizer_s - old) / recompute_factor(src.model, src.methods)
    compute *= recompute_factor(src.model, methods)
    params = float(model_stats(src.model).params)
    if methods.offload:
        optimizer = host_optimizer_s(methods, src.n_gpus, params, host_rates)
    elif not src.methods.offload:  # the GPU's optimizer step measured, each GPU stepping its shard
        optimizer = (src.optimizer_s * optimizer_shards(src.methods, src.n_gpus)
                     / optimizer_shards(methods, src.n_gpus))
    else:
        optimizer = (gpu_rate or 0.0) * params / optimizer_shards(methods, src.n_gpus)
    extras = _extras_s(src, methods, gas or src.gas)
    # The re-priced micro-steps hold no copies: all of them are in the extras, for the target's micro-steps.
    return replace(src, methods=methods, step_time_s=compute + optimizer + extras, optimizer_s=optimizer,
                   sync_s=extras, copies_in_step=False)


def predict_with_methods(src: Source, methods: Methods, gpu: str, n_gpus: int, host_rates: Mapping[str, float],
                         gpu_rate: float | None = None) -> Prediction:
    """The configuration of ``src``'s model with ``methods`` on ``n_gpus`` x ``gpu``: ``src`` re-priced
    (``with_methods``), carried by the transfer model at the largest micro-batch the memory model lets
    ``methods`` fit on the target. The basis names both steps."""
    from ..catalog.config import Config
    from ..estimate import host_memory_verdict, max_micro_batch

    target = get_gpu(gpu)
    # Offloaded states must fit the host of the machine the answer stands for (the paper's machine for that many
    # GPUs): settings that do not are no answer, however fast they would be.
    host = host_memory_verdict(Config(src.model, target.key, n_gpus, methods=methods)) if methods.offload else None
    if host is not None and host["fits"] is False:
        return Prediction(src.model, src.setup, target.key, n_gpus, None, None, None, None, None, None, None, None,
                          None, False, f"{methods.label()}: {host['reason']}", methods)
    if methods == src.methods:
        return predict(src, gpu, n_gpus)
    mbs = max_micro_batch(Config(src.model, target.key, n_gpus, methods=methods), target.memory_gb)
    basis = f"re-priced from {src.methods_label} to {methods.label()} by what each method does"
    if mbs is None:  # the memory model fits none; the source's micro-batch was for other methods
        return Prediction(src.model, src.setup, target.key, n_gpus, None, None, None, None, None, None, None, None,
                          None, False, f"{basis}; no micro-batch fits the target's memory with them", methods)
    _, gas = accumulation(src, n_gpus, mbs)
    p = predict(with_methods(src, methods, host_rates, gpu_rate, gas), target.key, n_gpus, micro_batch=mbs)
    return replace(p, basis=f"{p.basis}; {basis}")


def _nearest(row: pd.Series, target: pd.Series) -> tuple:
    """How far ``row``'s methods and setup are from ``target``'s, least first: offloading, checkpointing, the
    library (DeepSpeed or FSDP), the sharding; then the GPU, its architecture, its memory and the count (as
    ``transfer_validation.choose_source`` ranks setups)."""
    a, b = methods_of_row(row), methods_of_row(target)
    g, t = get_gpu(str(row["gpu"])), get_gpu(str(target["gpu"]))
    return (a.offload != b.offload, a.checkpointing != b.checkpointing, a.sharding[:4] != b.sharding[:4],
            a.sharding != b.sharding, g.key != t.key, g.architecture != t.architecture,
            abs(g.memory_gb - t.memory_gb), abs(math.log(int(row["n_gpus"]) / int(target["n_gpus"]))), row["setup"])


def predict_from_others(target: pd.Series, others: pd.DataFrame, profiles: pd.DataFrame,
                        rate_rows: pd.DataFrame | None = None) -> tuple[Prediction | None, dict]:
    """The counted row ``target``'s configuration predicted from ``others`` (counted rows, none of them its own)
    and ``profiles``: the same configuration where ``others`` measured it, carried by the transfer model; else
    the model's row nearest in methods with the same compile, kernel and TF32 switches (``_nearest``), re-priced
    (``predict_with_methods``; host rates from ``rate_rows``, default ``others``; the GPU optimizer's rate from
    the source setup's rows). Returns the prediction and what it rests on (``source_setup``,
    ``source_methods``, ``split_basis``, ``same_architecture``), or None and ``why_not``."""
    from .method_costs import host_rates_of

    m, gpu, n = methods_of_row(target), str(target["gpu"]), int(target["n_gpus"])
    switches = [(x.compile, x.kernels, x.tf32) == (m.compile, m.kernels, m.tf32)
                for x in (methods_of_row(r) for _, r in others.iterrows())]
    mine = others[(others["model"] == target["model"]).to_numpy() & switches] if len(others) else others
    if mine.empty:
        return None, {"why_not": "no other setup measured the model with these compile, kernel and TF32 switches"}
    s = min((r for _, r in mine.iterrows()), key=lambda r: _nearest(r, target))
    try:
        rates = host_rates_of(others if rate_rows is None else rate_rows) if m.offload else {}
    except ValueError as e:  # nothing offloaded to take the host's rate from
        return None, {"why_not": str(e)}
    src = source_from_row(s.to_dict(), profiles)
    p = predict_with_methods(src, m, gpu, n, rates, gpu_optimizer_rate(others[others["setup"] == s["setup"]]))
    return p, {"source_setup": s["setup"], "source_methods": s["methods_label"], "split_basis": src.split_basis,
               "same_architecture": get_gpu(str(s["gpu"])).architecture == get_gpu(gpu).architecture}
