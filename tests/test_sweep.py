"""Sweep plans, smart pruning, resuming after Ctrl-C / kill, and the CLI's refusals before any work."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from conftest import skip_or_fail
from faulty_worker import FAULTS_ENV, MODULE as FAULTY_WORKER

from academic_bench import cli
from academic_bench.cli.args import EXIT_FAILED
from academic_bench.catalog.config import Config
from academic_bench.launch import TIMED_OOM_NOTE, Rendezvous
from academic_bench.catalog.methods import FREE_LUNCH, NAIVE, Methods, exclusion_reason, parse_methods
from academic_bench.results import ResultStore, latest_rows, make_row, synced_micro_batches
from academic_bench.search.plans import plan
from academic_bench.results import skipped_path
from academic_bench.search.smart import SmartPruner
from academic_bench.search.remeasure import to_remeasure
from academic_bench.search.sweep import format_summary, run_sweep

ROOT = Path(__file__).resolve().parents[1]


def valid(configs: list[Config]) -> list[Config]:
    return [c for c in configs if exclusion_reason(c.methods, c.n_gpus) is None]


# --- plans ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_gpus, n_valid", [(1, 12), (2, 22), (8, 22)])
def test_exhaustive_plan_counts(n_gpus, n_valid):
    configs = plan("pythia-160m", "h100-80gb", n_gpus, "exhaustive")
    assert len(configs) == 24 and len(valid(configs)) == n_valid
    assert len({c.id for c in configs}) == 24
    assert all(c.methods.free_lunch for c in configs)


def test_naive_free_lunch_and_several_models():
    assert [c.methods for c in plan("pythia-160m", "h100-80gb", 1, "naive")] == [NAIVE]
    assert [c.methods for c in plan("pythia-160m", "h100-80gb", 1, "free-lunch")] == [FREE_LUNCH]
    two = plan("pythia-160m,vit-large", "h200", 2, "free-lunch")
    assert [c.model for c in two] == ["pythia-160m", "vit-large"]
    with pytest.raises(ValueError, match="choose one of: naive, free-lunch, exhaustive, smart"):
        plan("pythia-160m", "h100-80gb", 1, "greedy")


def test_smart_plan_tries_the_fastest_looking_first_and_invalid_last():
    configs = plan("pythia-160m", "h100-80gb", 1, "smart")
    assert configs[0].methods == FREE_LUNCH and configs[1].methods == parse_methods("free-lunch+ckpt")
    assert len(valid(configs[:12])) == 12 and valid(configs[12:]) == []
    assert all(c.methods.offload for c in configs[2:12])


# --- smart pruning (rules, on synthetic rows: placeholders, not measurements) -----------------------------

def cfg(methods: str, n_gpus: int = 2, model: str = "pythia-1b", gpu: str = "h100-80gb") -> Config:
    return Config(model, gpu, n_gpus, methods=parse_methods(methods))


def fake(config: Config, outcome: str, micro_batch: int | None = None) -> dict:
    gas = config.per_gpu_batch // micro_batch if micro_batch else None
    fields = dict(micro_batch=micro_batch, gas=gas, step_time_s=1.0) if outcome == "ok" else {}
    return make_row(config, setup="t", outcome=outcome, **fields)


def test_smart_skips_what_cannot_win_once_the_whole_batch_fits():
    p = SmartPruner(use_memory_model=False)
    base = cfg("free-lunch+zero2")
    p.observe(base, fake(base, "ok", micro_batch=base.per_gpu_batch))
    category, reason = p.skip(cfg("free-lunch+ckpt+zero2"))
    assert category == "cannot win (batch already fits)" and "free-lunch + ZeRO-2 already fits" in reason
    assert p.skip(cfg("free-lunch+zero3+offload"))[0] == "cannot win (batch already fits)"
    assert p.skip(cfg("free-lunch+fsdp_shard_grad_op")) is None  # same depth, other library: still tried
    assert p.skip(cfg("free-lunch+zero1")) is None  # saves less
    assert p.skip(cfg("free-lunch+ckpt+zero2", model="pythia-410m")) is None  # another setting


def test_smart_skips_what_cannot_fit_after_a_measured_oom():
    p = SmartPruner(use_memory_model=False)
    big = cfg("free-lunch+ckpt+zero3+offload")
    p.observe(big, fake(big, "oom"))
    category, reason = p.skip(cfg("free-lunch+zero1"))
    assert category == "cannot fit (measured)" and "ran out of memory at the smallest micro-batch" in reason
    assert p.skip(cfg("free-lunch+ckpt+fsdp_full_shard+offload"))[0] == "cannot fit (measured)"
    later = SmartPruner(use_memory_model=False)  # out of memory only when timed at a larger searched size
    ckpt = cfg("free-lunch+ckpt")
    later.observe(ckpt, make_row(ckpt, setup="t", outcome="oom", micro_batch=16))
    assert later.skip(cfg("free-lunch")) is None


def test_smart_skips_more_memory_saving_after_a_timeout_at_the_same_limit():
    p = SmartPruner(use_memory_model=False, timeout_s=300)
    slow = cfg("free-lunch+ckpt", n_gpus=1)
    p.observe(slow, fake(slow, "timeout") | {"duration_s": 302.2})
    category, reason = p.skip(cfg("free-lunch+ckpt+zero1+offload", n_gpus=1))
    assert category == "cannot finish (measured)"
    assert "free-lunch + ckpt, which saves less memory, ran 302 s without a result" in reason
    assert "300 s limit" in reason
    assert p.skip(cfg("free-lunch+zero1+offload", n_gpus=1)) is None  # no checkpointing: not more work
    zero2 = cfg("free-lunch+zero2+offload", n_gpus=1)
    p.observe(zero2, fake(zero2, "timeout") | {"duration_s": 301.0})
    assert p.skip(cfg("free-lunch+fsdp_shard_grad_op+offload", n_gpus=1)) is None  # same saving, other library
    longer = SmartPruner(use_memory_model=False, timeout_s=480)  # a retry with a longer limit tries again
    longer.observe(slow, fake(slow, "timeout") | {"duration_s": 302.2})
    assert longer.skip(cfg("free-lunch+ckpt+zero1+offload", n_gpus=1)) is None
    never = SmartPruner(use_memory_model=False, timeout_s=300)  # a budget that never started it is no evidence
    never.observe(slow, fake(slow, "timeout") | {"duration_s": 0.0, "reason": "not run: the notebook's time budget"})
    assert never.skip(cfg("free-lunch+ckpt+zero1+offload", n_gpus=1)) is None


def test_smart_uses_the_memory_model_to_skip_what_cannot_fit():
    p = SmartPruner()
    assert p.estimate is not None
    category, reason = p.skip(cfg("free-lunch", model="pythia-6.9b", gpu="rtx3090", n_gpus=1))
    assert category == "cannot fit (memory model)" and "at micro-batch 1" in reason
    assert p.skip(cfg("free-lunch", model="pythia-160m", n_gpus=1)) is None


def test_smart_skips_offloading_that_the_host_memory_cannot_hold():
    """One H100 node with 128 GiB killed Pythia-6.9B's ZeRO-1 offload (run 6); 2.8B ran."""
    p = SmartPruner(host_memory_gb=137.4)
    category, reason = p.skip(cfg("free-lunch+zero1+offload", model="pythia-6.9b", n_gpus=1))
    assert category == "cannot fit (host memory model)"
    assert "137.4 GB of host memory" in reason and "1.5x buffer" in reason
    assert p.skip(cfg("free-lunch+ckpt+fsdp_full_shard+offload", model="pythia-6.9b", n_gpus=1))[0] == (
        "cannot fit (host memory model)")
    assert p.skip(cfg("free-lunch+zero1+offload", model="pythia-2.8b", n_gpus=1)) is None
    roomy = SmartPruner(host_memory_gb=274.9)  # a 2 x H200 node's memory holds it
    assert roomy.skip(cfg("free-lunch+zero2+offload", model="pythia-6.9b", n_gpus=2)) is None


def test_smart_skips_more_memory_saving_that_buys_no_larger_micro_batch():
    class Stub:  # a memory model that predicts the same largest micro-batch for everything
        @staticmethod
        def predict_memory(config, micro_batch):
            return 1e9

        @staticmethod
        def usable_bytes(gpu_gb):
            return gpu_gb * 1e9

        @staticmethod
        def max_micro_batch(config, gpu_gb):
            return 8 if not config.methods.checkpointing else 6

    p = SmartPruner()
    p.estimate = Stub()
    base = cfg("free-lunch")
    p.observe(base, fake(base, "ok", micro_batch=8))
    category, reason = p.skip(cfg("free-lunch+ckpt"))
    assert category == "cannot win (no larger micro-batch)" and "no larger micro-batch" in reason
    Stub.max_micro_batch = staticmethod(lambda config, gpu_gb: 16 if config.methods.checkpointing else 8)
    assert p.skip(cfg("free-lunch+ckpt")) is None


# --- running sweeps (real launches of tiny models on the CPU) --------------------------------------------

def tiny(methods: str, n_gpus: int = 1, micro_batch: int = 8) -> Config:
    return Config("pythia-160m", "h100-80gb", n_gpus, methods=parse_methods(methods), micro_batch=micro_batch,
                  tiny=True)


def test_smart_sweep_records_rows_skips_and_resumes(tmp_path):
    out = tmp_path / "results.jsonl"
    configs = [tiny("naive"), tiny("naive+ckpt"), tiny("naive+zero3")]  # ok, skipped, invalid
    kw = dict(search="smart", device="cpu", progress=False, warmup=2, reps=5, timeout_s=300)
    s = run_sweep(configs, out, "cpu-test", **kw)
    assert s.ran == 2 and s.outcomes == {"ok": 1, "invalid": 1}, s
    assert s.skip_reasons == {"cannot win (batch already fits)": 1}
    assert "already runs the same fixed micro-batch" in s.skipped[0]["reason"]
    assert s.best["pythia-160m"]["label"] == "naive"
    text = format_summary(s)
    assert "smart: skipped 1 (cannot win (batch already fits): 1)" in text
    assert "best for tiny pythia-160m on the CPU (a workshop run, not a GPU result): naive" in text
    skipped = [json.loads(line) for line in skipped_path(out).read_text().splitlines()]
    assert [k["config_id"] for k in skipped] == [configs[1].id]
    rows = ResultStore(out).rows()
    assert {r["config_id"]: r["outcome"] for r in rows} == {configs[0].id: "ok", configs[2].id: "invalid"}
    assert all(r["search"] == "smart" for r in rows)

    again = run_sweep(configs, out, "cpu-test", **kw)  # resumed: nothing runs, the skip is not written twice
    assert (again.resumed, again.ran, len(again.skipped)) == (2, 0, 1)
    assert len(skipped_path(out).read_text().splitlines()) == 1 and len(ResultStore(out).rows()) == 2

    # a later run measured the skipped one and failed (an older rule let it through); a retry that skips it
    # again records the decision anew, so the file's latest word on it is newer than the failure
    first = json.loads(skipped_path(out).read_text())
    skipped_path(out).write_text(json.dumps(dict(first, at="2000-01-01T00:00:00+00:00")) + "\n")
    ResultStore(out).append(make_row(configs[1], setup="cpu-test", outcome="error", search="smart",
                                     reason="exit status 1", started_at="2001-01-01T00:00:00+00:00"))
    retried = run_sweep(configs, out, "cpu-test", retry=("error",), **kw)
    assert (retried.ran, len(retried.skipped)) == (0, 1)
    lines = [json.loads(line) for line in skipped_path(out).read_text().splitlines()]
    assert [k["config_id"] for k in lines] == [configs[1].id] * 2, "recorded again after the failed row"
    run_sweep(configs, out, "cpu-test", retry=("error",), **kw)
    assert len(skipped_path(out).read_text().splitlines()) == 2, "not a third time: the last skip is the latest word"

    # an older rule skipped it for another reason: the current rule's decision is recorded, once
    *earlier, last = skipped_path(out).read_text().splitlines()
    older = json.dumps(dict(json.loads(last), category="cannot fit"))
    skipped_path(out).write_text("\n".join([*earlier, older]) + "\n")
    for _ in range(2):
        run_sweep(configs, out, "cpu-test", retry=("error",), **kw)
    lines = [json.loads(line) for line in skipped_path(out).read_text().splitlines()]
    assert [k["category"] for k in lines[-2:]] == ["cannot fit", "cannot win (batch already fits)"], lines

    # the same rule on other figures (the row it compares with measured again, say): recorded anew, once, so the
    # file's reason names the figures the decision was made on
    *earlier, last = skipped_path(out).read_text().splitlines()
    older = json.dumps(dict(json.loads(last), reason=json.loads(last)["reason"].replace("s/step", "s/step (older)")))
    skipped_path(out).write_text("\n".join([*earlier, older]) + "\n")
    for _ in range(2):
        run_sweep(configs, out, "cpu-test", retry=("error",), **kw)
    lines = [json.loads(line) for line in skipped_path(out).read_text().splitlines()]
    assert "(older)" in lines[-2]["reason"] and "(older)" not in lines[-1]["reason"], lines
    assert lines[-1]["category"] == lines[-2]["category"] and len(lines) == len(earlier) + 2


def test_a_search_from_scratch_decides_every_configuration_again(tmp_path):
    """``retry=["all"]`` runs a smart search as in an empty store: a configuration measured before (by a search
    whose rules let it through) is skipped when today's rules skip it, and the one they keep is measured again,
    so the share of GPU time the rules cost is measured, not the old rules'. A resumed search lets both stand."""
    out = tmp_path / "results.jsonl"
    kept, saves_more = tiny("naive"), tiny("naive+ckpt")
    kw = dict(device="cpu", progress=False, warmup=2, reps=5, timeout_s=300)
    assert run_sweep([kept, saves_more], out, "cpu-test", search="exhaustive", **kw).outcomes == {"ok": 2}
    resumed = run_sweep([kept, saves_more], out, "cpu-test", search="smart", **kw)
    assert (resumed.resumed, resumed.ran, resumed.skipped) == (2, 0, [])
    fresh = run_sweep([kept, saves_more], out, "cpu-test", search="smart", retry=("all",), **kw)
    assert (fresh.resumed, fresh.ran, fresh.outcomes) == (0, 1, {"ok": 1}), fresh
    assert [k["config_id"] for k in fresh.skipped] == [saves_more.id]
    assert fresh.skip_reasons == {"cannot win (batch already fits)": 1}
    rows = ResultStore(out).rows()
    assert [(r["config_id"], r["search"]) for r in rows[2:]] == [(kept.id, "smart")], "added beside the old rows"
    assert [json.loads(x)["config_id"] for x in skipped_path(out).read_text().splitlines()] == [saves_more.id]
    with pytest.raises(ValueError, match="cannot retry all"):  # remeasure selects rows; a fresh search is none
        to_remeasure(rows, "all")


def test_a_search_from_scratch_cut_short_leaves_not_run_rows_that_a_resumed_search_measures(tmp_path):
    """A search from scratch whose budget ran out before a configuration measured earlier: its older row must not
    pass for this search's measurement. A 'not run' row supersedes it (the older row stays in the file), so the
    search shows as unfinished and a resumed search, without "all", starts it. Budgets of 0 s: nothing launches."""
    out = tmp_path / "results.jsonl"
    older, never = tiny("naive"), tiny("naive+ckpt")
    store = ResultStore(out)
    store.append(make_row(older, setup="t", outcome="ok", search="smart", micro_batch=8, gas=1, step_time_s=1.0,
                          started_at="2000-01-01T00:00:00+00:00"))
    reason = "not run: the time budget (0 s) was spent before this configuration started"
    kw = dict(search="smart", device="cpu", progress=False, budget_s=0, not_run_reason=reason)
    fresh = run_sweep([older, never], out, "t", retry=("all",), **kw)
    assert (fresh.ran, fresh.not_run, fresh.not_run_rows) == (0, [older.id, never.id], 2), fresh
    rows = ResultStore(out).rows()
    assert [(r["config_id"], r["outcome"]) for r in rows] == [(older.id, "ok"), (older.id, "not run"),
                                                               (never.id, "not run")], "nothing is lost"
    assert all(r["reason"] == reason for r in rows[1:])
    assert fresh.outcomes_all == {"not run": 2}, "the older measurement does not pass for this search's"
    resumed = run_sweep([older, never], out, "t", **kw)
    assert (resumed.resumed, resumed.not_run, resumed.not_run_rows) == (0, [older.id, never.id], 0), \
        "a resumed search starts both; their 'not run' rows are not written twice"
    assert len(ResultStore(out).rows()) == 3
    # a resumed search (no "all") leaves a measured row as the latest word
    ResultStore(out).append(make_row(older, setup="t", outcome="ok", search="smart", micro_batch=8, gas=1,
                                     step_time_s=1.0))
    again = run_sweep([older, never], out, "t", **kw)
    assert (again.resumed, again.not_run, again.outcomes_all) == (1, [never.id], {"ok": 1, "not run": 1})


def test_a_search_from_scratch_supersedes_only_older_step_rows_of_its_setup_and_only_on_node_0(tmp_path):
    """What a search from scratch's 'not run' rows must leave standing: a row its own earlier phase measured
    (started after ``since``), a validation (it checks the engine, not the search: a later row of its revision
    would hide it), another setup's row; and nodes other than 0 write nothing. Budgets of 0 s: nothing launches."""
    out = tmp_path / "results.jsonl"
    old, own, checked = tiny("naive"), tiny("naive+ckpt"), tiny("free-lunch")
    store = ResultStore(out)
    ok = dict(outcome="ok", search="smart", micro_batch=8, gas=1, step_time_s=1.0)
    store.append(make_row(old, setup="t", started_at="2000-01-01T00:00:00+00:00", **ok))
    store.append(make_row(own, setup="t", started_at="2020-01-01T00:00:00+00:00", **ok))
    store.append(make_row(checked, setup="t", mode="validate", started_at="2000-01-01T00:00:00+00:00", **ok))
    store.append(make_row(checked, setup="other", started_at="2000-01-01T00:00:00+00:00", **ok))
    kw = dict(device="cpu", progress=False, budget_s=0, retry=("all",), not_run_reason="not run: budget",
              since="2010-01-01T00:00:00+00:00")
    node1 = Rendezvous(nnodes=2, node_rank=1, endpoint="127.0.0.1:29500")
    assert run_sweep([old, own], out, "t", search="exhaustive", rdzv=node1, **kw).not_run_rows is None
    assert len(ResultStore(out).rows()) == 4, "a node other than 0 writes no row"
    assert run_sweep([old, own], out, "t", search="exhaustive", **kw).not_run_rows == 1
    assert run_sweep([checked], out, "t", search="smart", validate=3, **kw).not_run_rows == 0
    latest = {(r["setup"], r["config_id"], r["mode"]): r["outcome"] for r in latest_rows(ResultStore(out).rows())}
    assert latest == {("t", old.id, "step"): "not run", ("t", own.id, "step"): "ok",
                      ("t", checked.id, "validate"): "ok", ("other", checked.id, "step"): "ok"}


def test_the_sweep_command_records_what_its_budget_never_started(tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    argv = ["sweep", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--preset", "naive", "--tiny",
            "--device", "cpu", "--no-progress", "--out", str(out), "--budget", "0"]
    assert cli.main(argv) == EXIT_FAILED
    assert "1 not run: the time budget was spent" in capsys.readouterr().out
    (row,) = ResultStore(out).rows()
    assert row["outcome"] == "not run" and "--budget 0" in row["reason"] and row["search"] == "naive"


def test_smart_sweep_skips_more_saving_after_a_real_timeout(tmp_path, monkeypatch):
    out = tmp_path / "results.jsonl"
    hung, more = tiny("naive"), tiny("naive+ckpt")
    monkeypatch.setenv(FAULTS_ENV, json.dumps({hung.id: {"hang": True}}))
    s = run_sweep([hung, more], out, "cpu-test", search="smart", device="cpu", progress=False, timeout_s=10,
                  worker=FAULTY_WORKER)
    assert s.outcomes == {"timeout": 1} and s.skip_reasons == {"cannot finish (measured)": 1}, s
    assert "within this sweep's 10 s limit" in s.skipped[0]["reason"]
    log = (tmp_path / ResultStore(out).rows()[-1]["log"]).read_text()  # where the time went, for the reader
    assert re.search(r"\(measure\) starts at 0\.\d s of the 10 s limit", log)
    assert "(measure) killed at the time limit" in log


SWEEP_SCRIPT = textwrap.dedent("""
    import json, os, sys
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import NAIVE
    from academic_bench.search.sweep import run_sweep
    out, mode = sys.argv[1], sys.argv[2]
    a = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, micro_batch=8, tiny=True)
    b = Config("pythia-160m", "h100-80gb", 2, methods=NAIVE, micro_batch=4, tiny=True)
    fast = {"oom_above_micro_batch": 0}  # a quick, real outcome
    os.environ["ACADEMIC_BENCH_FAULTS"] = json.dumps({a.id: fast, b.id: {"hang": True} if mode == "hang" else fast})
    try:
        s = run_sweep([a, b], out, "cpu-test", search="naive", device="cpu", progress=False, timeout_s=300,
                      warmup=2, reps=5, worker="tests.faulty_worker")
    except KeyboardInterrupt:
        sys.exit(130)
    print("SUMMARY", json.dumps({"ids": [a.id, b.id], "resumed": s.resumed, "ran": s.ran}))
""")


def _processes_under(folder: Path) -> list[psutil.Process]:
    """Processes whose command line mentions ``folder`` (the sweep's private TMPDIR, where each launch writes its
    request): this test's launches only, even while someone else runs the same test."""
    mark = str(folder)
    return [p for p in psutil.process_iter(["cmdline"]) if any(mark in part for part in (p.info["cmdline"] or []))]


def _sweep(script: Path, out: Path, mode: str, tmp: Path, **kw) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmp)}
    with open(out.with_name("sweep.log"), "ab") as log:
        return subprocess.Popen([sys.executable, str(script), str(out), mode], cwd=ROOT, env=env, stdout=log,
                                stderr=log, **kw)


def _start_and_wait_for_b(script: Path, out: Path, tmp: Path) -> subprocess.Popen:
    proc = _sweep(script, out, "hang", tmp)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until B's workers run (they start in sessions of their own)
        cmds = [" ".join(p.info["cmdline"]) for p in _processes_under(tmp)]
        if any("--nproc_per_node 2" in c for c in cmds) and \
                any(FAULTY_WORKER in c and "torch.distributed.run" not in c for c in cmds):
            return proc
        assert proc.poll() is None, "the sweep ended before the second configuration started"
        time.sleep(0.5)
    proc.kill()
    pytest.fail("the second configuration never started")


def test_sweep_killed_midway_resumes_without_duplicates(tmp_path):
    script, out, tmp = tmp_path / "sweep.py", tmp_path / "results.jsonl", tmp_path / "tmp"
    script.write_text(SWEEP_SCRIPT)
    tmp.mkdir()
    a = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, micro_batch=8, tiny=True)
    b = Config("pythia-160m", "h100-80gb", 2, methods=NAIVE, micro_batch=4, tiny=True)
    log = out.with_name("sweep.log")

    # SIGTERM (like Ctrl-C): the running configuration is killed on the way out, no row for it
    proc = _start_and_wait_for_b(script, out, tmp)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 130, log.read_text()[-3000:]
    assert _processes_under(tmp) == []
    assert [r["config_id"] for r in ResultStore(out).rows()] == [a.id]

    # SIGKILL: no clean-up code runs in the sweep; torchrun gets the parent-death signal and stops its workers
    proc = _start_and_wait_for_b(script, out, tmp)
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 60
    while _processes_under(tmp) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _processes_under(tmp) == []
    assert [r["config_id"] for r in ResultStore(out).rows()] == [a.id]

    done = _sweep(script, out, "ok", tmp)
    assert done.wait(300) == 0, log.read_text()[-3000:]
    [line] = [ln for ln in log.read_text().splitlines() if ln.startswith("SUMMARY ")]
    summary = json.loads(line.removeprefix("SUMMARY "))
    assert (summary["resumed"], summary["ran"]) == (1, 1)
    ids = [r["config_id"] for r in ResultStore(out).rows()]
    assert ids == [a.id, b.id]  # loads, complete, no duplicates


# --- the CLI refuses bad input before any work -------------------------------------------------------------

BENCH = ["bench", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--tiny", "--device", "cpu"]
SWEEP = ["sweep", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--preset", "exhaustive"]


def _swap(argv: list[str], flag: str, value: str) -> list[str]:
    argv = list(argv)
    argv[argv.index(flag) + 1] = value
    return argv


@pytest.mark.parametrize("argv, message", [
    (_swap(BENCH, "--model", "gpt-5"), "unknown model 'gpt-5'; choose one of: pythia-160m"),
    (_swap(SWEEP, "--model", "pythia-160m,nope"), "unknown model 'nope'; choose one of"),
    (_swap(SWEEP, "--gpu", "h100"), "unknown GPU 'h100'; choose one of: rtx3090"),
    (_swap(BENCH, "--gpus", "0"), "--gpus must be at least 1"),
    (_swap(SWEEP, "--gpus", "0"), "--gpus must be at least 1"),
    (BENCH + ["--methods", "free-lunch+zero3"], "invalid combination (free-lunch + ZeRO-3 on 1 GPU(s))"),
    (BENCH + ["--methods", "naive+turbo"], "unknown method 'turbo'"),
    (BENCH + ["--micro-batch", "3"], "micro-batch 3 must divide the per-GPU batch 8; choose one of: [1, 2, 4, 8]"),
    (SWEEP + ["--nodes", "3", "--gpus", "4"], "cannot be split evenly over 3 nodes"),
    (BENCH + ["--timeout", "0"], "--timeout must be positive"),
    (BENCH + ["--timing", "unsynced", "--validate", "3"], "drop --timing unsynced"),
    (SWEEP + ["--retry", "error,crashed"], "--retry: unknown outcome 'crashed'"),
])
def test_cli_errors_exit_2_before_any_work(tmp_path, capsys, argv, message):
    out = tmp_path / "results.jsonl"
    assert cli.main(argv + ["--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "logs").exists()


def test_cli_slurm_without_slurm_exits_2(tmp_path, capsys):
    if shutil.which("sbatch") is not None:
        skip_or_fail("SLURM is installed here, so its absence cannot be checked")
    assert cli.main(SWEEP + ["--executor", "slurm", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "sbatch is not on PATH" in capsys.readouterr().err


def test_cli_unknown_preset_is_an_argparse_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(_swap(SWEEP, "--preset", "greedy") + ["--out", str(tmp_path / "r.jsonl")])
    assert exc.value.code == 2 and "invalid choice: 'greedy'" in capsys.readouterr().err


def test_methods_helpers_used_by_plans():
    assert Methods.from_dict(FREE_LUNCH.to_dict()) == FREE_LUNCH
    assert os.path.basename(str(skipped_path("x/results.jsonl"))) == "results.skipped.jsonl"


def test_retry_reruns_listed_outcomes_only(tmp_path):
    out = tmp_path / "results.jsonl"
    bad = [tiny("naive+zero3")]  # invalid: recorded without a launch
    assert run_sweep(bad, out, "t", search="exhaustive", progress=False).ran == 1
    assert run_sweep(bad, out, "t", search="exhaustive", progress=False).ran == 0
    assert run_sweep(bad, out, "t", search="exhaustive", progress=False, retry=("invalid",)).ran == 1
    assert len(ResultStore(out).rows()) == 2
    with pytest.raises(ValueError, match="cannot retry crashed"):
        run_sweep(bad, out, "t", search="exhaustive", progress=False, retry=("crashed",))


def test_retry_uncommitted_measures_again_only_the_rows_that_name_no_commit(tmp_path):
    """A row whose environment records no commit cannot name the code that made it (``check-run`` rejects it):
    ``retry=("uncommitted",)`` measures such configurations again, and leaves rows that name theirs."""
    out = tmp_path / "results.jsonl"
    named, unnamed = tiny("naive+zero3"), tiny("naive+zero2")  # invalid both: recorded without a launch
    assert run_sweep([named, unnamed], out, "t", search="exhaustive", progress=False).ran == 2
    rows = ResultStore(out).rows()
    out.unlink()
    for r in rows:
        r["env"]["git_commit"] = "0" * 40 if r["config_id"] == named.id else None
        ResultStore(out).append(r)
    assert run_sweep([named, unnamed], out, "t", search="exhaustive", progress=False).ran == 0
    s = run_sweep([named, unnamed], out, "t", search="exhaustive", progress=False, retry=("uncommitted",))
    assert s.ran == 1
    assert [r["config_id"] for r in ResultStore(out).rows()][-1] == unnamed.id


def test_a_row_out_of_memory_only_when_timed_before_halving_is_measured_again(tmp_path):
    """Such a row (Pythia-2.8B with checkpointing on one H100, run 6) named no usable size; resumed, the
    configuration runs again (now falling back to half), and a row that already fell back is kept."""
    out = tmp_path / "results.jsonl"
    c = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, tiny=True)
    search_log = [{"micro_batch": 4, "outcome": "ok", "peak_memory_gb": None}]
    ResultStore(out).append(make_row(c, setup="cpu-test", outcome="oom", micro_batch=4, mbs_search=search_log,
                                     reason="out of memory at the chosen micro-batch: synthetic"))
    kw = dict(search="naive", device="cpu", progress=False, timeout_s=300)
    s = run_sweep([c], out, "cpu-test", **kw)
    assert (s.resumed, s.ran, s.outcomes) == (0, 1, {"ok": 1}), s
    assert run_sweep([c], out, "cpu-test", **kw).ran == 0
    noted = [*search_log, {"micro_batch": 4, "outcome": "oom", "note": TIMED_OOM_NOTE}]
    ResultStore(out).append(make_row(c, setup="cpu-test", outcome="oom", micro_batch=2, mbs_search=noted))
    assert run_sweep([c], out, "cpu-test", **kw).ran == 0


def test_synced_micro_batches_are_those_of_the_latest_ok_synced_rows():
    a, b = (Config("pythia-160m", "h100-80gb", 1, methods=m, tiny=True) for m in (NAIVE, FREE_LUNCH))
    rows = [make_row(a, setup="t", outcome="ok", micro_batch=4, gas=2, step_time_s=1.0),
            make_row(b, setup="t", outcome="ok", micro_batch=8, gas=1, step_time_s=1.0),
            make_row(b, setup="t", outcome="oom", reason="synthetic"),  # the latest row of b: no micro-batch
            make_row(a, setup="t", outcome="ok", timing="unsynced", micro_batch=2, gas=4, step_time_s=0.5)]
    assert synced_micro_batches(rows) == {a.id: 4}


def test_an_unsynced_timing_runs_at_its_synced_twins_micro_batch(tmp_path):
    """Same work compared, no second search, and the row keeps the configuration's id."""
    out = tmp_path / "results.jsonl"
    c = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, tiny=True)  # no micro-batch: normally searched
    ResultStore(out).append(make_row(c, setup="cpu-test", outcome="ok", micro_batch=2, gas=4, step_time_s=1.0))
    s = run_sweep([c], out, "cpu-test", search="naive", timing="unsynced", device="cpu", progress=False,
                  timeout_s=300)
    assert s.outcomes == {"ok": 1}, s
    row = ResultStore(out).rows()[-1]
    assert (row["timing"], row["config_id"], row["micro_batch"], row["mbs_search"]) == ("unsynced", c.id, 2, None)
    log = (tmp_path / row["log"]).read_text()
    assert "(measure)" in log and "(search)" not in log
    assert "best for" not in format_summary(s), "an unsynchronised clock's fastest row is no result"
    # The synced twin is measured again at another micro-batch: the unsynced row now times other work.
    ResultStore(out).append(make_row(c, setup="cpu-test", outcome="ok", micro_batch=4, gas=2, step_time_s=1.0))
    s = run_sweep([c], out, "cpu-test", search="naive", timing="unsynced", device="cpu", progress=False,
                  timeout_s=300)
    assert (s.resumed, s.ran) == (0, 1) and ResultStore(out).rows()[-1]["micro_batch"] == 4
