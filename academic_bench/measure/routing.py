"""The token routing a measured step of a mixture of experts saw: how many tokens each expert of each mixture layer
received, kept in the row (``Ran.expert_tokens``), because the experts' products run at those sizes and the step
time depends on them.

Counted after the timed steps, on the first of the micro-batches they cycle through (``timing.time_phases``), by the
weights they left: one more forward, without gradients and with every compiled block run eagerly
(``torch.compiler.set_stance("force_eager")``), so that hooks on the experts modules see each layer's routing and
the compiled code (and its guards) is never touched.
"""
from __future__ import annotations

import torch
from torch import nn

from ..catalog.models import loss_of


def experts_modules(model: nn.Module) -> list[nn.Module]:
    """Each mixture layer's routed experts under transformers' experts interface, in layer order."""
    return [m for m in model.modules() if hasattr(m, "has_gate") and hasattr(m, "num_experts")]


def expert_token_counts(model: nn.Module, batch: dict[str, torch.Tensor], device: str) -> list[list[int]] | None:
    """Tokens each expert received, per mixture layer, in one forward of ``batch``; None for a dense model."""
    layers = experts_modules(model)
    if not layers:
        return None
    counts: list[list[int]] = []

    def record(module: nn.Module, args: tuple, kwargs: dict) -> None:
        chosen = kwargs.get("top_k_index", args[1] if len(args) > 1 else None)
        counts.append(torch.bincount(chosen.reshape(-1), minlength=int(module.num_experts)).tolist())

    handles = [m.register_forward_pre_hook(record, with_kwargs=True) for m in layers]
    batch = {k: v.to(device) for k, v in batch.items()}
    try:
        with torch.no_grad(), torch.compiler.set_stance("force_eager"):
            loss_of(model, batch)
    finally:
        for h in handles:
            h.remove()
    return counts
