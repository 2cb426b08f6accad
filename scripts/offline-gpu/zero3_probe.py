"""Where a sustained ZeRO-3 + offload step spends the time its phases do not show (one GPU).

    python3 scripts/offline-gpu/zero3_probe.py [MODEL] [METHODS] [MICRO_BATCH]

Times every micro-step of whole training steps one by one (device synchronized after each), then whole steps
with no synchronization inside, fed from pre-made batches and from the validation's DataLoader, so that the
per-micro-step profile, the cost of the synchronizations and the cost of the data path can be told apart.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

from academic_bench.catalog.config import Config
from academic_bench.measure.stepper import Stepper
from academic_bench.measure.data import host_batches
from academic_bench.measure.worker import init
from academic_bench.catalog.methods import parse_methods


def main() -> None:
    args = sys.argv[1:]
    model = args[0] if len(args) > 0 else "pythia-160m"
    methods = args[1] if len(args) > 1 else "free-lunch+zero3+offload"
    mbs = int(args[2]) if len(args) > 2 else 32
    device = os.environ.get("PROBE_DEVICE", "cuda")  # "cpu" with PROBE_TINY=1: a dry run of the script
    tiny = os.environ.get("PROBE_TINY") == "1"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    init(device)
    cfg = Config(model, "h100-80gb", 1, methods=parse_methods(methods), tiny=tiny)
    gas = cfg.per_gpu_batch // mbs
    stepper = Stepper(cfg, mbs, gas, device)
    batches = host_batches(cfg, mbs, 2, seed=1)
    out: dict = {"model": model, "methods": methods, "micro_batch": mbs, "gas": gas}

    def step_each_synced() -> list[float]:
        times = []
        for j in range(gas):
            sync()
            t = time.perf_counter()
            stepper.micro_step(batches[j % 2], sync=j == gas - 1)
            sync()
            times.append(time.perf_counter() - t)
        t = time.perf_counter()
        stepper.optimizer_step()
        sync()
        return times + [time.perf_counter() - t]

    def whole(feed) -> float:
        sync()
        t = time.perf_counter()
        for j in range(gas):
            stepper.micro_step(feed(j), sync=j == gas - 1)
        stepper.optimizer_step()
        sync()
        return time.perf_counter() - t

    for _ in range(2):
        whole(lambda j: batches[j % 2])  # warm-up
    per = [step_each_synced() for _ in range(3)]
    out["micro_steps_synced_s"] = [statistics.median(x) for x in zip(*per)]  # median per position, optimizer last
    out["sum_synced_s"] = statistics.median(sum(p) for p in per)
    out["whole_premade_s"] = [whole(lambda j: batches[j % 2]) for _ in range(3)]
    from torch.utils.data import DataLoader, TensorDataset

    pool = host_batches(cfg, mbs * min(gas, 8), 1, seed=2)[0]
    keys = list(pool)
    loader = DataLoader(TensorDataset(*[pool[k] for k in keys]), batch_size=mbs, pin_memory=True, drop_last=True)

    def stream():
        while True:
            for tensors in loader:
                yield dict(zip(keys, tensors))

    it = stream()
    out["whole_dataloader_s"] = [whole(lambda j: next(it)) for _ in range(3)]
    print(json.dumps(out))
    name = f"probe-{model}-{methods}.json".replace("+", "_")  # names with "+" do not come back from a device call
    with open(os.path.join(os.environ.get("OUT", "."), name), "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
