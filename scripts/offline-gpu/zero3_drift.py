"""Whether a host-bound configuration's timed phases and its sustained steps drift apart within one process.

    python3 scripts/offline-gpu/zero3_drift.py [MODEL] [METHODS] [MICRO_BATCH] [ROUNDS]

Alternates, ROUNDS times in one process: the engine's phase timing (``timing.time_phases``, extrapolated as a
row is), a block of consecutive accumulating micro-steps timed as one (synchronized at its end only, as a
sustained step runs them), and the engine's validation (``timing.validate``, real steps through a DataLoader).
If the phases and the sustained steps agree in every round, a validation miss of this configuration comes from
the run, not the method; if they disagree in every round, the method is what to fix.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch.distributed as dist

from academic_bench.catalog.config import Config
from academic_bench.measure.stepper import Stepper
from academic_bench.measure.data import host_batches
from academic_bench.measure.extrapolation import extrapolate
from academic_bench.measure.timing import synchronize, time_phases, validate
from academic_bench.measure.worker import init
from academic_bench.catalog.methods import parse_methods

BLOCK = 8  # accumulating micro-steps per timed block


def main() -> None:
    args = sys.argv[1:]
    model = args[0] if len(args) > 0 else "pythia-160m"
    methods = args[1] if len(args) > 1 else "free-lunch+zero3+offload"
    mbs = int(args[2]) if len(args) > 2 else 32
    rounds = int(args[3]) if len(args) > 3 else 3
    device = os.environ.get("PROBE_DEVICE", "cuda")  # "cpu" with PROBE_TINY=1: a dry run of the script
    tiny = os.environ.get("PROBE_TINY") == "1"
    for k, v in {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29512", "RANK": "0", "WORLD_SIZE": "1",
                 "LOCAL_RANK": "0"}.items():
        os.environ.setdefault(k, v)
    init(device)
    cfg = Config(model, "h100-80gb", 1, methods=parse_methods(methods), tiny=tiny)
    gas = cfg.per_gpu_batch // mbs
    stepper = Stepper(cfg, mbs, gas, device)
    batches = host_batches(cfg, mbs, 2, seed=1)
    block = min(BLOCK, max(gas - 2, 1))

    def block_s() -> float:
        """Per micro-step seconds of ``block`` accumulating micro-steps after a first one (its own step)."""
        stepper.micro_step(batches[0], sync=False)
        synchronize(device)
        t = time.perf_counter()
        for j in range(block):
            stepper.micro_step(batches[j % 2], sync=False)
        synchronize(device)
        per = (time.perf_counter() - t) / block
        stepper.micro_step(batches[1], sync=True)
        stepper.optimizer_step()
        synchronize(device)
        return per

    out: dict = {"model": model, "methods": methods, "micro_batch": mbs, "gas": gas, "block": block, "rounds": []}
    for r in range(rounds):
        phases = time_phases(stepper, cfg, device, warmup=2, reps=5)
        row = extrapolate(cfg, mbs, phases, "synced")
        blocks = [block_s() for _ in range(5)]
        med = {k: statistics.median(v) for k, v in phases.items() if v}
        with_block = (med.get("accumulate_first", 0.0) + max(gas - 2, 0) * statistics.median(blocks)
                      + med["boundary"] + med["optimizer"])
        sustained = validate(stepper, cfg, device, 3)
        stepper.set_gas(gas)
        rec = {"round": r, "phases_median_s": med, "extrapolated_step_s": row["step_time_s"],
               "block_per_micro_step_s": blocks, "extrapolated_with_block_s": with_block,
               "sustained_steps_s": sustained}
        rec["error_phases"] = row["step_time_s"] / statistics.median(sustained) - 1
        rec["error_block"] = with_block / statistics.median(sustained) - 1
        out["rounds"].append(rec)
        print(json.dumps(rec), flush=True)
    name = f"drift-{model}-{methods}.json".replace("+", "_")  # names with "+" do not come back from a device call
    with open(os.path.join(os.environ.get("OUT", "."), name), "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
