"""Launching one configuration in fresh processes: every outcome classified, nothing left running.

These run the real worker (``academic_bench.measure.worker``) on tiny models on the CPU (gloo): started by
the launcher itself for one process, under torchrun for several; failures are made to order by the tests' faulty
worker (``tests/faulty_worker.py``). Each launch costs a few seconds of Python start-up, so the count is kept small.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import psutil
import pytest
from conftest import skip_or_fail
from echo_worker import ECHO_ENV, MODULE as ECHO_WORKER
from faulty_worker import FAULTS_ENV, MODULE as FAULTY_WORKER

from academic_bench import cli
from academic_bench.catalog.config import Config
from academic_bench.launch import (NO_NVLS_ENV, NO_NVLS_OPT_IN, WORKER_MODULE, Rendezvous, build_request, child_env,
                                   make_executor, run, run_config, torchrun_command, worker_command)
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import ResultStore, check_row, make_row

FAST = dict(device="cpu", warmup=2, reps=5, setup="cpu-test")


@pytest.fixture
def faults(monkeypatch):
    """``run_config(c, **faults({...}))``: the run's workers fail as asked (``tests/faulty_worker.py``)."""
    def given(table: dict) -> dict:
        monkeypatch.setenv(FAULTS_ENV, json.dumps({"*": table}))
        return {"worker": FAULTY_WORKER}
    return given


def tiny(n_gpus: int = 1, methods: str = "naive", micro_batch: int | None = None, model: str = "pythia-160m"):
    return Config(model, "h100-80gb", n_gpus, methods=parse_methods(methods), micro_batch=micro_batch, tiny=True)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch) -> str:
    """Launches put their request files here, so this test's processes are told apart from any other run's
    (several people may run the suite at once) by this folder in their command line."""
    folder = tmp_path / "launches"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return str(folder)


def leftovers(mark: str) -> list[str]:
    """Processes still running whose command line mentions ``mark``."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if any(mark in part for part in (p.info["cmdline"] or [])):
            found.append(f"{p.info['pid']}: {' '.join(p.info['cmdline'])[:200]}")
    return found


# --- no launch --------------------------------------------------------------------------------------------

def test_child_environment_and_command(monkeypatch):
    monkeypatch.setenv(NO_NVLS_OPT_IN, "1")
    c = tiny(n_gpus=2, methods="free-lunch+zero2+offload")
    env = child_env(c)
    for key, value in NO_NVLS_ENV.items():
        assert env[key] == value
    cores = len(os.sched_getaffinity(0))
    assert env["OMP_NUM_THREADS"] == str(max(1, cores // 2))  # never torchrun's default of 1 per rank
    cmd = torchrun_command(c, "REQ", "RES")
    assert cmd[1:6] == ["-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone"]
    assert cmd[cmd.index("--log-dir") + 1].endswith("errors")  # each rank's error file (``outcome.first_error``)
    assert worker_command(c, "REQ", "RES") == cmd
    multi = Config("pythia-160m", "h100-80gb", 16, nodes=2, tiny=True)
    cmd = torchrun_command(multi, "REQ", "RES", rdzv=Rendezvous(2, 1, "node0:29500"))
    assert "--standalone" not in cmd and cmd[cmd.index("--nproc_per_node") + 1] == "8"
    assert cmd[cmd.index("--node_rank") + 1] == "1" and cmd[cmd.index("--rdzv_endpoint") + 1] == "node0:29500"


def test_one_gpu_runs_the_worker_itself_with_the_variables_torchrun_would_give_it(monkeypatch):
    """torchrun's agent, a second interpreter importing torch, only starts, watches and reports on one process: for
    one GPU the launcher starts the worker itself, as rank 0 of 1."""
    for key, value in {"MASTER_ADDR": "node0", "MASTER_PORT": "29500", "RANK": "3", "WORLD_SIZE": "8",
                       "TORCHELASTIC_RUN_ID": "outer", "GROUP_RANK": "1"}.items():
        monkeypatch.setenv(key, value)  # inside an enclosing job: not this worker's rendezvous
    c = tiny()
    cmd = worker_command(c, "REQ", "RES")
    assert "torch.distributed.run" not in cmd
    assert cmd[1:] == ["-m", WORKER_MODULE, "--request", "REQ", "--result", "RES"]
    env = child_env(c)
    assert {k: env[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")} == {
        "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}
    assert not {"MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "GROUP_RANK"} & set(env)  # no one else's job


def test_every_process_of_a_sweep_shares_one_compile_cache(monkeypatch, tmp_path):
    """The workers of every configuration read and write one compile cache (Inductor's FX graph and AOTAutograd
    caches, on): a later configuration of the same model reuses the kernels an earlier one compiled, also in
    SLURM jobs on other nodes, where the default cache under each node's /tmp is never shared."""
    from academic_bench.launch import COMPILE_CACHE_ENV

    for key in (COMPILE_CACHE_ENV, "TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE",
                "TORCHINDUCTOR_AUTOGRAD_CACHE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    a, b = child_env(tiny()), child_env(tiny(n_gpus=2, methods="free-lunch+zero2+offload"))
    assert a["TORCHINDUCTOR_CACHE_DIR"] == b["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache" / "academic-bench"
                                                                              / "torchinductor")
    assert a["TORCHINDUCTOR_FX_GRAPH_CACHE"] == a["TORCHINDUCTOR_AUTOGRAD_CACHE"] == "1"
    monkeypatch.setenv(COMPILE_CACHE_ENV, str(tmp_path / "shared"))  # e.g. a cluster's shared file system
    assert child_env(tiny())["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "shared")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))  # a user's own choice stands
    assert child_env(tiny())["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")


@pytest.fixture
def no_multicast_vars(monkeypatch):
    """An environment with neither the opt-in nor any of the multicast switches exported."""
    for key in (NO_NVLS_OPT_IN, *NO_NVLS_ENV):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def test_multicast_is_left_to_nccl_without_the_opt_in(no_multicast_vars):
    """NVLS stays at NCCL's default (on where the machine has it) unless ACADEMIC_BENCH_NO_NVLS=1 asks."""
    env = child_env(tiny(n_gpus=2))
    assert not set(NO_NVLS_ENV) & set(env)
    no_multicast_vars.setenv(NO_NVLS_OPT_IN, "0")
    assert not set(NO_NVLS_ENV) & set(child_env(tiny(n_gpus=2)))


def test_multicast_variables_the_user_exported_pass_through(no_multicast_vars):
    no_multicast_vars.setenv("NCCL_NVLS_ENABLE", "0")
    env = child_env(tiny(n_gpus=2))
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert "TORCH_SYMM_MEM_DISABLE_MULTICAST" not in env and "NVSHMEM_DISABLE_NVLS" not in env
    no_multicast_vars.setenv("NCCL_NVLS_ENABLE", "1")
    assert child_env(tiny(n_gpus=2))["NCCL_NVLS_ENABLE"] == "1"


@pytest.mark.parametrize("how", ["environment", "extra_env"])
def test_the_opt_in_switches_multicast_off(no_multicast_vars, how):
    if how == "environment":
        no_multicast_vars.setenv(NO_NVLS_OPT_IN, "1")
        env = child_env(tiny(n_gpus=2))
    else:
        env = child_env(tiny(n_gpus=2), {NO_NVLS_OPT_IN: "1"})
    assert {k: env[k] for k in NO_NVLS_ENV} == NO_NVLS_ENV == {
        "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    assert env[NO_NVLS_OPT_IN] == "1"  # the workers see why too


@pytest.mark.parametrize("opt_in", [None, "1"])
def test_the_row_records_the_multicast_switches_the_workers_got(tmp_path, no_multicast_vars, opt_in):
    """A reader can tell the runs that had NVLS off: the row's env holds the switches as the workers got them."""
    from academic_bench.catalog.env import capture_env

    if opt_in:
        no_multicast_vars.setenv(NO_NVLS_OPT_IN, opt_in)
    seen = tmp_path / "worker-env.json"
    keys = [NO_NVLS_OPT_IN, *NO_NVLS_ENV]
    no_multicast_vars.setenv(ECHO_ENV, str(seen))
    row = run_config(tiny(micro_batch=2), timeout_s=100, worker=ECHO_WORKER, **FAST)
    worker = {k: json.loads(seen.read_text())["env"].get(k) for k in keys}
    assert row["env"]["launch"] == worker
    if opt_in:
        assert worker == {NO_NVLS_OPT_IN: "1", **NO_NVLS_ENV}
    else:
        assert worker == dict.fromkeys(keys)
    assert "launch" not in capture_env()  # the cached machine environment is not this run's
    check_row(row)


def test_request_passes_timing_and_validation_through():
    req = build_request(tiny(), timing="unsynced", validate=7, device="cpu")
    assert (req["timing"], req["validate_steps"], req["device"]) == ("unsynced", 7, "cpu")
    assert "simulate" not in req, "the worker holds no test hooks (tests/faulty_worker.py)"
    with pytest.raises(ValueError, match="warm-up must be >= 2"):
        build_request(tiny(), warmup=1)


def test_the_measurement_is_told_when_its_time_limit_ends(tmp_path, monkeypatch):
    """Each launch's request carries the time limit's end, less a reserve for tearing down, so that a slow
    configuration stops timing early (``measure.timing.time_phases``) instead of being killed with nothing."""
    import time

    import academic_bench.launch as launch

    seen = tmp_path / "request-seen.json"
    monkeypatch.setenv(ECHO_ENV, str(seen))
    before = time.time()
    row = run_config(tiny(micro_batch=2), timeout_s=100, worker=ECHO_WORKER, **FAST)
    deadline = json.loads(seen.read_text())["request"]["deadline"]
    assert before < deadline <= before + 100 - launch.DEADLINE_RESERVE_S + 0.5  # (two clocks)
    assert row["outcome"] == "error" and "no result file" in row["reason"]


def test_invalid_combination_is_a_row_without_a_launch():
    row = run_config(tiny(methods="free-lunch+zero3"), timing="unsynced", validate=3, **FAST)
    assert row["outcome"] == "invalid" and "only tried with offloading" in row["reason"]
    assert (row["timing"], row["mode"]) == ("unsynced", "validate")
    check_row(row)


# --- launches -------------------------------------------------------------------------------------------

def test_cli_bench_ok_unsynced(tmp_path, capsys):
    out = tmp_path / "runs" / "results.jsonl"
    rc = cli.main(["bench", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "naive",
                   "--micro-batch", "8", "--tiny", "--device", "cpu", "--timing", "unsynced", "--out", str(out),
                   "--warmup", "2", "--reps", "5", "--json"])
    assert rc == 0, capsys.readouterr().err
    [row] = ResultStore(out).rows()
    assert row["outcome"] == "ok", row["reason"]
    assert (row["timing"], row["mode"], row["search"], row["setup"]) == ("unsynced", "step", "single", "h100x1-tiny")
    assert row["micro_batch"] == 8 and row["gas"] == 1 and row["step_time_s"] > 0
    assert row["ran"]["parallel"] == "single" and row["env"]["torch"]
    assert (out.parent / row["log"]).exists()
    assert json.loads(capsys.readouterr().out)["outcome"] == "ok"


def test_the_row_keeps_where_its_wall_time_went(tmp_path, capsys):
    """A searched, validated bench records every phase of its wall time (``measure.wall``), each measured at its
    boundaries, and together they account for the row's duration: the rest, ``other``, is under 5% of it."""
    from academic_bench.measure.wall import PHASES

    out = tmp_path / "results.jsonl"
    rc = cli.main(["bench", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "naive",
                   "--tiny", "--device", "cpu", "--validate", "2", "--out", str(out), "--warmup", "2", "--reps", "5",
                   "--json"])
    assert rc == 0, capsys.readouterr().err
    [row] = ResultStore(out).rows()
    assert row["outcome"] == "ok" and row["validate"], row["reason"]
    spent = row["wall_breakdown"]
    assert tuple(spent) == PHASES
    assert all(seconds >= 0 for seconds in spent.values()), spent
    assert all(spent[p] > 0 for p in PHASES if p != "other"), spent  # every phase ran and was timed
    assert sum(spent.values()) == pytest.approx(row["duration_s"], abs=0.01)
    assert spent["other"] <= 0.05 * row["duration_s"], spent
    assert "wall" not in row  # the worker's own record is summed, not kept beside the sum


def test_cli_bench_unsynced_runs_at_the_synced_rows_micro_batch(tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    c = tiny()  # no fixed micro-batch: a synced bench searches it
    ResultStore(out).append(make_row(c, setup="h100x1-tiny", outcome="ok", micro_batch=2, gas=4, step_time_s=1.0))
    rc = cli.main(["bench", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "naive",
                   "--tiny", "--device", "cpu", "--timing", "unsynced", "--out", str(out), "--json"])
    assert rc == 0, capsys.readouterr().err
    row = ResultStore(out).rows()[-1]
    assert (row["timing"], row["config_id"], row["micro_batch"], row["mbs_search"]) == ("unsynced", c.id, 2, None)


def test_crash_is_an_error_with_the_cause_and_log_tail(private_tmp, faults):
    c = tiny(micro_batch=8)
    row = run_config(c, **faults({"crash": True}), **FAST)
    assert row["outcome"] == "error"
    assert row["reason"].startswith("exit status 1, no result file: RuntimeError: simulated crash")
    assert "Last lines of the log" in row["reason"] and "[rank0]" in row["reason"]
    assert leftovers(private_tmp) == []


def test_the_rank_that_failed_first_is_named_not_a_secondary_error(private_tmp, faults):
    """When one rank raises, the others fail after it in the collective it never joins, and their errors come last
    in the log; the row names the first failure, from the ranks' error files (torch's ``record``, torchrun's
    ``--log-dir``)."""
    row = run_config(tiny(n_gpus=2, micro_batch=4), **faults({"first_failure_on_rank": 1}), timeout_s=120, **FAST)
    assert row["outcome"] == "error"
    cause = row["reason"].split(". Last lines of the log")[0]
    assert "RuntimeError: simulated first failure on rank 1" in cause and "on rank 1, the first to fail" in cause, cause
    assert "secondary" not in cause
    assert leftovers(private_tmp) == []


def test_hang_times_out_and_every_process_is_killed(private_tmp, faults):
    c = tiny(n_gpus=2, micro_batch=4)  # rank 0 sleeps, rank 1 waits for it: two workers in their own sessions
    row = run_config(c, **faults({"hang": True}), timeout_s=15, **FAST)
    assert row["outcome"] == "timeout" and "time limit of 15 s" in row["reason"]
    assert row["duration_s"] < 45
    assert leftovers(private_tmp) == []


def test_search_with_ranks_out_of_step_measures_at_the_size_every_rank_ran(private_tmp, faults):
    """Near the memory limit one rank can run out of memory while the other waits in a collective it never
    joins (seen on 2 x H200): the search's short collective timeout ends it, and the micro-batch every rank
    ran is measured, its neighbour recorded as out of memory on the one rank."""
    sim = {"oom_above_micro_batch": 1, "oom_rank": 0, "collective_timeout_s": 5}
    row = run_config(tiny(n_gpus=2), **faults(sim), timeout_s=120, **FAST)
    assert row["outcome"] == "ok", row.get("reason")
    assert row["micro_batch"] == 1
    assert [(t["micro_batch"], t["outcome"]) for t in row["mbs_search"]] == [(1, "ok"), (2, "oom")]
    assert "rank 0 only" in row["mbs_search"][1]["note"]
    check_row(row)
    assert leftovers(private_tmp) == []


def test_a_search_split_at_its_first_size_searches_again_below_it(private_tmp, faults):
    """The ranks disagree at the first size tried (nothing below it known yet): the search runs again from
    half that size, and the row's search log keeps the split size with its note."""
    sim = {"start_micro_batch": 4, "oom_above_micro_batch": 2, "oom_rank": 0, "collective_timeout_s": 5}
    row = run_config(tiny(n_gpus=2), **faults(sim), timeout_s=120, **FAST)
    assert row["outcome"] == "ok", row.get("reason")
    assert row["micro_batch"] == 2
    assert [(t["micro_batch"], t["outcome"]) for t in row["mbs_search"]] == [(2, "ok"), (4, "oom")]
    assert "rank 0 only" in row["mbs_search"][1]["note"]
    assert leftovers(private_tmp) == []


def test_a_micro_batch_that_runs_out_of_memory_when_timed_is_measured_at_half(private_tmp, tmp_path, faults):
    """The search's largest fitting size can still run out of memory in the timed run, a few GB under the limit
    (seen with Pythia-2.8B on one H100): the run measures half that size instead of giving up, and says so."""
    sim = {"start_micro_batch": 4, "oom_above_micro_batch": 4, "timed_oom_above_micro_batch": 2}
    log = tmp_path / "run.log"
    row = run_config(tiny(), **faults(sim), timeout_s=120, log_path=log, **FAST)
    assert row["outcome"] == "ok", row.get("reason")
    assert (row["micro_batch"], row["gas"]) == (2, 4)
    assert [(t["micro_batch"], t["outcome"]) for t in row["mbs_search"]] == [(4, "ok"), (8, "oom"), (4, "oom")]
    assert row["mbs_search"][-1]["note"] == "fit in the search, out of memory when timed"
    assert "micro-batch 4 fit in the search but ran out of memory when timed; measuring again at 2" in (
        log.read_text())
    check_row(row)
    assert leftovers(private_tmp) == []


def test_one_gpu_searches_and_times_in_one_launch_even_after_an_out_of_memory_trial(private_tmp, tmp_path, faults):
    """On one GPU one launch searches and times, on the one model every size ran on: after the out-of-memory trial
    it goes back to the size found, warm (one warm-up repetition left). ``fresh_after_oom`` (the two-launch engine
    the one-launch engine was checked against) times it in fresh processes instead."""
    log = tmp_path / "clean.log"
    row = run_config(tiny(), timeout_s=120, log_path=log, **FAST)
    assert row["outcome"] == "ok" and row["micro_batch"] == 8 and row["ran"]["in_place"] is True
    assert log.read_text().count("starts at") == 1 and "(search and measure)" in log.read_text()
    assert row["ran"]["search_s"] > 0 and row["ran"]["timing_s"] > 0
    log = tmp_path / "oom.log"
    row = run_config(tiny(), **faults({"oom_above_micro_batch": 4}), timeout_s=120, log_path=log, **FAST)
    assert row["outcome"] == "ok" and row["micro_batch"] == 4 and row["ran"]["in_place"] is True
    assert row["ran"]["after_oom"] is True and row["ran"]["kept_warm"] is True and row["ran"]["warmup_reps"] == 1
    assert log.read_text().count("starts at") == 1 and "(measure)" not in log.read_text()
    assert [(t["micro_batch"], t["outcome"]) for t in row["mbs_search"]] == [(2, "ok"), (4, "ok"), (8, "oom")]
    log = tmp_path / "fresh.log"
    row = run_config(tiny(), **faults({"oom_above_micro_batch": 4}), timeout_s=120, log_path=log, **FAST,
                     fresh_after_oom=True)
    assert row["outcome"] == "ok" and row["micro_batch"] == 4 and row["ran"]["in_place"] is False
    assert log.read_text().count("starts at") == 2 and "(measure)" in log.read_text()
    assert leftovers(private_tmp) == []


def test_missing_library_is_unsupported_and_named():
    if importlib.util.find_spec("deepspeed") is not None:
        skip_or_fail("deepspeed is installed here, so its absence cannot be checked")
    row = run_config(tiny(n_gpus=2, methods="naive+zero2", micro_batch=4), **FAST)
    assert row["outcome"] == "unsupported" and "deepspeed" in row["reason"]
    assert row["env"]["deepspeed"] is None


def test_eight_processes_with_validation(private_tmp):
    """Nothing assumes at most 4 GPUs: 8 gloo processes, the per-GPU batch of 1, real optimizer steps."""
    c = tiny(n_gpus=8, micro_batch=1)  # the whole per-GPU batch (8 / 8): no search, one launch
    row = run_config(c, validate=2, **FAST)
    assert row["outcome"] == "ok", row["reason"]
    assert (row["micro_batch"], row["gas"], row["mode"]) == (1, 1, "validate")
    assert row["ran"]["parallel"] == "ddp" and row["validate"]["steps"] == 2
    assert leftovers(private_tmp) == []


def test_submitit_local_executor_and_out_of_memory(tmp_path, faults):
    """The SLURM path (submitit) run by submitit's local executor; the worker finds no micro-batch that fits."""
    row = run(tiny(), executor="submitit-local", folder=tmp_path / "submitit",
              **faults({"oom_above_micro_batch": 0}), timeout_s=120, **FAST)
    assert row["outcome"] == "oom" and row["setup"] == "cpu-test", row["reason"]
    assert row["mbs_search"][0] == {"micro_batch": 1, "outcome": "oom", "peak_memory_gb": None}
    check_row(row)
    assert any((tmp_path / "submitit").iterdir())  # the job's pickles and logs


def test_slurm_job_script(tmp_path, monkeypatch):
    """The SLURM path without SLURM: submitit writes the sbatch script it would submit (a stub srun on PATH)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    c = Config("pythia-1b", "h200", 16, nodes=2, methods=parse_methods("free-lunch"))
    ex = make_executor("slurm", tmp_path / "jobs", c, timeout_s=1800, slurm_params={"slurm_partition": "gpu"})
    script = ex._executor._make_submission_file_text("CMD", "UID")
    for line in ("--nodes=2", "--gpus-per-node=8", "--ntasks-per-node=1", "--cpus-per-task=64", "--time=35",
                 "--partition=gpu"):
        assert f"#SBATCH {line}" in script


def test_a_killed_torchrun_is_named_and_its_workers_do_not_outlive_it(private_tmp, faults, tmp_path):
    """torchrun starts each worker in a session of its own: when torchrun itself is killed (here by its rank 0,
    as the host's out-of-memory killer might), its workers went on running, holding the GPUs the next
    configuration needs, and the row blamed "a worker". The launch now stops them, and the row names torchrun;
    another launch's process (its own folder in its command line) is left alone."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                              str(tmp_path / "elsewhere" / "academic-bench-other")])
    try:
        row = run_config(tiny(2, micro_batch=4), **faults({"sigkill_agent": True}), timeout_s=120, **FAST)
        assert other.poll() is None, "a process of another launch was killed"
    finally:
        other.kill()
        other.wait()
    assert row["outcome"] == "error"
    assert row["reason"].startswith("ended by a signal, no result file: torchrun, which started and watched the "
                                    "workers, was killed by signal 9 (SIGKILL)"), row["reason"]
    assert leftovers(private_tmp) == []


@pytest.mark.parametrize("n_gpus, ended", [(1, "ended by a signal"), (2, "exit status 1")])
def test_a_worker_killed_from_outside_is_named_as_the_host_memory_killer(private_tmp, faults, n_gpus, ended):
    """On one H100 with 128 GiB the out-of-memory killer ended an offloading run with no Python error: the row
    says which signal ended it and what most likely sent it, not just "exit status 1". One process says it in its
    exit status, torchrun's workers in torchrun's post-mortem."""
    row = run_config(tiny(n_gpus, micro_batch=8 // n_gpus), **faults({"sigkill": True}), timeout_s=120, **FAST)
    assert row["outcome"] == "error"
    assert row["reason"].startswith(f"{ended}, no result file: a worker was killed by signal 9 (SIGKILL)")
    assert "out-of-memory killer" in row["reason"] and "GB of memory" in row["reason"]
    assert leftovers(private_tmp) == []
