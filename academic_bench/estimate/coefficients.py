"""Every constant of the memory model (``memory``, ``activations``) in one place, with its source."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Coefficients:
    """Every constant of the memory model, in one place to calibrate against measured peaks.

    Defaults come from the cited sources and library defaults; the overhead terms are assumptions.
    """

    # Activations. Korthikanti et al. 2022 Sec. 4.1: bytes per s*b*h per transformer layer, 16-bit values (the
    # eager path; compiled layers with fused attention are counted from their shape, ``activations.fused_layer``).
    transformer_layer: float = 34.0
    # x a*s/h per layer, only when attention scores are materialised (eager). Korthikanti et al. count 5 (16-bit
    # scores and probabilities, a 1-byte dropout mask); transformers' eager attention keeps the softmax output
    # in fp32 (4 bytes) and its 16-bit copy for the value product (2): 6, which the shipped naive runs confirm.
    attention_scores: float = 6.0
    # With dropout on the probabilities, the value product takes the dropout's 16-bit output instead of the
    # copy, and dropout keeps its 1-byte mask: one byte more per score.
    attention_dropout_mask: float = 1.0
    # mamba-ssm's fused function (checkpoint_lvl 1) saves xz (4h), x_dbl and out (2h) in 16-bit; the block
    # adds its fp32 residual (h) and the normalised input (h): about 18 bytes per token per hidden unit.
    mamba_fused_layer: float = 18.0
    # Residual dropout under torch.compile: a 1-byte mask per element of each dropped-out sublayer output.
    dropout_mask: float = 1.0
    # LM logits at the start of backward: the fp32 log-softmax kept for backward and the two fp32 gradients
    # (of the loss's log-softmax output and of its input) before either is freed.
    loss_fp32_copies: float = 3.0
    # A fused cross-entropy (e.g. FlashAttention's or Liger's) keeps the 16-bit logits and writes their gradient in
    # place: no fp32 copy. The study's steps use transformers' loss (PyTorch's log-softmax), so it is off.
    fused_loss: bool = False
    # Liger's fused linear cross-entropy (the ``fused-ce`` switch beyond the paper) computes the head and the loss
    # chunk by chunk of tokens, writing the head's input gradient as it goes: no whole logits tensor is ever alive.
    chunked_loss: bool = False
    # A fused gated MLP that recomputes its gate-up product in backward instead of saving it (xformers' SwiGLU, which
    # whyNLP/tinyllama's published runs use): one MLP intermediate fewer. The study's compiled layers save it.
    recomputed_mlp_product: bool = False
    activation_scale: float = 1.0  # one multiplier on all activations (calibration)
    # Sharded and distributed states (DeepSpeed and FSDP defaults as measure/apply.py configures them).
    zero_bucket_elements: float = 5e8  # DeepSpeed reduce_bucket_size default
    zero3_live_params: float = 1e9  # DeepSpeed stage3_max_live_parameters / max_reuse_distance defaults
    gathered_units: float = 2.0  # FSDP full-shard: the block running plus the one prefetched
    # Overhead outside the model's tensors (assumptions).
    cuda_context_gib: float = 0.5
    workspace_gib: float = 0.25  # cuBLAS/cuDNN workspaces
    nccl_gib: float = 0.5  # communicator buffers when more than one GPU
    fragmentation: float = 0.10  # caching-allocator reserve beyond allocated bytes, as a fraction
    usable_fraction: float = 0.99  # of the catalog's nominal memory (as GiB) that the driver reports


COEFFICIENTS = Coefficients()
