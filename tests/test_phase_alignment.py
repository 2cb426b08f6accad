"""Each timed phase is exactly the work it names, for every parallel backend (two gloo processes).

An accumulating micro-step reduces nothing and steps no optimizer; a boundary micro-step reduces the gradients;
the optimizer phase updates the weights. The libraries decide internally when they reduce: DDP through its
reducer (seen through a communication hook), FSDP2 when it writes the sharded gradients (post-accumulate-grad
hooks of the sharded parameters), DeepSpeed from its own micro-step counter (a stand-in engine that keeps
DeepSpeed's accounting, ``doubles.CountingEngine``).

The DeepSpeed case fails on engine revision 1 (main at 9521ab0): its engine was built with
``gradient_accumulation_steps=2`` while each timed repetition ran two accumulating micro-steps, a boundary
micro-step and an optimizer step, and off the boundary it called ``engine.step()`` to advance DeepSpeed's
counter, so DeepSpeed's boundary drifted into the accumulating phases and its optimizer phase timed nothing.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from academic_bench.catalog.config import Config
from academic_bench.measure import apply, timing
from academic_bench.measure.stepper import Stepper
from academic_bench.catalog.methods import parse_methods

WORLD = 2


class Probe:
    """Which timed phase is running, and what the library did in each (a list of sets, one per phase run)."""

    def __init__(self) -> None:
        self.phase = "setup"
        self.runs: list[tuple[str, set[str]]] = []
        self.counts: Counter = Counter()

    def enter(self, name: str) -> None:
        self.phase = name
        self.runs.append((name, set()))

    def log(self, event: str) -> None:
        self.counts[event] += 1
        if self.runs:
            self.runs[-1][1].add(event)


def _watch(stepper: Stepper, probe: Probe) -> None:
    """Report each backend's reduction and optimizer step to the probe, through the libraries' own hooks."""
    if stepper.engine is not None:
        return  # the stand-in engine reports itself
    if stepper.ran.parallel == "ddp":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

        def hook(state, bucket):
            probe.log("reduce")
            return allreduce_hook(state, bucket)

        stepper.model.register_comm_hook(dist.group.WORLD, hook)
    elif stepper.ran.parallel == "fsdp":
        for p in stepper.model.parameters():  # FSDP2 runs these when it writes the reduced, sharded gradient
            p.register_post_accumulate_grad_hook(lambda _: probe.log("reduce"))
    step = stepper.opt.step

    def logged_step(*args, **kwargs):
        probe.log("optimizer")
        return step(*args, **kwargs)

    stepper.opt.step = logged_step


def _child(rank: int, spec: str, store_path: str, out: str) -> None:
    store = dist.FileStore(store_path, WORLD)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=WORLD)
    probe = Probe()
    try:
        from doubles import CountingEngine

        def stand_in(model, cfg, micro_batch, gas, ran):
            ran.parallel = "deepspeed"
            return CountingEngine(model, micro_batch, gas, WORLD, probe.log)

        apply.apply_deepspeed = stand_in
        cfg = Config("pythia-160m", "h100-80gb", WORLD, methods=parse_methods(spec), tiny=True)
        mbs = 1
        gas = cfg.per_gpu_batch // mbs
        stepper = Stepper(cfg, mbs, gas, "cpu")
        _watch(stepper, probe)

        def chain(phases, device):
            out = []
            for name, fn in phases:
                probe.enter(name)
                fn()
                out.append((name, 1.0))
            return out

        timing.time_chain = chain
        timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=5)
        timed = [(name, sorted(events)) for name, events in probe.runs]
        probe.runs, probe.counts = [], Counter()
        timing.validate(stepper, cfg, "cpu", steps=2)  # and its warm-up step: three optimizer steps
        engine_gas = stepper.engine.gradient_accumulation_steps() if stepper.engine is not None else None
        if rank == 0:
            Path(out).write_text(json.dumps({"gas": gas, "timed": timed, "engine_gas": engine_gas,
                                             "sustained_optimizer_steps": probe.counts["optimizer"],
                                             "parallel": stepper.ran.parallel}))
    finally:
        dist.destroy_process_group()


def _run(spec: str, tmp_path: Path) -> dict:
    out = tmp_path / "out.json"
    mp.start_processes(_child, args=(spec, str(tmp_path / "store"), str(out)), nprocs=WORLD, start_method="spawn")
    return json.loads(out.read_text())


@pytest.mark.parametrize("spec,parallel", [
    ("naive", "ddp"),
    ("naive+fsdp_shard_grad_op", "fsdp"),
    ("naive+fsdp_full_shard+offload", "fsdp"),
    ("naive+zero1", "deepspeed"),
    ("naive+zero2+offload", "deepspeed"),
    ("naive+zero3+offload", "deepspeed"),
])
def test_each_timed_phase_is_the_work_it_names(spec, parallel, tmp_path):
    torch.manual_seed(0)
    got = _run(spec, tmp_path)
    assert got["parallel"] == parallel
    assert got["gas"] > 2, "the tiny recipe must accumulate more than the two micro-steps a repetition times"
    want = {"accumulate_first": [], "accumulate": [], "boundary": ["reduce"], "optimizer": ["optimizer"]}
    wrong = [(i, name, events) for i, (name, events) in enumerate(got["timed"]) if events != want[name]]
    assert not wrong, f"phases doing other work than they name (index, phase, what ran): {wrong[:6]}"
    names = Counter(name for name, _ in got["timed"])
    # 2 warm-up + 5 timed; ZeRO-3 + offload times its whole steady run as one block: BLOCK_REPS in all, since its
    # warm-up block (every phase 1 s here) agrees with the first timed one on every rank and counts as a repetition
    n = timing.BLOCK_REPS if spec.endswith("zero3+offload") else 7
    assert names == {"accumulate_first": n, "accumulate": n, "boundary": n, "optimizer": n}
    assert got["sustained_optimizer_steps"] == 3
    if parallel == "deepspeed":  # DeepSpeed scales its loss by its own count: the real one
        assert got["engine_gas"] == got["gas"]
