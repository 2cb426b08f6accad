"""The units of work of a decoder's training step, per kind of GPU work (``KINDS``), counted from its shape on the
meta device: what ``decoder_work`` prices at the rates its profiles give. How each kind is counted, and why, is
``decoder_work``'s module docstring; this module holds the counting alone, so that the calibration and the
prediction that both read it stand apart from it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from ..catalog.methods import Methods
from ..catalog.models.from_config import is_unaligned
from .work_evidence import PLAIN, Evidence, GemmCurve

KINDS = ("matmul", "attention", "loss", "memory", "idle", "optimizer")

# Bytes a parameter, by the dtype of the weights a micro-step runs on: (in every micro-step, in every micro-step
# but the first of a step). fp32 weights under autocast are cast to bf16 (read 4, write 2) and their gradients
# cast back (read 2, write 4) in every micro-step, and each gradient after the first is added to the one held
# (read 4 + 4, write 4); 16-bit weights' gradients are only added (read 2 + 2, write 2).
WEIGHT_BYTES = {"float32": (12, 12), "bfloat16": (0, 6), "float16": (0, 6)}


@dataclass(frozen=True)
class Work:
    """Units of work of one training step on one GPU, per kind (``KINDS``; ``decoder_work``'s module docstring)."""

    matmul: float
    attention: float
    loss: float
    memory: float
    idle: float
    optimizer: float

    def get(self, kind: str) -> float:
        return float(getattr(self, kind))


class CountedShape(NamedTuple):
    """What the units of work of a decoder are counted from (``counted_shape``)."""

    matrices: int  # elements of the weight matrices outside the embedding tables (a tied head counted once more)
    layers: int
    attention: int  # attention width
    hidden: int
    mlp: int  # MLP width: four times the hidden size where the config states none
    vocab: int
    params: int
    seq: int
    experts: int  # 0 where it is no mixture of experts
    sizes: tuple  # each weight matrix's size, counted as ``matrices`` counts them


@lru_cache(maxsize=None)
def counted_shape(key: str) -> CountedShape:
    """The shape of a decoder that its work is counted from (``estimate.model_stats``: kept for the catalog, else a
    meta build)."""
    from ..estimate import model_stats
    from ..catalog.models import get_model

    spec = get_model(key)
    layers, hidden = spec.transformer_shape(False)
    st = model_stats(key)
    r = spec.recipe
    return CountedShape(st.matrix_params, layers, st.attention_width, hidden, st.mlp_width or 4 * hidden,
                        r.vocab_size, st.params, r.seq_len, st.experts, tuple(st.matrix_sizes))


def work(model: str, micro_batch: int, gas: int, curve: GemmCurve | None = None, offset: float = 0.0) -> Work:
    """The units of work of one GPU's step of ``model`` at ``micro_batch`` x ``gas`` sequences: matrix products
    weighted by ``curve``'s slowness at each product's size (None: FLOPs alone), attention with ``offset`` tokens
    of per-token work (``decoder_work``'s module docstring)."""
    from ..catalog.models import get_model
    from ..estimate import moe

    matrices, layers, attention, hidden, width, vocab, params, seq, _, sizes = counted_shape(model)
    spec = get_model(model)
    tokens = micro_batch * gas * seq
    # Each matrix with the share of the tokens it multiplies: 1, or top-k / experts for a routed expert's
    # (balanced routing: ``estimate.moe.matrix_products``).
    products = moe.matrix_products(spec, sizes)
    if curve is None:
        matmul = 6.0 * (matrices if spec.moe is None else sum(s * share for s, share in products)) * tokens
    else:  # each of a matrix's three products multiplies micro-batch x sequence rows (its share of them) by it
        # An LM head of a vocabulary no multiple of 8 (the one matrix of hidden x vocabulary elements: a tied head
        # is counted once, the embedding table not at all) runs on the slower kernels for unaligned sizes.
        head = hidden * vocab if is_unaligned(vocab) else None
        # Free-lunch runs a layer's routed experts as one grouped GEMM (``measure.experts``): its tiles fill the
        # GPU as one product of every expert's FLOPs would, so each expert's product runs at the rate of that
        # size, not at its own (a small product alone leaves most of the GPU's SMs without a tile).
        grouped = spec.moe.experts if spec.moe is not None else 1
        matmul = sum(6.0 * size * share * tokens
                     * curve.slowness(2.0 * micro_batch * seq * share * size * (grouped if share < 1 else 1))
                     * (curve.unaligned if size == head else 1.0) for size, share in products)
    streamed = layers * (hidden + width)
    if spec.moe is not None:  # a mixture's attention widths, MLP width and routing (``estimate.moe``)
        attention, streamed = moe.attention_width(spec), moe.memory_width(spec, layers, hidden, width)
    return Work(matmul=matmul, attention=float(layers * attention) * (seq + offset) * tokens,
                loss=float(tokens) * vocab, memory=float(streamed) * tokens,
                idle=float(layers * gas), optimizer=float(params))


def built_in(methods: Methods, built: str = "float32") -> str:
    """The dtype of the weights a micro-step of a model built in ``built`` runs on with ``methods``: a 16-bit build
    stays 16-bit; an fp32 build turns 16-bit under DeepSpeed (its bf16 mode) and with bf16 weights (``bf16w``),
    where the gradients are only added, and else stays fp32 under autocast (alone, with DDP, or with FSDP, counted
    as DDP: it casts only each GPU's shard but upcasts the whole gradient to reduce in fp32)."""
    if built != "float32":
        return built
    return "bfloat16" if methods.bf16_weights or methods.uses_deepspeed else "float32"


def weight_passes_s(model: str, gas: int, gpu: str, evidence: Evidence = PLAIN, weights: str = "float32",
                    elsewhere: float = 0.0) -> float:
    """Seconds one GPU's step of ``model`` spends in ``gas`` micro-steps' passes over every weight it holds
    (``decoder_work``'s module docstring; all but ``elsewhere``, the weights other GPUs hold whole:
    ``expert_parallel``) built in ``weights``, at ``gpu``'s streaming bandwidth."""
    every, after_first = WEIGHT_BYTES[weights]
    held = counted_shape(model).params - elsewhere
    return held * (gas * every + (gas - 1) * after_first) / evidence.bandwidth_for(gpu)
