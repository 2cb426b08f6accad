"""Test doubles for libraries the CPU tests cannot run (DeepSpeed needs CUDA to build its engine)."""
from __future__ import annotations

from typing import Callable

from torch import nn


class CountingEngine(nn.Module):
    """A stand-in for DeepSpeed's engine that keeps DeepSpeed's own accounting of the accumulation boundary
    (``DeepSpeedEngine.is_gradient_accumulation_boundary``): unless the caller sets it, the boundary is
    ``(micro_steps + 1) % gradient_accumulation_steps == 0``, and ``step()`` advances ``micro_steps``.
    ``backward`` reduces gradients and ``step`` updates the weights only on a boundary; each tells ``log``
    ("reduce", "optimizer"), so a test sees in which timed phase DeepSpeed's work really happened."""

    def __init__(self, model: nn.Module, micro_batch: int, gas: int, world: int, log: Callable[[str], None]):
        super().__init__()
        self.module, self.mbs, self.gas, self.world, self.log = model, micro_batch, gas, world, log
        self.micro_steps = 0
        self._boundary: bool | None = None

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def gradient_accumulation_steps(self) -> int:
        return self.gas

    def set_train_batch_size(self, train_batch_size: int) -> None:
        self.gas = train_batch_size // (self.mbs * self.world)

    def is_gradient_accumulation_boundary(self) -> bool:
        if self._boundary is None:
            return (self.micro_steps + 1) % self.gas == 0
        return self._boundary

    def set_gradient_accumulation_boundary(self, is_boundary: bool) -> None:
        self._boundary = is_boundary

    def backward(self, loss) -> None:
        (loss / self.gas).backward()
        if self.is_gradient_accumulation_boundary():
            self.log("reduce")

    def step(self) -> None:
        if self.is_gradient_accumulation_boundary():
            self.log("optimizer")
            self.module.zero_grad(set_to_none=True)
        self.micro_steps += 1

    def destroy(self) -> None:
        pass
