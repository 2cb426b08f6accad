"""A mixture of experts read from its meta-device build: what the estimates need to charge only the experts a token
uses while keeping every expert's weights, gradients and optimizer states in memory.

transformers (5.x) keeps a mixture's routed experts in one module per layer whose weights are 3-D tensors (experts x
outputs x inputs), decorated with ``@use_experts_implementation`` so that ``set_experts_implementation`` chooses
how they run (a per-expert loop, batched or grouped matrix products). ``read_moe`` finds those modules, the
top-k the config states, the shared experts beside them (Qwen2-MoE's ``shared_expert``, DeepSeek's
``shared_experts``: dense MLPs every token runs) and the attention's query-key and value widths (DeepSeek's
multi-head latent attention has query-key heads of ``qk_nope_head_dim + qk_rope_head_dim`` and value heads of
``v_head_dim``). The router (a hidden x experts matrix every token multiplies) and the shared experts stay dense
weights: every estimate counts them as it counts any weight.

A mixture the study cannot charge is refused with a ``ConfigError`` naming what it lacks (``refusal``): experts
outside transformers' experts interface (their kernel cannot be switched and their weights are not laid out per
expert), a config without a number of experts per token, or experts whose count disagrees with the config.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# Where configs state a mixture of experts' expert count (Mixtral, Qwen-MoE, DeepSeek, others).
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
# The experts' kernels transformers offers (``integrations.moe.ExpertsInterface`` and the per-expert loop).
LOOP = "eager"


@dataclass(frozen=True)
class MoeShape:
    """What a mixture of experts adds to a decoder's shape (module docstring)."""

    experts: int  # routed experts per mixture layer
    per_token: int  # routed experts each token runs (top-k)
    moe_layers: int  # layers whose MLP is a mixture (DeepSeek keeps its first layers dense)
    expert_matrices: tuple[int, ...]  # each weight matrix of one routed expert, in elements
    expert_width: int  # one routed expert's intermediate width
    gated: bool  # a routed expert has a gate beside its up projection
    shared_width: int  # the shared experts' intermediate width per mixture layer (0: none)
    router: int  # the router's weight elements per mixture layer (experts x hidden)
    query_key: int  # attention: heads x query-key head size
    value: int  # attention: heads x value head size
    experts_class: str  # the experts module's class (its kernel is switched through transformers)

    @property
    def expert_params(self) -> int:
        """Weights of every routed expert of every mixture layer."""
        return self.moe_layers * self.experts * sum(self.expert_matrices)

    @property
    def active_share(self) -> float:
        """The share of the routed experts' weights one token runs: top-k of the experts."""
        return self.per_token / self.experts

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "expert_matrices": list(self.expert_matrices)}

    @classmethod
    def from_dict(cls, d: dict) -> "MoeShape":
        return cls(**{**d, "expert_matrices": tuple(d["expert_matrices"])})


def stated_experts(cfg) -> int:
    """The expert count a config (as transformers reads it, defaults included) states; 0 for a dense decoder."""
    return max((getattr(cfg, k, None) or 0) for k in EXPERT_KEYS)


def is_experts_module(module) -> bool:
    """Whether ``module`` is a layer's routed experts under transformers' experts interface: the decorator sets
    ``has_gate`` and ``is_transposed`` on every instance, and the class keeps ``num_experts``."""
    return hasattr(module, "has_gate") and hasattr(module, "is_transposed") and hasattr(module, "num_experts")


def _attention_widths(cfg) -> tuple[int, int]:
    """(heads x query-key head size, heads x value head size): DeepSeek's latent attention states the two head
    sizes; other decoders have one head size (``head_dim``, else hidden / heads)."""
    heads = int(cfg.num_attention_heads)
    size = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    qk = getattr(cfg, "qk_head_dim", None) or (
        (cfg.qk_nope_head_dim + cfg.qk_rope_head_dim) if getattr(cfg, "qk_nope_head_dim", None) else size)
    value = getattr(cfg, "v_head_dim", None) or size
    return heads * int(qk), heads * int(value)


def _expert_matrices(module) -> tuple[tuple[int, ...], int]:
    """(each matrix of one expert in elements, the expert's intermediate width) from the 3-D weights."""
    weights = [p for name, p in module.named_parameters(recurse=False) if p.dim() == 3]
    sizes = tuple(int(p[0].numel()) for p in weights)
    down = getattr(module, "down_proj", None)
    hidden = int(module.config.hidden_size)
    width = int(down.shape[1] * down.shape[2] // hidden) if down is not None else 0
    return sizes, width


def _shared_width(block, hidden: int) -> int:
    """The intermediate width of the dense experts every token runs beside the routed ones (the children of the
    mixture block named like shared experts): their up (and gate) projections from the hidden size."""
    from torch import nn

    total, gated = 0, False
    for name, child in block.named_children():
        if "shared" not in name:
            continue
        for sub_name, m in child.named_modules():
            if isinstance(m, nn.Linear) and m.in_features == hidden and m.out_features > 1:
                total += m.out_features
                gated = gated or "gate" in sub_name
    return total // 2 if gated else total


def refusal(net, cfg) -> str | None:
    """Why the mixture of experts ``net`` (built from ``cfg``) cannot be charged by the study, or None."""
    experts = stated_experts(cfg)
    found = [m for m in net.modules() if is_experts_module(m)]
    if not found:
        return (f"its {experts} experts are not under transformers' experts interface (set_experts_implementation): "
                "the study needs each layer's experts as one module of per-expert weight tensors, to count the "
                "experts a token runs and to switch their kernel")
    if not getattr(cfg, "num_experts_per_tok", None):
        return "it states no num_experts_per_tok: the experts each token runs decide its FLOPs"
    counts = {int(m.num_experts) for m in found}
    if counts != {experts}:
        return f"its experts modules hold {sorted(counts)} experts where the config states {experts}"
    if len({_expert_matrices(m) for m in found}) != 1:
        return "its mixture layers hold experts of different shapes"
    return None


def read_moe(net, cfg) -> MoeShape | None:
    """The mixture of experts of the decoder ``net`` built from ``cfg`` on the meta device, or None for a dense
    decoder (call ``refusal`` first)."""
    found = [m for m in net.modules() if is_experts_module(m)]
    if stated_experts(cfg) <= 1 or not found:
        return None
    first = found[0]
    sizes, width = _expert_matrices(first)
    block = next(m for m in net.modules() if any(c is first for c in m.children()))
    router = next((int(p.numel()) for m in block.children() if m is not first
                   for name, p in m.named_parameters(recurse=False)
                   if p.dim() == 2 and p.shape[0] == first.num_experts), 0)
    query_key, value = _attention_widths(cfg)
    return MoeShape(experts=int(first.num_experts), per_token=int(cfg.num_experts_per_tok), moe_layers=len(found),
                    expert_matrices=sizes, expert_width=width, gated=bool(first.has_gate),
                    shared_width=_shared_width(block, int(cfg.hidden_size)), router=router, query_key=query_key,
                    value=value, experts_class=type(first).__name__)
