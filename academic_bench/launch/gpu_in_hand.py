"""The GPU in hand, and the refusal of a ``--gpu`` that names another before any work.

A row carries the name of the GPU its configuration names: its peak sets the MFU, its memory the micro-batch
search, and readers file it under that GPU. Measured on another card (``bench --gpu h200`` on an H100), every
figure would be that card's under the wrong name, so ``bench``, ``sweep`` and ``notebook`` stop first (exit 2,
naming both). ``--allow-gpu-mismatch`` lets such a run go on, recorded in every row it writes
(``env.gpu_mismatch_allowed``); ``check-run`` and every reader still reject its rows (``results.device_fault``).
"""
from __future__ import annotations

import logging
import os

from ..catalog.env import GPU_MISMATCH_ENV, capture_env, gpu_info
from ..catalog.hardware import GPU, get_gpu, match_name

log = logging.getLogger(__name__)

OVERRIDE_FLAG = "--allow-gpu-mismatch"


class GPUMismatchError(ValueError):
    """The GPU a run names is not the GPU in hand (exit 2, before any work)."""


def gpu_in_hand() -> tuple[str | None, GPU | None]:
    """(the driver's name of this machine's first GPU, its catalog entry or None) from nvidia-smi, without creating
    a CUDA context (that would hold memory on GPU 0 that rank 0 then lacks); (None, None) without a GPU."""
    name = gpu_info()[0]
    return name, (match_name(name) if name else None)


def allow_gpu_mismatch() -> None:
    """Let this process and its children (the notebook's kernel, the workers) run on another GPU than the one
    named, and record that in every row they write."""
    os.environ[GPU_MISMATCH_ENV] = "1"
    capture_env.cache_clear()


def mismatch_allowed() -> bool:
    return os.environ.get(GPU_MISMATCH_ENV) == "1"


def check_gpu_in_hand(gpu: str, device: str | None, overridable: bool = True) -> None:
    """Stop (``GPUMismatchError``) when this machine's GPU is not ``gpu``, unless ``allow_gpu_mismatch``. Nothing to
    compare on the CPU, or where no GPU is found (whether GPU work can run at all is checked on its own).
    ``overridable``: the command offers ``--allow-gpu-mismatch`` (``profile`` and ``remeasure`` do not: their
    readers have no way to set such entries aside), and the message says so."""
    if device == "cpu":
        return
    name, found = gpu_in_hand()
    want = get_gpu(gpu)
    if name is None or (found is not None and found.key == want.key):
        return
    here = f"{name} ({found.key})" if found else f"{name}, which is not in the catalog"
    if overridable and mismatch_allowed():
        log.warning("measuring %s as %s (%s): recorded in every row, which no reader counts", here, want.key,
                    OVERRIDE_FLAG)
        return
    fix = (f"pass --gpu {found.key}" if found else
           "add a row for it to academic_bench/data/gpus.csv (with its spec sources) and pass its key")
    anyway = (f", or add {OVERRIDE_FLAG} to measure anyway (recorded in every row; check-run and the readers "
              "reject them)") if overridable else ""
    raise GPUMismatchError(f"--gpu {want.key} ({want.name}) is not the GPU in hand: {here}. Its rows would carry "
                           f"another card's name, peak and memory limit: {fix}{anyway}")
