"""Whether a validation miss comes from the sustained run's data path or from the timed phases' extrapolation.

    python3 scripts/offline-gpu/data_path_probe.py MODEL METHODS MICRO_BATCH [ROUNDS] [WORKERS...]

In one process, ROUNDS times: the engine's phase timing (``timing.time_phases``, extrapolated as a row is); three
real steps whose micro-batches are pinned in advance (``data.host_batches``, as the timed phases take them); and the
engine's validation (``timing.validate``: three real steps whose micro-batches come from a DataLoader with worker
processes and a pinning thread, ``data.micro_batches``), once for each DataLoader worker count in WORKERS (default
the engine's ``data.DATA_WORKERS``), over fp32 images for an image model, as the engine fed them when its 16-bit
vision validations missed. A worker count written ``u8:N`` feeds an image model the way timm's loader feeds it, and
the engine's validation now does: the DataLoader's N workers collate images of one byte a value (a quarter of
fp32's bytes to collate, pin and copy), which become normalised floats on the GPU (``data.micro_batches`` with
``uint8_images``). Where the steps with pinned micro-batches agree with the extrapolation and the DataLoader's do
not, the miss is the data path's: its host work is not hidden behind steps this short.
Written for ViT-L/16 and ConvNeXt-XL in bf16, whose 16-bit rows missed their validations
(notebooks/runs/h100x1/evidence/vision16/); any catalog model and methods run.
"""
from __future__ import annotations

import itertools
import json
import os
import statistics
import sys

import torch.distributed as dist

from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.measure import data
from academic_bench.measure.extrapolation import extrapolate
from academic_bench.measure.stepper import Stepper
from academic_bench.measure.timing import time_phases, validate
from academic_bench.measure.worker import init

STEPS = 3  # sustained steps per way of feeding them, after one warm-up step (as the engine's validation)


def pinned_steps(stepper: Stepper, cfg: Config, device: str, steps: int) -> list[float]:
    """Seconds of ``steps`` real optimizer steps (after one untimed) whose micro-batches are pinned in advance: the
    engine's validation fed as the timed phases are."""
    pinned = itertools.cycle(data.host_batches(cfg, stepper.mbs, 2, seed=2))
    return validate(stepper, cfg, device, steps, batches=pinned)


def main() -> None:
    args = sys.argv[1:]
    model, methods, mbs = args[0], args[1], int(args[2])
    rounds = int(args[3]) if len(args) > 3 else 2
    workers = args[4:] or [str(data.DATA_WORKERS)]
    device = os.environ.get("PROBE_DEVICE", "cuda")  # "cpu" with PROBE_TINY=1: a dry run of the script
    tiny = os.environ.get("PROBE_TINY") == "1"
    # The launcher's one process: a group of one on an in-process store (``worker.init``), no port to choose;
    # DeepSpeed asserts LOCAL_RANK is set.
    for var in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        os.environ.setdefault(var, "1" if var == "WORLD_SIZE" else "0")
    init(device)
    cfg = Config(model, "h100-80gb", 1, methods=parse_methods(methods), tiny=tiny)
    mbs = min(mbs, cfg.per_gpu_batch)
    gas = cfg.per_gpu_batch // mbs
    stepper = Stepper(cfg, mbs, gas, device)
    out: dict = {"model": model, "methods": methods, "micro_batch": mbs, "gas": gas, "rounds": []}
    for r in range(rounds):
        row = extrapolate(cfg, mbs, time_phases(stepper, cfg, device, warmup=2, reps=5), "synced")
        step = row["step_time_s"]
        rec: dict = {"round": r, "extrapolated_step_s": step}
        pinned = pinned_steps(stepper, cfg, device, STEPS)
        rec["pinned_steps_s"], rec["error_pinned"] = pinned, step / statistics.median(pinned) - 1
        for w in workers:
            uint8 = w.startswith("u8:")
            if uint8 and not data.images_fed(cfg):
                raise SystemExit(f"u8:N feeds images; {cfg.spec.key} takes tokens")
            fed = data.micro_batches(cfg, stepper.mbs, device, seed=2, workers=int(w.removeprefix("u8:")),
                                     uint8_images=uint8)
            loader = validate(stepper, cfg, device, STEPS, batches=fed)
            w = w.replace("u8:", "u8_")
            rec[f"loader_{w}_steps_s"], rec[f"error_loader_{w}"] = loader, step / statistics.median(loader) - 1
        stepper.set_gas(gas)
        out["rounds"].append(rec)
        print(json.dumps(rec), flush=True)
    name = f"data-path-{model}-{methods}.json".replace("+", "_").replace("@", "_")  # plain names come back
    with open(os.path.join(os.environ.get("OUT", "."), name), "w") as f:
        json.dump(out, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
