"""Analytic estimates: model FLOPs per step, a memory model per configuration, the largest micro-batch
predicted to fit, and analytic training days. Everything is computed from the model's shape: no GPU, no weights.

| module | holds |
| --- | --- |
| ``kept`` | ``data/model_facts.json`` written and checked: the facts of every catalog model, computed afresh |
| ``memory`` | the memory model: states, overhead, the largest micro-batch that fits, the host's memory |
| ``activations`` | what a step keeps for backward (compiled decoders with fused attention from their layer's shape) |
| ``coefficients`` | the memory model's constants |
| ``stats`` | parameter counts, FLOPs, analytic days |
| ``facts`` | what a meta-device build tells, kept for the catalog (``ModelStats``, ``ActivationProfile``, ``DecoderLayer``) |
| ``meta`` | the model built on the meta device (torch), for a model the kept file does not hold |

Their public names are this package's; the meta-device build's (``meta_model``, ``meta_batch``,
``reference_path``, ``CHECKPOINT_UNITS``) load torch when first used, so that an estimate of a catalog model
never waits for it.
"""
from .facts import ActivationProfile, DecoderLayer, ModelStats  # noqa: F401
from .stats import (  # noqa: F401
    BYTES,
    DEFAULT_MFU,
    GIB,
    MAMBA_COUNT_TOKENS,
    analytic_days,
    counted_flops,
    dense_flops_terms,
    flops_method,
    flops_per_sample,
    model_flops_per_step,
    model_stats,
    spec_of,
    total_flops,
)
from .activations import decoder_layer, fused_layer  # noqa: F401
from .coefficients import COEFFICIENTS, Coefficients  # noqa: F401
from .memory import (  # noqa: F401
    HOST_BUFFER_FACTOR,
    MemoryEstimate,
    activation_profile,
    host_memory_need,
    host_fits,
    host_memory_verdict,
    max_micro_batch,
    micro_batch_choices,
    predict_memory,
    residual_bytes,
    saved_tensor_profile,
    usable_bytes,
)

_META = ("CHECKPOINT_UNITS", "meta_batch", "meta_model", "reference_path")


def __getattr__(name: str):
    if name in _META:
        from . import meta

        return getattr(meta, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
