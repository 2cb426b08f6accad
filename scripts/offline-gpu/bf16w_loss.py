"""Loss parity of bf16 weights with fp32 masters (``free-lunch+bf16w``) against free-lunch's fp32 weights under
bf16 autocast (AdamW on fp32 weights), a few hundred optimizer steps of a small bf16 decoder from the same
initial weights on the same batches:

    python3 scripts/offline-gpu/bf16w_loss.py [STEPS] [OUT.json]        (default 300, bf16w_loss.json)

The decoder is Pythia-160M's shape with a bf16 recipe (sequence 512, global batch 32, micro-batch 8: four
micro-steps a step, so accumulation counts). Writes both loss curves and the largest relative difference
between them; ``PROBE_DEVICE=cpu`` (a two-layer decoder of that shape, a few steps) is a dry run.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from academic_bench.catalog.config import Config
from academic_bench.measure.data import host_batches
from academic_bench.measure.stepper import Stepper
from academic_bench.catalog.methods import parse_methods
from academic_bench.catalog.models.from_config import decoder_spec

SHAPE = {"model_type": "gpt_neox", "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
         "intermediate_size": 3072, "vocab_size": 50304, "max_position_embeddings": 2048, "rotary_pct": 0.25,
         "use_parallel_residual": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
SEQ, BATCH, MICRO, DATA_BATCHES = 512, 32, 8, 16
DRY_RUN = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 256,
           "vocab_size": 512}  # on the CPU


def curve(key: str, methods: str, steps: int, device: str) -> list[float]:
    cfg = Config(key, "h100-80gb", 1, methods=parse_methods(methods))
    torch.manual_seed(0)  # the same initial weights in both runs
    stepper = Stepper(cfg, MICRO, BATCH // MICRO, device)
    batches = host_batches(cfg, MICRO, DATA_BATCHES, seed=1)
    gas, losses = BATCH // MICRO, []
    for step in range(steps):
        total = torch.zeros((), device=device)
        for i in range(gas):
            total += stepper.micro_step(batches[(step * gas + i) % DATA_BATCHES], sync=i == gas - 1).float()
        stepper.optimizer_step()
        losses.append(float(total))
    stepper.close()
    return losses


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "bf16w_loss.json")
    device = os.environ.get("PROBE_DEVICE", "cuda")
    folder = Path(tempfile.mkdtemp()) / "pythia-160m-shape-bf16"
    folder.mkdir()
    shape = SHAPE if device == "cuda" else {**SHAPE, **DRY_RUN}
    (folder / "config.json").write_text(json.dumps(shape))
    key = decoder_spec(folder / "config.json", seq_len=SEQ, tokens=1e9, global_batch=BATCH).spec.key
    methods = ("free-lunch", "free-lunch+bf16w") if device == "cuda" else ("kernels", "kernels+bf16w")
    curves, seconds = {}, {}
    for m in methods:
        t0 = time.perf_counter()
        curves[m] = curve(key, m, steps, device)
        seconds[m] = time.perf_counter() - t0
    ref, mine = curves[methods[0]], curves[methods[1]]
    worst = max(abs(a - b) / a for a, b in zip(mine, ref))
    last = abs(mine[-1] - ref[-1]) / ref[-1]
    result = {"shape": shape, "seq_len": SEQ, "global_batch": BATCH, "micro_batch": MICRO, "steps": steps,
              "device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "methods": list(methods),
              "losses": curves, "seconds": seconds, "largest_relative_difference": worst,
              "final_relative_difference": last}
    out.write_text(json.dumps(result, indent=1))
    print(f"{steps} steps: {methods[0]} {ref[0]:.4f} -> {ref[-1]:.4f}, {methods[1]} {mine[0]:.4f} -> {mine[-1]:.4f}; "
          f"largest relative difference {worst:.3%}, at the last step {last:.3%}; wrote {out}")


if __name__ == "__main__":
    main()
