"""Model facts on the meta device: parameter counts and model FLOPs per step (no GPU, no weights), and analytic
training days from them.

**FLOPs** (the DESIGN.md convention): forward + backward matrix multiplications and convolutions, no
recomputation, no optimizer.
- Transformers: per token ``6 x (parameters - input embedding) + 12 x layers x hidden x sequence``. The input
  embedding is the token/position/type tables; an output projection tied to them (RoBERTa's MLM decoder) is
  a real matmul per token, so it is added back.
- Other families (Mamba, ConvNeXt, ViT): ``torch.utils.flop_counter.FlopCounterMode`` over the forward and
  backward of one sample (Mamba: a short sequence, scaled per token, since every counted op is per token).
  PyTorch's formula counts a grouped convolution's weight gradient ``groups`` times over (depthwise
  convolutions: by the channel count); ``_conv_backward_flop`` corrects it. Mamba is counted on its reference
  PyTorch path, whose matmuls are the model's; the CUDA kernels cannot run on meta tensors.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import nn

from ..catalog.hardware import get_gpu
from ..catalog.models import ModelSpec, get_model, loss_of
from ..catalog.units import SECONDS_PER_DAY


GIB = 2**30
DEFAULT_MFU = 0.4  # an assumption for planning, not a measurement: well-tuned training stacks reach 0.4-0.6
BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
MAMBA_COUNT_TOKENS = 8  # Mamba's counted ops are per token: count a short sequence and scale
# Activation checkpointing units where the model library checkpoints finer than ``spec.block_types``
# (timm checkpoints each ConvNeXtBlock inside a stage through checkpoint_seq).
CHECKPOINT_UNITS = {"convnext": ("ConvNeXtBlock",)}


def spec_of(model: ModelSpec | str) -> ModelSpec:
    return model if isinstance(model, ModelSpec) else get_model(model)


# --- the model on the meta device ------------------------------------------------------------------------

_MAMBA_KERNEL_FUNCS = ("mamba_inner_fn", "causal_conv1d_fn", "causal_conv1d_update", "mamba_selective_scan",
                       "mamba_selective_state_update")


@contextlib.contextmanager
def reference_path(spec: ModelSpec):
    """Mamba's reference PyTorch functions in place of mamba-ssm's (CUDA kernels cannot take meta tensors),
    and transformers' warning about the fallback silenced."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    module, patched = None, []
    if spec.kernel == "mamba-ssm":
        module = importlib.import_module("transformers.models.mamba.modeling_mamba")
        for name in _MAMBA_KERNEL_FUNCS:
            fn = getattr(module, name, None)
            if fn is not None and inspect.unwrap(fn) is not fn:
                patched.append((name, fn))
                setattr(module, name, inspect.unwrap(fn))
    try:
        yield
    finally:
        for name, fn in patched:
            setattr(module, name, fn)
        hf_logging.set_verbosity(level)


def meta_model(spec: ModelSpec, tiny: bool, attn: str = "sdpa") -> nn.Module:
    with torch.device("meta"):
        model = spec.build(tiny, attn)
    return model.train()


def meta_batch(spec: ModelSpec, tiny: bool, seq_len: int | None = None) -> dict[str, torch.Tensor]:
    """One sample of zeros on the meta device (shapes are all that matter)."""
    r = spec.recipe_for(tiny)
    if spec.task == "image-classification":
        return {"pixel_values": torch.zeros(1, 3, r.image_size, r.image_size, device="meta"),
                "labels": torch.zeros(1, dtype=torch.long, device="meta")}
    ids = torch.zeros(1, seq_len or r.seq_len, dtype=torch.long, device="meta")
    return {"input_ids": ids, "labels": ids}


@dataclass(frozen=True)
class ModelStats:
    """Parameter counts of a model, from a meta-device build."""

    params: int  # unique parameters (tied weights once)
    input_embedding: int  # token, position and type embedding tables
    tied_output: int  # output projection weights shared with an input embedding table
    block_params: tuple[int, ...]  # per repeated block (spec.block_types): the FSDP/ZeRO-3 unit
    heads: int | None  # attention heads (transformers)
    hidden: int | None  # hidden size (language models)
    attention_dropout: float = 0.0  # dropout on the attention probabilities (transformers)

    @property
    def root_params(self) -> int:
        """Parameters outside the repeated blocks (embeddings, final norm, head)."""
        return self.params - sum(self.block_params)


def model_stats(model: ModelSpec | str, tiny: bool = False) -> ModelStats:
    return _model_stats(spec_of(model).key, tiny)


@lru_cache(maxsize=None)
def _model_stats(key: str, tiny: bool) -> ModelStats:
    spec = get_model(key)
    with reference_path(spec):
        net = meta_model(spec, tiny)
    embeddings = [m for m in net.modules() if isinstance(m, nn.Embedding)]
    emb_weights = {id(m.weight) for m in embeddings}
    out = net.get_output_embeddings() if hasattr(net, "get_output_embeddings") else None
    tied = out.weight.numel() if out is not None and id(out.weight) in emb_weights else 0
    blocks = tuple(sum(p.numel() for p in m.parameters()) for m in net.modules()
                   if type(m).__name__ in spec.block_types)
    config = getattr(net, "config", None)
    return ModelStats(params=sum(p.numel() for p in net.parameters()),
                      input_embedding=sum(m.weight.numel() for m in embeddings), tied_output=tied,
                      block_params=blocks, heads=getattr(config, "num_attention_heads", None),
                      hidden=getattr(config, "hidden_size", None),
                      attention_dropout=float(getattr(config, "attention_probs_dropout_prob", None)
                                              or getattr(config, "attention_dropout", None) or 0.0))


# --- FLOPs -----------------------------------------------------------------------------------------------

def _conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                        _output_padding, groups, output_mask, out_shape, **kwargs) -> int:
    """PyTorch's convolution-backward count with the weight gradient divided by ``groups``.

    torch.utils.flop_counter counts the weight gradient as a dense convolution over all input channels, so a
    depthwise convolution's is counted ``channels`` times over (ConvNeXt's backward came out at 8x its forward;
    pytorch/pytorch#183405 divides by ``groups`` the same way).
    """
    from torch.utils.flop_counter import conv_flop_count

    def t(shape):
        return [shape[1], shape[0], *shape[2:]]

    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        a, b = (grad_out_shape, x_shape) if transposed else (x_shape, grad_out_shape)
        flops += conv_flop_count(t(a), t(b), t(out_shape[1])) // groups
    return flops


def counted_flops(model: ModelSpec | str, tiny: bool = False, seq_len: int | None = None) -> int:
    """FlopCounterMode's count of one forward and backward of one sample (meta device)."""
    from torch.utils.flop_counter import FlopCounterMode

    spec = spec_of(model)
    counter = FlopCounterMode(display=False,
                              custom_mapping={torch.ops.aten.convolution_backward: _conv_backward_flop})
    with reference_path(spec):
        net = meta_model(spec, tiny)
        with counter:
            loss_of(net, meta_batch(spec, tiny, seq_len)).backward()
    return counter.get_total_flops()


def flops_method(model: ModelSpec | str) -> str:
    """How the model's FLOPs are counted, for labels."""
    spec = spec_of(model)
    if spec.transformer_shape is not None:
        return "6 x (params - input embedding) + 12 x layers x hidden x seq per token"
    if spec.recipe.seq_len:
        return f"torch FlopCounterMode, forward + backward of {MAMBA_COUNT_TOKENS} tokens, scaled per token"
    return "torch FlopCounterMode, forward + backward of one sample"


@lru_cache(maxsize=None)
def _flops_per_sample(key: str, tiny: bool) -> float:
    spec = get_model(key)
    r = spec.recipe_for(tiny)
    if spec.transformer_shape is not None:
        layers, hidden = spec.transformer_shape(tiny)
        st = model_stats(key, tiny)
        matmul_params = st.params - st.input_embedding + st.tied_output
        return (6 * matmul_params + 12 * layers * hidden * r.seq_len) * r.seq_len
    if r.seq_len:  # per-token ops only (Mamba): count a short sequence and scale
        short = min(MAMBA_COUNT_TOKENS, r.seq_len)
        return counted_flops(key, tiny, short) / short * r.seq_len
    return float(counted_flops(key, tiny))


def flops_per_sample(model: ModelSpec | str, tiny: bool = False) -> float:
    """Model FLOPs (forward + backward) of one sequence or image of the recipe."""
    return _flops_per_sample(spec_of(model).key, tiny)


def model_flops_per_step(model: ModelSpec | str, tiny: bool = False) -> float:
    """Model FLOPs of one optimizer step: one global batch of the recipe."""
    spec = spec_of(model)
    return flops_per_sample(spec, tiny) * spec.recipe_for(tiny).global_batch


def total_flops(model: ModelSpec | str, tiny: bool = False) -> float:
    """Model FLOPs of the whole replication: FLOPs per step x the recipe's steps."""
    spec = spec_of(model)
    return model_flops_per_step(spec, tiny) * spec.recipe_for(tiny).steps


def analytic_days(model: ModelSpec | str, gpu: str, n_gpus: int, mfu: float = DEFAULT_MFU, *,
                  tf32: bool = True) -> float:
    """Days to train the recipe: total FLOPs / (GPUs x dense peak of the recipe's precision x MFU).

    fp32 recipes use the TF32 peak when ``tf32`` is on and the GPU has it. ``mfu=1`` is the lower bound.
    """
    if not 0 < mfu <= 1:
        raise ValueError(f"MFU must be in (0, 1], got {mfu}")
    if n_gpus < 1:
        raise ValueError(f"the GPU count must be at least 1, got {n_gpus}")
    spec = spec_of(model)
    peak = get_gpu(gpu).peak_flops(spec.recipe.precision, tf32)
    return total_flops(spec) / (n_gpus * peak * mfu) / SECONDS_PER_DAY
