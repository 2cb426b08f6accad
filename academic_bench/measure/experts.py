"""The experts' grouped GEMM at the recipe's precision when the weights are fp32.

transformers' ``grouped_mm`` experts cast their input to the weights' dtype, because torch's grouped GEMM is not an
autocast operator: under a bf16 autocast with fp32 weights (the recipe the study trains with) the experts' products
run in fp32, and under ``torch.compile`` transformers falls back to its per-expert loop as one opaque operator
(``integrations.moe._can_use_grouped_mm``: "not supported in torch.compile / inductor with dtypes other than bf16").
On one H100 that ran each small mixture's step twice as long as with bf16 weights
(``notebooks/runs/h100x1/evidence/moe/``). Autocast casts a linear layer's fp32 weight to the autocast dtype at
every call; ``grouped_mm_autocast`` does the same for the experts' stacked weights and then runs transformers' own
``grouped_mm`` forward, so the gradients reach the fp32 weights through the cast as they do for a linear layer.
"""
from __future__ import annotations

import torch
from torch import nn
from transformers.integrations import moe as hf_moe

NAME = "grouped_mm_autocast"
# The experts' stacked weight matrices, under the names transformers' experts interface reads.
WEIGHTS = ("gate_up_proj", "up_proj", "down_proj")


class _CastWeights:
    """The experts module as ``grouped_mm_experts_forward`` reads it, its weight matrices cast to ``dtype``."""

    def __init__(self, module: nn.Module, dtype: torch.dtype):
        self._module, self._dtype = module, dtype

    def __getattr__(self, name: str):
        value = getattr(self._module, name)
        if name in WEIGHTS and isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.to(self._dtype)
        return value


def autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype autocast runs a linear layer in on ``device_type``, None where autocast is off."""
    return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else None


def grouped_mm_autocast_forward(self: nn.Module, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                                top_k_weights: torch.Tensor) -> torch.Tensor:
    """transformers' ``grouped_mm`` experts forward, with fp32 weights cast to the autocast dtype first."""
    dtype = autocast_dtype(hidden_states.device.type)
    weight = getattr(self, "gate_up_proj", None) if self.has_gate else getattr(self, "up_proj", None)
    target = self if dtype is None or weight is None or weight.dtype == dtype else _CastWeights(self, dtype)
    return hf_moe.grouped_mm_experts_forward(target, hidden_states, top_k_index, top_k_weights)


def register() -> str:
    """Registers ``grouped_mm_autocast`` with transformers' experts interface (idempotent); returns its name."""
    hf_moe.ALL_EXPERTS_FUNCTIONS.register(NAME, grouped_mm_autocast_forward)
    return NAME
