"""Step time of a decoder the study never measured, from the kinds of GPU work its shape implies.

MFU interpolated in parameters alone (``planning.interpolate_mfu``) misses what makes two decoders of one size
train at different speeds: a large vocabulary's loss, a wide or gated MLP, grouped key-value heads, the
sequence length. Here a decoder's training step is counted in units of work per kind of GPU work
(``measure.profile``'s kinds), on the meta device, never downloaded:

- **matrix products**: FLOPs, 6 x the weight matrices outside the embedding tables (linear and GPT-2's Conv1D
  layers, the LM head included, tied or not) x tokens;
- **attention** (a fused kernel: no attention matrix in memory): layers x (heads x head size) x sequence x
  tokens, the score and value products of forward and backward;
- **loss and softmax**: tokens x vocabulary, the fp32 cross-entropy over the logits;
- **other memory-bound kernels** (elementwise, normalisation, copies on the GPU): layers x (hidden + MLP width) x
  tokens, the elements of the residual stream and of the MLP's intermediate layer that these kernels read and
  write in every layer (the MLP width is the config's intermediate size, four times the hidden size where it
  states none). The two widths are weighted alike: the Pythia decoders the rates come from all have an MLP four
  times the hidden size, so their profiles cannot tell the two apart;
- **the GPU's idle time** (host work, kernel launches): per micro-step and layer;
- **the optimizer step**: per parameter.

The seconds per unit of each kind come from the kernel profiles of the catalog's transformer decoders (Pythia)
measured on one GPU with the free-lunch settings (``analysis.profiles``): the central value is their median, the
range their lowest and highest. So the model is calibrated on the catalog's decoders only; the decoders outside
the catalog that the study measured (``transfer_validation.config_decoders``) test it. A target other than a
profiled setup's GPU is reached by the transfer model (``transfer.predict``), from the predicted step on a
profiled GPU. A mixture of experts (only some experts run per token) is not modelled, nor a precision other than
the profiles' (``modelled``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import pandas as pd

from .hardware import get_gpu
from .methods import FREE_LUNCH
from .models.from_config import EXPERT_KEYS
from .transfer import DEFAULT_SPLIT, MFU_CAP, Prediction, Source, min_step_s, predict
from .units import days_for

KINDS = ("matmul", "attention", "loss", "memory", "idle", "optimizer")
# Profile kinds (``measure.profile``) summed into each kind of work above; idle is the step's wall minus busy time.
PROFILE_KINDS = {"matmul": ("matrix multiplication",), "attention": ("attention",), "loss": ("loss and softmax",),
                 "memory": ("elementwise and other", "normalisation", "memory copy"), "optimizer": ("optimizer",)}
# The part of transfer.Source's split each kind scales with on another GPU (idle and optimizer aside).
SPLIT_OF = {"matmul": "flop", "attention": "flop", "loss": "memory", "memory": "memory", "idle": "idle"}
CALIBRATION_FAMILY = "pythia"  # the catalog's transformer decoders: the profiles the rates come from
CALIBRATION_PRECISION = "bf16"  # the precision they train in (paper Table 3), the only one the rates are for


@dataclass(frozen=True)
class Work:
    """Units of work of one training step on one GPU, per kind (``KINDS``; module docstring)."""

    matmul: float
    attention: float
    loss: float
    memory: float
    idle: float
    optimizer: float

    def get(self, kind: str) -> float:
        return float(getattr(self, kind))


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
    from .models import get_model

    spec = get_model(model)
    if spec.recipe.precision != CALIBRATION_PRECISION:
        return f"it trains in {spec.recipe.precision}; the profiles are {CALIBRATION_PRECISION} kernels"
    if spec.transformer_shape is None:
        return "it is not a transformer decoder"
    if _shape(model)[-1] > 1:
        return "it is a mixture of experts: only some of its weights work for each token"
    return None


@lru_cache(maxsize=None)
def _shape(key: str) -> tuple:
    """(weight matrices, layers, attention width, hidden, MLP width, vocabulary, parameters, sequence, experts)
    of a decoder's meta build (experts: 0 where it is no mixture of experts)."""
    import torch.nn as nn

    from .estimate import model_stats
    from .estimate.stats import meta_model
    from .models import get_model

    spec = get_model(key)
    layers, hidden = spec.transformer_shape(False)
    net = meta_model(spec, False)
    tables = {id(m.weight) for m in net.modules() if isinstance(m, nn.Embedding)}
    matrices = sum(p.numel() for p in net.parameters() if p.dim() >= 2 and id(p) not in tables)
    head = net.get_output_embeddings()
    if head is not None and id(head.weight) in tables:  # a tied head multiplies like an untied one
        matrices += head.weight.numel()
    cfg = net.config
    heads = cfg.num_attention_heads
    attention = heads * (getattr(cfg, "head_dim", None) or hidden // heads)
    width = next((v for v in (getattr(cfg, k, None) for k in ("intermediate_size", "n_inner", "ffn_dim")) if v),
                 4 * hidden)
    experts = max((getattr(cfg, k, None) or 0) for k in EXPERT_KEYS)
    r = spec.recipe
    return matrices, layers, attention, hidden, width, r.vocab_size, model_stats(key).params, r.seq_len, experts


def work(model: str, micro_batch: int, gas: int) -> Work:
    """The units of work of one GPU's step of ``model`` at ``micro_batch`` x ``gas`` sequences."""
    matrices, layers, attention, hidden, width, vocab, params, seq, _ = _shape(model)
    tokens = micro_batch * gas * seq
    return Work(matmul=6.0 * matrices * tokens, attention=float(layers * attention * seq) * tokens,
                loss=float(tokens) * vocab, memory=float(layers * (hidden + width)) * tokens,
                idle=float(layers * gas), optimizer=float(params))


def calibration_points(profiles: pd.DataFrame) -> pd.DataFrame:
    """Seconds per unit of work, per kind, for every profile of a catalog decoder on one GPU with free-lunch
    settings: one row per (setup, configuration)."""
    from .models import CATALOG

    family = {k for k, s in CATALOG.items() if s.family == CALIBRATION_FAMILY}
    p = profiles[~profiles["tiny"].astype(bool) & (profiles["timer"] == "gpu kernels")
                 & profiles["model"].isin(family) & (profiles["methods_label"] == FREE_LUNCH.label())
                 & (profiles["n_gpus"] == 1)]
    rows = []
    for (setup, config_id), g in p.groupby(["setup", "config_id"]):
        first = g.iloc[0]
        seconds = g.groupby("kind")["seconds"].sum()
        w = work(first["model"], int(first["micro_batch"]), int(first["gas"]))
        row = {"setup": setup, "gpu": first["gpu"], "model": first["model"], "config_id": config_id,
               "micro_batch": int(first["micro_batch"]), "gas": int(first["gas"]),
               "step_wall_s": float(first["step_wall_s"])}
        for kind, names in PROFILE_KINDS.items():
            row[kind] = float(seconds.reindex(list(names)).fillna(0).sum()) / w.get(kind)
        row["idle"] = max(0.0, float(first["step_wall_s"]) - float(first["busy_s"])) / w.idle
        rows.append(row)
    return pd.DataFrame(rows, columns=["setup", "gpu", "model", "config_id", "micro_batch", "gas", "step_wall_s",
                                       *KINDS])


def profiled_setups(points: pd.DataFrame) -> dict[str, str]:
    """GPU key -> the setup whose profiles calibrate it (the one with the most profiled decoders)."""
    counts = points.groupby(["gpu", "setup"]).size().reset_index(name="n")
    counts = counts.sort_values(["gpu", "n", "setup"], ascending=[True, False, True])
    return dict(counts.drop_duplicates("gpu")[["gpu", "setup"]].itertuples(index=False, name=None))


def predict_on_setup(model: str, setup: str, points: pd.DataFrame, micro_batch: int, gas: int,
                     leave_out: str | None = None) -> StepPrediction:
    """The step of ``model`` on ``setup``'s GPU from the rates of that setup's profiled decoders (without
    ``leave_out``'s): seconds per kind at the median rate; the range sums each kind's lowest and highest rate."""
    mine = points[(points["setup"] == setup) & (points["model"] != leave_out)]
    if mine.empty:
        raise ValueError(f"no profiled {CALIBRATION_FAMILY} decoder on {setup!r} to calibrate the work model")
    w = work(model, micro_batch, gas)
    seconds = {k: float(mine[k].median()) * w.get(k) for k in KINDS}
    low = sum(float(mine[k].min()) * w.get(k) for k in KINDS)
    high = sum(float(mine[k].max()) * w.get(k) for k in KINDS)
    return StepPrediction(setup, str(mine["gpu"].iloc[0]), micro_batch, gas, seconds, low, high,
                          tuple(sorted(mine["model"].unique())))


def _micro_batch(model: str, gpu: str) -> tuple[int, int] | None:
    """(micro-batch, accumulation steps) on one ``gpu`` with free-lunch settings: the memory model's largest."""
    from .config import Config
    from .estimate import max_micro_batch
    from .models import get_model

    mbs = max_micro_batch(Config(model, gpu, 1, methods=FREE_LUNCH), get_gpu(gpu).memory_gb)
    if mbs is None:
        return None
    batch = get_model(model).recipe.global_batch
    return mbs, max(1, batch // mbs)


def predict_decoder(model: str, gpu: str, n_gpus: int, profiles: pd.DataFrame) -> Prediction | None:
    """Step, days (with a range) and MFU of ``model`` (a registered or catalog decoder key) with free-lunch
    settings on ``n_gpus`` x ``gpu``. On a profiled GPU alone this is the work model's step; anywhere else the
    transfer model scales it from the profiled setup of the same GPU, else of the same architecture, else of the
    nearest memory size. None where no profile calibrates it, the work model does not model it (``not_modelled``)
    or no micro-batch fits."""
    from .estimate import model_flops_per_step
    from .models import get_model

    points = calibration_points(profiles)
    setups = profiled_setups(points)
    if not setups or not_modelled(model):
        return None
    target = get_gpu(gpu)
    # As transfer_validation.choose_source ranks measured setups: the same GPU, the same architecture, then the
    # nearest memory size (so the micro-batch changes least).
    source_gpu = min(setups, key=lambda g: (g != target.key, get_gpu(g).architecture != target.architecture,
                                            abs(get_gpu(g).memory_gb - target.memory_gb), g))
    fit = _micro_batch(model, source_gpu)
    if fit is None:
        return None
    step = predict_on_setup(model, setups[source_gpu], points, *fit)
    spec = get_model(model)
    flops = float(model_flops_per_step(spec))
    split = dict.fromkeys(DEFAULT_SPLIT, 0.0)
    for kind, part in SPLIT_OF.items():
        split[part] += step.seconds[kind]
    micro = sum(split.values())
    src = Source(setup=step.setup, model=model, gpu=source_gpu, n_gpus=1, methods=FREE_LUNCH,
                 micro_batch=step.micro_batch, gas=step.gas, step_time_s=step.step_s,
                 model_flops_per_step=flops, optimizer_s=step.seconds["optimizer"],
                 split={k: v / micro for k, v in split.items()}, split_basis="work model")
    basis = (f"work model: the {', '.join(step.calibration)} profiles on {step.setup} "
             "(seconds per unit of each kind of work)")
    if (target.key, n_gpus) == (source_gpu, 1):
        # As the transfer model does: no step shorter than the one at MFU_CAP (a lower bound then).
        floor = min_step_s(flops, target, 1, spec.recipe.precision, FREE_LUNCH.tf32)
        capped = step.step_s < floor
        steps_s = [max(s, floor) for s in (step.step_s, step.low_s, step.high_s)]
        days = [days_for(spec.recipe.steps, s) for s in steps_s]
        mfu = flops / (steps_s[0] * target.peak_flops(spec.recipe.precision, True))
        if capped:
            basis += f"; capped at {MFU_CAP:.0%} MFU (a lower bound)"
        return Prediction(model, step.setup, target.key, 1, step.micro_batch, step.gas, *steps_s, *days, mfu,
                          capped, basis)
    p = predict(src, target.key, n_gpus)
    if p.step_time_s is None:
        return replace(p, basis=basis + "; " + p.basis)
    # The transfer's own range, widened by the work model's relative range on the source GPU; no end of it
    # shorter than the step at MFU_CAP.
    floor = min_step_s(flops, target, n_gpus, spec.recipe.precision, FREE_LUNCH.tf32)
    low = max(p.step_low_s * step.low_s / step.step_s, floor)
    high = max(p.step_high_s * step.high_s / step.step_s, floor)
    return replace(p, step_low_s=low, step_high_s=high, days_low=days_for(spec.recipe.steps, low),
                   days_high=days_for(spec.recipe.steps, high), basis=basis + "; " + p.basis)
