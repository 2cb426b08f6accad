"""Timing phases of a training step.

Synchronized (ours): the GPU is synchronized (every stream) at the end of each timed phase on every rank, and
the slowest rank counts. Unsynchronized (the paper's released method, for comparison only): wall clock around
host-side enqueueing, never waiting for the GPU, rank 0 only.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

import torch
import torch.distributed as dist


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], None], device: str, synced: bool) -> float:
    """Seconds that ``fn`` takes; with ``synced`` the GPU has finished its work when the clock stops."""
    if synced:
        synchronize(device)
    t0 = time.perf_counter()
    fn()
    if synced:
        synchronize(device)
    return time.perf_counter() - t0


def time_chain(phases: list[tuple[str, Callable[[], None]]], device: str) -> list[tuple[str, float]]:
    """Run phases back to back and time each from the end of the one before to the moment the device has
    finished all of its work, on every stream: work a library puts on a side stream (DeepSpeed's reductions and
    offload copies) and host work between phases both count, as they do in a sustained run."""
    synchronize(device)
    out, t = [], time.perf_counter()
    for name, fn in phases:
        fn()
        synchronize(device)
        now = time.perf_counter()
        out.append((name, now - t))
        t = now
    return out


def several_ranks() -> bool:
    """Whether ranks must agree; a single process makes no collective at all (so no NCCL buffers)."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def any_rank(flag: bool, device: str) -> bool:
    """Whether ``flag`` holds on any rank: how ranks agree on a decision (out of memory, time to stop), so
    that they take the same path and no collective waits for a rank that left."""
    if not several_ranks():
        return flag
    t = torch.tensor([1 if flag else 0], device="cuda" if device == "cuda" else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def slowest_rank(samples: dict[str, list[float]], device: str) -> dict[str, list[float]]:
    """Element-wise maximum over ranks of each phase's samples (every rank must pass the same shapes)."""
    if not several_ranks():
        return samples
    names = sorted(samples)
    flat = torch.tensor([v for n in names for v in samples[n]], dtype=torch.float64,
                        device="cuda" if device == "cuda" else "cpu")
    dist.all_reduce(flat, op=dist.ReduceOp.MAX)
    out, i = {}, 0
    for n in names:
        out[n] = flat[i:i + len(samples[n])].tolist()
        i += len(samples[n])
    return out


def summary(values: list[float]) -> dict:
    """Median and spread of repeated measurements."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values),
            "mean": statistics.fmean(values)}
