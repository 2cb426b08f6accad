"""A model wrapped with its methods, stepped one phase at a time.

Phases: an *accumulating* micro-step (forward + backward, no gradient synchronization), a *boundary*
micro-step (forward + backward with gradient synchronization) and the *optimizer* step. One training step
is (GAS - 1) accumulating micro-steps, one boundary micro-step and one optimizer step.

Each phase is exactly the work it names, whatever the library counts internally: DeepSpeed decides its
accumulation boundary from its own micro-step counter, so the stepper sets the boundary explicitly
(``set_gradient_accumulation_boundary``) before every micro-step. Timed phases then cannot drift against
DeepSpeed's count (as they did in engine revision 1, see ``ENGINE_REVISION``).
"""
from __future__ import annotations

import contextlib
import gc

import torch
import torch.distributed as dist

from ..catalog.config import Config
from ..catalog.models import loss_of
from . import apply
from .apply import Ran
from .wall import phase

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


class Stepper:
    """Builds the model with the configuration's methods (in ``apply``'s order) for one micro-batch size."""

    def __init__(self, cfg: Config, micro_batch: int, gas: int, device: str):
        with phase("build"):  # where a configuration's time goes (``measure.wall``)
            self._build(cfg, micro_batch, gas, device)

    def _build(self, cfg: Config, micro_batch: int, gas: int, device: str) -> None:
        self.cfg, self.mbs, self.gas, self.device = cfg, micro_batch, gas, device
        self.sizes_fit: set[int] = set()  # the micro-batches that ran the search's full steps on this model
        spec, m = cfg.spec, cfg.methods
        self.ran = Ran(precision=cfg.recipe.precision)
        apply.apply_kernels_check(spec, cfg, device, self.ran)
        self.ran.attention = apply.attention_impl(spec, m.kernels, device)
        apply.apply_tf32(m.tf32 and device == "cuda", self.ran)
        with torch.device(device if not m.uses_deepspeed or device == "cuda" else "cpu"):
            model = spec.build(cfg.tiny, self.ran.attention if self.ran.attention != "n/a" else "sdpa")
        model.train()
        self.ran.weights = str(next(model.parameters()).dtype).removeprefix("torch.")
        if self.ran.attention not in ("n/a",):
            self.ran.kernels.append(f"attention:{self.ran.attention}")
        apply.apply_experts_kernel(model, m.kernels, device, self.ran)
        if m.checkpointing:
            apply.apply_checkpointing(model, self.ran)
        if m.fp8 != "none":  # before compile: the compiled blocks hold the float8 layers
            apply.apply_fp8(model, m.fp8, device, self.ran)
        if m.compile and spec.compiles and m.sharding != "zero3":
            apply.apply_compile(model, spec, self.ran)
        elif m.compile:
            why = "the paper does not compile Mamba" if not spec.compiles else "not compiled under ZeRO-3"
            self.ran.notes.append(f"compile not applied: {why}")
        if m.fused_ce:  # before any wrapper, which then runs the fused forward
            apply.apply_fused_cross_entropy(model, device, self.ran)
        self.engine = None
        self.scaler = None
        self.autocast = cfg.recipe.precision in DTYPES
        if m.uses_deepspeed:
            # The real accumulation count: DeepSpeed scales the loss by it (a sustained run keeps it too).
            self.engine = apply.apply_deepspeed(model, cfg, micro_batch, gas, self.ran)
            self.model, self.opt = self.engine, None
            self.autocast = False  # DeepSpeed's fp16/bf16 modes cast the model themselves
            return
        world = dist.get_world_size() if dist.is_initialized() else 1
        fused = True if device == "cuda" and not m.offload else None
        self.opt = None
        if m.bf16_weights:  # before DDP, which buckets gradients by the weights' dtype
            self.opt = apply.apply_bf16_weights(model, lambda ps: cfg.recipe.optimizer.build(ps, fused=fused),
                                                self.ran)
        if m.uses_fsdp:
            model = apply.apply_fsdp(model, spec, cfg, device, self.ran)
            self.autocast = False  # FSDP's mixed-precision policy casts parameters
        elif world > 1:
            model = apply.apply_ddp(model, device)
            self.ran.parallel = "ddp"
        self.model = model
        self.opt = self.opt or cfg.recipe.optimizer.build(model.parameters(), fused=fused)
        if cfg.recipe.precision == "fp16" and device == "cuda":
            self.scaler = torch.amp.GradScaler("cuda")

    # --- phases -------------------------------------------------------------------------------------

    def _no_sync(self, sync: bool):
        if sync:
            return contextlib.nullcontext()
        if hasattr(self.model, "no_sync") and self.ran.parallel == "ddp":
            return self.model.no_sync()
        return contextlib.nullcontext()

    def _set_fsdp_sync(self, sync: bool) -> None:
        if self.ran.parallel == "fsdp":
            self.model.set_requires_gradient_sync(sync)

    def micro_step(self, batch: dict[str, torch.Tensor], sync: bool) -> torch.Tensor:
        """Forward and backward of one micro-batch; ``sync`` marks the boundary micro-step."""
        batch = {k: v.to(self.device, non_blocking=True) for k, v in batch.items()}
        if self.engine is not None:
            # The boundary is ours to say, not DeepSpeed's counter's: off it, backward only accumulates and no
            # step() is called; on it, backward reduces and the optimizer phase's step() updates the weights.
            self.engine.set_gradient_accumulation_boundary(sync)
            loss = loss_of(self.engine, batch)
            self.engine.backward(loss)
            return loss.detach()
        self._set_fsdp_sync(sync)
        dtype = DTYPES.get(self.cfg.recipe.precision)
        ctx = torch.autocast(self.device, dtype=dtype) if self.autocast and dtype else contextlib.nullcontext()
        with self._no_sync(sync):
            with ctx:
                loss = loss_of(self.model, batch) / self.gas
            (self.scaler.scale(loss) if self.scaler else loss).backward()
        return loss.detach()

    def optimizer_step(self) -> None:
        if self.engine is not None:
            self.engine.step()  # after a boundary micro-step: DeepSpeed's optimizer step and zero_grad
            return
        if self.scaler:
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    # --- another micro-batch size, on the same model ------------------------------------------------------

    @property
    def resizable(self) -> bool:
        """Whether micro-batches of another size can run on this model as built: all but DeepSpeed, whose engine
        is configured with the micro-batch size."""
        return self.engine is None

    @property
    def survives_oom(self) -> bool:
        """Whether this model can go on after a step that ran out of memory part-way: one process without
        DeepSpeed. DDP and FSDP keep state between a backward's hooks and the next forward, which a backward cut
        short leaves half done, so they are built again instead."""
        return self.resizable and self.ran.parallel == "single"

    def resize(self, micro_batch: int, gas: int) -> None:
        """Take micro-batches of another size. The model, its weights, its optimizer state and the code compiled
        for each size it ran stay; only the activations (and the loss's 1/GAS) change. The micro-batch search
        tries its sizes on one model this way, so a search builds and compiles the model once, not once per
        size, and the size it finds is timed on the model that ran its trial."""
        if not self.resizable:
            raise ValueError("a DeepSpeed engine is built for one micro-batch size")
        self.mbs, self.gas = micro_batch, gas

    def drop_step(self) -> None:
        """Forget a step that ran out of memory part-way: its gradients, and the memory its activations took."""
        if self.opt is not None:
            self.opt.zero_grad(set_to_none=True)
        gc.collect()
        if self.device == "cuda":
            torch.cuda.empty_cache()

    def set_gas(self, gas: int) -> None:
        """Real gradient accumulation for a sustained run (DeepSpeed's count, which scales its loss, too)."""
        self.gas = gas
        if self.engine is not None and self.engine.gradient_accumulation_steps() != gas:
            world = dist.get_world_size() if dist.is_initialized() else 1
            self.engine.set_train_batch_size(self.mbs * gas * world)

    def close(self) -> None:
        """Free GPU memory so that another micro-batch size can be tried in this process."""
        if self.engine is not None and hasattr(self.engine, "destroy"):
            self.engine.destroy()
        self.model = self.opt = self.engine = self.scaler = None
        if self.ran.compiled:
            from torch import _dynamo

            _dynamo.reset()  # compiled code can keep the old model's tensors alive
        gc.collect()
        if self.device == "cuda":
            torch.cuda.empty_cache()


def is_oom(exc: BaseException) -> bool:
    if isinstance(exc, torch.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def free_after_oom(stepper: "Stepper | None", device: str) -> None:
    if stepper is not None:
        stepper.close()
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()

