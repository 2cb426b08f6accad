"""Efficient-training settings, named presets, and the valid search space (paper Section 3.2.1, Appendix F).

Free-lunch methods (compile, custom kernels, TF32) never hurt and are switched on together. Memory-saving
methods (activation checkpointing, sharding, offloading) trade speed for memory; their combinations form
the search space: 12 valid options on one GPU and 22 on more, each excluded one with its reason.

Beyond the paper: three switches a lab would add today, each labelled "beyond the paper" wherever it shows
(``Methods.label``), each its own method class to validate, and none in the paper's search space (``search_space``
stays the paper's 12 and 22): they are measured beside the replication, never inside it.

- ``bf16_weights`` (switch ``bf16w``) keeps a bf16 recipe's weights in bf16 with fp32 master weights in the
  optimizer, as DeepSpeed's bf16 mode does, instead of autocasting fp32 weights at every micro-step.
- ``fused_ce`` (switch ``fused-ce``) computes a decoder's LM head and next-token loss in one fused kernel,
  Liger's ``LigerFusedLinearCrossEntropyLoss``, chunk by chunk, so that the logits tensor is never held whole.
- ``fp8`` (switches ``fp8-tensorwise``, ``fp8-rowwise``) trains the linear layers in FP8 with torchao's float8
  recipes (``convert_to_float8_training``), on GPUs with FP8 tensor cores (Ada, Hopper, Blackwell).

Where each applies is stated as a rule with its reason: the structural ones here (``exclusion_reason``,
``device_reason``), the GPU's per architecture in ``hardware_reason`` (each rule, applied or not, in ``gpu_rules``),
the model's in ``config.Config.check``; the variants a model and GPU allow are ``config.beyond_paper_space``.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, replace
from typing import Literal, Protocol

from .env import MAMBA_KERNEL_PACKAGES, importable

Sharding = Literal["none", "zero1", "zero2", "zero3", "fsdp_shard_grad_op", "fsdp_full_shard"]
SHARDINGS: tuple[str, ...] = ("none", "zero1", "zero2", "zero3", "fsdp_shard_grad_op", "fsdp_full_shard")
SHARDING_LABELS = {"none": "none", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3",
                   "fsdp_shard_grad_op": "FSDP shard-grad-op", "fsdp_full_shard": "FSDP full-shard"}
PRESETS = ("naive", "free-lunch", "all")
FP8_RECIPES: tuple[str, ...] = ("none", "tensorwise", "rowwise")  # torchao's float8 recipe names
# FP8 matrix products (torch._scaled_mm) need both dimensions of each operand divisible by 16: a linear layer's
# two sizes, and in the weight gradient's product the micro-batch's tokens (micro-batch x sequence length).
FP8_MULTIPLE = 16
BEYOND_PAPER = "beyond the paper"  # the label every number that uses a switch below carries
# The switches beyond the paper, by their --methods name: (field, value when on).
BEYOND_SWITCHES: dict[str, tuple[str, object]] = {
    "bf16w": ("bf16_weights", True), "fused-ce": ("fused_ce", True),
    "fp8-tensorwise": ("fp8", "tensorwise"), "fp8-rowwise": ("fp8", "rowwise")}
SWITCH_LABELS = {"bf16w": "bf16 weights", "fused-ce": "fused CE", "fp8-tensorwise": "FP8 tensorwise",
                 "fp8-rowwise": "FP8 rowwise"}
# A mixture of experts' kernel (transformers' ``set_experts_implementation``), a part of the kernels switch as
# attention's is: naive runs the per-expert loop ("eager", the default of the paper's era); free-lunch the first of
# EXPERTS_FAST that runs on the device (``measure.apply.apply_experts_kernel``), else the loop. EXPERTS_FAST holds
# the study's "grouped_mm_autocast": transformers' "grouped_mm" (torch's grouped GEMM) with fp32 weights cast to
# the autocast dtype as autocast casts a linear layer's (``measure.experts``); transformers' own runs fp32 weights'
# products in fp32, and under compile as its per-expert loop. transformers also offers "batched_mm" (each token's
# expert weights gathered into a batch: a copy of an expert's weights per routed token, for decoding, not
# training), "deepgemm" (no backward) and "sonicmoe" (a Hub kernel fetched at run time).
EXPERTS_LOOP = "eager"
EXPERTS_FAST: tuple[str, ...] = ("grouped_mm_autocast",)
EXPERTS_KERNELS_NOTE = ("mixtures of experts: naive runs the experts' per-expert loop (transformers' \"eager\"); "
                        "free-lunch runs torch's grouped GEMM (transformers' grouped_mm, its weights at the "
                        "autocast dtype; CUDA compute capability 8.0+ or the CPU) where it runs, else the loop")
# Off, each keeps a configuration's dict (and so its id) as it was before the switch existed.
_BEYOND_OFF = {"bf16_weights": False, "fused_ce": False, "fp8": "none"}


@dataclass(frozen=True)
class Methods:
    compile: bool = False
    kernels: bool = False
    tf32: bool = False
    checkpointing: bool = False
    sharding: str = "none"
    offload: bool = False
    bf16_weights: bool = False
    fused_ce: bool = False
    fp8: str = "none"

    def __post_init__(self) -> None:
        if self.sharding not in SHARDINGS:
            raise ValueError(f"unknown sharding {self.sharding!r}; choose one of: {', '.join(SHARDINGS)}")
        if self.fp8 not in FP8_RECIPES:
            raise ValueError(f"unknown FP8 recipe {self.fp8!r}; choose one of: {', '.join(FP8_RECIPES)}")

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

    @property
    def beyond_paper(self) -> bool:
        """Whether any switch beyond the paper is on (``BEYOND_SWITCHES``)."""
        return any(getattr(self, f) != off for f, off in _BEYOND_OFF.items())

    def beyond_switches(self) -> list[str]:
        """The ``--methods`` names of the switches beyond the paper that are on, e.g. ['bf16w', 'fused-ce']."""
        return [name for name, (f, on) in BEYOND_SWITCHES.items() if getattr(self, f) == on]

    def paper_methods(self) -> "Methods":
        """The same configuration with every switch beyond the paper off: what the paper could have run."""
        return replace(self, **_BEYOND_OFF)

    def label(self) -> str:
        """A short human label, e.g. 'free-lunch + ckpt + ZeRO-3 + offload'; with a switch beyond the paper it says
        so, e.g. 'free-lunch + fused CE [beyond the paper]', so that every number shown beside it is flagged."""
        parts = ["free-lunch" if self.free_lunch else "+".join(
            n for n, on in (("compile", self.compile), ("kernels", self.kernels), ("tf32", self.tf32)) if on
        ) or "naive"]
        if self.checkpointing:
            parts.append("ckpt")
        if self.sharding != "none":
            parts.append(SHARDING_LABELS[self.sharding])
        if self.offload:
            parts.append("offload")
        parts += [SWITCH_LABELS[s] for s in self.beyond_switches()]
        return " + ".join(parts) + (f" [{BEYOND_PAPER}]" if self.beyond_paper else "")

    def to_dict(self) -> dict:
        """The switches; those beyond the paper only when on, so that every configuration without them keeps the
        id (a hash of this dict) it had before they existed."""
        d = asdict(self)
        for f, off in _BEYOND_OFF.items():
            if d[f] == off:
                del d[f]
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
    """Why the paper's rules, or a switch beyond the paper's own, exclude this combination (None when valid)."""
    if m.bf16_weights and m.sharding != "none":
        return "bf16 weights apply to the PyTorch path: DeepSpeed and FSDP keep bf16 weights of their own"
    if m.fused_ce and m.sharding == "zero3":
        return ("the fused cross-entropy reads the LM head's weight without running the layer, and ZeRO-3 gathers a "
                "layer's weight only when the layer runs")
    if m.fp8 != "none" and m.sharding != "none":
        return ("FP8 training (torchao float8) is measured on the PyTorch path (one GPU or DDP): DeepSpeed's ZeRO is "
                "not among the parallelisms torchao's float8 supports, and FSDP2's float8 all-gather is a method of "
                "its own, not measured here")
    if m.fp8 != "none" and not m.compile:
        return ("FP8 training needs compile: torchao's float8 scaling and casts are fused by torch.compile, and "
                "without it they run as separate kernels around every matrix product (slower than bf16)")
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


class GPUFeatures(Protocol):
    """What the per-architecture rules read of a GPU (``hardware.GPU`` has them; a GPU file gives them too)."""

    name: str
    vendor: str
    architecture: str
    compute_capability: float | None
    nvlink_gbps: float | None
    nvlink_scope: str
    pcie_p2p: bool | None
    supports_tf32: bool
    supports_bf16: bool
    supports_fp8: bool
    supports_flash_attention: bool
    supports_triton: bool


def _cc(gpu: GPUFeatures) -> str:
    return f"{gpu.name} ({gpu.architecture.capitalize()}, compute capability {gpu.compute_capability})"


def vendor_reason(gpu: GPUFeatures) -> str | None:
    """Why nothing the study measures runs on this GPU as it is: its engine, kernels and rules are CUDA's."""
    if gpu.vendor != "nvidia":
        return (f"the {gpu.name} is an AMD GPU (ROCm, not CUDA): the study's engine, kernels and per-architecture "
                "rules are NVIDIA's, and no published training throughput on it (data/published_throughput.csv) checks a "
                "prediction carried there from the study's NVIDIA measurements, so none is made")
    return None


def precision_reason(precision: str, gpu: GPUFeatures) -> str | None:
    """Why a recipe's precision cannot train on this GPU: bf16 needs Ampere's tensor cores (Volta's and Turing's take
    fp16 only; FlashAttention-2's README: "bf16 requires Ampere, Ada, or Hopper GPUs")."""
    if precision == "bf16" and not gpu.supports_bf16:
        return (f"a bf16 recipe needs bf16 tensor cores (Ampere or newer, compute capability 8.0+), and the {_cc(gpu)} "
                "has fp16 tensor cores only: train in fp16 with loss scaling instead (--precision fp16, with a "
                "decoder's config.json or a catalog model whose recipe is fp32), or choose an Ampere or newer GPU")
    return None


def hardware_reason(m: Methods, gpu: GPUFeatures, precision: str | None = None) -> str | None:
    """Why a setting (or the recipe's ``precision``) cannot run on this GPU, each rule with its source: an AMD GPU
    is not the study's (``vendor_reason``); bf16 from Ampere (``precision_reason``); torch.compile where Triton
    supports the GPU (PyTorch's inductor: "Triton only supports devices of CUDA Capability >= 7.0"); TF32 from
    Ampere; FP8 training where the GPU has FP8 tensor cores (Ada, Hopper, Blackwell); Liger's fused cross-entropy
    is a Triton kernel. FlashAttention is no refusal: before Ampere the kernels switch runs SDPA's memory-efficient
    attention (``attention_kernel``)."""
    reason = vendor_reason(gpu) or (precision_reason(precision, gpu) if precision else None)
    if reason:
        return reason
    if m.compile and not gpu.supports_triton:
        return (f"torch.compile's Triton backend needs compute capability 7.0 or newer, and the {_cc(gpu)} is older: "
                "drop compile (--methods kernels)")
    if m.tf32 and not gpu.supports_tf32:
        return (f"TF32 needs an Ampere or newer GPU (compute capability 8.0+), and the {_cc(gpu)} has none: "
                "drop tf32 (--methods compile+kernels)")
    if m.fp8 != "none" and not gpu.supports_fp8:
        return (f"FP8 training needs FP8 tensor cores (Ada, Hopper or Blackwell: compute capability 8.9+), and the "
                f"{_cc(gpu)} has none")
    if m.fused_ce and not gpu.supports_triton:
        return f"the fused cross-entropy is Liger's Triton kernel, which needs compute capability 7.0+ (the {_cc(gpu)})"
    return None


def free_lunch_for(gpu: GPUFeatures) -> Methods:
    """The paper's free-lunch preset as far as this GPU runs it: TF32 only from Ampere, compile where Triton
    supports the GPU (the kernels switch always applies; what it runs is ``attention_kernel``). An AMD GPU keeps the
    preset: nothing runs there (``vendor_reason``), and each combination says so."""
    if gpu.vendor != "nvidia":
        return FREE_LUNCH
    return replace(FREE_LUNCH, tf32=gpu.supports_tf32, compile=gpu.supports_triton)


def attention_kernel(gpu: GPUFeatures) -> str:
    """The attention the kernels switch runs on this GPU: FlashAttention-2 from Ampere (its README: "Ampere, Ada,
    or Hopper GPUs ... Support for Turing GPUs (T4, RTX 2080) is coming soon"), else PyTorch SDPA's
    memory-efficient kernel."""
    if gpu.supports_flash_attention:
        return "FlashAttention-2 (Ampere or newer)"
    return "SDPA's memory-efficient kernel (FlashAttention-2 needs Ampere or newer)"


def gpu_rules(gpu: GPUFeatures) -> list[dict]:
    """Each per-architecture rule on this GPU: what applies, and why the others do not (``space --gpu``)."""
    if vendor_reason(gpu):
        return [{"rule": "vendor", "applies": False, "why": vendor_reason(gpu)}]
    cc = _cc(gpu)
    p2p = {True: "GPUs of this type read each other's memory over PCIe",
           False: "no PCIe peer access (GeForce): collectives over PCIe are staged through host memory",
           None: "no source says whether PCIe peer access works: taken as staged through host memory"}[gpu.pcie_p2p]
    joins = ("between every GPU of a machine" if gpu.nvlink_scope == "all" else
             "between two cards joined by a bridge; from 3 GPUs the ring also crosses PCIe")
    nvlink = f"{gpu.nvlink_gbps:g} GB/s {joins}" if gpu.nvlink_gbps else "none: the GPUs talk over PCIe"
    return [
        {"rule": "bf16", "applies": gpu.supports_bf16,
         "why": "bf16 tensor cores (Ampere or newer)" if gpu.supports_bf16 else precision_reason("bf16", gpu)},
        {"rule": "tf32", "applies": gpu.supports_tf32,
         "why": "TF32 tensor cores (Ampere or newer)" if gpu.supports_tf32 else f"no TF32 before Ampere ({cc})"},
        {"rule": "compile", "applies": gpu.supports_triton,
         "why": "Triton supports compute capability 7.0+" if gpu.supports_triton else f"Triton needs 7.0+ ({cc})"},
        {"rule": "attention", "applies": True, "why": attention_kernel(gpu)},
        {"rule": "fp8", "applies": gpu.supports_fp8,
         "why": "FP8 tensor cores (Ada or newer)" if gpu.supports_fp8 else
                f"no FP8 tensor cores ({cc}): FP8 arrived with Ada"},
        {"rule": "nvlink", "applies": bool(gpu.nvlink_gbps), "why": nvlink},
        {"rule": "pcie peer-to-peer", "applies": bool(gpu.pcie_p2p), "why": p2p},
    ]


def device_reason(m: Methods, device: str) -> str | None:
    """Why a setting cannot run on this device: Liger's fused cross-entropy is a Triton kernel, CUDA GPUs only."""
    if m.fused_ce and device != "cuda":
        return ("the fused cross-entropy is Liger's Triton kernel, which runs on CUDA GPUs only: drop fused-ce to run "
                f"on the {device.upper()}")
    return None


def beyond_paper_variants(base: Methods = FREE_LUNCH) -> list[Methods]:
    """``base`` with every non-empty combination of the switches beyond the paper (one FP8 recipe at most): the
    variants ``config.beyond_paper_space`` checks against a model and a GPU."""
    return [replace(base, bf16_weights=b, fused_ce=f, fp8=r)
            for b, f, r in itertools.product((False, True), (False, True), FP8_RECIPES) if b or f or r != "none"]


def validation_class(m: Methods, n_gpus: int) -> str:
    """The method class a validation stands for: each sharding with and without offload is a class of its own
    (its timing path differs), else checkpointing, free-lunch or naive; on several GPUs an unsharded class
    runs under DDP, and says so. Every class that ran on a setup is validated at least once."""
    beyond = "".join(f" + {SWITCH_LABELS[s]}" for s in m.beyond_switches())
    flag = f" [{BEYOND_PAPER}]" if m.beyond_paper else ""
    if m.sharding != "none":
        return SHARDING_LABELS[m.sharding] + (" + offload" if m.offload else "") + beyond + flag
    base = "checkpointing" if m.checkpointing else ("free-lunch" if (m.compile or m.kernels or m.tf32) else "naive")
    return base + beyond + (" (DDP)" if n_gpus > 1 else "") + flag


def parse_methods(spec: str) -> Methods:
    """Methods from a preset name plus '+'-joined switches, e.g. 'free-lunch+ckpt+zero3+offload'."""
    parts = [p.strip().lower() for p in spec.split("+") if p.strip()]
    if not parts:
        raise ValueError("empty methods specification")
    known_switches = {"compile", "kernels", "tf32", "ckpt", "offload", *BEYOND_SWITCHES, *SHARDINGS}
    m = NAIVE
    for p in parts:
        if p in ("naive", "free-lunch", "all"):
            base = preset(p)
            m = replace(m, compile=base.compile, kernels=base.kernels, tf32=base.tf32)
        elif p in BEYOND_SWITCHES:
            field_, on = BEYOND_SWITCHES[p]
            if field_ == "fp8" and m.fp8 not in ("none", on):
                raise ValueError(f"one FP8 recipe at a time: fp8-{m.fp8} and {p} were both given")
            m = replace(m, **{field_: on})
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
    return "+".join(parts + m.beyond_switches())


def packages_needed(methods: Methods, kernel: str, device: str) -> tuple[str, ...]:
    """The modules a configuration imports beyond torch and transformers (``kernel``: its model's custom-kernel
    path, ``ModelSpec.kernel``). Without one the measurement is 'unsupported', which says nothing of the
    configuration itself, only of the machine."""
    needed: list[str] = []
    if kernel == "mamba-ssm" and methods.kernels and device == "cuda":  # off the GPU the PyTorch path runs
        needed += MAMBA_KERNEL_PACKAGES
    if methods.uses_deepspeed:
        needed.append("deepspeed")
    if methods.fp8 != "none":
        needed.append("torchao")
    if methods.fused_ce:
        needed.append("liger_kernel")
    return tuple(needed)


def missing_packages(methods: Methods, kernel: str, device: str) -> list[str]:
    """``packages_needed`` that this machine cannot import."""
    return [m for m in packages_needed(methods, kernel, device) if not importable(m)]
