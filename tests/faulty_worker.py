"""The measurement worker with failures made to order, for the launcher's and the sweep's CPU tests.

    ACADEMIC_BENCH_FAULTS='{"<configuration id>" or "*": {"crash": true}}' \
        python -m tests.faulty_worker --request REQ.json --result RES.json   (one process; torchrun's for several)

It runs the real ``academic_bench.measure.worker`` with some of its functions replaced (``install``), so that the
worker holds no test hooks. The faults:
    crash, hang, sigkill        rank 0, before any work (sigkill: as the host's out-of-memory killer ends a process)
    first_failure_on_rank      this rank raises at once; the others then fail in a collective it never joins (a
                                secondary error, printed after the first)
    sigkill_agent               rank 0 kills its parent (torchrun's agent, on several processes) with SIGKILL, before
                                any work, and goes on
    oom_above_micro_batch       building a model above this micro-batch runs out of memory: on every rank, or on
                                ``oom_rank`` only while the other ranks wait as if in a collective it never joins
    timed_oom_above_micro_batch above this micro-batch the timed run runs out of memory (the search fit)
    sigkill_after_timing        rank 0 is killed (SIGKILL) once its phases are timed, before its result is written
    start_micro_batch           the micro-batch search's first size
    memory_wall_at_micro_batch  timed at this micro-batch, the caching allocator counts retries (the memory wall)
                                and the step takes ``memory_wall_slowdown`` (default 2) times as long; with
                                ``oom_below_the_wall``, half of it runs out of memory when timed
    collective_timeout_s        the process group's timeout
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist

from academic_bench.catalog.config import Config
from academic_bench.measure import microbatch, worker

FAULTS_ENV = "ACADEMIC_BENCH_FAULTS"  # JSON: {"<configuration id>" or "*": {fault: value}}
MODULE = "tests.faulty_worker"  # what ``run_config(worker=...)`` and ``run_sweep(worker=...)`` take


class SimulatedOOM(torch.OutOfMemoryError):
    """An out of memory made to order (the worker treats it as a real one)."""


def faults_for(config_id: str) -> dict:
    table = json.loads(os.environ.get(FAULTS_ENV) or "{}")
    return {**table.get("*", {}), **table.get(config_id, {})}


def install(faults: dict, patch: Callable[[object, str, object], None] = setattr) -> None:
    """Replace the worker's functions that ``faults`` need (``patch``: ``setattr``, or a test's
    ``monkeypatch.setattr`` to undo it afterwards)."""
    real_measure, real_stepper, real_timing = worker.measure, worker.Stepper, worker.time_and_validate

    def measure(req: dict, device: str, rank: int) -> dict:
        if rank == 0 and faults.get("crash"):
            raise RuntimeError("simulated crash (test double)")
        if rank == 0 and faults.get("hang"):
            time.sleep(10**6)
        if rank == 0 and faults.get("sigkill"):
            os.kill(os.getpid(), signal.SIGKILL)
        if faults.get("first_failure_on_rank") is not None:
            if rank == faults["first_failure_on_rank"]:
                raise RuntimeError(f"simulated first failure on rank {rank} (test double)")
            time.sleep(1)  # the failed rank's error file is written well before this rank's
            try:
                dist.barrier()
            finally:
                print(f"rank {rank} failed after its peer", flush=True)
            raise ValueError(f"simulated secondary failure on rank {rank}: its peer never joined (test double)")
        if rank == 0 and faults.get("sigkill_agent"):
            os.kill(os.getppid(), signal.SIGKILL)
        return real_measure(req, device, rank)

    def oom_above_the_limit(micro_batch):
        limit = faults.get("oom_above_micro_batch")
        if limit is not None and micro_batch > limit:
            only = faults.get("oom_rank")
            if only is None or only == (dist.get_rank() if dist.is_initialized() else 0):
                raise SimulatedOOM(f"simulated out of memory at micro-batch {micro_batch} (limit {limit})")
            time.sleep(10**6)

    class Stepper(real_stepper):
        def __init__(self, cfg, micro_batch, gas, device):
            oom_above_the_limit(micro_batch)
            super().__init__(cfg, micro_batch, gas, device)

        def resize(self, micro_batch, gas):  # the model built for a smaller size runs out at the larger one
            super().resize(micro_batch, gas)
            oom_above_the_limit(micro_batch)

    retries = [0]  # the allocator's retries so far, as ``microbatch.alloc_retries`` counts them

    def time_and_validate(stepper, cfg, mbs, req, device, warm=False):
        limit = faults.get("timed_oom_above_micro_batch")
        if limit is not None and mbs > limit:
            raise SimulatedOOM(f"simulated out of memory when timed at {mbs}")
        if faults.get("oom_below_the_wall") and 2 * mbs == faults.get("memory_wall_at_micro_batch"):
            raise SimulatedOOM(f"simulated out of memory when timed at {mbs}, below the wall")
        row = real_timing(stepper, cfg, mbs, req, device, warm=warm)
        if mbs == faults.get("memory_wall_at_micro_batch"):
            retries[0] += 3
            slowdown = faults.get("memory_wall_slowdown", 2.0)
            row["step_time_s"] *= slowdown
            row["step_time_spread"] = [t * slowdown for t in row.get("step_time_spread") or []]
        if faults.get("sigkill_after_timing") and (not dist.is_initialized() or dist.get_rank() == 0):
            os.kill(os.getpid(), signal.SIGKILL)
        return row

    patch(worker, "measure", measure)
    patch(worker, "Stepper", Stepper)
    patch(microbatch, "Stepper", Stepper)  # the search builds one per trial
    patch(worker, "time_and_validate", time_and_validate)
    if faults.get("memory_wall_at_micro_batch"):
        patch(worker, "alloc_retries", lambda device: retries[0])
    if faults.get("start_micro_batch"):
        patch(microbatch, "start_guess", lambda cfg: faults["start_micro_batch"])
    if faults.get("collective_timeout_s"):
        patch(worker, "collective_timeout_s", lambda req: faults["collective_timeout_s"])


def main() -> int:
    ap = argparse.ArgumentParser()  # the worker parses its own arguments; this only reads the request
    ap.add_argument("--request", type=Path)
    args, _ = ap.parse_known_args()
    req = json.loads(args.request.read_text())
    install(faults_for(Config.from_dict(req["config"]).id))
    return worker.main()


if __name__ == "__main__":
    worker.exit_now(main())
