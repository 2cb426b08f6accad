"""Expert parallelism as published mixture-of-experts runs use it, charged only to predict those runs.

The study has no expert-parallel method and measures none (``catalog.methods``); published single-node runs of
mixtures of experts use it (``catalog.published``: a method with ``ep``), with the experts spread over the same GPUs
as the FSDP sharding beside it (NeMo AutoModel's ``ep_size`` equal to the GPU count). Predicting them as FSDP of
every weight charged what such a run never does: gathering and reducing every expert's weights, and passing over
all of them in each micro-step. Here, with ``n`` GPUs:

- each GPU holds 1/n of the routed experts whole (``experts_elsewhere``): it neither gathers nor reduces them (the
  FSDP collectives cover the other weights alone) and its micro-steps pass over its own experts only;
- the tokens travel to the GPUs of the experts they are routed to and back (``all_to_all_s``): each token's hidden
  state goes once to each other GPU that holds one or more of its top-k experts (dispatch: DeepEP's layout sends a
  token once per GPU, ``is_token_in_rank``) and the experts' summed output comes back (combine), in the forward
  pass, again in the backward pass and in the recompute of a checkpointed forward, at the rate a ring collective
  gets over the link (``method_costs.ring_gbps``), none of it hidden: the experts wait for their tokens. How many
  GPUs a token reaches is the expectation under routing that picks its k experts uniformly (``remote_gpus``), as
  the work model's balanced routing does; a gate that keeps a token's experts on one GPU sends less.

These charges are checked only by the published points themselves, which is the reason the study offers no
expert-parallel answer of its own.
"""
from __future__ import annotations

from math import comb

from ..catalog.hardware import get_gpu
from .method_costs import ring_gbps


def routed_experts(model: str) -> float:
    """Every routed expert's weights of ``model`` (0 for a dense decoder)."""
    from ..catalog.models import get_model

    moe = get_model(model).moe
    return 0.0 if moe is None else float(moe.expert_params)


def experts_elsewhere(model: str, n_gpus: int) -> float:
    """Routed experts' weights of ``model`` that the other GPUs hold when its experts are spread over ``n_gpus``
    (0 for a dense decoder or one GPU)."""
    return routed_experts(model) * (n_gpus - 1) / n_gpus


def remote_gpus(experts: int, per_token: int, n_gpus: int) -> float:
    """The other GPUs one token's ``per_token`` experts sit on, in expectation, with ``experts`` spread evenly over
    ``n_gpus`` and each token's experts picked uniformly: each other GPU holds one or more of them unless all
    ``per_token`` fall among the ``experts - experts / n_gpus`` it does not hold."""
    held = experts // n_gpus
    return (n_gpus - 1) * (1 - comb(experts - held, per_token) / comb(experts, per_token))


def all_to_all_s(model: str, gpu: str, n_gpus: int, tokens: int, checkpointing: bool = False) -> float:
    """Seconds per optimizer step one GPU spends sending its ``tokens`` (per step) to the experts of ``model``
    on the other GPUs and back (module docstring); 0 for a dense decoder, one GPU or a GPU without a link."""
    from ..catalog.models import get_model
    from ..estimate import BYTES

    spec = get_model(model)
    link = ring_gbps(get_gpu(gpu), n_gpus)
    if spec.moe is None or n_gpus <= 1 or not link:
        return 0.0
    _, hidden = spec.transformer_shape(False)
    passes = 3 if checkpointing else 2  # forward, backward, and the checkpointed forward's recompute
    sent = tokens * remote_gpus(spec.moe.experts, spec.moe.per_token, n_gpus) * hidden * BYTES[spec.recipe.precision]
    return spec.moe.moe_layers * passes * 2 * sent / (link * 1e9)  # dispatch and combine in each pass
