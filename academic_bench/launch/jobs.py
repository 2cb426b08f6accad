"""One configuration as a SLURM job through submitit (``submitit-local`` runs the same path with submitit's local
executor, for tests and machines without SLURM), and ``run``, which picks the executor."""
from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ..catalog.config import Config
from ..catalog.models.from_config import decoder_spec, made_with
from ..results import make_row
from .local import DEFAULT_TIMEOUT_S, run_config
from .processes import Rendezvous

EXECUTORS = ("local", "slurm", "submitit-local")


def _job(config_dict: dict, kwargs: dict, model_config: dict | None = None) -> dict | None:
    """What a submitit job runs: the same run_config, on the job's node(s). ``model_config``: how a decoder from
    its config.json was registered in the submitting process (``models.from_config.made_with``); the job is a
    fresh process and registers it again."""
    import submitit

    if model_config:
        decoder_spec(**model_config)
    config = Config.from_dict(config_dict)
    if config.nodes > 1:
        env = submitit.JobEnvironment()
        kwargs["rdzv"] = Rendezvous(config.nodes, env.node, f"{env.hostnames[0]}:{kwargs.pop('port', 29500)}")
    return run_config(config, **kwargs)


def make_executor(kind: str, folder: str | os.PathLike, config: Config, timeout_s: float,
                  slurm_params: dict[str, Any] | None = None, device: str | None = None):
    """A submitit executor for one configuration: ``slurm`` or ``submitit-local``."""
    import submitit

    if kind not in ("slurm", "submitit-local"):
        raise ValueError(f"unknown submitit executor {kind!r}; choose one of: slurm, submitit-local")
    ex = submitit.AutoExecutor(folder=folder, cluster="slurm" if kind == "slurm" else "local")
    per_node = config.n_gpus // config.nodes
    # GPUs only for GPU runs: submitit's local executor hides every GPU from a job that asks for none.
    gpus = 0 if device == "cpu" else per_node
    params: dict[str, Any] = {"timeout_min": int(math.ceil(timeout_s / 60)) + 5, "tasks_per_node": 1,
                              "gpus_per_node": gpus, "name": f"academic-bench-{config.model}"}
    if kind == "slurm":
        slurm_params = dict(slurm_params or {})
        # Enough cores for CPU offloading's optimizer (8 per rank unless the user says otherwise).
        params.update(nodes=config.nodes, cpus_per_task=int(slurm_params.pop("slurm_cpus_per_task", 8 * per_node)))
        params.update(slurm_params)
    ex.update_parameters(**params)
    return ex


def run_config_submitit(config: Config, *, executor: str, folder: str | os.PathLike, setup: str,
                        timeout_s: float = DEFAULT_TIMEOUT_S, slurm_params: dict[str, Any] | None = None,
                        **kwargs: Any) -> dict:
    """run_config as a submitit job; a job that dies or is cancelled still yields an error/timeout row."""
    t0 = time.monotonic()
    kwargs.update(setup=setup, timeout_s=timeout_s)
    ex = make_executor(executor, folder, config, timeout_s, slurm_params, device=kwargs.get("device"))
    job = ex.submit(_job, config.to_dict(), kwargs, made_with(config.model))
    try:
        rows = [r for r in job.results() if r is not None]
        if rows:
            return rows[0]
        outcome, reason = "error", "the job returned no row"
    except KeyboardInterrupt:
        job.cancel(check=False)
        raise
    except Exception as exc:  # noqa: BLE001  (any job failure is this configuration's outcome)
        state = str(getattr(job, "state", "")).upper()
        outcome = "timeout" if "TIMEOUT" in state else "error"
        reason = f"job {job.job_id} ended in state {state or 'unknown'}: {str(exc)[-3000:]}"
    row = make_row(config, setup=setup, outcome=outcome, reason=reason, timing=kwargs.get("timing", "synced"),
                   mode="validate" if kwargs.get("validate") else "step", search=kwargs.get("search", "single"))
    row["duration_s"] = round(time.monotonic() - t0, 3)
    return row


def run(config: Config, *, executor: str = "local", folder: str | os.PathLike | None = None,
        slurm_params: dict[str, Any] | None = None, **kwargs: Any) -> dict | None:
    """run_config through the chosen executor (``local``, ``slurm``, ``submitit-local``)."""
    if executor == "local":
        return run_config(config, **kwargs)
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    folder = folder or Path(tempfile.gettempdir()) / "academic-bench-submitit"
    return run_config_submitit(config, executor=executor, folder=folder, slurm_params=slurm_params, **kwargs)


