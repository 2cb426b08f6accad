"""Activation bytes of one sample, by checkpointed block: what a training step keeps for backward.

- **Transformers, compiled with a fused attention kernel** (free-lunch: ``torch.compile`` per block and SDPA or
  FlashAttention): counted from the layer's shape (``fused_layer``), what the compiled block saves, per token. The
  residual stream's input to each norm (fp32 where fp32 weights run under autocast, as in the study's PyTorch
  path; 16-bit where DeepSpeed or FSDP cast the weights), each norm's 16-bit output (the input of the
  projections after it), the tensors the fused kernel keeps (queries, keys, values and its output, no attention
  matrix: Dao 2023, FlashAttention-2, Sec. 3.1; where the keys and values are views of one fused QKV projection
  and rotary embeddings make new queries and keys, that projection's whole output stays alive beside them, and
  queries and keys normalised per head keep their inputs too), the
  MLP's 16-bit intermediates (a plain MLP its pre-activation and activation, a gated one its gate, its up
  projection and their product), and a 1-byte mask per residual dropout. The compiled graph recomputes the
  elementwise work in between (normalisation arithmetic, activations' inner steps), so it saves nothing else; the
  per-layer constant of the eager formula below (34 bytes per token and hidden unit whatever the MLP's width, the
  key-value heads or the dtype of the residual stream) ran 2-27% high on the study's decoders.
- **Transformers otherwise** (eager attention, no compile: the naive settings): Korthikanti et al. 2022
  (*Reducing Activation Recomputation in Large Transformer Models*, Sec. 4.1): ``s*b*h*(34 + 5*a*s/h)`` bytes per
  layer for 16-bit activations, with transformers' eager attention scores (``Coefficients.attention_scores``).
- **The loss**: the LM logits (``s*b*V``) add the fp32 log-softmax kept for backward and the two fp32 gradients
  that exist together at the start of backward; a fused cross-entropy (``Coefficients.fused_loss``: its kernel
  keeps the 16-bit logits and writes their gradient in place) keeps only those.
- Checkpointing keeps each layer's input plus the larger of one layer's activations (recomputed in backward) and
  the head's.
- Vision models and Mamba's reference path: the bytes autograd saves for backward, recorded with
  ``saved_tensors_hooks`` on a meta-device forward of one sample and attributed to the checkpointed blocks.
  Mamba with mamba-ssm kernels: what its fused function saves (``Coefficients.mamba_fused_layer``).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import lru_cache
from unittest import mock

import torch
from torch import nn

from ..catalog.models import ModelSpec, get_model, loss_of
from .coefficients import COEFFICIENTS, Coefficients
from .stats import BYTES, CHECKPOINT_UNITS, MAMBA_COUNT_TOKENS, meta_batch, meta_model, model_stats, reference_path, spec_of

@dataclass(frozen=True)
class ActivationProfile:
    """Activation bytes of one sample, split by checkpointed blocks."""

    blocks: tuple[float, ...]  # kept for backward inside each block
    block_inputs: tuple[float, ...]  # each block's input: what checkpointing keeps
    other: float  # embeddings, head, loss

    def per_sample(self, checkpointing: bool) -> float:
        if not self.blocks:
            return self.other
        # With checkpointing: every block's input, and one block recomputed at a time; ``other`` is mostly the
        # LM head's loss tensors, freed before the first block is recomputed, so the larger of the two counts.
        if checkpointing:
            return sum(self.block_inputs) + max(self.other, max(self.blocks))
        return self.other + sum(self.blocks)

    def scaled(self, factor: float) -> "ActivationProfile":
        return ActivationProfile(tuple(b * factor for b in self.blocks),
                                 tuple(b * factor for b in self.block_inputs), self.other * factor)


class _FusedAttention(torch.autograd.Function):
    """Stands in for SDPA during a profile: on the meta device SDPA always decomposes into the math path,
    which keeps the attention matrix; fused GPU kernels keep only q, k, v, the output and the log-sum-exp."""

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


@lru_cache(maxsize=None)
def saved_tensor_profile(key: str, tiny: bool, attn: str, dtype: str, seq_len: int | None = None
                         ) -> ActivationProfile:
    """Bytes autograd saves for backward in one forward of one sample (meta device), by checkpointed block.

    Parameters and buffers are excluded (they are counted as weights); a storage saved twice counts once.
    """
    spec = get_model(key)
    units = CHECKPOINT_UNITS.get(spec.family, spec.block_types)
    with reference_path(spec):
        net = meta_model(spec, tiny, attn).to({"fp32": torch.float32, "fp16": torch.float16,
                                                 "bf16": torch.bfloat16}[dtype])
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
    return ActivationProfile(tuple(blocks), tuple(inputs), other[0])


@dataclass(frozen=True)
class DecoderLayer:
    """The shape of a decoder's repeated block that decides what it saves (``fused_layer``), from its meta build."""

    hidden: int
    queries: int  # heads x head size
    keys: int  # key-value heads x head size (each of keys and values)
    mlp: int  # the MLP's intermediate width
    gated: bool  # a gate projection beside the up projection (SwiGLU, GeGLU)
    norms: int  # normalisation layers over the hidden width in the block
    head_norms: bool  # queries and keys normalised per head (Qwen3's q_norm and k_norm): their inputs are kept
    parallel: bool  # attention and MLP read one residual input (GPT-NeoX, GPT-J, Phi)
    fused_qkv: bool  # one projection makes queries, keys and values
    rotary: bool  # rotary position embeddings (new query and key tensors)
    dropout: float  # residual dropout probability


@lru_cache(maxsize=None)
def decoder_layer(key: str, tiny: bool) -> DecoderLayer:
    """``DecoderLayer`` of a causal decoder, read from its first repeated block and its config."""
    spec = get_model(key)
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
    return DecoderLayer(
        hidden=h, queries=heads * size, keys=kv, mlp=mlp,
        gated=any("gate" in name.rsplit(".", 1)[-1] for name, _ in block.named_modules()), norms=norms,
        head_norms=any(n == size for n in norm_sizes) and size != h,
        parallel=bool(getattr(cfg, "use_parallel_residual", False)) or norms == 1,
        fused_qkv=heads * size + 2 * kv in widths,
        rotary=any("rotary" in type(m).__name__.lower() for m in net.modules()), dropout=dropout)


def fused_layer(layer: DecoderLayer, compute_bytes: int, residual_bytes: int, k: Coefficients = COEFFICIENTS
                ) -> float:
    """Bytes one token keeps for backward in one compiled decoder layer with fused attention (module docstring)."""
    c, q, kv, h = compute_bytes, layer.queries, layer.keys, layer.hidden
    residual = (1 if layer.parallel else 2) * residual_bytes * h
    normed = layer.norms * c * h
    qkv = q + 2 * kv + (q + kv if (layer.fused_qkv and layer.rotary) or layer.head_norms else 0)
    attention = c * (qkv + q)  # the kernel's inputs and its output (the output projection's input)
    mlp = c * (3 if layer.gated else 2) * layer.mlp
    masks = 2 * h * k.dropout_mask if layer.dropout > 0 else 0.0
    return residual + normed + attention + mlp + masks


def _logits_bytes(seq: int, vocab: int, compute_bytes: int, k: Coefficients) -> float:
    """The tensors of the loss alive at the start of backward: the fp32 copies (the compute-dtype logits are
    not among them: the step keeps only ``outputs.loss``, ``models.loss_of``, and the fp32 upcast saves nothing),
    or, with a fused cross-entropy, the 16-bit logits it overwrites with their gradient."""
    if k.fused_loss:
        return seq * vocab * compute_bytes
    return seq * vocab * 4 * k.loss_fp32_copies


def _attention_impl(spec: ModelSpec, kernels: bool) -> str:
    """The attention measure/ runs: eager without kernels, a fused kernel (SDPA or flash) with them."""
    return "sdpa" if kernels and spec.kernel == "sdpa" else "eager"


def activation_profile(model: ModelSpec | str, tiny: bool, kernels: bool, k: Coefficients = COEFFICIENTS,
                       residual_bytes: int | None = None) -> ActivationProfile:
    """Activation bytes of one sample for the model family (module docstring). ``residual_bytes``: the bytes of a
    residual-stream element (fp32 weights under autocast keep it fp32; default the recipe's compute dtype)."""
    spec = spec_of(model)
    r = spec.recipe_for(tiny)
    c = BYTES[r.precision]
    res = c if residual_bytes is None else residual_bytes
    if spec.transformer_shape is not None:
        layers, h = spec.transformer_shape(tiny)
        s = r.seq_len
        if spec.task == "causal-lm" and spec.compiles and _attention_impl(spec, kernels) != "eager":
            layer = s * fused_layer(decoder_layer(spec.key, tiny), c, res, k)
            head = s * h * (res + c) + _logits_bytes(s, r.vocab_size, c, k)  # the final norm's input and output
            return ActivationProfile((layer,) * layers, (s * h * res,) * layers, head)
        st = model_stats(spec.key, tiny)
        per_score = k.attention_scores + (k.attention_dropout_mask if st.attention_dropout > 0 else 0.0)
        attn = 0.0 if _attention_impl(spec, kernels) != "eager" else per_score * st.heads * s / h
        layer = s * h * (k.transformer_layer + attn) * c / 2  # the paper's constants are for 2-byte values
        head = s * h * c + _logits_bytes(s, r.vocab_size, c, k)
        return ActivationProfile((layer,) * layers, (s * h * c,) * layers, head)
    if spec.kernel == "mamba-ssm":
        s, st = r.seq_len, model_stats(spec.key, tiny)
        net_h = st.hidden
        head = s * net_h * c + _logits_bytes(s, r.vocab_size, c, k)
        if kernels:  # mamba-ssm's fused function; the residual stream is fp32
            n = len(st.block_params)
            return ActivationProfile((k.mamba_fused_layer * s * net_h * c / 2,) * n, (4.0 * s * net_h,) * n, head)
        short = min(MAMBA_COUNT_TOKENS, s)
        ref = saved_tensor_profile(spec.key, tiny, "eager", r.precision, short).scaled(s / short)
        return ActivationProfile(ref.blocks, ref.block_inputs, head)
    return saved_tensor_profile(spec.key, tiny, _attention_impl(spec, kernels), r.precision)
