"""A model's exhaustive configurations measured in turn by one process: what the engine's one-GPU sweep would cost
if it kept its worker (imports, CUDA context, libraries' one-time work) across configurations, and whether the
steps it measures so stay those of a fresh process per configuration.

The engine starts one worker per configuration (``launch.local``), and in Pythia-160M's and Pythia-1B's
exhaustive searches on one H100 much of the wall was outside trials and timed repetitions, most of it each
configuration's first build paying the libraries' one-time work again (the rows' ``wall_breakdown`` under
``notebooks/runs/h100x1/evidence/engine/``, and ``engine/build-profile/``). This probe runs
the same configurations through the worker's own ``measure`` (search and time in place, as the engine does on one
GPU), freeing the GPU between them as the search frees it between trial sizes, and writes one line per
configuration: its step, spread, micro-batch and search, and its phases (``measure.wall``). It is evidence for a
design decision, not an engine: no time limit, no recovery from a crash.

usage: python3 scripts/offline-gpu/one_process_probe.py MODEL OUT.jsonl [cuda|cpu] [METHODS,METHODS...]
(``cpu``: the tiny configurations on the CPU, to try the probe itself where there is no GPU; METHODS: these
combinations, as ``--methods`` spells them, instead of the exhaustive search's)
"""
from __future__ import annotations

import json
import os
import sys
import time
import weakref

ENTERED = time.time()
LIMIT_S = 420  # each configuration's time limit in the engine's cost searches (``--timeout 420`` in their plans)


def worker_environment(model: str) -> None:
    """Run again under the environment the launcher gives a one-GPU worker (``launch.processes.child_env``: the
    allocator's settings, the compile cache, the thread count), which must be set before torch is imported."""
    if os.environ.get("ONE_PROCESS_PROBE") == "1":
        return
    from academic_bench.catalog.config import Config
    from academic_bench.launch.processes import child_env

    env = {**child_env(Config(model, "h100-80gb", 1)), "ONE_PROCESS_PROBE": "1"}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def host_available_gb() -> float:
    import psutil

    return psutil.virtual_memory().available / 1e9


def track_steppers(made: list) -> None:
    """Keep a weak reference to every ``Stepper`` built, so that the one ``measure`` timed (which a worker leaves to
    its exit) can be closed like a trial's (``Stepper.close``: DeepSpeed's engine destroyed, compiled code reset)."""
    from academic_bench.measure.stepper import Stepper

    built = Stepper.__init__

    def init(self, *args, **kwargs):
        made.append(weakref.ref(self))
        built(self, *args, **kwargs)

    Stepper.__init__ = init


def main(argv: list[str]) -> int:
    model, out = argv[0], argv[1]
    device = argv[2] if len(argv) > 2 else "cuda"
    chosen = argv[3].split(",") if len(argv) > 3 else None
    worker_environment(model)
    import torch

    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.launch.local import DEADLINE_RESERVE_S, build_request
    from academic_bench.measure import wall, worker
    from academic_bench.measure.stepper import free_after_oom
    from academic_bench.search.plans import plan

    made: list = []
    track_steppers(made)
    worker.init(device)
    started = time.time() - ENTERED  # the interpreter, the imports, the process group and the CUDA context
    print(f"process ready in {started:.1f} s", flush=True)
    with open(out, "w") as f:
        f.write(json.dumps({"model": model, "process_ready_s": started}) + "\n")
        tiny = device == "cpu"
        configs = ([Config(model, "h100-80gb", 1, methods=parse_methods(m), tiny=tiny) for m in chosen] if chosen
                   else plan(model, "h100-80gb", 1, "exhaustive", tiny=tiny))
        for cfg in configs:
            if cfg.refusal():
                continue
            wall.restart()
            t0 = time.perf_counter()
            # The deadline the engine's timing keeps to under the plans' 420 s limit a configuration (``launch.local``).
            req = {**build_request(cfg, device=device), "in_place": True,
                   "deadline": time.time() + LIMIT_S - DEADLINE_RESERVE_S}
            try:
                row = worker.measure(req, device, 0)
            except Exception as exc:  # noqa: BLE001  (kept as the line's outcome: the probe goes on)
                row = {"outcome": "error", "reason": f"{type(exc).__name__}: {str(exc)[:300]}"}
            measured_s = time.perf_counter() - t0
            # What the next configuration needs: the GPU as the search leaves it between trial sizes (every
            # stepper still open closed here, then ``free_after_oom``'s collector, cache and peaks), and no
            # compiled code of this model (``Stepper.close`` resets it where it compiled; here whatever closed).
            for ref in made:
                stepper = ref()
                if stepper is not None and stepper.model is not None:
                    stepper.close()
            made.clear()
            torch._dynamo.reset()
            free_after_oom(None, device)
            line = {"config": cfg.id, "methods": cfg.methods.label(), "outcome": row.get("outcome"),
                    "reason": row.get("reason"), "micro_batch": row.get("micro_batch"),
                    "step_time_s": row.get("step_time_s"), "step_time_spread": row.get("step_time_spread"),
                    "mbs_search": [(t.get("micro_batch"), t.get("outcome")) for t in row.get("mbs_search") or []],
                    "phases": dict(wall.CLOCK.seconds), "measured_s": measured_s,
                    "freed_s": time.perf_counter() - t0 - measured_s,
                    "gpu_reserved_gb_after": torch.cuda.memory_reserved() / 1e9 if device == "cuda" else None,
                    "host_available_gb_after": host_available_gb()}
            f.write(json.dumps(line, default=str) + "\n")
            f.flush()
            print(f"{cfg.methods.label()}: {line['outcome']} step {line['step_time_s']} in {measured_s:.1f} s "
                  f"(+{line['freed_s']:.1f} s freeing; host {line['host_available_gb_after']:.0f} GB free)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
