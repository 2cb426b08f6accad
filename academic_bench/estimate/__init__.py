"""Analytic estimates: model FLOPs per step, a memory model per configuration, the largest micro-batch
predicted to fit, and analytic training days. Everything is computed on the meta device: no GPU, no weights.

Two modules: ``stats`` (the model on the meta device, FLOPs, analytic days) and ``memory`` (the memory model),
which builds on it. Their public names are this package's.
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
from .memory import (  # noqa: F401
    ActivationProfile,
    COEFFICIENTS,
    Coefficients,
    HOST_BUFFER_FACTOR,
    MemoryEstimate,
    activation_profile,
    host_memory_need,
    host_memory_verdict,
    max_micro_batch,
    micro_batch_choices,
    predict_memory,
    saved_tensor_profile,
    usable_bytes,
)
