"""A model built on the meta device (no GPU, no weights) and what it tells the estimates: its parameter counts and
shape, the FLOPs ``torch.utils.flop_counter`` counts, and the bytes autograd saves for backward.

Building a model takes seconds (importing torch and the model's library, then the build), so the estimates do not
build one for every question: ``facts`` keeps what these functions return for every catalog model, and calls them
only for a model it does not keep (a decoder from a config.json). Each function returns plain values (numbers,
lists, dicts), the form the kept file holds.

- Mamba is counted on its reference PyTorch path, whose matmuls are the model's; the CUDA kernels of mamba-ssm
  cannot run on meta tensors (``reference_path``).
- PyTorch's convolution-backward formula counts a grouped convolution's weight gradient ``groups`` times over
  (depthwise convolutions: by the channel count); ``conv_backward_flop`` corrects it.
- transformers' decoders look for packed sequences with a ``.item()`` that meta tensors cannot answer
  (``_unpacked_sequences``: one sequence per row, none packed).
- SDPA on the meta device always decomposes into the math path, which keeps the attention matrix; the fused GPU
  kernels keep only q, k, v, the output and the log-sum-exp (``_FusedAttention`` stands in for them).
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
from unittest import mock

import torch
from torch import nn

from ..catalog.models import ModelSpec, get_model, loss_of
from ..catalog.models.from_config import EXPERT_KEYS

# Activation checkpointing units where the model library checkpoints finer than ``spec.block_types``
# (timm checkpoints each ConvNeXtBlock inside a stage through checkpoint_seq).
CHECKPOINT_UNITS = {"convnext": ("ConvNeXtBlock",)}
_MAMBA_KERNEL_FUNCS = ("mamba_inner_fn", "causal_conv1d_fn", "causal_conv1d_update", "mamba_selective_scan",
                       "mamba_selective_state_update")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


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


# --- parameter counts and shape ----------------------------------------------------------------------------

def stats_fields(key: str, tiny: bool) -> dict:
    """The fields of ``facts.ModelStats`` from one meta build of ``key``."""
    spec = get_model(key)
    with reference_path(spec):
        net = meta_model(spec, tiny)
    embeddings = [m for m in net.modules() if isinstance(m, nn.Embedding)]
    tables = {id(m.weight) for m in embeddings}
    out = net.get_output_embeddings() if hasattr(net, "get_output_embeddings") else None
    tied = out.weight.numel() if out is not None and id(out.weight) in tables else 0
    # Every weight matrix outside the embedding tables; a head tied to a table multiplies like an untied one.
    sizes = [p.numel() for p in net.parameters() if p.dim() >= 2 and id(p) not in tables] + ([tied] if tied else [])
    matrices = sum(sizes)
    config = getattr(net, "config", None)
    heads = getattr(config, "num_attention_heads", None)
    hidden = getattr(config, "hidden_size", None)
    head_dim = getattr(config, "head_dim", None) or (hidden // heads if heads and hidden else None)
    return {"params": sum(p.numel() for p in net.parameters()),
            "input_embedding": sum(m.weight.numel() for m in embeddings), "tied_output": tied,
            "block_params": [sum(p.numel() for p in m.parameters()) for m in net.modules()
                             if type(m).__name__ in spec.block_types],
            "heads": heads, "hidden": hidden,
            "attention_dropout": float(getattr(config, "attention_probs_dropout_prob", None)
                                       or getattr(config, "attention_dropout", None) or 0.0),
            "matrix_params": matrices, "attention_width": heads * head_dim if heads and head_dim else None,
            "mlp_width": next((v for v in (getattr(config, k, None) for k in ("intermediate_size", "n_inner",
                                                                               "ffn_dim")) if v), None),
            "experts": max((getattr(config, k, None) or 0) for k in EXPERT_KEYS), "matrix_sizes": sorted(sizes)}


def decoder_layer_fields(key: str, tiny: bool) -> dict:
    """The fields of ``facts.DecoderLayer`` of a causal decoder, read from its first repeated block and its
    config."""
    spec = get_model(key)
    with reference_path(spec):
        net = meta_model(spec, tiny)
    cfg = net.config
    block = next(m for m in net.modules() if type(m).__name__ in spec.block_types)
    h = int(getattr(cfg, "hidden_size", None) or cfg.n_embd)
    heads = int(getattr(cfg, "num_attention_heads", None) or cfg.n_head)
    size = int(getattr(cfg, "head_dim", None) or h // heads)
    kv = int(getattr(cfg, "num_key_value_heads", None) or heads) * size
    mlp = next((int(v) for v in (getattr(cfg, k, None) for k in ("intermediate_size", "n_inner", "ffn_dim")) if v),
               4 * h)
    widths = {int(getattr(m, "out_features", None) or getattr(m, "nf", 0) or 0) for m in block.modules()}
    norm_sizes = [getattr(m, "weight", None) for m in block.modules() if "norm" in type(m).__name__.lower()]
    norm_sizes = [w.numel() if w is not None else h for w in norm_sizes]
    norms = sum(1 for n in norm_sizes if n == h)
    dropout = max(float(getattr(cfg, k, None) or 0.0) for k in ("hidden_dropout", "resid_pdrop", "dropout",
                                                                 "hidden_dropout_prob"))
    return {"hidden": h, "queries": heads * size, "keys": kv, "mlp": mlp,
            "gated": any("gate" in name.rsplit(".", 1)[-1] for name, _ in block.named_modules()), "norms": norms,
            "head_norms": any(n == size for n in norm_sizes) and size != h,
            "parallel": bool(getattr(cfg, "use_parallel_residual", False)) or norms == 1,
            "fused_qkv": heads * size + 2 * kv in widths,
            "rotary": any("rotary" in type(m).__name__.lower() for m in net.modules()), "dropout": dropout}


# --- FLOPs -------------------------------------------------------------------------------------------------

def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
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


def counted_flops(key: str, tiny: bool = False, seq_len: int | None = None) -> int:
    """FlopCounterMode's count of one forward and backward of one sample (of ``seq_len`` tokens if given)."""
    from torch.utils.flop_counter import FlopCounterMode

    spec = get_model(key)
    counter = FlopCounterMode(display=False,
                              custom_mapping={torch.ops.aten.convolution_backward: conv_backward_flop})
    with reference_path(spec), _unpacked_sequences():
        net = meta_model(spec, tiny)
        with counter:
            loss_of(net, meta_batch(spec, tiny, seq_len)).backward()
    return int(counter.get_total_flops())


# --- what autograd saves ------------------------------------------------------------------------------------

class _FusedAttention(torch.autograd.Function):
    """Stands in for SDPA during a profile: saves what the fused kernels save (module docstring)."""

    @staticmethod
    def forward(ctx, q, k, v):
        out = q.new_empty((*q.shape[:-1], v.shape[-1]))
        ctx.save_for_backward(q, k, v, out, q.new_empty(q.shape[:-1], dtype=torch.float32))
        return out

    @staticmethod
    def backward(ctx, grad):  # never run: profiles only record what forward saves
        raise NotImplementedError


def _fused_sdpa(query, key, value, *args, **kwargs):
    return _FusedAttention.apply(query, key, value)


def _unpacked_sequences():
    """transformers looks for packed sequences in the position ids with a data-dependent ``.item()``, which
    meta tensors cannot answer; a profile's batch holds one sequence per row, so the answer is 'none'."""
    try:
        from transformers import masking_utils
    except ImportError:
        return contextlib.nullcontext()
    if not hasattr(masking_utils, "find_packed_sequence_indices"):
        return contextlib.nullcontext()
    return mock.patch.object(masking_utils, "find_packed_sequence_indices", lambda *args, **kwargs: None)


def saved_tensor_bytes(key: str, tiny: bool, attn: str, dtype: str, seq_len: int | None = None) -> dict:
    """Bytes autograd saves for backward in one forward of one sample, by checkpointed block: the fields of
    ``facts.ActivationProfile`` ({"blocks", "block_inputs", "other"}).

    Parameters and buffers are excluded (they are counted as weights); a storage saved twice counts once.
    """
    spec = get_model(key)
    units = CHECKPOINT_UNITS.get(spec.family, spec.block_types)
    with reference_path(spec):
        net = meta_model(spec, tiny, attn).to(DTYPES[dtype])
        owned = {t.untyped_storage()._cdata for t in [*net.parameters(), *net.buffers()]}
        seen, blocks, inputs, current, other = set(), [], [], [None], [0.0]

        def pack(t: torch.Tensor) -> torch.Tensor:
            storage = t.untyped_storage()
            if storage._cdata not in owned and storage._cdata not in seen:
                seen.add(storage._cdata)
                if current[0] is None:
                    other[0] += storage.nbytes()
                else:
                    blocks[current[0]] += storage.nbytes()
            return t

        def enter(_mod, args, kwargs) -> None:
            x = args[0] if args else next(iter(kwargs.values()))
            current[0] = len(blocks)
            blocks.append(0.0)
            inputs.append(float(x.numel() * x.element_size()))

        def leave(*_) -> None:
            current[0] = None

        for m in net.modules():
            if type(m).__name__ in units:
                m.register_forward_pre_hook(enter, with_kwargs=True)
                m.register_forward_hook(leave)
        batch = meta_batch(spec, tiny, seq_len)
        if "pixel_values" in batch:
            batch["pixel_values"] = batch["pixel_values"].to(next(net.parameters()).dtype)
        fused = (mock.patch.object(nn.functional, "scaled_dot_product_attention", _fused_sdpa)
                 if attn != "eager" else contextlib.nullcontext())
        with fused, _unpacked_sequences(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss_of(net, batch)
    return {"blocks": blocks, "block_inputs": inputs, "other": other[0]}
