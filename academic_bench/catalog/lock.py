"""The locked environment: ``requirements/lock.txt`` holds the exact version (and hashes) of every package that
``make book`` and ``make test`` install, so that a fresh machine computes the same derived data
(``data/model_facts.json``, ``notebooks/runs/answers.json``) as the machine that shipped them. ``make lock``
refreshes it (``uv pip compile``); the derived data record the lock they were computed with (``computed_with``),
and ``tests/test_lock.py`` names every installed package whose version differs from it.

The GPU machines run their own image's torch; what travels to them is locked apart, in
``requirements/gpu-wheels.lock.txt`` (``scripts/offline-gpu/make_wheels.sh``), and every result row records the
versions that made it.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import re

from .env import REPO_ROOT

LOCK = REPO_ROOT / "requirements" / "lock.txt"
GPU_LOCK = REPO_ROOT / "requirements" / "gpu-wheels.lock.txt"

# `name==version` at the start of a line of a pip requirements file (hash lines and comments start otherwise)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.M)


def normalise(name: str) -> str:
    """A distribution's name as PEP 503 compares them (``Jinja2`` and ``jinja2``, ``typing_extensions`` and
    ``typing-extensions`` are one package)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path=LOCK) -> dict[str, str]:
    """Every pinned package of a lock file, by normalised name."""
    return {normalise(name): version for name, version in _PIN.findall(path.read_text())}


def digest(path=LOCK) -> str | None:
    """The first 16 hex digits of the lock file's SHA-256, or None where the package runs outside its repository
    (installed from a wheel, the lock is not beside it)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def computed_with() -> dict[str, str | None]:
    """What derived data record of the environment that computed them: the lock's digest and the two libraries
    whose releases move the study's numbers."""
    return {"lock": digest(), "torch": _installed("torch"), "transformers": _installed("transformers")}


def differences(path=LOCK) -> list[str]:
    """Each locked package whose installed version differs from the lock, or that is missing, as a sentence."""
    out = []
    for name, locked in sorted(pins(path).items()):
        installed = _installed(name)
        if installed is None:
            out.append(f"{name}: locked at {locked}, not installed")
        elif _release(installed) != _release(locked):
            out.append(f"{name}: locked at {locked}, installed {installed}")
    return out


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _release(version: str) -> str:
    """A version without its local label: pip's torch wheels say ``2.14.1+cu130`` for the lock's ``2.14.1``."""
    return version.split("+", 1)[0]
