"""What every model entry carries: how to build it, its replication recipe, and random inputs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal

if TYPE_CHECKING:  # torch loads only where a model is built or run: the answer commands never need it
    import torch
    from torch import nn

    from .moe import MoeShape

Task = Literal["causal-lm", "masked-lm", "image-classification"]
Precision = Literal["fp32", "fp16", "bf16"]


@dataclass(frozen=True)
class Optimizer:
    """The recipe's optimizer. Every benchmarked method must keep these values (no library defaults)."""

    name: Literal["adam", "adamw"]
    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    source: str

    def build(self, params, fused: bool | None = None) -> torch.optim.Optimizer:
        import torch

        cls = torch.optim.AdamW if self.name == "adamw" else torch.optim.Adam
        kwargs = dict(lr=self.lr, betas=self.betas, eps=self.eps, weight_decay=self.weight_decay)
        if fused is not None:
            kwargs["fused"] = fused
        return cls(params, **kwargs)


@dataclass(frozen=True)
class Recipe:
    """Replication hyper-parameters (paper Table 3 unless a source says otherwise)."""

    global_batch: int
    steps: int
    precision: Precision
    optimizer: Optimizer
    seq_len: int | None = None
    image_size: int | None = None
    num_classes: int | None = None
    vocab_size: int | None = None
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def items_per_sample(self) -> int:
        """Tokens per sequence for language models, 1 image for vision models."""
        return self.seq_len or 1

    @property
    def unit(self) -> str:
        return "tokens" if self.seq_len else "images"


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the catalog. ``build(tiny)`` never downloads weights."""

    key: str
    family: str
    display: str
    paper_params: float  # the size the paper reports, in parameters
    task: Task
    recipe: Recipe
    # build(tiny, attn): attn is the attention implementation, "eager", "sdpa" or "flash_attention_2"
    build: Callable[..., nn.Module]
    tiny_recipe: Recipe
    # Layers, hidden size and sequence length for the transformer FLOPs formula; None: count with
    # torch.utils.flop_counter on one example instead (DESIGN.md convention).
    transformer_shape: Callable[[bool], tuple[int, int]] | None = None
    block_types: tuple[str, ...] = ()  # class names of repeated blocks (checkpointing, FSDP wrapping)
    compiles: bool = True  # the paper did not compile Mamba
    kernel: str = "sdpa"  # custom-kernel path: "sdpa" (attention), "mamba-ssm", "none"
    # What its meta-device facts (``estimate.facts``) are kept under where not its key: a decoder from a config.json
    # keeps them per file and sequence length, whatever the tokens, batch and precision it trains with.
    facts_key: str | None = None
    # A mixture of experts' routed experts, top-k and shared experts (``moe.read_moe``); None for a dense model.
    moe: MoeShape | None = None

    def recipe_for(self, tiny: bool) -> Recipe:
        return self.tiny_recipe if tiny else self.recipe

    def make_batch(self, batch_size: int, tiny: bool = False, device: str | torch.device = "cpu",
                   generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """Random inputs of the right shape and dtype for one micro-batch."""
        import torch

        r = self.recipe_for(tiny)
        if self.task == "image-classification":
            x = torch.randn(batch_size, 3, r.image_size, r.image_size, generator=generator)
            y = torch.randint(0, r.num_classes, (batch_size,), generator=generator)
            return {"pixel_values": x.to(device), "labels": y.to(device)}
        ids = torch.randint(0, r.vocab_size, (batch_size, r.seq_len), generator=generator)
        if self.task == "masked-lm":
            # RoBERTa's recipe masks 15% of tokens; unmasked positions carry the ignore index.
            labels = ids.clone()
            keep = torch.rand(ids.shape, generator=generator) > 0.15
            labels[keep] = -100
            return {"input_ids": ids.to(device), "labels": labels.to(device)}
        return {"input_ids": ids.to(device), "labels": ids.to(device)}


def loss_of(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The training loss for a batch, whatever the family."""
    from torch import nn

    if "pixel_values" in batch:
        logits = model(batch["pixel_values"])
        return nn.functional.cross_entropy(logits.float(), batch["labels"])
    return model(**batch).loss
