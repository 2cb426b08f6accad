"""Model facts (``facts``: kept for the catalog, else from a meta-device build): parameter counts and model FLOPs
per step (no GPU, no weights), and analytic training days from them.

**FLOPs** (the DESIGN.md convention): forward + backward matrix multiplications and convolutions, no
recomputation, no optimizer.
- Transformers: per token ``6 x (parameters - input embedding) + 12 x layers x attention width x sequence``
  (``dense_flops_terms``). The input embedding is the token/position/type tables; an output projection tied to
  them (RoBERTa's MLM decoder) is a real matmul per token, so it is added back. The attention width is heads x
  head size, which is not the hidden size where a config states its own head size (Qwen3-4B: 32 heads of 128
  on a hidden size of 2,560).
- Mixtures of experts: the same with the parameters a token uses (the router, shared experts and its top-k
  experts) and the attention's query-key and value widths (``moe``).
- Other families (Mamba, ConvNeXt, ViT): ``torch.utils.flop_counter.FlopCounterMode`` over the forward and
  backward of one sample (Mamba: a short sequence, scaled per token, since every counted op is per token;
  ``meta.counted_flops``, with its correction of grouped convolutions).
"""
from __future__ import annotations

from functools import lru_cache

from ..catalog.hardware import get_gpu
from ..catalog.models import ModelSpec, get_model
from ..catalog.units import SECONDS_PER_DAY

from . import moe
from .facts import ModelStats, counted_flops_of, model_stats_of


GIB = 2**30
DEFAULT_MFU = 0.4  # an assumption for planning, not a measurement: well-tuned training stacks reach 0.4-0.6
BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
MAMBA_COUNT_TOKENS = 8  # Mamba's counted ops are per token: count a short sequence and scale


def spec_of(model: ModelSpec | str) -> ModelSpec:
    return model if isinstance(model, ModelSpec) else get_model(model)


def model_stats(model: ModelSpec | str, tiny: bool = False) -> ModelStats:
    """Parameter counts and shape of ``model`` (``facts.ModelStats``)."""
    return model_stats_of(spec_of(model).key, tiny)


def counted_flops(model: ModelSpec | str, tiny: bool = False, seq_len: int | None = None) -> int:
    """FlopCounterMode's count of one forward and backward of one sample (meta device; kept for the catalog)."""
    return counted_flops_of(spec_of(model).key, tiny, seq_len)


# --- FLOPs -----------------------------------------------------------------------------------------------

def dense_flops_terms(matmul_params: float, layers: int, attention_width: int) -> tuple[float, float]:
    """The dense transformer convention (DESIGN.md) per token, forward and backward, as (the part that does not
    depend on the sequence, the part per position of the sequence): ``6 x matmul_params`` (two FLOPs per weight
    per token forward, four backward) and ``12 x layers x attention_width`` (the scores and the weighted values,
    each ``2 x attention_width`` FLOPs per pair of positions forward, twice that backward, over the full square
    as torch's count of SDPA takes it). ``matmul_params``: the weights of every matrix product (the parameters
    less the input embedding tables, a tied output head added back); ``attention_width``: heads x head size. A
    mixture of experts counts its active weights as ``matmul_params``."""
    return 6 * matmul_params, 12 * layers * attention_width


def flops_method(model: ModelSpec | str) -> str:
    """How the model's FLOPs are counted, for labels."""
    spec = spec_of(model)
    if spec.moe is not None:
        return moe.FLOPS_CONVENTION
    if spec.transformer_shape is not None:
        return "6 x (params - input embedding) + 12 x layers x attention width x seq per token"
    if spec.recipe.seq_len:
        return f"torch FlopCounterMode, forward + backward of {MAMBA_COUNT_TOKENS} tokens, scaled per token"
    return "torch FlopCounterMode, forward + backward of one sample"


def flops_per_sample(model: ModelSpec | str, tiny: bool = False) -> float:
    """Model FLOPs (forward + backward) of one sequence or image of the recipe."""
    spec = spec_of(model)
    key, r = spec.key, spec.recipe_for(tiny)
    if spec.transformer_shape is not None:
        layers, _ = spec.transformer_shape(tiny)
        st = model_stats(key, tiny)
        if spec.moe is not None:  # a mixture of experts: the experts a token runs (``moe``)
            return moe.flops_per_sample(spec, st, layers, r.seq_len)
        if not st.attention_width:
            raise ValueError(f"{key}: its config states no attention heads, so its attention width is unknown")
        base, per_position = dense_flops_terms(st.params - st.input_embedding + st.tied_output, layers,
                                               st.attention_width)
        return (base + per_position * r.seq_len) * r.seq_len
    if r.seq_len:  # per-token ops only (Mamba): count a short sequence and scale
        short = min(MAMBA_COUNT_TOKENS, r.seq_len)
        return counted_flops(key, tiny, short) / short * r.seq_len
    return float(counted_flops(key, tiny))


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


RECOMPUTE_FRACTION = 1.0 / 3.0  # one extra forward of the checkpointed blocks: 2 of their 6 FLOPs per weight-token


@lru_cache(maxsize=None)
def recomputed_share(model: str) -> float:
    """The share of a step's model FLOPs that checkpointing recomputes: all but the output head's (the
    checkpointed blocks; a language model's head and loss run once), 1 for a model without an output head."""
    from .meta import meta_model

    spec = get_model(model)
    get_head = getattr(meta_model(spec, False), "get_output_embeddings", None)
    head = get_head() if get_head is not None else None
    if head is None or spec.recipe.seq_len is None:
        return 1.0
    head_flops = 6.0 * head.weight.numel() * spec.recipe.global_batch * spec.recipe.seq_len
    return max(0.0, 1.0 - head_flops / float(model_flops_per_step(spec)))
