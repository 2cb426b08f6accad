"""The decoders transformers builds from a config.json that the study does not answer, each refused with the
study's own reason and the catalog model nearest to it: those built of state-space layers (Mamba, Mamba-2), and
those whose attention transformers never runs through PyTorch's SDPA (Gemma-2)."""
from __future__ import annotations

import math


class Refused(ValueError):
    """A decoder transformers builds that the study does not answer: the study's reason and the nearest catalog
    model (the message names no file: ``from_config`` keeps it with the file's digest and names the file)."""


# Decoders built of state-space layers rather than attention heads (Mamba, Mamba-2), alone or with attention
# layers between them (the hybrids): transformers' model types. Nemotron-H (Nemotron 3 Nano among them), Granite 4.0's
# hybrid and Falcon-H1 interleave Mamba-2 layers with attention: read as decoders, the work model would count their
# attention and MLP layers and none of their scans.
STATE_SPACE = ("mamba", "mamba2", "falcon_mamba", "bamba", "jamba", "zamba", "zamba2", "nemotron_h",
               "granitemoehybrid", "falcon_h1")


def nearest_catalog_model(params: float, state_space: bool) -> str:
    """The catalog model nearest in parameters (by ratio) among its state-space models (Mamba) or its transformer
    decoders (Pythia)."""
    from . import mamba, pythia

    family = mamba.MODELS if state_space else pythia.MODELS
    return min(family, key=lambda m: abs(math.log(m.paper_params / max(params, 1.0)))).key


def refuse_unanswered(data: dict, model_cls, params: int) -> None:
    """Stop, with the study's reason and the nearest catalog model, at a decoder its answers do not describe: one
    built of state-space layers (Mamba, Mamba-2: no attention heads), or one whose attention transformers does not
    run through PyTorch's SDPA (Gemma-2: ``_supports_sdpa`` is False, eager attention only)."""
    kind, size = data["model_type"], f"{params / 1e9:.3g}B parameters"
    how = "academic-bench estimate --model {} --gpu GPU --gpus N"
    if kind in STATE_SPACE:
        near = nearest_catalog_model(params, state_space=True)
        raise Refused(f"model_type {kind!r} ({model_cls.__name__}, {size}) is built of state-space layers, not "
                      "attention heads: the study answers a decoder from its config.json by the work of its "
                      "attention and MLP (the work model, the catalog transformers by size), which says nothing of "
                      f"a state-space scan. The nearest catalog model is {near}, the study's state-space model: "
                      + how.format(near))
    if not getattr(model_cls, "_supports_sdpa", True):
        near = nearest_catalog_model(params, state_space=False)
        others = [name for attr, name in (("_supports_flash_attn", "FlashAttention"), ("_supports_flex_attn",
                  "flex attention")) if getattr(model_cls, attr, False)]
        capped = data.get("attn_logit_softcapping")
        raise Refused(f"model_type {kind!r} ({model_cls.__name__}, {size}) runs attention in transformers' eager "
                      f"path{''.join(f' or {o}' for o in others)}, never through PyTorch's SDPA (transformers: "
                      f"_supports_sdpa is False{f'; its attention logits are soft-capped at {capped:g}' if capped else ''}"
                      "): the study's free-lunch settings run SDPA attention, and every profile and measured "
                      "decoder its answers rest on ran it, so no answer rests on evidence for this attention. The "
                      f"nearest catalog model in parameters is {near}: " + how.format(near))
