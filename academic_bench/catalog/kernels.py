"""Kinds of GPU work, named from a kernel's or operator's name: what a profile groups its time into (matrix
products, attention, normalisation, ...), and which kinds do the FLOPs an MFU counts. Catalog-level: plain
patterns, no torch, so the report reads profiles without loading the profiler."""
from __future__ import annotations

import re

# (kind of work, pattern on a kernel's or operator's name): the first that matches names it. Checked against
# the kernels of our own H100 and H200 traces (notebooks/runs/*/profiles.jsonl): cuBLAS's nvjet/xmma/CUTLASS
# matrix products; cuDNN's convolutions (implicit-GEMM fprop/dgrad/wgrad, and the direct kernel of a depthwise weight gradient); cuDNN's
# SDPA, FlashAttention and PyTorch's memory-efficient attention; mamba-ssm's selective-scan and causal-conv1d
# kernels; the Triton kernels torch.compile writes, named for the operators they fuse
# ("triton_per_fused_native_layer_norm_0"): a pointwise or reduction one ("poi", "per", "red") never does a
# matrix product or a convolution, even when its name carries the matmul's bias add ("fused_add_addmm");
# dtype casts (ATen's copy kernels); and, on a CPU, the ATen operators themselves.
_NOT_FUSED_TRITON = r"^(?!triton_(poi|per|red)_)"
KINDS: list[tuple[str, str]] = [
    ("communication", r"nccl|all_?reduce|all_?gather|reduce_?scatter"),
    ("attention", r"flash|fmha|attention|sdpa|scaled_dot_product"),
    ("state-space scan", r"selective_scan|causal_conv1d|selective_state_update|chunk_scan|chunk_state|state_passing"),
    ("convolution", _NOT_FUSED_TRITON + r".*(conv(?!ert)|wgrad|dgrad|implicit_gemm)"),
    ("matrix multiplication", _NOT_FUSED_TRITON +
     r".*(gemm|nvjet|cutlass|xmma|cublas|(^|[_:])(mm|addmm|bmm|baddbmm|matmul|linear)([_(]|$))"),
    ("normalisation", r"layer_?norm|rms_?norm|group_?norm|batch_?norm"),
    ("loss and softmax", r"cross_entropy|log_softmax|softmax|nll_loss"),
    ("optimizer", r"adam|multi_tensor|foreach|_fused_sgd"),
    ("memory copy", r"^memcpy|^memset|copy_kernel|tensorTransform|^triton_poi_fused__to_copy_\d+$"
     r"|^aten::(copy_|_to_copy|to|clone|contiguous)$"),
    ("elementwise and other", r""),
]
KIND_NAMES = [k for k, _ in KINDS]
# The kinds whose kernels do the FLOPs the MFU counts (``estimate``: matrix products, convolutions and the
# attention term); a state-space scan's work is not counted (Mamba's FLOPs are its reference path's matmuls).
FLOP_KINDS = ("matrix multiplication", "convolution", "attention")
_PATTERNS = [(k, re.compile(p, re.IGNORECASE)) for k, p in KINDS]


def kind_of(name: str) -> str:
    """The kind of work a kernel or operator does, from its name (``KINDS``)."""
    return next(k for k, p in _PATTERNS if p.search(name))


def kernel_label(name: str) -> str:
    """A kernel's name as a reader needs it: the function, without its return type, template arguments or
    parameters ('void selective_scan_bwd_kernel<Traits<128, 16, true>, float>(Params)' ->
    'selective_scan_bwd_kernel'). A cut inside the arguments would leave a dangling ', ' list."""
    out, depth = [], 0
    for ch in name.strip():
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(ch)
    label = "".join(out).strip()
    return label.split(" ")[-1] if " " in label else label
