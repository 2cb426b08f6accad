"""Analytic estimates: model FLOPs per step, a memory model per configuration, the largest micro-batch
predicted to fit, and analytic training days. Everything is computed on the meta device: no GPU, no weights.

Modules: ``stats`` (the model on the meta device, FLOPs, analytic days), ``coefficients`` (the memory model's
constants), ``activations`` (what a step keeps for backward) and ``memory`` (the memory model), each building on
those before it. Their public names are this package's.
"""
from .stats import (  # noqa: F401
    BYTES,
    CHECKPOINT_UNITS,
    DEFAULT_MFU,
    GIB,
    MAMBA_COUNT_TOKENS,
    ModelStats,
    analytic_days,
    counted_flops,
    flops_method,
    flops_per_sample,
    meta_batch,
    meta_model,
    model_flops_per_step,
    model_stats,
    reference_path,
    spec_of,
    total_flops,
)
from .activations import DecoderLayer, decoder_layer, fused_layer  # noqa: F401
from .coefficients import COEFFICIENTS, Coefficients  # noqa: F401
from .memory import (  # noqa: F401
    ActivationProfile,
    HOST_BUFFER_FACTOR,
    MemoryEstimate,
    activation_profile,
    host_memory_need,
    host_memory_verdict,
    max_micro_batch,
    micro_batch_choices,
    predict_memory,
    residual_bytes,
    saved_tensor_profile,
    usable_bytes,
)
