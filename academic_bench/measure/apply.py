"""One function per training technique, applied in this order by ``stepper.Stepper``:

    attention kernels (at build) -> experts' kernel (a mixture of experts) -> precision/TF32 -> activation checkpointing -> FP8 linear layers (torchao)
    -> compile (per block) -> fused cross-entropy (Liger) -> bf16 weights with fp32 masters (PyTorch path only)
    -> parallelism (DDP | FSDP | DeepSpeed ZeRO)

Every technique goes through the library made for it and records what actually ran in ``ran``. FP8 swaps the
linear layers before compile, so that the compiled blocks hold the float8 layers; the fused cross-entropy replaces
the model's forward above the blocks, so that DDP and FSDP wrap a model that already computes its loss fused.
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from ..catalog.config import Config, deepspeed_config  # noqa: F401  (deepspeed_config: apply_deepspeed's)
from ..catalog.env import MAMBA_KERNEL_PACKAGES, importable
from ..catalog.methods import EXPERTS_FAST, EXPERTS_LOOP, FP8_MULTIPLE
from ..catalog.models import ModelSpec


class Unsupported(RuntimeError):
    """A library or kernel this configuration needs is missing (outcome ``unsupported``)."""


@dataclass
class Ran:
    """What actually ran, stored in the result row."""

    attention: str = "n/a"
    compiled: bool = False
    kernels: list[str] = field(default_factory=list)
    parallel: str = "single"
    precision: str = "fp32"
    notes: list[str] = field(default_factory=list)
    weights: str = ""  # the dtype the model's weights were built in (before any method casts them)
    warmup_reps: int | None = None  # untimed repetitions before the timed ones (``worker.warmup_reps``)
    timing_s: float | None = None  # seconds the timed repetitions took (warm-up included)
    validate_s: float | None = None  # seconds the sustained validation took
    experts: str = "n/a"  # a mixture of experts' kernel (transformers' experts_implementation)
    expert_tokens: list[list[int]] | None = None  # tokens each expert received, per mixture layer (``routing``)


def has(module: str) -> bool:
    return importable(module)


def attention_impl(spec: ModelSpec, kernels: bool, device: str) -> str:
    """Eager attention when kernels are off; FlashAttention-2 when importable on an Ampere or newer GPU (its README:
    "Ampere, Ada, or Hopper GPUs"), else PyTorch SDPA (its memory-efficient kernel before Ampere:
    ``methods.attention_kernel``)."""
    if spec.kernel != "sdpa":
        return "n/a"
    if not kernels:
        return "eager"
    if (device == "cuda" and spec.family != "vit" and has("flash_attn")
            and torch.cuda.get_device_capability()[0] >= 8):
        return "flash_attention_2"
    return "sdpa"


def experts_kernel_runs(name: str, device: str) -> bool:
    """Whether transformers runs the experts' kernel ``name`` on ``device`` as itself: ``grouped_mm`` (and the
    study's ``grouped_mm_autocast`` over it, ``measure.experts``) where its own test passes
    (``integrations.moe._can_use_grouped_mm``: torch's grouped GEMM on a CUDA GPU of compute capability 8.0+, or a
    CPU under torch newer than 2.8); the loop everywhere."""
    if name == EXPERTS_LOOP:
        return True
    from transformers.integrations import moe as hf_moe

    weight = torch.empty(1, 16, 16, device=device, dtype=torch.bfloat16)
    return bool(hf_moe._can_use_grouped_mm(weight[0], weight, torch.zeros(1, dtype=torch.int32, device=device)))


def apply_experts_kernel(model: nn.Module, kernels: bool, device: str, ran: Ran) -> None:
    """A mixture of experts' kernel through transformers' ``set_experts_implementation``: without kernels the
    per-expert loop ("eager"), the default of the paper's era (transformers 4.x looped over a layer's experts);
    with them the first of ``EXPERTS_FAST`` that runs on this device, else the loop. transformers 5 defaults to
    ``grouped_mm``, so naive sets the loop explicitly. The fast kernel is ``grouped_mm_autocast``: torch's grouped
    GEMM at the autocast dtype whatever the weights' dtype (``measure.experts`` says why). A dense model is left
    as it is."""
    from . import experts

    can = getattr(model, "_can_set_experts_implementation", None)
    if not any(hasattr(m, "has_gate") and hasattr(m, "num_experts") for m in model.modules()) or not (can and can()):
        return
    experts.register()
    name = next((k for k in EXPERTS_FAST if experts_kernel_runs(k, device)), EXPERTS_LOOP) if kernels else EXPERTS_LOOP
    model.set_experts_implementation(name)
    ran.experts = name
    ran.kernels.append(f"experts:{name}")


MAMBA_MODELING = "transformers.models.mamba.modeling_mamba"


def apply_kernels_check(spec: ModelSpec, cfg: Config, device: str, ran: Ran) -> None:
    """Mamba's custom kernels come from mamba-ssm and causal-conv1d; without them the config cannot run.
    With kernels off (or off the GPU) they are hidden from this process, so the PyTorch path runs."""
    if spec.kernel != "mamba-ssm":
        return
    if cfg.methods.kernels and device == "cuda":
        missing = [m for m in MAMBA_KERNEL_PACKAGES if not has(m)]
        if missing:
            raise Unsupported(f"Mamba's fast kernels need {' and '.join(missing)}, which could not be imported")
        ran.kernels += ["mamba_ssm.selective_scan", "causal_conv1d"]
        return
    # transformers binds mamba-ssm's functions when its Mamba module is imported, whenever the package imports:
    # a None entry makes the import fail, and dropping the module makes the next build import it afresh.
    for name in MAMBA_KERNEL_PACKAGES:
        sys.modules[name] = None  # type: ignore[assignment]
    sys.modules.pop(MAMBA_MODELING, None)


def apply_tf32(enabled: bool, ran: Ran) -> None:
    """TF32 tensor cores for fp32 matmuls and convolutions (Ampere+)."""
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    if enabled:
        ran.kernels.append("tf32")


def apply_checkpointing(model: nn.Module, ran: Ran) -> None:
    """Activation checkpointing through the model library's own switch (transformers or timm).

    transformers' switch is ``activation_checkpointing_enable``; in the locked release (5.25) the old name is an
    alias that warns that v6 removes it, and both reach the same code with the same arguments. Older releases,
    which the package's lower bound allows, have the old name only."""
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    elif hasattr(model, "gradient_checkpointing_enable"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    elif hasattr(model, "set_grad_checkpointing"):
        model.set_grad_checkpointing(True)
    else:
        raise Unsupported(f"{type(model).__name__} offers no activation checkpointing switch")
    ran.notes.append("activation checkpointing (non-reentrant)")


def blocks(model: nn.Module, spec: ModelSpec) -> list[nn.Module]:
    """The repeated blocks of a model (compile and FSDP wrap these, as torchtitan does)."""
    found = [m for m in model.modules() if type(m).__name__ in spec.block_types]
    if not found:
        raise RuntimeError(f"no blocks of type {spec.block_types} in {type(model).__name__}")
    return found


def apply_compile(model: nn.Module, spec: ModelSpec, ran: Ran) -> None:
    """torch.compile each block in place. Errors propagate: a compile failure is an error row."""
    import torch._dynamo

    torch._dynamo.config.suppress_errors = False  # never fall back to eager silently
    # Hitting the recompile limit makes dynamo run the frame eagerly without a word: make it an error.
    torch._dynamo.config.fail_on_recompile_limit_hit = True
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 32)
    # One model runs every micro-batch size the search tries (``Stepper.resize``): each size gets code compiled
    # for its own shapes, as a run of that one size does. With automatic dynamic shapes the second size would
    # compile shape-generic code, which every later size, the one timed included, would then run.
    torch._dynamo.config.automatic_dynamic_shapes = False
    for block in blocks(model, spec):
        block.compile()
    ran.compiled = True
    ran.notes.append("torch.compile per block")


def output_layer(model: nn.Module) -> nn.Module | None:
    """The layer that makes a model's outputs: a language model's LM head (transformers), a timm classifier."""
    if hasattr(model, "get_output_embeddings") and model.get_output_embeddings() is not None:
        return model.get_output_embeddings()
    if hasattr(model, "get_classifier"):
        return model.get_classifier()
    return None


def float8_training() -> tuple[Callable, type]:
    """torchao's ``convert_to_float8_training`` and ``Float8LinearConfig``; ``Unsupported`` without torchao."""
    if not has("torchao"):
        raise Unsupported("FP8 training needs torchao (its float8 recipes), which could not be imported")
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    return convert_to_float8_training, Float8LinearConfig


def apply_fp8(model: nn.Module, recipe: str, device: str, ran: Ran) -> None:
    """Train the linear layers in FP8 with torchao's float8 ``recipe`` ("tensorwise" or "rowwise" scaling):
    ``convert_to_float8_training`` swaps each eligible ``nn.Linear`` for a float8 one, in place. Eligible: both
    dimensions divisible by ``FP8_MULTIPLE``, and not the output layer, whose logits stay in the recipe's
    precision (as torchtitan keeps its output layer; the fused cross-entropy also reads that layer's weight
    directly). Runs before compile, which fuses the float8 scaling into the blocks."""
    if device == "cuda" and torch.cuda.get_device_capability() < (8, 9):  # hardware.FP8_FROM: Ada, Hopper, Blackwell
        raise Unsupported(f"FP8 training needs FP8 tensor cores (compute capability 8.9+); this one has compute "
                          f"capability "
                          f"{'.'.join(map(str, torch.cuda.get_device_capability()))}")
    convert, config_cls = float8_training()
    head, converted, unconverted = output_layer(model), [], []

    def eligible(module: nn.Module, fqn: str) -> bool:  # asked by torchao of every linear layer
        fits = module.in_features % FP8_MULTIPLE == 0 and module.out_features % FP8_MULTIPLE == 0
        if module is not head:
            (converted if fits else unconverted).append(f"{fqn} ({module.in_features} x {module.out_features})")
        return fits and module is not head

    linears = sum(isinstance(m, nn.Linear) for m in model.modules())
    convert(model, config=config_cls.from_recipe_name(recipe), module_filter_fn=eligible)
    if not converted:
        raise Unsupported(f"FP8 training: none of the model's {linears} linear layers has both dimensions divisible "
                          f"by {FP8_MULTIPLE} (the output layer aside)")
    ran.kernels.append(f"torchao float8 {recipe}")
    unconverted = ["the output layer"] * (head is not None) + unconverted
    ran.notes.append(f"FP8 training (torchao float8, {recipe} scaling): {len(converted)} of {linears} linear layers"
                     + (f"; kept in {ran.precision}: {', '.join(unconverted)}" if unconverted else ""))


def fused_loss_class(device: str) -> type:
    """Liger's ``LigerFusedLinearCrossEntropyLoss``: a Triton kernel, so CUDA GPUs only (``Unsupported`` on
    another device or without liger-kernel)."""
    if device != "cuda":
        raise Unsupported(f"the fused cross-entropy is Liger's Triton kernel, which runs on CUDA GPUs only, not on "
                          f"the {device.upper()}")
    if not has("liger_kernel"):
        raise Unsupported("the fused cross-entropy needs liger-kernel, which could not be imported")
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

    return LigerFusedLinearCrossEntropyLoss


IGNORE_INDEX = -100  # transformers' label for "no loss here"


def apply_fused_cross_entropy(model: nn.Module, device: str, ran: Ran) -> None:
    """Compute a decoder's LM head and next-token loss in one fused kernel (``fused_loss_class``), chunk by chunk,
    so that the logits are never held whole: the model's forward runs its body (``base_model``) and hands the last
    hidden states, the LM head's weight and the labels shifted by one to the fused loss, which averages over the
    labelled tokens as transformers' causal-LM loss does. A final logit soft-cap is passed on; a logit scale the
    kernel has no parameter for is refused."""
    from torch.nn import functional as F
    from transformers.modeling_outputs import CausalLMOutput

    config = getattr(model, "config", None)
    scaled = [k for k in ("logit_scale", "logits_scaling") if getattr(config, k, None) not in (None, 1, 1.0)]
    if scaled:
        raise Unsupported(f"the fused cross-entropy has no logit scale, and this model scales its logits ({scaled[0]})")
    head, body = model.get_output_embeddings(), model.base_model
    loss_fn = fused_loss_class(device)(ignore_index=IGNORE_INDEX,
                                       softcap=getattr(config, "final_logit_softcapping", None))

    def forward(input_ids: torch.Tensor, labels: torch.Tensor, **kwargs) -> CausalLMOutput:
        hidden = body(input_ids=input_ids, **kwargs)[0]
        # transformers' shift: position t predicts label t + 1; the last position predicts nothing.
        shifted = F.pad(labels, (0, 1), value=IGNORE_INDEX)[..., 1:]
        loss = loss_fn(head.weight, hidden.reshape(-1, hidden.shape[-1]), shifted.reshape(-1), head.bias)
        return CausalLMOutput(loss=loss)

    model.forward = forward
    ran.kernels.append("liger fused linear cross-entropy")
    ran.notes.append("fused cross-entropy (Liger): LM head and loss in one chunked kernel, no logits tensor")


class MasterWeights(torch.optim.Optimizer):
    """An optimizer over fp32 master copies of a model's bf16 weights: at each step the bf16 gradients are
    copied into fp32 for the wrapped optimizer (whose states are fp32 too), which updates the masters; the
    weights are then the masters rounded to bf16. Gradients accumulate in bf16 between steps, as under
    DeepSpeed's ZeRO in bf16 (its gradient accumulation type is the model's). ``param_groups`` and ``state`` are
    the wrapped optimizer's (one set of groups and states, whichever of the two is asked or loaded).

    Its ``state_dict`` is the wrapped optimizer's with the masters beside it: the model's weights are the masters
    rounded to bf16, so a checkpoint without them would resume from rounded weights (DeepSpeed's bf16 optimizer
    keeps its fp32 copies in its checkpoint for the same reason)."""

    def __init__(self, params: list[nn.Parameter], masters: list[torch.Tensor], inner: torch.optim.Optimizer):
        # The base class's set-up (hooks, the step's profiling wrapper) over the wrapped optimizer's own group
        # dicts, which it keeps as they are: a learning rate set on either is set on both.
        super().__init__(inner.param_groups, inner.defaults)
        self.params, self.masters, self.inner = params, masters, inner
        self.state = inner.state

    def state_dict(self) -> dict:
        return {**super().state_dict(), "masters": [m.detach().clone() for m in self.masters]}

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        masters = state_dict.pop("masters")
        if len(masters) != len(self.masters):
            raise ValueError(f"the state holds {len(masters)} master weights, this optimizer {len(self.masters)}")
        super().load_state_dict(state_dict)  # replaces this object's groups and state: the wrapped one shares them
        self.inner.param_groups, self.inner.state = self.param_groups, self.state
        with torch.no_grad():
            for p, m, saved in zip(self.params, self.masters, masters):
                m.copy_(saved)
                p.copy_(m)

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001  (the optimizer interface)
        for p, m in zip(self.params, self.masters):
            m.grad = None if p.grad is None else p.grad.float()
            p.grad = None  # its fp32 copy replaces it: the step holds one gradient per weight, not two
        self.inner.step()
        for p, m in zip(self.params, self.masters):
            p.copy_(m)
        return None

    def zero_grad(self, set_to_none: bool = True) -> None:
        for t in (*self.params, *self.masters):
            t.grad = None


def apply_bf16_weights(model: nn.Module, build_optimizer, ran: Ran) -> MasterWeights:
    """Keep the weights in bf16, with fp32 master weights in the optimizer (``MasterWeights``), as DeepSpeed's
    bf16 mode does, instead of autocasting fp32 weights to bf16 at every micro-step. Only the parameters are
    cast: buffers such as rotary frequencies stay as the model built them. ``build_optimizer`` takes the fp32
    masters and returns the recipe's optimizer over them."""
    params = [p for p in model.parameters() if p.requires_grad]
    masters = [p.detach().clone().float() for p in params]
    for p in params:
        p.data = p.data.to(torch.bfloat16)
    for m in masters:
        m.requires_grad_(True)
    ran.notes.append("bf16 weights, fp32 master weights in the optimizer")
    return MasterWeights(params, masters, build_optimizer(masters))


def apply_ddp(model: nn.Module, device: str) -> nn.Module:
    from torch.nn.parallel import DistributedDataParallel as DDP

    ids = [torch.cuda.current_device()] if device == "cuda" else None
    return DDP(model, device_ids=ids, gradient_as_bucket_view=True)


def apply_fsdp(model: nn.Module, spec: ModelSpec, cfg: Config, device: str, ran: Ran) -> nn.Module:
    """FSDP2 (``fully_shard``): shard-grad-op keeps parameters gathered after forward (ZeRO-2-like),
    full-shard reshards them (ZeRO-3-like); offload keeps parameters and optimizer on the CPU."""
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    reshard = cfg.methods.sharding == "fsdp_full_shard"
    kwargs: dict = {"reshard_after_forward": reshard}
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(cfg.recipe.precision)
    if dtype is not None:
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
    if cfg.methods.offload:
        kwargs["offload_policy"] = CPUOffloadPolicy(pin_memory=device == "cuda")
    for block in blocks(model, spec):
        fully_shard(block, **kwargs)
    fully_shard(model, **kwargs)
    ran.parallel = "fsdp"
    ran.notes.append(f"FSDP2 fully_shard, reshard_after_forward={reshard}, offload={cfg.methods.offload}")
    return model


def cpu_info_once() -> None:
    """Keep py-cpuinfo's first answer for the process. DeepSpeed's CPU Adam asks it about the host three times in a
    process's first offloaded build and once in every later one, each a subprocess of about a second
    (``notebooks/runs/h100x1/evidence/engine/build-profile/``), though the host cannot change within a process."""
    try:
        import cpuinfo
    except ImportError:  # DeepSpeed asks lscpu instead
        return
    if not hasattr(cpuinfo.get_cpu_info, "cache_info"):  # DeepSpeed imports the name at each call, so it sees this
        cpuinfo.get_cpu_info = functools.cache(cpuinfo.get_cpu_info)


def apply_deepspeed(model: nn.Module, cfg: Config, micro_batch: int, gas: int, ran: Ran):
    """DeepSpeed ZeRO-1/2/3 with optional CPU offload; returns the engine (model, optimizer and scaler)."""
    if not has("deepspeed"):
        raise Unsupported("DeepSpeed ZeRO needs the deepspeed package, which could not be imported")
    import deepspeed

    cpu_info_once()
    engine, *_ = deepspeed.initialize(model=model, model_parameters=[p for p in model.parameters()],
                                      config=deepspeed_config(cfg, micro_batch, gas))
    ran.parallel = "deepspeed"
    ran.notes.append(f"DeepSpeed {deepspeed.__version__} ZeRO-{cfg.methods.sharding[-1]}, offload={cfg.methods.offload}")
    return engine
