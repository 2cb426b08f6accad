"""Step time of a decoder the study never measured, from the kinds of GPU work its shape implies.

MFU interpolated in parameters alone (``planning.interpolate_mfu``) misses what makes two decoders of one size
train at different speeds: a large vocabulary's loss, a wide or gated MLP, grouped key-value heads, the
sequence length. Here a decoder's training step is counted in units of work per kind of GPU work
(``measure.profile``'s kinds), on the meta device, never downloaded:

- **matrix products**: FLOPs, 6 x the weight matrices outside the embedding tables (linear and GPT-2's Conv1D
  layers, the LM head included, tied or not) x tokens, each matrix's FLOPs weighted by how much slower per FLOP
  its products run than the largest ones (``results.gemm.GemmCurve``: the GEMM sweep of the profiled GPU, or of
  one of its architecture), since a product's rate depends on its size (micro-batch x sequence x the matrix),
  and an LM head whose vocabulary is no multiple of 8 by how much slower the sweep found such a layer than its
  padded twin (``GemmCurve.unaligned``; carried to other GPUs as a share of the matrix products);
- **attention** (a fused kernel: no attention matrix in memory): layers x (heads x head size) x (sequence +
  offset) x tokens: the score and value products of forward and backward grow with the sequence, the reads and
  writes of queries, keys, values and outputs with the tokens alone (``work_evidence.attention_offset``, from
  profiles of one shape at two sequence lengths), so attention at 8,192 costs less per FLOP than at 2,048;
- **loss and softmax**: tokens x vocabulary, the fp32 cross-entropy over the logits;
- **other memory-bound kernels** (elementwise, normalisation, copies on the GPU): layers x (hidden + MLP width) x
  tokens, the elements of the residual stream and of the MLP's intermediate layer that these kernels read and
  write in every layer (the MLP width is the config's intermediate size, four times the hidden size where it
  states none). The two widths are weighted alike: the Pythia decoders the rates come from all have an MLP four
  times the hidden size, so their profiles cannot tell the two apart;
- **the passes over every weight that each micro-step makes** (``weight_passes_s``): under bf16 autocast with
  fp32 weights, every micro-step casts each weight to bf16 (read 4 bytes, write 2), casts its gradient back to
  fp32 (read 2, write 4) and, after the step's first, adds it to the gradient held (read 4 + 4, write 4):
  ``work_units.WEIGHT_BYTES`` a parameter, at the GPU's streaming bandwidth from its sweep
  (``work_evidence.Evidence.bandwidth``), not calibrated. It is memory-bound time, taken out of the profiles'
  memory-bound seconds before their per-token rate is taken. A decoder of billions of parameters at a few
  thousand tokens a micro-step spends much of its memory-bound time here (the profiles of Llama-3.2-3B, Gemma-2B
  at 4,096 and Qwen2.5-3B, where the accumulation's fp32 add was the largest memory-bound kernel); the Pythia
  profiles at their optima, less;
- **the GPU's idle time** (host work, kernel launches): per micro-step and layer;
- **the optimizer step**: per parameter (each GPU's shard of the parameters under ZeRO and FSDP).

The seconds per unit of each kind come from the kernel profiles of the catalog's transformer decoders (Pythia)
measured on one GPU with the free-lunch settings (``analysis.profiles``), each taken at or above the micro-batch
its measured optimum ran at (``work_evidence.measured_optima``: a profile at a smaller one has more idle and
memory-bound time per unit and made every prediction too slow): the central value is the rate at the decoder's
hidden size (``rates_at``: the profiles' seconds per unit differ with the width, most of all the memory-bound
kernels', higher in Pythia-160M's profiles than in the wider Pythias'), the range their lowest and highest. So
the rates are calibrated on the catalog's decoders only; the GEMM sweep sets how a matrix's size changes its
rate, and the profiles of decoders outside the catalog at two sequence lengths set attention's per-token part
(``work_evidence``). The decoders outside the catalog that the study measured (``work_validation.config_decoders``)
test it; those measured before these two were added are no longer held out for them. A target other than a
profiled setup's GPU is reached by the transfer model (``transfer.predict``), from the predicted step on a
profiled GPU. A mixture of experts is charged for the experts a token runs: each routed expert's matrices at its
share of the tokens under balanced routing (``estimate.moe.matrix_products``), at the rate of the layer's grouped
product, and the routing's gathers as memory-bound work. A precision other than the profiles' is not modelled
(``not_modelled``). The units are counted in ``work_units``; this module calibrates their rates and predicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np
import pandas as pd

from ..catalog.hardware import get_gpu
from . import expert_parallel as ep
from .method_costs import collective_s, measured_host_rates, method_s, optimizer_shards, recompute_s
from ..catalog.methods import FREE_LUNCH, Methods
from .transfer import DEFAULT_SPLIT, MFU_CAP, Prediction, Source, min_step_s, predict
from .switch_work import block_share, why_not_charged, with_switches
from .work_evidence import PLAIN, Evidence
from .work_units import KINDS, built_in, counted_shape, weight_passes_s, work
from ..catalog.units import days_for

# Profile kinds (``measure.profile``) summed into each kind of work above; idle is the step's wall minus busy time.
PROFILE_KINDS = {"matmul": ("matrix multiplication",), "attention": ("attention",), "loss": ("loss and softmax",),
                 "memory": ("elementwise and other", "normalisation", "memory copy"), "optimizer": ("optimizer",)}
# The part of transfer.Source's split each kind scales with on another GPU (idle and optimizer aside).
SPLIT_OF = {"matmul": "flop", "attention": "flop", "loss": "memory", "memory": "memory", "idle": "idle"}
CALIBRATION_FAMILY = "pythia"  # the catalog's transformer decoders: the profiles the rates come from
CALIBRATION_PRECISION = "bf16"  # the precision they train in (paper Table 3), the only one the rates are for


@dataclass(frozen=True)
class StepPrediction:
    """A predicted step on a profiled setup: seconds per kind (central), and the step's range."""

    setup: str
    gpu: str
    micro_batch: int
    gas: int
    seconds: dict
    low_s: float
    high_s: float
    calibration: tuple  # the catalog models whose profiles gave the rates

    @property
    def step_s(self) -> float:
        return float(sum(self.seconds.values()))




@lru_cache(maxsize=None)
def not_modelled(model: str) -> str | None:
    """Why the work model has no answer for ``model``, or None where it has one."""
    from ..catalog.models import get_model

    spec = get_model(model)
    if spec.recipe.precision != CALIBRATION_PRECISION:
        return f"it trains in {spec.recipe.precision}; the profiles are {CALIBRATION_PRECISION} kernels"
    if spec.transformer_shape is None:
        return "it is not a transformer decoder"
    if counted_shape(model).experts > 1 and spec.moe is None:
        return "it is a mixture of experts whose experts the study cannot count per token"
    return None


def calibration_points(profiles: pd.DataFrame, evidence: Evidence = PLAIN) -> pd.DataFrame:
    """Seconds per unit of work, per kind, for every profile of a catalog decoder on one GPU with free-lunch
    settings at or above its measured optimum's micro-batch (``evidence.optima``; a model without one is kept):
    one row per (setup, configuration), the units counted with ``evidence``."""
    from ..catalog.models import CATALOG

    family = {k for k, s in CATALOG.items() if s.family == CALIBRATION_FAMILY}
    p = profiles[~profiles["tiny"].astype(bool) & (profiles["timer"] == "gpu kernels")
                 & profiles["model"].isin(family) & (profiles["methods_label"] == FREE_LUNCH.label())
                 & (profiles["n_gpus"] == 1)]
    optimum = [evidence.optima.get((s, m), 0) for s, m in zip(p["setup"], p["model"])]
    p = p[p["micro_batch"].astype(int) >= optimum]
    rows = []
    for (setup, config_id), g in p.groupby(["setup", "config_id"]):
        first = g.iloc[0]
        seconds = g.groupby("kind")["seconds"].sum()
        w = work(first["model"], int(first["micro_batch"]), int(first["gas"]), evidence.curve_for(first["gpu"]),
                 evidence.attention_offset)
        row = {"setup": setup, "gpu": first["gpu"], "model": first["model"], "config_id": config_id,
               "micro_batch": int(first["micro_batch"]), "gas": int(first["gas"]),
               "step_wall_s": float(first["step_wall_s"])}
        for kind, names in PROFILE_KINDS.items():
            row[kind] = float(seconds.reindex(list(names)).fillna(0).sum()) / w.get(kind)
        passes = weight_passes_s(first["model"], int(first["gas"]), str(first["gpu"]), evidence)
        row["memory"] = max(0.0, row["memory"] - passes / w.memory)
        row["idle"] = max(0.0, float(first["step_wall_s"]) - float(first["busy_s"])) / w.idle
        rows.append(row)
    return pd.DataFrame(rows, columns=["setup", "gpu", "model", "config_id", "micro_batch", "gas", "step_wall_s",
                                       *KINDS])


def profiled_setups(points: pd.DataFrame) -> dict[str, str]:
    """GPU key -> the setup whose profiles calibrate it (the one with the most profiled decoders)."""
    counts = points.groupby(["gpu", "setup"]).size().reset_index(name="n")
    counts = counts.sort_values(["gpu", "n", "setup"], ascending=[True, False, True])
    return dict(counts.drop_duplicates("gpu")[["gpu", "setup"]].itertuples(index=False, name=None))


def rates_at(points: pd.DataFrame, hidden: int) -> dict[str, float]:
    """Seconds per unit of each kind (``KINDS``) at a decoder of ``hidden`` width, from one setup's calibration
    ``points``: each profiled decoder's (the median of its profiles; one without a rate of a kind left out of that
    kind), interpolated in the logarithm of their hidden sizes and held at the smallest's and the largest's beyond
    them. Nothing is fitted: a decoder as wide as a profiled one gets that one's rates."""
    per_model = points.groupby("model")[list(KINDS)].median()
    widths = [math.log(counted_shape(m).hidden) for m in per_model.index]
    per_model = per_model.assign(width=widths).sort_values("width")
    x = math.log(hidden)
    return {k: float(np.interp(x, *per_model[["width", k]].dropna().to_numpy().T)) for k in KINDS}


def rate_at(points: pd.DataFrame, kind: str, hidden: int) -> float:
    """Seconds per unit of ``kind`` at a decoder of ``hidden`` width (``rates_at``)."""
    return rates_at(points, hidden)[kind]


def predict_on_setup(model: str, setup: str, points: pd.DataFrame, micro_batch: int, gas: int,
                     leave_out: str | None = None, evidence: Evidence = PLAIN,
                     weights: str = "float32", elsewhere: float = 0.0) -> StepPrediction:
    """The step of ``model`` on ``setup``'s GPU from the rates of that setup's profiled decoders (without
    ``leave_out``'s; ``points`` from ``calibration_points`` with the same ``evidence``): seconds per kind at
    the rates at its hidden size (``rates_at``); the range sums each kind's lowest and highest rate. ``weights``:
    the dtype the weights are built in (``work_units.WEIGHT_BYTES``); ``elsewhere``, weights that other GPUs hold
    (``weight_passes_s``)."""
    mine = points[(points["setup"] == setup) & (points["model"] != leave_out)]
    if mine.empty:
        raise ValueError(f"no profiled {CALIBRATION_FAMILY} decoder on {setup!r} to calibrate the work model")
    gpu = str(mine["gpu"].iloc[0])
    w = work(model, micro_batch, gas, evidence.curve_for(gpu), evidence.attention_offset)
    passes = weight_passes_s(model, gas, gpu, evidence, weights, elsewhere)
    rates = rates_at(mine, counted_shape(model).hidden)
    seconds = {k: rates[k] * w.get(k) for k in KINDS}
    seconds["memory"] += passes
    low = passes + sum(float(mine[k].min()) * w.get(k) for k in KINDS)
    high = passes + sum(float(mine[k].max()) * w.get(k) for k in KINDS)
    return StepPrediction(setup, gpu, micro_batch, gas, seconds, low, high,
                          tuple(sorted(mine["model"].unique())))


def _micro_batch(model: str, gpu: str, n_gpus: int = 1, methods: Methods = FREE_LUNCH,
                 given: int | None = None) -> tuple[int, int] | None:
    """(micro-batch, accumulation steps) on each of ``n_gpus`` x ``gpu`` with ``methods``: the ``given``
    micro-batch, else the memory model's largest, and the steps that make up each GPU's share of the batch."""
    from ..catalog.config import Config
    from ..estimate import max_micro_batch

    config = Config(model, gpu, n_gpus, methods=methods)
    mbs = given if given is not None else max_micro_batch(config, get_gpu(gpu).memory_gb)
    if mbs is None:
        return None
    mbs = min(mbs, config.per_gpu_batch)
    return mbs, max(1, config.per_gpu_batch // mbs)


def with_recompute(model: str, seconds: dict) -> dict:
    """The work model's seconds per kind with activation checkpointing's recompute added
    (``method_costs.recompute_s``): one more forward of the checkpointed blocks, i.e. of their matrix products
    (every weight matrix but the LM head), attention, memory-bound kernels and per-layer launches; the head, the
    loss and the optimizer are not recomputed."""
    in_blocks = {"matmul": block_share(model), "attention": 1.0, "memory": 1.0, "idle": 1.0}
    return {k: v + recompute_s(v * in_blocks.get(k, 0.0)) for k, v in seconds.items()}


def predict_decoder(model: str, gpu: str, n_gpus: int, points: pd.DataFrame, methods: Methods = FREE_LUNCH,
                    host_rates: Mapping[str, float] | None = None, micro_batch: int | None = None,
                    evidence: Evidence = PLAIN, weights: str = "float32",
                    expert_parallel: bool = False) -> Prediction | None:
    """Step, days (with a range) and MFU of ``model`` (a registered or catalog decoder key) with ``methods``
    (free-lunch, with any memory-saving methods on top) on ``n_gpus`` x ``gpu``, from the work model's
    calibration ``points`` (``calibration_points``; the shipped runs' are kept, ``store.work_model``), each GPU at
    ``micro_batch`` where it is given (a run whose micro-batch is known), else at the largest micro-batch the
    memory model lets ``methods`` fit. Each GPU's share of the batch is the work
    model's step on a profiled GPU (with checkpointing's recompute: ``with_recompute``); on a profiled GPU that is the
    answer, anywhere else the transfer model scales it from the profiled setup of the same architecture, else of
    the nearest memory size. The methods' other costs are then added on the target (``method_costs``): the
    collectives over the link between the GPUs, offloading's host copies and the host's optimizer step (at
    ``host_rates``, default ``method_costs.measured_host_rates``). ``evidence`` is what ``points`` were counted
    with besides the profiles (``work_evidence``: the GEMM sweep's curve, attention's offset; ``PLAIN`` for none;
    the shipped runs' are kept with the points, ``store.work_model``). None
    where no profile calibrates it, the work model does not model it (``not_modelled``, or free-lunch is not on)
    or no micro-batch fits. ``micro_batch`` replaces the memory model's (a measured run's, to check the step
    alone); ``weights``, the dtype the model is built in (a measured run's; the study builds fp32), which
    ``methods`` may turn 16-bit (``built_in``). ``expert_parallel``: a mixture's routed experts spread over the
    GPUs, as a published run had them (``expert_parallel``; no method of the study, and never with offloading)."""
    from ..estimate import BYTES, model_flops_per_step, model_stats
    from ..catalog.models import get_model

    setups = profiled_setups(points)
    if not setups or not_modelled(model) or not methods.free_lunch or why_not_charged(methods, evidence.switches):
        return None
    if expert_parallel and methods.offload:
        raise ValueError("expert parallelism is charged only beside a sharding on the GPUs, not with offloading")
    elsewhere = ep.experts_elsewhere(model, n_gpus) if expert_parallel else 0.0
    target = get_gpu(gpu)
    # As transfer_validation.choose_source ranks measured setups: the same GPU, the same architecture, then the
    # nearest memory size.
    source_gpu = min(setups, key=lambda g: (g != target.key, get_gpu(g).architecture != target.architecture,
                                            abs(get_gpu(g).memory_gb - target.memory_gb), g))
    fit = _micro_batch(model, target.key, n_gpus, methods, micro_batch)
    if fit is None:
        return None
    mbs, gas = fit
    step = predict_on_setup(model, setups[source_gpu], points, mbs, gas, evidence=evidence,
                            weights=built_in(methods, weights), elsewhere=elsewhere)
    seconds = with_recompute(model, step.seconds) if methods.checkpointing else dict(step.seconds)
    seconds = with_switches(model, seconds, methods, evidence.switches)
    # The profiles' optimizer rate is per parameter: ZeRO and FSDP step each GPU's shard alone; offloaded, the host
    # runs it (below).
    gpu_optimizer = 0.0 if methods.offload else seconds["optimizer"] / optimizer_shards(methods, n_gpus)
    seconds["optimizer"] = gpu_optimizer
    scale = sum(seconds.values()) / step.step_s
    spec = get_model(model)
    precision = spec.recipe.precision
    flops = float(model_flops_per_step(spec))
    basis = (f"work model: the {', '.join(step.calibration)} profiles on {step.setup} "
             "(seconds per unit of each kind of work)")
    optimizer = gpu_optimizer
    if target.key == source_gpu:
        central, low, high = sum(seconds.values()), step.low_s * scale, step.high_s * scale
    else:
        split = dict.fromkeys(DEFAULT_SPLIT, 0.0)
        for kind, part in SPLIT_OF.items():
            split[part] += seconds[kind]
        micro = sum(split.values())
        src = Source(setup=step.setup, model=model, gpu=source_gpu, n_gpus=n_gpus, methods=methods,
                     micro_batch=mbs, gas=gas, step_time_s=micro + gpu_optimizer, model_flops_per_step=flops,
                     optimizer_s=gpu_optimizer, split={k: v / micro for k, v in split.items()},
                     split_basis="work model", copies_in_step=False)
        p = predict(src, target.key, n_gpus, micro_batch=mbs)
        basis += "; " + p.basis
        optimizer = p.optimizer_s
        # The transfer's own range, widened by the work model's relative range on the source GPU.
        central, low, high = p.step_time_s, p.step_low_s * step.low_s / step.step_s, \
            p.step_high_s * step.high_s / step.step_s
    if methods.checkpointing:
        basis += "; checkpointing recomputes the blocks' forward"
    if spec.moe is not None:
        basis += (f"; a mixture of experts: each of the {spec.moe.experts} experts' products at the "
                  f"{spec.moe.per_token}/{spec.moe.experts} of the tokens balanced routing sends it, at the rate of "
                  "the layer's grouped product, the routing's gathers as memory-bound work (calibrated on dense "
                  "decoders' profiles; the mixtures measured on one H100 check it: "
                  "notebooks/runs/h100x1/evidence/moe/)")
    fitted = [s for s in methods.beyond_switches() if s in evidence.switches]
    if fitted:
        basis += (f"; {', '.join(fitted)} charged as fitted to the study's measured rows of "
                  f"{'each' if len(fitted) > 1 else 'it'} alone on the catalog decoders")
    rates = host_rates if host_rates is not None or not methods.offload else measured_host_rates()
    # Experts spread over the GPUs are neither gathered nor reduced: the collectives cover the other weights.
    params = float(model_stats(model).params) - (ep.routed_experts(model) if expert_parallel else 0.0)
    dtype_bytes = BYTES[precision]
    costs = method_s(methods, n_gpus, target, params, dtype_bytes, gas, rates or {})
    if expert_parallel:
        costs["expert all-to-all"] = ep.all_to_all_s(model, target.key, n_gpus, mbs * gas * spec.recipe.seq_len,
                                                     methods.checkpointing)
        basis += (f"; the routed experts spread over the {n_gpus} GPUs (expert parallelism, as the run had them: "
                  "never gathered nor reduced, the tokens sent to them and back)")
    charged = [f"{k} {v:.3g} s" for k, v in costs.items() if v]
    if charged:
        basis += "; per step: " + ", ".join(charged)
    hidden = collective_s(methods, n_gpus, target, params, dtype_bytes, gas, max(0.0, central - gpu_optimizer) / gas)
    hidden += costs.get("expert all-to-all", 0.0)  # the experts wait for their tokens: nothing hides it
    comm = costs["collectives"] + costs.get("expert all-to-all", 0.0)
    copies, host = costs["host copies"], costs["host optimizer"]
    central, low, high = (central + comm + copies + host, low + hidden + 0.5 * copies + 0.8 * host,
                          high + 2.0 * (comm + copies) + 1.25 * host)
    # No answer, nor either end of its range, claims more than MFU_CAP (a lower bound then).
    floor = min_step_s(flops, target, n_gpus, precision, methods.tf32)
    capped = central < floor
    central, low, high = (max(s, floor) for s in (central, low, high))
    if capped:
        basis += f"; capped at {MFU_CAP:.0%} MFU (a lower bound)"
    peak = target.peak_flops(precision, methods.tf32)
    mfu = flops / (central * n_gpus * peak)
    days = [days_for(spec.recipe.steps, s) for s in (central, low, high)]
    return Prediction(model, step.setup, target.key, n_gpus, mbs, gas, central, low, high, *days, mfu, capped,
                      basis, methods, optimizer, peak)
