"""The processes of one launch: the worker's command line (torchrun's for several processes, the worker itself
for one), the workers' environment (with the opt-in that switches
NVLink multicast off, and the compile cache every launch shares), and killing a whole process tree on a time
limit."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil

from ..catalog.config import Config
from ..catalog.env import REPO_ROOT

WORKER_MODULE = "academic_bench.measure.worker"
# Opt-in for machines whose NVLink multicast (NVLS/SHARP) cannot be used, e.g. GPUs shared through a
# virtualisation layer: there NCCL/NVSHMEM multicast set-up hung or failed (the study's shared multi-GPU
# machines, whose ``scripts/offline-gpu/gpu_prelude.sh`` exports it). ACADEMIC_BENCH_NO_NVLS=1 switches
# multicast off for the workers. Without it NCCL's own defaults stand, since switching NVLS off slows all-reduce
# on an NVSwitch machine that has it and would bias its multi-GPU timings; variables the user exported pass through.
NO_NVLS_OPT_IN = "ACADEMIC_BENCH_NO_NVLS"
NO_NVLS_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
# The variables a row's ``env["launch"]`` records as the workers got them (None: unset, the library's default).
LAUNCH_ENV_KEYS = (NO_NVLS_OPT_IN, *NO_NVLS_ENV)
# Where every worker of every configuration keeps its compiled kernels (Inductor's FX graph and AOTAutograd caches):
# one folder for a whole sweep, so that a configuration reuses what an earlier one of the same model compiled.
# Inductor's default, a folder under /tmp, is shared on one machine only; this one, under the user's cache
# folder, is shared by SLURM jobs on several nodes too where the home folder is, and
# ACADEMIC_BENCH_COMPILE_CACHE points it anywhere else (a user's own TORCHINDUCTOR_CACHE_DIR stands).
COMPILE_CACHE_ENV = "ACADEMIC_BENCH_COMPILE_CACHE"
COMPILE_CACHE_SWITCHES = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}
# Linux only: the launched process gets SIGTERM when this process dies (even by SIGKILL): a one-process worker
# ends; torchrun stops its workers.
_PDEATHSIG_EXEC = ("import ctypes,os,sys;"
                   "ctypes.CDLL(None).prctl(1,15);"  # 1 = PR_SET_PDEATHSIG
                   "os.getppid()!=int(sys.argv[1]) and sys.exit(143);"  # the parent died before prctl
                   "os.execv(sys.executable,[sys.executable]+sys.argv[2:])")


@dataclass(frozen=True)
class Rendezvous:
    """torchrun's multi-node options for this node (the same endpoint on every node; node 0 writes the row)."""

    nnodes: int
    node_rank: int
    endpoint: str  # host:port reachable from every node

    def args(self, run_id: str) -> list[str]:
        return ["--nnodes", str(self.nnodes), "--node_rank", str(self.node_rank),
                "--rdzv_endpoint", self.endpoint, "--rdzv_id", run_id]


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


WORKSHOP_PATH = "--tiny --device cpu"


class NoGPUError(ValueError):
    """GPU work asked of a machine that has no usable GPU (exit 2, before anything starts)."""


def no_gpu_reason() -> str | None:
    """Why this machine cannot run GPU work (no driver, a torch without CUDA, no device), or None when it can.
    Asks torch without creating a CUDA context, which would hold memory on GPU 0 that rank 0 then lacks."""
    import torch

    if torch.cuda.is_available():
        return None
    if torch.version.cuda is None:
        return f"this torch ({torch.__version__}) was built without CUDA"
    if shutil.which("nvidia-smi") is None:
        return "no NVIDIA driver, nvidia-smi is not on PATH"
    return "torch finds no CUDA device"


def device_for(requested: str | None, command: str, workshop: bool = True) -> str:
    """The device ``command`` runs on: the CPU only when asked for by name; otherwise a GPU, and a machine without
    one stops here, before any process starts, naming the workshop path (a full-size model on the CPU ran for ten
    minutes until the host killed it, and recorded only that). ``workshop``: the command takes ``--tiny``, so the
    message may name the workshop path."""
    if requested == "cpu":
        return "cpu"
    why = no_gpu_reason()
    if why is not None and not workshop:  # a command without --tiny (remeasure) names only what it takes
        raise NoGPUError(f"no GPU here: {why}. academic-bench {command} measures rows again on the kind of GPU "
                         "that made them: run it where that GPU is, or give --device cpu for a workshop run's rows "
                         "(tiny models measured on the CPU)")
    if why is not None:
        raise NoGPUError(f"no GPU here: {why}. academic-bench {command} measures on GPUs; to try it on "
                         f"the CPU, take the workshop path: add {WORKSHOP_PATH} (the tiny model variants, minutes). "
                         "Any other run on the CPU needs --device cpu")
    return "cuda"


def error_folder(request: str | os.PathLike) -> Path:
    """Where a launch's ranks write their error files (``torch.distributed.elastic.multiprocessing.errors.record``
    on the worker's ``main``): torchrun's ``--log-dir``, beside the request, which the launcher reads after a
    failure (``outcome.first_error``)."""
    return Path(request).parent / "errors"


def torchrun_command(config: Config, request: Path, result: Path, *, rdzv: Rendezvous | None = None,
                     worker: str = WORKER_MODULE) -> list[str]:
    nproc = config.n_gpus // config.nodes
    where = rdzv.args(config.id) if rdzv else ["--standalone"]
    # --log-dir: torchrun gives each worker an error file of its own there (TORCHELASTIC_ERROR_FILE); its console
    # output is left as it is (no --redirects), so the log keeps every rank's lines.
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), *where,
            "--max_restarts", "0", "--log-dir", str(error_folder(request)), "-m", worker,
            "--request", str(request), "--result", str(result)]


def one_process(config: Config) -> bool:
    """Whether the configuration runs in one process (one GPU), which the launcher starts without torchrun."""
    return config.n_gpus == 1


# What torchrun gives its one worker of a one-GPU run, given by the launcher instead; the worker then makes its
# one-rank process group on a store of its own (``measure.worker.init``), so no port is taken.
ONE_PROCESS_ENV = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
INHERITED_AGENT_PREFIXES = ("TORCHELASTIC_", "GROUP_", "ROLE_")  # torchrun's agent's variables for its workers


def worker_command(config: Config, request: Path, result: Path, *, rdzv: Rendezvous | None = None,
                   worker: str = WORKER_MODULE) -> list[str]:
    """The command that runs ``worker`` for ``config``: torchrun for several processes; for one, the worker itself
    (with ``ONE_PROCESS_ENV``). torchrun's agent only starts, watches and reports on that one process, and its own
    start (a second interpreter importing torch) was a fixed share of every one-GPU configuration
    (``notebooks/runs/h200x1/evidence/engine-cost/probe/`` and ``launch/``)."""
    if not uses_torchrun(config, rdzv):
        return [sys.executable, "-m", worker, "--request", str(request), "--result", str(result)]
    return torchrun_command(config, request, result, rdzv=rdzv, worker=worker)


def uses_torchrun(config: Config, rdzv: Rendezvous | None = None) -> bool:
    """Whether ``worker_command`` starts the workers through torchrun: several processes, or several nodes."""
    return not one_process(config) or rdzv is not None


def with_parent_death_signal(cmd: list[str]) -> list[str]:
    """Start ``cmd`` (a python command) so that it gets SIGTERM if this process dies (Linux)."""
    if sys.platform != "linux" or cmd[0] != sys.executable:
        return cmd
    return [sys.executable, "-c", _PDEATHSIG_EXEC, str(os.getpid()), *cmd[1:]]


def no_nvls_requested(environ: dict[str, str] | None = None) -> bool:
    """Whether ``ACADEMIC_BENCH_NO_NVLS`` (in ``environ``, default the process's) asks to switch multicast off."""
    value = (os.environ if environ is None else environ).get(NO_NVLS_OPT_IN, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def launch_env_record(env: dict[str, str]) -> dict[str, str | None]:
    """What a row records of the workers' environment: the multicast switches and the opt-in, as set."""
    return {key: env.get(key) for key in LAUNCH_ENV_KEYS}


def compile_cache_dir(environ: dict[str, str] | None = None) -> Path:
    """The compile cache a sweep's workers share: ``ACADEMIC_BENCH_COMPILE_CACHE``, else
    ``$XDG_CACHE_HOME/academic-bench/torchinductor`` (``~/.cache`` when unset)."""
    environ = os.environ if environ is None else environ
    if environ.get(COMPILE_CACHE_ENV):
        return Path(environ[COMPILE_CACHE_ENV])
    return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "academic-bench" / "torchinductor"


def child_env(config: Config, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the workers, and of torchrun where it starts them: multicast switched off only on
    ``ACADEMIC_BENCH_NO_NVLS=1``, a one-process worker given its rank variables (``ONE_PROCESS_ENV``)."""
    env = dict(os.environ)
    # torchrun sets OMP_NUM_THREADS=1 when it is unset, which leaves CPU offloading's optimizer on one core
    # (the paper's handicap); give each rank its share of the cores instead.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    env["OMP_NUM_THREADS"] = str(max(1, cores // (config.n_gpus // config.nodes)))
    if no_nvls_requested({**env, **(extra or {})}):
        env.update(NO_NVLS_ENV)
    # Fewer fragmentation failures near the memory limit (torchtitan's default too); a user's choice stands.
    env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(compile_cache_dir(env)))
    for key, value in COMPILE_CACHE_SWITCHES.items():
        env.setdefault(key, value)
    env["PYTHONUNBUFFERED"] = "1"  # the log's tail must hold the last words of a crash
    if one_process(config):
        env.update(ONE_PROCESS_ENV)
        # What an enclosing job (SLURM, torchrun) set for its own processes would send the worker to that job's
        # rendezvous or make it look launched by torchrun's agent; torchrun replaced these, and a group of one
        # needs none of them.
        for key in [k for k in env if k in ("MASTER_ADDR", "MASTER_PORT") or k.startswith(INHERITED_AGENT_PREFIXES)]:
            del env[key]
    if (REPO_ROOT / "pyproject.toml").exists():  # a source checkout need not be pip-installed on a GPU node
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def _tree(root: psutil.Process) -> set[psutil.Process]:
    try:
        return {root, *root.children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def kill_strays(mark: str) -> int:
    """Kill every process still running whose command line names ``mark`` (a launch's own folder, which its
    workers' command lines name), and return how many there were. torchrun starts each worker in a session of its
    own, so when torchrun itself is killed its workers outlive it, holding the GPUs the next configuration needs
    (seen on the CPU with two workers), and neither its process group nor its tree still leads to them."""
    strays = [p for p in psutil.process_iter(["pid", "cmdline"])
              if p.info["pid"] != os.getpid() and any(mark in part for part in (p.info["cmdline"] or []))]
    for p in strays:
        try:
            p.kill()
        except psutil.Error:  # gone meanwhile, or not ours to kill: the launch's row must still be written
            pass
    psutil.wait_procs(strays, timeout=10)
    return len(strays)


def kill_tree(proc: subprocess.Popen) -> None:
    """Kill the launched process (torchrun, or a one-process worker), its process group and every descendant.

    torchrun starts each worker in a session of its own, so killing torchrun's process group alone would
    leave the workers running (and holding the GPUs). The tree is frozen first so nothing forks meanwhile.
    """
    try:
        root = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        root = None
    members: set[psutil.Process] = set()
    for _ in range(5):
        found = _tree(root) if root else set()
        for p in list(members):
            try:
                found |= {p, *p.children(recursive=True)}
            except psutil.NoSuchProcess:
                pass
        new = found - members
        for p in new:
            try:
                p.suspend()
            except psutil.NoSuchProcess:
                pass
        members |= found
        if not new:
            break
    groups = {proc.pid}
    for p in members:
        try:
            groups.add(os.getpgid(p.pid))
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    groups.discard(os.getpgrp())  # never our own group
    for g in groups:
        try:
            os.killpg(g, 9)
        except (ProcessLookupError, PermissionError):
            pass
    for p in members:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(list(members), timeout=10)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


