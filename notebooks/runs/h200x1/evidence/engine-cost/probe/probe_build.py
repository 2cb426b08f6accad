"""Where a configuration's first seconds go: one process, as the launcher's worker starts (rank 0 of 1), timing the
import of torch, the CUDA context, the worker's imports, the process group, then the model's first build and its
first two full steps under cProfile (the 60 costliest calls by cumulative time of each).

    python3 probe_build.py MODEL METHODS MICRO_BATCH OUT_PREFIX [cuda|cpu] [tiny]

Writes OUT_PREFIX.json (the phases' seconds) and OUT_PREFIX-build.txt, OUT_PREFIX-steps.txt (the profiles).
"""
import cProfile
import io
import json
import os
import pstats
import socket
import sys
import time

t0 = time.perf_counter()
model, methods, mbs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
device = sys.argv[5] if len(sys.argv) > 5 else "cuda"
tiny = len(sys.argv) > 6 and sys.argv[6] == "tiny"
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
phases = {}


def mark(name: str, since: list = [t0]) -> None:
    now = time.perf_counter()
    phases[name] = round(now - since[0], 3)
    since[0] = now


import torch  # noqa: E402

mark("import torch")
if device == "cuda":
    torch.cuda.set_device(0)
    torch.zeros(1, device="cuda")
mark("CUDA context")
from academic_bench.catalog.config import Config  # noqa: E402
from academic_bench.catalog.methods import parse_methods  # noqa: E402
from academic_bench.measure import worker  # noqa: E402
from academic_bench.measure.data import host_batches  # noqa: E402
from academic_bench.measure.stepper import Stepper  # noqa: E402

mark("worker imports")
worker.init(device)
mark("process group")
cfg = Config(model, "h200" if device == "cuda" else "h100-80gb", 1, 1, parse_methods(methods), None, tiny)
gas = cfg.per_gpu_batch // mbs


def profiled(name: str, fn):
    prof = cProfile.Profile()
    prof.enable()
    result = fn()
    if device == "cuda":
        torch.cuda.synchronize()
    prof.disable()
    mark(name)
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(60)
    with open(f"{out}-{name.split()[0]}.txt", "w") as f:
        f.write(text.getvalue())
    return result


stepper = profiled("build", lambda: Stepper(cfg, mbs, gas, device))
batch = host_batches(cfg, mbs, 1, seed=0)[0]


def two_steps():
    for _ in range(2):
        if gas > 1:
            stepper.micro_step(batch, sync=False)
        stepper.micro_step(batch, sync=True)
        stepper.optimizer_step()


profiled("steps", two_steps)
with open(f"{out}.json", "w") as f:
    json.dump({"model": model, "methods": methods, "micro_batch": mbs, "device": device, "seconds": phases,
               "total_s": round(time.perf_counter() - t0, 3)}, f, indent=1)
print(json.dumps(phases))
sys.stdout.flush()
os._exit(0)
