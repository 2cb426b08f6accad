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
  elementwise work in between (normalisation arithmetic, activations' inner steps), so it saves nothing else.
  With FP8 linear layers (torchao's float8 recipes, beyond the paper) the compiled graph recomputes in backward the
  inputs of the projections that are cheap to remake from what it saves anyway: the norms' outputs (from the
  residual stream) and the MLP's last intermediate (from the tensors before it), each cast to FP8 again, so
  neither is saved (``saved_tensors_hooks`` on a compiled GPT-NeoX and Llama layer show it, and the FP8 rows'
  measured peaks agree). The
  per-layer constant of the eager formula below (34 bytes per token and hidden unit whatever the MLP's width, the
  key-value heads or the dtype of the residual stream) ran 2-27% high on the study's decoders.
- **Transformers otherwise** (eager attention, no compile: the naive settings): Korthikanti et al. 2022
  (*Reducing Activation Recomputation in Large Transformer Models*, Sec. 4.1): ``s*b*h*(34 + 5*a*s/h)`` bytes per
  layer for 16-bit activations, with transformers' eager attention scores (``Coefficients.attention_scores``).
- **Mixtures of experts**: a mixture layer keeps what an MLP as wide as its top-k experts and shared experts
  keeps, and the routing's tensors (``moe``; in the eager formula, the difference from its 4h-wide plain MLP).
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

from ..catalog.models import ModelSpec
from . import moe
from .coefficients import COEFFICIENTS, Coefficients
from .facts import ActivationProfile, DecoderLayer, decoder_layer_of, saved_tensors_of
from .stats import BYTES, MAMBA_COUNT_TOKENS, model_stats, spec_of


def saved_tensor_profile(model: ModelSpec | str, tiny: bool, attn: str, dtype: str, seq_len: int | None = None
                         ) -> ActivationProfile:
    """Bytes autograd saves for backward in one forward of one sample (meta device: ``meta.saved_tensor_bytes``;
    kept for the catalog), by checkpointed block."""
    return saved_tensors_of(spec_of(model).key, tiny, attn, dtype, seq_len)


def decoder_layer(key: str, tiny: bool) -> DecoderLayer:
    """``DecoderLayer`` of a causal decoder, read from its first repeated block and its config (``meta``; kept for
    the catalog)."""
    return decoder_layer_of(key, tiny)


def fused_layer(layer: DecoderLayer, compute_bytes: int, residual_bytes: int, k: Coefficients = COEFFICIENTS,
                fp8: bool = False) -> float:
    """Bytes one token keeps for backward in one compiled decoder layer with fused attention (module docstring);
    ``fp8``: its linear layers train in FP8, so the norms' outputs and the MLP's last intermediate are recomputed."""
    c, q, kv, h = compute_bytes, layer.queries, layer.keys, layer.hidden
    residual = (1 if layer.parallel else 2) * residual_bytes * h
    normed = 0 if fp8 else layer.norms * c * h
    qkv = q + 2 * kv + (q + kv if (layer.fused_qkv and layer.rotary) or layer.head_norms else 0)
    attention = c * (qkv + q)  # the kernel's inputs and its output (the output projection's input)
    recomputed = fp8 or (layer.gated and k.recomputed_mlp_product)  # the down projection's input
    mlp = c * ((3 if layer.gated else 2) - recomputed) * layer.mlp
    masks = 2 * h * k.dropout_mask if layer.dropout > 0 else 0.0
    return residual + normed + attention + mlp + masks


def _logits_bytes(seq: int, vocab: int, compute_bytes: int, k: Coefficients) -> float:
    """The tensors of the loss alive at the start of backward: the fp32 copies (the compute-dtype logits are
    not among them: the step keeps only ``outputs.loss``, ``models.loss_of``, and the fp32 upcast saves nothing),
    or, with a fused cross-entropy, the 16-bit logits it overwrites with their gradient."""
    if k.chunked_loss:
        return 0.0
    if k.fused_loss:
        return seq * vocab * compute_bytes
    return seq * vocab * 4 * k.loss_fp32_copies


def _attention_impl(spec: ModelSpec, kernels: bool) -> str:
    """The attention measure/ runs: eager without kernels, a fused kernel (SDPA or flash) with them."""
    return "sdpa" if kernels and spec.kernel == "sdpa" else "eager"


def activation_profile(model: ModelSpec | str, tiny: bool, kernels: bool, k: Coefficients = COEFFICIENTS,
                       residual_bytes: int | None = None, fp8: bool = False) -> ActivationProfile:
    """Activation bytes of one sample for the model family (module docstring). ``residual_bytes``: the bytes of a
    residual-stream element (fp32 weights under autocast keep it fp32; default the recipe's compute dtype);
    ``fp8``: the blocks' linear layers train in FP8 (compiled decoders only: FP8 training runs compiled)."""
    spec = spec_of(model)
    r = spec.recipe_for(tiny)
    c = BYTES[r.precision]
    res = c if residual_bytes is None else residual_bytes
    if spec.transformer_shape is not None:
        layers, h = spec.transformer_shape(tiny)
        s = r.seq_len
        if spec.task == "causal-lm" and spec.compiles and _attention_impl(spec, kernels) != "eager":
            shape = decoder_layer(spec.key, tiny)
            head = s * h * (res + c) + _logits_bytes(s, r.vocab_size, c, k)  # the final norm's input and output
            if spec.moe is not None:  # a mixture of experts: its layers' MLP and routing (``moe``)
                dense, mixture = moe.layer_bytes(spec, shape, lambda la: fused_layer(la, c, res, k, fp8))
                routing = moe.routing_bytes(spec, h, c)
                n_dense, n_moe = moe.layer_count(spec, layers)
                blocks = (s * dense,) * n_dense + (s * (mixture + routing),) * n_moe
                return ActivationProfile(blocks, (s * h * res,) * layers, head)
            layer = s * fused_layer(shape, c, res, k, fp8)
            return ActivationProfile((layer,) * layers, (s * h * res,) * layers, head)
        st = model_stats(spec.key, tiny)
        per_score = k.attention_scores + (k.attention_dropout_mask if st.attention_dropout > 0 else 0.0)
        attn = 0.0 if _attention_impl(spec, kernels) != "eager" else per_score * st.heads * s / h
        layer = s * h * (k.transformer_layer + attn) * c / 2  # the paper's constants are for 2-byte values
        head = s * h * c + _logits_bytes(s, r.vocab_size, c, k)
        if spec.moe is not None:  # the formula's MLP is 4h wide and plain: a mixture's is wider, and routes
            extra = s * (c * (3 * moe.mlp_width(spec) - 8 * h) + moe.routing_bytes(spec, h, c))
            n_dense, n_moe = moe.layer_count(spec, layers)
            return ActivationProfile((layer,) * n_dense + (layer + max(0.0, extra),) * n_moe,
                                     (s * h * c,) * layers, head)
        return ActivationProfile((layer,) * layers, (s * h * c,) * layers, head)
    if spec.kernel == "mamba-ssm":
        s, st = r.seq_len, model_stats(spec.key, tiny)
        net_h = st.hidden
        head = s * net_h * c + _logits_bytes(s, r.vocab_size, c, k)
        if kernels:  # mamba-ssm's fused function; the residual stream is fp32
            n = len(st.block_params)
            return ActivationProfile((k.mamba_fused_layer * s * net_h * c / 2,) * n, (4.0 * s * net_h,) * n, head)
        short = min(MAMBA_COUNT_TOKENS, s)
        ref = saved_tensor_profile(spec, tiny, "eager", r.precision, short).scaled(s / short)
        return ActivationProfile(ref.blocks, ref.block_inputs, head)
    return saved_tensor_profile(spec, tiny, _attention_impl(spec, kernels), r.precision)
