"""One-GPU workers forked from one process that imported their libraries once (``launch.forked``,
``measure.preload``): each still a process of its own, in its own session, with the environment it was asked to
have; a sweep's configurations share the imports, not their state; any failure of the preloading process leaves
the worker to start afresh. On the CPU (gloo), with the tests' workers."""
from __future__ import annotations

import json

import psutil
import pytest
from echo_worker import ECHO_ENV, MODULE as ECHO_WORKER
from faulty_worker import FAULTS_ENV, MODULE as FAULTY_WORKER

from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.launch import child_env, forked, run_config
from academic_bench.measure import preload

FAST = dict(device="cpu", warmup=2, reps=5, setup="cpu-test")
SWEEP = dict(FAST, preload=True)  # as a sweep of several configurations runs each one


def tiny(methods: str = "naive", micro_batch: int | None = None) -> Config:
    return Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(methods), micro_batch=micro_batch, tiny=True)


@pytest.fixture(autouse=True)
def no_preloading_process_left(monkeypatch):
    forked.close_preloaded()
    monkeypatch.setattr(forked, "_failed", [])
    yield
    forked.close_preloaded()


def echo(tmp_path, env: dict[str, str]) -> dict:
    """Fork the echo worker from the preloading process of ``env`` and read what it wrote down (to ``ECHO_TO``)."""
    log = tmp_path / "echo.log"
    argv = ["--request", str(tmp_path / "req.json")]
    worker = forked.start_forked(tiny(), ECHO_WORKER, argv, log, env, None, "cpu")
    assert worker.wait(60) == 0, log.read_text()
    return json.loads(open(env[ECHO_ENV]).read())


def test_workers_fork_from_one_process_that_imported_the_libraries_each_in_a_session_of_its_own(tmp_path):
    (tmp_path / "req.json").write_text("{}")
    env = {**child_env(tiny()), ECHO_ENV: str(tmp_path / "echo.json")}
    first, second = echo(tmp_path, env), echo(tmp_path, env)
    server = forked._server[0].proc.pid
    assert first["preloaded"] and second["preloaded"]  # torch and the engine were there before the worker ran
    assert first["ppid"] == second["ppid"] == server and first["pid"] != second["pid"]
    assert first["sid"] == first["pid"] and second["sid"] == second["pid"]  # killed as a tree of its own
    assert first["env"] == env  # exactly the environment asked for
    other = echo(tmp_path, {**env, "ACADEMIC_BENCH_SOMETHING": "else"})
    # Another environment is another preloading process: the libraries read some variables when imported.
    assert other["ppid"] == forked._server[0].proc.pid != server and not psutil.pid_exists(server)
    assert other["env"]["ACADEMIC_BENCH_SOMETHING"] == "else"


def test_a_sweep_of_configurations_forks_each_from_the_same_process_and_a_hang_is_killed_alone(tmp_path, monkeypatch):
    """A configuration that hangs is killed at its time limit with its whole tree, and the preloading process goes
    on: the next configuration is measured, forked from it."""
    hang = tiny(micro_batch=2)
    monkeypatch.setenv(FAULTS_ENV, json.dumps({hang.id: {"hang": True}}))
    logs = [tmp_path / "hang.log", tmp_path / "next.log"]
    hung = run_config(hang, timeout_s=20, worker=FAULTY_WORKER, log_path=logs[0], **SWEEP)
    server = forked._server[0].proc.pid
    row = run_config(tiny("free-lunch", micro_batch=2), timeout_s=120, worker=FAULTY_WORKER, log_path=logs[1], **SWEEP)
    assert hung["outcome"] == "timeout" and row["outcome"] == "ok", row.get("reason")
    assert forked._server[0].proc.pid == server
    pids = [int(log.read_text().split("forked from the preloading process as pid ")[1].split()[0]) for log in logs]
    assert pids[0] != pids[1] and not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
                                          for p in pids)
    assert psutil.Process(server).children() == []


def test_a_sweep_forks_its_workers_only_when_it_has_several_configurations_to_run(tmp_path):
    """Starting the preloading process and running its imports once takes longer than one worker's imports: a sweep
    with one configuration to measure (the same one twice, or beside combinations refused as invalid, which start
    no worker) starts its worker afresh; a sweep of several forks each, and so does any sweep of the same launcher
    once that process runs."""
    from academic_bench.results import ResultStore
    from academic_bench.search.sweep import run_sweep

    def logs(out, configs) -> list[str]:
        run_sweep(configs, out, "cpu-test", search="single", device="cpu", progress=False, warmup=2, reps=5)
        return [(out.parent / r["log"]).read_text() for r in ResultStore(out).rows() if r["outcome"] != "invalid"]

    invalid = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("naive+zero3"), tiny=True)
    with pytest.raises(ValueError):
        invalid.check()
    one = logs(tmp_path / "one" / "results.jsonl", [tiny(micro_batch=2), tiny(micro_batch=2), invalid])
    assert len(one) == 1 and "preloading" not in one[0] and forked._server == []
    several = logs(tmp_path / "two" / "results.jsonl", [tiny(micro_batch=2), tiny("free-lunch", micro_batch=2)])
    assert all("forked from the preloading process" in log for log in several) and len(forked._server) == 1
    # Once it runs (a notebook's earlier phase started it), a later sweep of one configuration forks from it too.
    later = logs(tmp_path / "later" / "results.jsonl", [tiny(micro_batch=2)])
    assert "forked from the preloading process" in later[0]


def test_without_the_preloading_process_the_worker_starts_afresh_and_the_log_says_why(tmp_path, monkeypatch):
    """A preloading process that cannot start leaves the worker to start afresh, and the configuration's log quotes
    what the process wrote as it failed."""
    monkeypatch.setattr(forked, "PRELOAD_MODULE", "tests.no_such_module")
    row = run_config(tiny(micro_batch=2), timeout_s=120, log_path=tmp_path / "a.log", **SWEEP)
    assert row["outcome"] == "ok", row.get("reason")
    log = (tmp_path / "a.log").read_text()
    assert "the preloading process did not start" in log and "the worker starts afresh" in log
    assert "No module named tests.no_such_module" in log  # its own last words say why
    assert "forked from the preloading process" not in log
    monkeypatch.setattr(forked, "PRELOAD_MODULE", preload.__name__)
    monkeypatch.setenv(forked.PRELOAD_OPT_OUT, "0")  # asked for by name: every worker afresh, nothing to explain
    row = run_config(tiny(micro_batch=2), timeout_s=120, log_path=tmp_path / "b.log", **SWEEP)
    log = (tmp_path / "b.log").read_text()
    assert row["outcome"] == "ok" and "preloading" not in log and forked._server == []


def test_a_step_that_would_leave_workers_unable_to_use_the_gpu_is_left_to_each_worker(monkeypatch):
    """The preloading process runs a step (an import, a load, a model built on the meta device) only when a child
    that ran it first could still use the GPU: a library that asks CUDA about the GPU when imported (transformers'
    dependencies did) is imported by each worker instead. On the CPU nothing needs the GPU, and every step runs."""
    import sys

    poisons = "tabnanny"  # a module this process has not imported, standing for such a library
    monkeypatch.delitem(sys.modules, poisons, raising=False)
    monkeypatch.setattr(preload, "libraries", lambda cfg: [poisons])
    monkeypatch.setattr(preload, "gpu_usable_in_child", lambda: poisons not in sys.modules)  # the probe's stand-in
    done, skipped = set(), set()
    assert preload.warm(tiny(), done, skipped, gpu=True)
    assert skipped == {poisons} and done == {"model pythia-160m tiny"} and poisons not in sys.modules
    assert not preload.warm(tiny(), done, skipped, gpu=True)  # tried once
    assert preload.warm(tiny(), set(), set(), gpu=False) and poisons in sys.modules
    assert not preload.keeps_gpu_usable(lambda: 1 / 0)  # a step that fails is left to the worker too


def test_warming_a_configuration_names_its_libraries_and_builds_nothing_real():
    """The steps of a configuration: its libraries' imports, CPU Adam where DeepSpeed offloads, its model's imports
    (built on the meta device, which allocates nothing); a library that is missing is left for the worker."""
    steps = [name for name, _ in preload.warm_steps(tiny("free-lunch+zero2+offload"))]
    assert steps == ["deepspeed", "cpu_adam", "model pythia-160m tiny"]
    assert "torch.distributed.fsdp" in preload.libraries(tiny("naive+fsdp_full_shard+offload"))
    assert preload.warm(tiny("free-lunch+zero2+offload"), set(), set(), gpu=False)  # no DeepSpeed here: no error


def test_a_reply_left_by_an_earlier_worker_is_not_taken_for_this_ones():
    """An interruption can leave an earlier worker's last reply unread: a worker waits for its own exit status."""
    class Replies:
        def __init__(self, *replies: dict) -> None:
            self.replies = list(replies)

        def read(self, timeout):
            return self.replies.pop(0)

    worker = forked.ForkedWorker(Replies({"pid": 11, "returncode": 0}, {"pid": 12}, {"pid": 12, "returncode": 3}), 12)
    assert worker.wait(1) == 3 and worker.poll() == 3
