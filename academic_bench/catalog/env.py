"""The environment a result was measured in: GPU, driver, CUDA, library versions, git commit, host.

Captured in the parent process without creating a CUDA context (that would take memory on GPU 0 away from
rank 0): the GPU name and driver come from ``nvidia-smi``, library versions from package metadata, and a
library counts as absent (None) when Python cannot find its module.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import socket
import subprocess
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator

ENV_KEYS = ("gpu_name", "driver", "cuda", "torch", "transformers", "deepspeed", "flash_attn", "mamba_ssm",
            "timm", "liger_kernel", "torchao", "python", "package_version", "git_commit", "hostname")
# env key -> (importable module, distribution name for its version)
LIBRARIES = {"torch": ("torch", "torch"), "transformers": ("transformers", "transformers"),
             "deepspeed": ("deepspeed", "deepspeed"), "flash_attn": ("flash_attn", "flash-attn"),
             "mamba_ssm": ("mamba_ssm", "mamba-ssm"), "timm": ("timm", "timm"),
             # the switches beyond the paper: the fused cross-entropy, FP8 training
             "liger_kernel": ("liger_kernel", "liger-kernel"), "torchao": ("torchao", "torchao")}
REPO_ROOT = Path(__file__).resolve().parents[2]
# Set (to "1") when a measurement was asked to run on another GPU than the one its configuration names
# (``--allow-gpu-mismatch``, ``launch.gpu_in_hand``): every row it writes then records ``gpu_mismatch_allowed``.
GPU_MISMATCH_ENV = "ACADEMIC_BENCH_ALLOW_GPU_MISMATCH"


def cache_dir() -> Path:
    """The user's cache folder for what the package computes once and keeps (``$XDG_CACHE_HOME/academic-bench``,
    else ``~/.cache/academic-bench``): answers for other runs, facts of decoders read from config.json files."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "academic-bench"


def importable(module: str) -> bool:
    """Whether Python can find ``module``, without importing it (a module hidden with a None entry in
    ``sys.modules``, as the measurement hides Mamba's kernels, cannot be found)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def library_version(module: str, distribution: str) -> str | None:
    """The installed version of a library, or None when its module cannot be found."""
    if not importable(module):
        return None
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        mod = __import__(module)  # found but not installed as a distribution (e.g. a source checkout)
        return getattr(mod, "__version__", "unknown")


# Mamba's fast path: mamba-ssm's selective scan and causal-conv1d (module names)
MAMBA_KERNEL_PACKAGES = ("mamba_ssm", "causal_conv1d")


def package_version() -> str | None:
    """This package's version: installed metadata, else the pyproject.toml of a source checkout."""
    try:
        return importlib.metadata.version("academic-bench")
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        text = (REPO_ROOT / "pyproject.toml").read_text()
    except OSError:
        return None
    match = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    return match.group(1) if match else None


def repository_url(root: Path = REPO_ROOT) -> str | None:
    """Where this repository is published: ``[project.urls] Repository`` of ``pyproject.toml``, the one place it
    is set (the installed package's metadata where there is no checkout); None while none is set."""
    try:
        text = (root / "pyproject.toml").read_text()
    except OSError:
        try:
            urls = importlib.metadata.metadata("academic-bench").get_all("Project-URL") or []
        except importlib.metadata.PackageNotFoundError:
            return None
        found = dict(u.split(", ", 1) for u in urls if ", " in u)
        return found.get("Repository") or None
    try:
        import tomllib
    except ImportError:  # Python 3.10
        match = re.search(r'^\[project\.urls\][^\[]*?^Repository\s*=\s*"([^"]+)"', text, re.M | re.S)
        return match.group(1) if match else None
    url = tomllib.loads(text).get("project", {}).get("urls", {}).get("Repository")
    return url or None


def _run(cmd: list[str], cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def gpu_info() -> tuple[str | None, str | None]:
    """(GPU name, driver version) of the first GPU from nvidia-smi; (None, None) without one."""
    if shutil.which("nvidia-smi") is None:
        return None, None
    out = _run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    if not out:
        return None, None
    name, _, driver = out.splitlines()[0].partition(",")
    return name.strip() or None, driver.strip() or None


def git_commit(root: Path = REPO_ROOT) -> str | None:
    """The commit of the working tree the package runs from, with '+dirty' when it has local changes.

    ``ACADEMIC_BENCH_GIT_COMMIT``, when set, wins: a copy sent to a GPU machine may carry a stale ``.git`` (or
    none), so whoever copied the tree sets it from ``git rev-parse HEAD`` of the tree they sent."""
    if os.environ.get("ACADEMIC_BENCH_GIT_COMMIT"):
        return os.environ["ACADEMIC_BENCH_GIT_COMMIT"]
    commit = _run(["git", "rev-parse", "HEAD"], cwd=root)
    if not commit:
        return None
    # --no-optional-locks: reading the status must not rewrite the index of a tree others are editing.
    status = _run(["git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return commit + ("+dirty" if status else "")


def _cuda_version() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.version.cuda


@lru_cache(maxsize=1)
def capture_env() -> dict[str, str | None]:
    """The environment of this machine, as the ``env`` field of a result row (cached per process), with
    ``gpu_mismatch_allowed`` where the GPU check was overridden (``GPU_MISMATCH_ENV``)."""
    gpu_name, driver = gpu_info()
    env: dict[str, str | None] = {"gpu_name": gpu_name, "driver": driver, "cuda": _cuda_version()}
    env.update({key: library_version(mod, dist) for key, (mod, dist) in LIBRARIES.items()})
    env["python"] = platform.python_version()
    env["package_version"] = package_version()
    env["git_commit"] = git_commit()
    env["hostname"] = socket.gethostname()
    out = {k: env[k] for k in ENV_KEYS}
    if os.environ.get(GPU_MISMATCH_ENV) == "1":
        out["gpu_mismatch_allowed"] = True
    return out


@contextmanager
def libraries_quiet() -> Iterator[None]:
    """Libraries' own notices kept off the user's terminal while their model classes are imported and built (a
    first config.json printed two deprecation notices torch logs as torchao registers its types, through
    transformers' quantizers): the command prints what the study says, and errors still raise."""
    import logging
    import warnings

    import torch  # noqa: F401  (torch sets its loggers' levels when imported: they are lowered after that)

    loggers = [logging.getLogger(name) for name in ("torch", "torchao", "transformers")]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for log, level in zip(loggers, levels):
            log.setLevel(level)
