"""A mixture of experts' FLOPs, activations and matrix products: only the experts a token runs work for it, while
every expert's weights, gradients and optimizer states stay in memory (the memory model counts every parameter,
``ModelStats.params``, so it needs nothing from here for them).

**FLOPs (the DESIGN.md convention for mixtures of experts; MFU uses it)**: per token, ``6 x (active parameters -
input embedding) + 6 x layers x (heads x query-key head size + heads x value head size) x sequence``. The active
parameters are every dense weight (attention, the router, the shared experts, dense layers, the LM head) and the
top-k of the routed experts: ``parameters - (1 - top-k / experts) x routed experts' weights``. The attention term is
the dense convention's ``12 x layers x heads x head size x sequence`` where queries, keys and values share one head
size, and splits it where DeepSeek's latent attention does not (query-key heads of 192, value heads of 128 in
DeepSeek-V2-Lite). A dense decoder keeps the dense convention (``stats.flops_per_sample``).

**Activations**: a compiled mixture layer keeps, per token, what a gated MLP of ``top-k x expert width + shared
width`` keeps (each routed expert's gate, up projection and product for the tokens it received), plus the routing's
own tensors: the tokens gathered for the experts and the experts' outputs before they are weighted (``top-k x
hidden`` each, 16-bit) and the router's fp32 probabilities (``experts`` per token).

**Matrix products** (the work model's matmul kind): every dense matrix multiplies every token; each routed expert's
matrices multiply the tokens routed to it, ``top-k / experts`` of them under balanced routing (the study's
assumption where no routing was measured), so its products run at that smaller size.
"""
from __future__ import annotations

from dataclasses import replace

from ..catalog.models import ModelSpec
from .facts import DecoderLayer, ModelStats

ROUTER_BYTES = 4  # the router's softmax runs in fp32 (transformers' routers upcast their logits)


def active_matrix_params(spec: ModelSpec, st: ModelStats) -> float:
    """The weights one token multiplies (module docstring): the dense convention's ``params - input embedding +
    tied head``, less the routed experts it does not run."""
    m = spec.moe
    return st.params - st.input_embedding + st.tied_output - (1.0 - m.active_share) * m.expert_params


def attention_flops_per_token(spec: ModelSpec, layers: int, seq_len: int) -> float:
    """Forward and backward of the score and value products per token: ``6 x layers x (query-key + value widths) x
    sequence`` (twice the multiply-adds of each product, three passes)."""
    m = spec.moe
    return 6.0 * layers * (m.query_key + m.value) * seq_len


def flops_per_sample(spec: ModelSpec, st: ModelStats, layers: int, seq_len: int) -> float:
    """Model FLOPs (forward + backward) of one sequence of a mixture of experts (module docstring)."""
    return (6.0 * active_matrix_params(spec, st) + attention_flops_per_token(spec, layers, seq_len)) * seq_len


FLOPS_CONVENTION = ("6 x (active params - input embedding) + 6 x layers x (q.k + v widths) x seq per token; active: "
                    "every dense weight (router, shared experts) and the top-k of the routed experts")


def mlp_width(spec: ModelSpec) -> int:
    """The intermediate width one token runs through in a mixture layer: its top-k experts and the shared ones."""
    m = spec.moe
    return m.per_token * m.expert_width + m.shared_width


def routing_bytes(spec: ModelSpec, hidden: int, compute_bytes: int) -> float:
    """Bytes per token a mixture layer keeps for the routing: the gathered inputs and unweighted outputs of the
    experts (16-bit, ``top-k x hidden`` each) and the router's fp32 probabilities."""
    m = spec.moe
    return 2.0 * m.per_token * hidden * compute_bytes + m.experts * ROUTER_BYTES


def layer_bytes(spec: ModelSpec, layer: DecoderLayer, fused_bytes) -> tuple[float, float]:
    """(bytes per token of a dense layer, of a mixture layer) kept for backward: ``fused_bytes(layer)`` (the
    compiled layer's count, ``activations.fused_layer``) with the dense MLP, and with the mixture's MLP width and
    latent attention's widths and the routing's tensors."""
    m = spec.moe
    keys = (m.query_key + m.value) // 2  # the fused count keeps keys and values of one width: their mean
    attention = replace(layer, queries=m.query_key, keys=keys) if m.query_key != layer.queries else layer
    mixture = replace(attention, mlp=mlp_width(spec), gated=m.gated)
    return fused_bytes(attention), fused_bytes(mixture)


def matrix_products(spec: ModelSpec, sizes: tuple[int, ...]) -> list[tuple[int, float]]:
    """Each weight matrix's size and the share of the tokens it multiplies: 1 for every dense matrix, ``top-k /
    experts`` for each routed expert's matrices (balanced routing). ``sizes``: every weight matrix as the meta
    build counts it (``ModelStats.matrix_sizes``: a layer's experts are one 3-D tensor per projection)."""
    m = spec.moe
    if m is None:
        return [(s, 1.0) for s in sizes]
    dense = list(sizes)
    for size in m.expert_matrices:  # each layer's tensor of all its experts, as the meta build counts it
        for _ in range(m.moe_layers):
            dense.remove(m.experts * size)
    per_expert = [(size, m.active_share) for size in m.expert_matrices for _ in range(m.moe_layers * m.experts)]
    return [(s, 1.0) for s in dense] + per_expert


def layer_count(spec: ModelSpec, layers: int) -> tuple[int, int]:
    """(dense layers, mixture layers) of a decoder of ``layers`` layers."""
    return layers - spec.moe.moe_layers, spec.moe.moe_layers


def attention_width(spec: ModelSpec) -> int:
    """The width the work model's attention kind scales with: the mean of the query-key and value widths (both are
    heads x head size where one head size serves both)."""
    return (spec.moe.query_key + spec.moe.value) // 2


def memory_width(spec: ModelSpec, layers: int, hidden: int, dense_width: int) -> int:
    """The elements per token the memory-bound kernels of all layers read and write, as the work model counts them
    (the hidden width and the MLP's intermediate width of each layer): a mixture layer's MLP width is its top-k
    experts' and shared experts' (``mlp_width``), and its routing gathers each token's hidden state for its top-k
    experts and scatters their outputs back (``2 x top-k x hidden``)."""
    n_dense, n_moe = layer_count(spec, layers)
    routed = hidden + mlp_width(spec) + 2 * spec.moe.per_token * hidden
    return n_dense * (hidden + dense_width) + n_moe * routed
