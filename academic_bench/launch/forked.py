"""One-GPU workers forked from a process that imported their libraries once (``measure.preload``): each
configuration still runs in a process of its own, started without paying again for the imports every worker of a
sweep shares. One preloading process serves a launcher at a time, for one environment of the workers; another
environment starts another. Only a sweep of several configurations starts it (``launch.local.run_config``'s
``preload``): for one, its start and checks cost more than the worker's imports; once it runs, any worker of its
environment is forked from it. ``ACADEMIC_BENCH_PRELOAD=0`` starts every worker afresh instead, and so does any
failure of the preloading process (the log says so)."""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from ..catalog.config import Config
from .processes import with_parent_death_signal

PRELOAD_MODULE = "academic_bench.measure.preload"
PRELOAD_OPT_OUT = "ACADEMIC_BENCH_PRELOAD"  # "0": every one-GPU worker starts afresh
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"  # torch.cuda.is_available() through NVML, not a CUDA call
READY_TIMEOUT_S = 120.0  # importing torch and the engine, on a slow shared file system
DEATH_SIGNAL = signal.SIGTERM  # what a forked worker gets when the preloading process dies (``measure.preload``)


class PreloadError(RuntimeError):
    """The preloading process could not start a worker; the launcher starts it afresh."""


def preload_wanted(env: dict[str, str]) -> bool:
    return env.get(PRELOAD_OPT_OUT, "1").strip().lower() not in ("0", "false", "no", "off")


class Preloaded:
    """The preloading process, started with the workers' environment (what the libraries read when imported), and
    asked for one worker at a time."""

    def __init__(self, env: dict[str, str], timeout: float = READY_TIMEOUT_S) -> None:
        self.env = env
        # Asking CUDA how many GPUs there are, as libraries do when imported, would leave every child unable to use
        # them; NVML answers without CUDA. Only this process asks that way: each worker gets ``env`` as it is.
        # Its errors (and what the libraries print) go to a file of its own, whose end a failure quotes.
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(with_parent_death_signal([sys.executable, "-m", PRELOAD_MODULE]),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
                                     env={**env, NVML_CHECK: "1"}, bufsize=0, start_new_session=True)
        self._buffer = b""
        try:
            reply = self.read(timeout)
        except subprocess.TimeoutExpired:
            reply = None
        if not reply or not reply.get("ready"):
            self.close()
            raise PreloadError(f"the preloading process did not start ({reply or 'no reply'}){self.last_words()}")

    def last_words(self, limit: int = 600) -> str:
        """The end of what the preloading process wrote to its stderr, as a clause to add to a failure ('' if none)."""
        try:
            self.errors.seek(0, os.SEEK_END)
            self.errors.seek(max(0, self.errors.tell() - limit))
            tail = self.errors.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""
        return f"; its last output: {' | '.join(tail.splitlines()[-6:])}" if tail else ""

    def read(self, timeout: float | None) -> dict | None:
        """The next reply; None when the process ended. Raises ``subprocess.TimeoutExpired`` after ``timeout``."""
        end = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = None if end is None else max(0.0, end - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                raise subprocess.TimeoutExpired(PRELOAD_MODULE, timeout or 0)
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def start(self, config: Config, worker: str, argv: list[str], log: Path, env: dict[str, str],
              model_config: dict | None, device: str, timeout: float = READY_TIMEOUT_S) -> "ForkedWorker":
        """Ask for one worker; ``timeout``: how long its start may take (the preloading process's steps first)."""
        request = {"config": config.to_dict(), "model_config": model_config, "device": device, "worker": worker,
                   "argv": argv, "log": str(log), "env": env}
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            reply = self.read(timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reply = {"error": str(exc) or type(exc).__name__}
        except BaseException:  # interrupted: a worker it may have started ends with it (its death signal)
            self.close()
            raise
        if not reply or "pid" not in reply or "returncode" in reply:
            self.close()
            raise PreloadError(f"the preloading process started no worker ({(reply or {}).get('error', 'it ended')})"
                               f"{'' if reply and 'error' in reply else self.last_words()}")
        return ForkedWorker(self, reply["pid"])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """End it: its stdin closes, it leaves its loop; if it does not, it is killed with the children it forked to
        try a step (its process group; a worker is in a session of its own and ends with it, by its death signal)."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            self.proc.wait()


class ForkedWorker:
    """A worker forked by the preloading process, waited on as a ``subprocess.Popen`` (``pid``, ``wait``, ``poll``,
    ``returncode``), so that the launcher's time limit and ``kill_tree`` treat it as one started afresh."""

    def __init__(self, server: Preloaded, pid: int) -> None:
        self.server, self.pid, self.returncode = server, pid, None

    def wait(self, timeout: float | None = None) -> int:
        while self.returncode is None:
            reply = self.server.read(timeout)
            if reply is None:  # the preloading process died; its worker ends with it, by its death signal
                self.server.close()
                try:
                    psutil.wait_procs([psutil.Process(self.pid)], timeout=30)
                except psutil.NoSuchProcess:
                    pass
                self.returncode = -int(DEATH_SIGNAL)
            elif reply.get("pid") == self.pid and "returncode" in reply:
                self.returncode = int(reply["returncode"])
            # anything else is an earlier worker's reply, left unread by an interruption: not this one's
        return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None


_server: list[Preloaded] = []  # the one preloading process of this launcher, if any
_failed: list[tuple[dict[str, str], str]] = []  # environments whose preloading process failed, and why


def running_for(env: dict[str, str]) -> bool:
    """Whether this launcher's preloading process for ``env`` is running already (forking from it then costs nothing
    more to start)."""
    return bool(_server) and _server[0].env == env and _server[0].alive()


def start_forked(config: Config, worker: str, argv: list[str], log: Path, env: dict[str, str],
                 model_config: dict | None, device: str, timeout: float = READY_TIMEOUT_S) -> ForkedWorker:
    """Fork ``worker`` (a module, run with ``argv`` as ``python -m`` would) for ``config`` on ``device`` from the
    preloading process of ``env``, starting that process first when there is none for it. Raises ``PreloadError``
    when it cannot, and from then on for that environment (a sweep does not pay for a second try each time).
    ``timeout``: how long starting the process and the worker may take, in all (what is left of the time limit)."""
    why = next((w for e, w in _failed if e == env), None)
    if why:
        raise PreloadError(why)
    if _server and not running_for(env):
        _server.pop().close()
    try:
        end = time.monotonic() + timeout
        if not _server:
            _server.append(Preloaded(env, timeout))
        return _server[0].start(config, worker, argv, log, env, model_config, device, max(1.0, end - time.monotonic()))
    except PreloadError as exc:
        _server.clear()
        _failed.append((env, str(exc)))
        raise


@atexit.register
def close_preloaded() -> None:
    """End the preloading process (its workers end with it)."""
    while _server:
        _server.pop().close()
