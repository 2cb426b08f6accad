"""Where a configuration's model build spends its time: the engine's own ``Stepper`` built twice in one process
(the first build, then a second at half the micro-batch, as after an out-of-memory trial), each under cProfile.

In Pythia-1B's exhaustive search on one H100 (the `wall_breakdown` of each row of
notebooks/runs/h100x1/evidence/engine/results-one-launch.cost.jsonl) the build of a DeepSpeed engine with CPU offload
is the largest phase, and its log shows a first build far longer than a second in the same process. This says which
calls take it, so that a change to the engine is aimed before it is made.

usage: python3 scripts/offline-gpu/profile_build.py MODEL METHODS MICRO_BATCH OUT_PREFIX
   e.g. python3 scripts/offline-gpu/profile_build.py pythia-1b free-lunch+zero1+offload 16 /tmp/prof/zero1-offload
Writes OUT_PREFIX.build1.txt and OUT_PREFIX.build2.txt (the 40 calls with the most cumulative time) and prints
each build's wall.
"""
from __future__ import annotations

import cProfile
import gc
import io
import os
import pstats
import sys
import time

import torch


def profiled_build(cfg, micro_batch: int, out: str):
    from academic_bench.measure.stepper import Stepper

    prof = cProfile.Profile()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    prof.enable()
    stepper = Stepper(cfg, micro_batch, cfg.gas(micro_batch), "cuda")
    torch.cuda.synchronize()
    prof.disable()
    wall = time.perf_counter() - t0
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
    with open(out, "w") as f:
        f.write(f"build wall {wall:.2f} s\n{text.getvalue()}")
    return stepper, wall


def main(argv: list[str]) -> int:
    model, methods, micro_batch, prefix = argv[0], argv[1], int(argv[2]), argv[3]
    # The launcher's one process: a group of one (``worker.init``); DeepSpeed asserts LOCAL_RANK is set.
    for var in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        os.environ.setdefault(var, "1" if var == "WORLD_SIZE" else "0")
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.measure import worker

    t0 = time.perf_counter()
    worker.init("cuda")
    print(f"process group and CUDA context: {time.perf_counter() - t0:.2f} s")
    cfg = Config(model=model, gpu="h100-80gb", n_gpus=1, methods=parse_methods(methods))
    os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
    stepper, wall = profiled_build(cfg, micro_batch, f"{prefix}.build1.txt")
    print(f"first build at micro-batch {micro_batch}: {wall:.2f} s")
    del stepper
    gc.collect()
    torch.cuda.empty_cache()
    stepper, wall = profiled_build(cfg, micro_batch // 2, f"{prefix}.build2.txt")
    print(f"second build at micro-batch {micro_batch // 2}: {wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
