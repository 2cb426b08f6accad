"""One process that imports the workers' libraries once and forks one fresh worker per configuration from itself.

    python -m academic_bench.measure.preload     (started by the launcher, ``launch.forked``; requests on stdin)

A one-GPU configuration's worker paid, in its own process, for importing torch, transformers (with what it pulls in)
and DeepSpeed, for registering their operators and for loading DeepSpeed's CPU Adam: 8-15 s of every configuration,
the same in each (``notebooks/runs/h200x1/evidence/engine-cost/probe/``). Forked from this process, a worker
starts with them imported and still runs alone: its own CUDA context, caching allocator, compile workers and
process group, as a worker started afresh. This process never touches the GPU (it would leave every child unable
to): it imports, and builds models on the meta device only, which allocates nothing.

Protocol, one JSON object a line. In: {"config": <Config dict>, "model_config": <a decoder's config.json fields, or
null>, "device": "cuda" or "cpu", "worker": module, "argv": [...], "log": path, "env": {...}}. Out: {"ready": true} once started; {"pid": N} when a worker started; {"pid": N, "returncode": rc}
when it ended (negative: the signal that ended it, as ``subprocess.Popen.returncode``); {"error": why} when a
worker forked from it could not use the GPU it is to run on, after which it ends.
"""
from __future__ import annotations

import ctypes
import importlib
import json
import os
import runpy
import sys
import warnings

from ..catalog.config import Config
from ..catalog.models.from_config import decoder_spec

DRIVER_LIBRARY = "libcuda.so"  # loaded by the first CUDA call; a child forked after it cannot use the GPU


def driver_loaded() -> bool:
    """Whether this process has loaded the CUDA driver (and so may not fork GPU workers)."""
    try:
        with open("/proc/self/maps") as f:
            return DRIVER_LIBRARY in f.read()
    except OSError:
        return False


def gpu_unusable_after_fork() -> str | None:
    """Why a worker forked now could not use the GPU, or None: the CUDA driver is loaded here, or torch has marked
    its children unable to initialize CUDA (it does once anything asked CUDA for its devices, which libraries do
    when imported; this process asks NVML instead where it can, ``launch.forked``). Found by forking a probe."""
    if driver_loaded():
        return "the CUDA driver is loaded in it"
    pid = os.fork()
    if pid == 0:
        import torch

        os._exit(3 if torch.cuda._is_in_bad_fork() else 0)
    _, status = os.waitpid(pid, 0)
    return "torch asked CUDA for its devices in it" if os.waitstatus_to_exitcode(status) == 3 else None


def libraries(cfg: Config) -> list[str]:
    """The libraries a worker of ``cfg`` imports beyond the model's own (optional ones may be missing)."""
    m = cfg.methods
    names = ["academic_bench.measure.worker"]
    if m.uses_deepspeed:
        names.append("deepspeed")
    if m.uses_fsdp:
        names.append("torch.distributed.fsdp")
    if m.fp8 != "none":
        names.append("torchao.float8")
    if m.fused_ce:
        names.append("liger_kernel.transformers")
    return names


def load_cpu_adam() -> None:
    """DeepSpeed's CPU Adam, loaded as an offloaded optimizer loads it (DeepSpeed keeps what it loaded): the
    probe of its CPU features and the load of its built library, seconds of each offloaded configuration."""
    from deepspeed.ops.op_builder import CPUAdamBuilder

    CPUAdamBuilder().load(verbose=False)


def warm(cfg: Config) -> None:
    """Import what a worker of ``cfg`` imports: its libraries, and its model's, by building the model on the meta
    device (no memory, no computation). Failures are left for the worker, which meets and reports them itself."""
    for name in libraries(cfg):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            pass
    if cfg.methods.uses_deepspeed and cfg.methods.offload:
        try:
            load_cpu_adam()
        except Exception:  # noqa: BLE001
            pass
    try:
        import torch

        with torch.device("meta"):
            cfg.spec.build(cfg.tiny)
    except Exception:  # noqa: BLE001
        pass


PROTOCOL_FD = 1  # where replies go; ``serve`` moves them off stdout, which the libraries may print to


def _reply(obj: dict) -> None:
    os.write(PROTOCOL_FD, (json.dumps(obj) + "\n").encode())


def run_child(req: dict) -> None:
    """In the forked child: a session of its own, ended with its parent, output into the configuration's log, the
    environment it was asked to have, then the worker module as ``python -m`` runs it. Never returns."""
    code = 1
    try:
        os.setsid()
        os.close(PROTOCOL_FD)
        if sys.platform == "linux":
            ctypes.CDLL(None).prctl(1, 15)  # PR_SET_PDEATHSIG, SIGTERM: ends with this server, as the launcher's own
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

    warmed: set[str] = set()
    unusable = None  # why a forked worker could not use the GPU (workers on the CPU do not care)
    _reply({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        key = json.dumps([req["config"], req.get("model_config")], sort_keys=True)
        if key not in warmed:
            try:
                if req.get("model_config"):  # a decoder from its config.json, registered as the worker registers it
                    decoder_spec(**req["model_config"])
                warm(Config.from_dict(req["config"]))
            except Exception:  # noqa: BLE001  (the worker meets the same failure and reports it)
                pass
            warmed.add(key)
            unusable = unusable or gpu_unusable_after_fork()
        if req.get("device") != "cpu" and unusable:
            _reply({"error": f"a worker forked from it could not use the GPU: {unusable}"})
            return 1
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_child(req)
        _reply({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _reply({"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})
    return 0


if __name__ == "__main__":
    sys.exit(serve())
