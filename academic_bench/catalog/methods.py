"""Efficient-training settings, named presets, and the valid search space (paper Section 3.2.1, Appendix F).

Free-lunch methods (compile, custom kernels, TF32) never hurt and are switched on together. Memory-saving
methods (activation checkpointing, sharding, offloading) trade speed for memory; their combinations form
the search space: 12 valid options on one GPU and 22 on more, each excluded one with its reason.

``bf16_weights`` (switch ``bf16w``) keeps a bf16 recipe's weights in bf16 with fp32 master weights in the
optimizer, as DeepSpeed's bf16 mode does, instead of autocasting fp32 weights at every micro-step. It is a
switch to measure, not yet part of the free-lunch preset or the search space: it joins them once its timing is
validated against sustained training on a GPU and its loss against fp32-master AdamW.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, replace
from typing import Literal

Sharding = Literal["none", "zero1", "zero2", "zero3", "fsdp_shard_grad_op", "fsdp_full_shard"]
SHARDINGS: tuple[str, ...] = ("none", "zero1", "zero2", "zero3", "fsdp_shard_grad_op", "fsdp_full_shard")
SHARDING_LABELS = {"none": "none", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3",
                   "fsdp_shard_grad_op": "FSDP shard-grad-op", "fsdp_full_shard": "FSDP full-shard"}
PRESETS = ("naive", "free-lunch", "all")


@dataclass(frozen=True)
class Methods:
    compile: bool = False
    kernels: bool = False
    tf32: bool = False
    checkpointing: bool = False
    sharding: str = "none"
    offload: bool = False
    bf16_weights: bool = False

    def __post_init__(self) -> None:
        if self.sharding not in SHARDINGS:
            raise ValueError(f"unknown sharding {self.sharding!r}; choose one of: {', '.join(SHARDINGS)}")

    @property
    def free_lunch(self) -> bool:
        return self.compile and self.kernels and self.tf32

    @property
    def uses_deepspeed(self) -> bool:
        return self.sharding.startswith("zero")

    @property
    def uses_fsdp(self) -> bool:
        return self.sharding.startswith("fsdp")

    @property
    def memory_saving(self) -> tuple[bool, str, bool]:
        return (self.checkpointing, self.sharding, self.offload)

    def label(self) -> str:
        """A short human label, e.g. 'free-lunch + ckpt + ZeRO-3 + offload'."""
        parts = ["free-lunch" if self.free_lunch else "+".join(
            n for n, on in (("compile", self.compile), ("kernels", self.kernels), ("tf32", self.tf32)) if on
        ) or "naive"]
        if self.checkpointing:
            parts.append("ckpt")
        if self.sharding != "none":
            parts.append(SHARDING_LABELS[self.sharding])
        if self.offload:
            parts.append("offload")
        if self.bf16_weights:
            parts.append("bf16 weights")
        return " + ".join(parts)

    def to_dict(self) -> dict:
        """The switches; ``bf16_weights`` only when on, so that every configuration without it keeps the id
        (a hash of this dict) it had before the switch existed."""
        d = asdict(self)
        if not self.bf16_weights:
            del d["bf16_weights"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Methods":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


NAIVE = Methods()
FREE_LUNCH = Methods(compile=True, kernels=True, tf32=True)


class InvalidCombinationError(ValueError):
    pass


def preset(name: str) -> Methods:
    """The free-lunch setting of a preset (``all`` searches memory-saving options on top of free-lunch)."""
    if name == "naive":
        return NAIVE
    if name in ("free-lunch", "all"):
        return FREE_LUNCH
    raise ValueError(f"unknown methods preset {name!r}; choose one of: {', '.join(PRESETS)}")


def exclusion_reason(m: Methods, n_gpus: int) -> str | None:
    """Why the paper's rules exclude this memory-saving combination (None when valid)."""
    if m.bf16_weights and m.sharding != "none":
        return "bf16 weights apply to the PyTorch path: DeepSpeed and FSDP keep bf16 weights of their own"
    if m.offload and m.sharding == "none":
        return "offloading is only allowed when sharding is enabled"
    if n_gpus == 1 and m.sharding != "none" and not m.offload:
        return "sharding is a no-op on one GPU, so it is only tried with offloading"
    return None


def all_memory_combinations(base: Methods = FREE_LUNCH) -> list[Methods]:
    """Every checkpointing x sharding x offloading combination (24), valid or not."""
    return [replace(base, checkpointing=c, sharding=s, offload=o)
            for c, s, o in itertools.product((False, True), SHARDINGS, (False, True))]


def search_space(n_gpus: int, base: Methods = FREE_LUNCH) -> tuple[list[Methods], list[tuple[Methods, str]]]:
    """(valid combinations, [(excluded combination, reason)]) for a GPU count."""
    if n_gpus < 1:
        raise ValueError(f"the GPU count must be at least 1, got {n_gpus}")
    valid, excluded = [], []
    for m in all_memory_combinations(base):
        reason = exclusion_reason(m, n_gpus)
        (excluded.append((m, reason)) if reason else valid.append(m))
    return valid, excluded


def hardware_reason(m: Methods, supports_tf32: bool) -> str | None:
    """Why a setting cannot run on this GPU (TF32 needs Ampere or newer)."""
    if m.tf32 and not supports_tf32:
        return "TF32 needs an Ampere or newer GPU (compute capability 8.0+)"
    return None


def validation_class(m: Methods, n_gpus: int) -> str:
    """The method class a validation stands for: each sharding with and without offload is a class of its own
    (its timing path differs), else checkpointing, free-lunch or naive; on several GPUs an unsharded class
    runs under DDP, and says so. Every class that ran on a setup is validated at least once."""
    if m.sharding != "none":
        return SHARDING_LABELS[m.sharding] + (" + offload" if m.offload else "")
    base = "checkpointing" if m.checkpointing else ("free-lunch" if (m.compile or m.kernels or m.tf32) else "naive")
    return base + (" + bf16 weights" if m.bf16_weights else "") + (" (DDP)" if n_gpus > 1 else "")


def parse_methods(spec: str) -> Methods:
    """Methods from a preset name plus '+'-joined switches, e.g. 'free-lunch+ckpt+zero3+offload'."""
    parts = [p.strip().lower() for p in spec.split("+") if p.strip()]
    if not parts:
        raise ValueError("empty methods specification")
    known_switches = {"compile", "kernels", "tf32", "ckpt", "offload", "bf16w", *SHARDINGS}
    m = NAIVE
    for p in parts:
        if p in ("naive", "free-lunch", "all"):
            m = replace(preset(p), checkpointing=m.checkpointing, sharding=m.sharding, offload=m.offload,
                        bf16_weights=m.bf16_weights)
        elif p == "bf16w":
            m = replace(m, bf16_weights=True)
        elif p in ("compile", "kernels", "tf32"):
            m = replace(m, **{p: True})
        elif p == "ckpt":
            m = replace(m, checkpointing=True)
        elif p == "offload":
            m = replace(m, offload=True)
        elif p in SHARDINGS:
            m = replace(m, sharding=p)
        else:
            raise ValueError(f"unknown method {p!r}; use a preset ({', '.join(PRESETS)}) joined by '+' with "
                             f"switches: {', '.join(sorted(known_switches))}")
    return m


def methods_spec(m: Methods) -> str:
    """The ``--methods`` text that gives ``m`` (inverse of ``parse_methods``), e.g. 'free-lunch+zero1+offload'."""
    if m.free_lunch:
        parts = ["free-lunch"]
    else:
        parts = [n for n in ("compile", "kernels", "tf32") if getattr(m, n)] or ["naive"]
    parts += ["ckpt"] * m.checkpointing + [m.sharding] * (m.sharding != "none") + ["offload"] * m.offload
    parts += ["bf16w"] * m.bf16_weights
    return "+".join(parts)
