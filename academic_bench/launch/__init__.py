"""Run one configuration in fresh processes (the worker itself on one GPU, torchrun on several) under a time limit,
and classify what happened.

    run_config(config, setup="h100x1") -> result row   (outcome ok | oom | invalid | error | timeout | unsupported)

Each configuration gets new processes, so a crash, an NCCL error, a CUDA fault or a hang in one cannot leak into
the next: the parent only waits, reads the result file the worker writes (``measure/worker.py``), keeps the
log, and kills everything on timeout. The default executor runs the worker here; ``slurm`` submits the same
call as a SLURM job through submitit (``submitit-local`` runs that path with submitit's local executor, for
tests and for machines without SLURM).
"""
from __future__ import annotations

from .jobs import EXECUTORS, make_executor, run, run_config_submitit
from .local import (DEADLINE_RESERVE_S, DEFAULT_REPS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, TIMED_OOM_NOTE, build_request,
                    run_config)
from .outcome import failure_cause, log_tail, machine_cannot_run
from .processes import (COMPILE_CACHE_ENV, LAUNCH_ENV_KEYS, NO_NVLS_ENV, NO_NVLS_OPT_IN, WORKER_MODULE, WORKSHOP_PATH,
                        NoGPUError, Rendezvous, child_env, compile_cache_dir, default_device, device_for, kill_tree,
                        launch_env_record, no_gpu_reason, no_nvls_requested, torchrun_command,
                        worker_command)

__all__ = ["COMPILE_CACHE_ENV", "DEADLINE_RESERVE_S", "DEFAULT_REPS", "DEFAULT_TIMEOUT_S", "DEFAULT_WARMUP", "EXECUTORS",
           "LAUNCH_ENV_KEYS", "NO_NVLS_ENV", "NO_NVLS_OPT_IN", "TIMED_OOM_NOTE", "WORKER_MODULE", "WORKSHOP_PATH",
           "NoGPUError", "Rendezvous", "build_request", "child_env", "compile_cache_dir", "default_device", "device_for",
           "failure_cause", "kill_tree", "launch_env_record", "log_tail", "machine_cannot_run", "make_executor",
           "no_gpu_reason", "no_nvls_requested", "run", "run_config", "run_config_submitit", "torchrun_command",
           "worker_command"]
