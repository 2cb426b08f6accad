"""What a sweep measures: the configurations of each preset (``naive``, ``free-lunch``, ``exhaustive``: every
memory-saving combination with free-lunch on, 12 valid on one GPU and 22 on more, ``smart``: the same, fastest-
looking first), and how memory-saving combinations compare. Catalog-level: no launcher, no torch."""
from __future__ import annotations

from typing import Sequence

from ..catalog.config import Config
from ..catalog.hardware import get_gpu
from ..catalog.methods import FREE_LUNCH, NAIVE, Methods, all_memory_combinations, exclusion_reason
from ..catalog.models import get_model

SWEEP_PRESETS = ("naive", "free-lunch", "exhaustive", "smart")
# How much memory each sharding saves (ZeRO-2 ~ FSDP shard-grad-op, ZeRO-3 ~ FSDP full-shard).
SHARD_LEVEL = {"none": 0, "zero1": 1, "zero2": 2, "fsdp_shard_grad_op": 2, "zero3": 3, "fsdp_full_shard": 3}


def model_list(models: str | Sequence[str]) -> list[str]:
    names = [m.strip() for m in models.split(",")] if isinstance(models, str) else list(models)
    return [get_model(m).key for m in names if m]


def speed_rank(m: Methods) -> tuple:
    """A guess of how slow a memory-saving combination is (lower first): offloading moves the optimizer to
    the CPU, checkpointing recomputes the forward pass, deeper sharding adds communication."""
    return (m.offload, m.checkpointing, SHARD_LEVEL[m.sharding], m.uses_fsdp)


def plan(models: str | Sequence[str], gpu: str, n_gpus: int, preset: str, tiny: bool = False, nodes: int = 1,
         micro_batch: int | None = None) -> list[Config]:
    """The configurations a preset measures (exhaustive and smart include the invalid ones, last for smart)."""
    if preset not in SWEEP_PRESETS:
        raise ValueError(f"unknown sweep preset {preset!r}; choose one of: {', '.join(SWEEP_PRESETS)}")
    gpu = get_gpu(gpu).key
    configs = []
    for model in model_list(models):
        if preset in ("naive", "free-lunch"):
            methods = [NAIVE if preset == "naive" else FREE_LUNCH]
        else:
            methods = all_memory_combinations(FREE_LUNCH)
            if preset == "smart":
                methods.sort(key=lambda m: (exclusion_reason(m, n_gpus) is not None, speed_rank(m)))
        configs += [Config(model, gpu, n_gpus, nodes, m, micro_batch, tiny) for m in methods]
    return configs



def saves_at_least(a: Methods, b: Methods) -> bool:
    """a saves at least as much memory as b in every dimension (checkpointing, sharding depth, offloading)."""
    return (a.checkpointing >= b.checkpointing and SHARD_LEVEL[a.sharding] >= SHARD_LEVEL[b.sharding]
            and a.offload >= b.offload)


def saves_more(a: Methods, b: Methods) -> bool:
    return saves_at_least(a, b) and not saves_at_least(b, a)
