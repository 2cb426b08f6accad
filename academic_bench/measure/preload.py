"""One process that imports the workers' libraries once and forks one fresh worker per configuration from itself.

    python -m academic_bench.measure.preload     (started by the launcher, ``launch.forked``; requests on stdin)

A one-GPU configuration's worker paid, in its own process, for importing torch, DeepSpeed, FSDP and the rest, and
for loading DeepSpeed's CPU Adam: seconds of every configuration, the same in each
(``notebooks/runs/h200x1/evidence/engine-cost/probe/``). Forked from this process, a worker starts with them
imported and still runs alone: its own CUDA context, caching allocator, compile workers and process group, as a
worker started afresh. This process never computes on the GPU, and it runs a step (an import, a load, a model built
on the meta device) only where the workers forked after it can still use the GPU (``keeps_gpu_usable``): some
libraries ask CUDA about the GPU when imported, which leaves every later child unable to, and each worker then
imports those itself.

Protocol, one JSON object a line. In: {"config": <Config dict>, "model_config": <a decoder's config.json fields, or
null>, "device": "cuda" or "cpu", "worker": module, "argv": [...], "log": path, "env": {...}}.
Out: {"ready": true} once started; {"pid": N} when a worker started; {"pid": N, "returncode": rc} when it ended
(negative: the signal that ended it, as ``subprocess.Popen.returncode``); {"error": why} when a worker forked from
it could not use the GPU it is to run on, after which it ends.
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import runpy
import sys
import warnings
from typing import Callable, NoReturn

from ..catalog.config import Config
from ..catalog.methods import packages_needed
from ..catalog.models.from_config import decoder_spec


def die_with_parent(parent: int) -> None:
    """In a child forked by ``parent``: SIGTERM when it dies (Linux), and an end now if it already has."""
    if sys.platform == "linux":
        ctypes.CDLL(None).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM
        if os.getppid() != parent:
            os._exit(143)


def _exit_code(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _in_child(check: Callable[[], bool]) -> bool:
    """Whether ``check``, run in a child forked now (ended with this process), returns True; raising counts as not."""
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            die_with_parent(parent)
            code = 0 if check() else 1
        finally:
            os._exit(code)
    return _exit_code(pid) == 0


def _computes_on_gpu() -> bool:
    import torch

    if torch.cuda._is_in_bad_fork():
        return False
    torch.ones(1, device="cuda").add_(1)
    torch.cuda.synchronize()
    return True


def gpu_usable_in_child() -> bool:
    """Whether a process forked from this one now can initialize CUDA and compute on the GPU. Libraries that ask
    CUDA about the GPU when imported (transformers' modeling code does, through the torchao its quantizers import:
    ``evidence/engine-cost/preload/cuda-init.txt``)
    leave every later child unable to; torch then marks them so. Found by forking a probe that tries."""
    return _in_child(_computes_on_gpu)


def keeps_gpu_usable(step: Callable[[], None]) -> bool:
    """Whether running ``step`` here would leave the workers forked afterwards able to use the GPU: tried first in a
    child of its own, which runs it and then probes (``gpu_usable_in_child``). A step that fails counts as not."""
    def run_then_probe() -> bool:
        step()
        return gpu_usable_in_child()

    return _in_child(run_then_probe)


def libraries(cfg: Config) -> list[str]:
    """The libraries a worker of ``cfg`` imports beyond the model's own: the packages its methods need
    (``catalog.methods.packages_needed``; optional ones may be missing) and FSDP's module."""
    names = list(packages_needed(cfg.methods, cfg.spec.kernel, "cuda"))
    return names + (["torch.distributed.fsdp"] if cfg.methods.uses_fsdp else [])


def load_cpu_adam() -> None:
    """DeepSpeed's CPU Adam, loaded as an offloaded optimizer loads it (DeepSpeed keeps what it loaded): the
    probe of its CPU features and the load of its built library, seconds of each offloaded configuration."""
    from deepspeed.ops.op_builder import CPUAdamBuilder

    CPUAdamBuilder().load(verbose=False)


def build_on_meta(cfg: Config) -> None:
    """Build ``cfg``'s model on the meta device (no memory, no computation): it imports what the build imports."""
    import torch

    with torch.device("meta"):
        cfg.spec.build(cfg.tiny)


def warm_steps(cfg: Config) -> list[tuple[str, Callable[[], None]]]:
    """What a worker of ``cfg`` does before it measures that can be done once here, each named: its libraries'
    imports, DeepSpeed's CPU Adam where it offloads, its model's imports."""
    steps: list[tuple[str, Callable[[], None]]] = [
        (name, lambda name=name: importlib.import_module(name)) for name in libraries(cfg)]
    if cfg.methods.uses_deepspeed and cfg.methods.offload:
        steps.append(("cpu_adam", load_cpu_adam))
    steps.append((f"model {cfg.model}{' tiny' if cfg.tiny else ''}", lambda: build_on_meta(cfg)))
    return steps


def warm(cfg: Config, done: set[str], skipped: set[str], gpu: bool) -> bool:
    """Run here the steps of ``cfg`` (``warm_steps``) not run before (``done``), each only where it leaves forked
    workers able to use the GPU (``keeps_gpu_usable``; when ``gpu``), else ``skipped``: the worker runs it. Failures
    are left for the worker, which meets and reports them itself. Returns whether any step ran."""
    ran = False
    for name, step in warm_steps(cfg):
        if name in done or name in skipped:
            continue
        if gpu and not keeps_gpu_usable(step):
            skipped.add(name)
            continue
        try:
            step()
        except Exception:  # noqa: BLE001
            pass
        done.add(name)
        ran = True
    return ran


PROTOCOL_FD = 1  # where replies go; ``serve`` moves them off stdout, which the libraries may print to


def _reply(obj: dict) -> None:
    os.write(PROTOCOL_FD, (json.dumps(obj) + "\n").encode())


def run_child(req: dict) -> NoReturn:
    """In the forked child: a session of its own, ended with its parent, output into the configuration's log, the
    environment it was asked to have, then the worker module as ``python -m`` runs it. Never returns."""
    code = 1
    try:
        os.setsid()
        os.close(PROTOCOL_FD)
        die_with_parent(req["parent"])  # ends with this process, which ends with the launcher
        log = os.open(req["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.environ.clear()
        os.environ.update(req["env"])
        sys.argv = [req["worker"], *req["argv"]]
        # runpy warns that the worker module was imported before it runs as __main__: here that is the point.
        warnings.filterwarnings("ignore", message=".*found in sys.modules", category=RuntimeWarning)
        runpy.run_module(req["worker"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001  (the launcher reads the cause from the log's tail)
        sys.excepthook(*sys.exc_info())  # as the interpreter reports it (torch's hook names the rank)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> int:
    """Answer requests until stdin closes: warm the libraries a request's configuration needs (once each), fork its
    worker, report its pid, wait for it and report its exit status."""
    global PROTOCOL_FD
    PROTOCOL_FD = os.dup(1)
    os.dup2(2, 1)  # what a library prints goes where this process's errors go, never into the replies
    from . import worker  # noqa: F401  (torch and the engine: every worker's imports)

    server = os.getpid()
    done: set[str] = set()
    skipped: set[str] = set()  # steps that would leave forked workers unable to use the GPU
    usable: bool | None = None  # whether workers forked now can use the GPU (None: not probed since the last step)
    _reply({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        gpu = req.get("device") != "cpu"
        try:
            if req.get("model_config"):  # a decoder from its config.json, registered as the worker registers it
                decoder_spec(**req["model_config"])
            if warm(Config.from_dict(req["config"]), done, skipped, gpu):
                usable = None
        except Exception:  # noqa: BLE001  (the worker meets the same failure and reports it)
            pass
        if gpu and usable is None:
            usable = gpu_usable_in_child()
        if gpu and not usable:
            _reply({"error": "a worker forked from it could not use the GPU"})
            return 1
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_child({**req, "parent": server})
        _reply({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _reply({"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})
    return 0


if __name__ == "__main__":
    sys.exit(serve())
