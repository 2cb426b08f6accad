"""What the switches beyond the paper change in the work model's step (``decoder_work``), fitted to the study's
measured rows of each switch alone on the catalog decoders, and checked on the decoders outside the catalog.

The work model counts a step in kinds of GPU work at the rates of free-lunch profiles; no profile measures a switch
beyond the paper. Each switch changes kinds of work that the work model already counts, so what it changes is a
share of those kinds' time, fitted to its measured step rows of the catalog decoders (one GPU, the switch alone on
free-lunch, a validated class: ``analysis.results``). Each row's kinds are first scaled by the model's own measured
free-lunch step over the work model's prediction of it on that setup, so that the work model's error for that
decoder is not taken for the switch's.

- **fused cross-entropy** (Liger's fused linear cross-entropy): the loss and softmax kernels over whole fp32
  logits become a kernel over chunks of them that computes the gradient in the forward pass. ``loss``: the share of
  the loss kind's time that remains, the median over the rows. The LM head's products are the same FLOPs, in
  chunks.
- **FP8 training** (torchao's float8, tensorwise and rowwise, each fitted on its own rows): the blocks' matrix
  products (every weight matrix but the LM head, which the recipe keeps in 16 bits) take ``matmul`` of their bf16
  time, and the casts to 8 bits (each product's inputs' scale and cast, per layer and token as the memory-bound
  kernels are) add ``memory`` times the memory-bound kernels' time: least squares over the rows. That is why FP8
  pays only at larger widths: the products shrink with the width squared, the casts with the width.
- **bf16 weights**: no kind of work the model counts changes (its published pure-bf16 points are predicted so).

A switch with fewer rows than its unknowns, or none, is not modelled: the answer then says so. The fit is
``switch_fit``'s, kept with the work model's evidence (``store.calibration``).
"""
from __future__ import annotations

from typing import Mapping

from ..catalog.methods import Methods

FITTED = {"fused-ce": ("loss",), "fp8-tensorwise": ("matmul", "memory"), "fp8-rowwise": ("matmul", "memory")}
UNCHANGED = ("bf16w",)  # switches that change no kind of work the work model counts


def block_share(model: str) -> float:
    """The share of ``model``'s matrix-product FLOPs in its blocks (every weight matrix but the LM head)."""
    from ..catalog.models import get_model
    from ..estimate import model_stats

    spec = get_model(model)
    _, hidden = spec.transformer_shape(False)
    matrices = model_stats(model).matrix_params
    return max(0.0, matrices - spec.recipe.vocab_size * hidden) / matrices


def why_not_charged(methods: Methods, switches: Mapping[str, Mapping[str, float]]) -> str | None:
    """Why the work model cannot charge ``methods``' switches beyond the paper with ``switches``
    (``fit_switches``), or None where it can."""
    missing = [s for s in methods.beyond_switches() if s not in UNCHANGED and s not in switches]
    return None if not missing else (f"no measured row of {', '.join(missing)} alone on a catalog decoder fits what "
                                     "it changes")


def with_switches(model: str, seconds: dict, methods: Methods, switches: Mapping[str, Mapping[str, float]]) -> dict:
    """The work model's seconds per kind with ``methods``' switches beyond the paper applied (module docstring)."""
    out = dict(seconds)
    on = methods.beyond_switches()
    if "fused-ce" in on:
        out["loss"] = out["loss"] * switches["fused-ce"]["loss"]
    fp8 = [s for s in on if s.startswith("fp8")]
    if fp8:
        f, share = switches[fp8[0]], block_share(model)
        blocks = out["matmul"] * share
        out["matmul"] = out["matmul"] - blocks + f["matmul"] * blocks
        out["memory"] = out["memory"] * (1.0 + f["memory"])
    return out
