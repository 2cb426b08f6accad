"""Rows whose micro-batch search stopped on the memory model's prediction: found from their search log, and
measured again, exactly those, each under the search that made it (real launches of tiny models on the CPU)."""
from __future__ import annotations

import json

from academic_bench import cli
from academic_bench.catalog.config import Config
from academic_bench.launch import TIMED_OOM_NOTE
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import (MEMORY_WALL, PREDICTED_STOP, ResultStore, latest_rows, load_runs, make_row,
                                    stopped_on_prediction, unchecked_at_wall)
from academic_bench.search.remeasure import remeasure, to_remeasure


def searched(methods: str) -> Config:
    return Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(methods), tiny=True)


def ok_row(c: Config, mbs: int, gas: int, tried: list[tuple[int, str]], **kw) -> dict:
    log = [{"micro_batch": m, "outcome": o, "peak_memory_gb": None} for m, o in tried]
    return make_row(c, setup="cpu-test", outcome="ok", micro_batch=mbs, gas=gas, step_time_s=1.0, mbs_search=log, **kw)


def test_a_row_stopped_on_a_prediction_is_one_that_never_tried_twice_its_size_though_the_batch_allowed_it():
    c = searched("naive")
    assert stopped_on_prediction(ok_row(c, 2, 4, [(2, "ok")]))
    assert not stopped_on_prediction(ok_row(c, 2, 4, [(2, "ok"), (4, "oom")])), "a measured out of memory"
    assert not stopped_on_prediction(ok_row(c, 8, 1, [(8, "ok")])), "the whole per-GPU batch"
    assert not stopped_on_prediction(ok_row(c, 2, 3, [(2, "ok")])), "twice the size does not divide the batch"
    fell_back = ok_row(c, 2, 4, [(2, "ok")])
    fell_back["mbs_search"].append({"micro_batch": 4, "outcome": "oom", "note": TIMED_OOM_NOTE})
    assert not stopped_on_prediction(fell_back), "out of memory when timed is measured"
    given = make_row(c, setup="t", outcome="ok", micro_batch=2, gas=4, step_time_s=1.0)  # a twin's size, no search
    assert not stopped_on_prediction(given)
    fixed = ok_row(Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("naive"), micro_batch=2, tiny=True),
                   2, 4, [(2, "ok")])
    assert not stopped_on_prediction(fixed), "a micro-batch the user fixed is no search"


def test_the_shipped_rows_stopped_on_a_prediction_are_those_whose_search_said_so():
    """The rule reads the search's log alone; on the shipped runs it picks exactly the rows whose notes say the
    memory model kept a size from being tried."""
    latest = latest_rows(load_runs())
    noted = {r["config_id"] + r["setup"] for r in latest if r["outcome"] == "ok" and any(
        "not tried: the memory model predicts" in n for n in (r.get("ran") or {}).get("notes") or [])}
    assert {r["config_id"] + r["setup"] for r in to_remeasure(latest, PREDICTED_STOP)} == noted


def test_a_row_near_its_gpus_capacity_made_before_the_wall_check_is_selected_to_be_measured_again():
    c = Config("pythia-1b", "h100-80gb", 1, methods=parse_methods("free-lunch"))
    capacity = 80 * 2**30 / 1e9

    def row(reserved_share, mbs=16, **ran):
        return ok_row(c, mbs, 1024 // mbs, [(mbs, "ok"), (2 * mbs, "oom")],
                      ran={"peak_reserved_gb": [reserved_share * capacity], **ran})

    assert unchecked_at_wall(row(0.99))
    assert not unchecked_at_wall(row(0.80)), "far from the wall"
    assert not unchecked_at_wall(row(0.99, alloc_retries=0)), "timed by an engine that counted the retries"
    assert not unchecked_at_wall(row(0.99, mbs=1)), "no half size to try"
    given = Config("pythia-1b", "h100-80gb", 1, methods=parse_methods("free-lunch"), micro_batch=16)
    assert not unchecked_at_wall(ok_row(given, 16, 64, [], ran={"peak_reserved_gb": [capacity]})), "a set size"
    latest = [row(0.99), {**row(0.99, alloc_retries=3), "config_id": "checked"}]
    assert [r["config_id"] for r in to_remeasure(latest, MEMORY_WALL)] == [c.id]


def test_the_book_reads_each_rows_standing_at_the_memory_wall(tmp_path):
    from academic_bench import analysis

    capacity = 80 * 2**30 / 1e9
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    wall = {"micro_batch": 16, "alloc_retries": 3, "step_time_s": 2.0, "below_micro_batch": 8,
            "below_step_time_s": 1.0, "kept": 8}
    for methods, ran in (("free-lunch", {"alloc_retries": 3, "memory_wall": wall}),
                         ("free-lunch+ckpt", {"alloc_retries": 0}),
                         ("naive", {}),
                         ("free-lunch+zero1+offload", {"peak_reserved_gb": [0.5 * capacity]})):
        cfg = Config("pythia-1b", "h100-80gb", 1, methods=parse_methods(methods))
        store.append(make_row(cfg, setup="h100x1", outcome="ok", micro_batch=8, gas=128, step_time_s=1.0,
                              mbs_search=[{"micro_batch": 8, "outcome": "ok"}, {"micro_batch": 16, "outcome": "oom"}],
                              ran={"peak_reserved_gb": [0.99 * capacity], **ran}))
    states = analysis.memory_wall(tmp_path).set_index("methods_label")["state"].to_dict()
    assert states == {"free-lunch": "checked", "free-lunch + ckpt": "clear", "naive": "unchecked",
                      "free-lunch + ZeRO-1 + offload": "before the check"}


def test_a_half_size_left_untimed_at_the_wall_is_read_with_the_engines_reason_not_as_a_step_time(tmp_path):
    import pandas as pd

    from academic_bench import analysis

    wall = {"micro_batch": 16, "alloc_retries": 3, "step_time_s": 2.0, "below_micro_batch": 8,
            "below_step_time_s": None, "kept": 16}
    note = ("micro-batch 16 ran at the memory wall (3 allocator retries, 2 s/step); micro-batch 8 not timed: it "
            "would not end within the time limit")
    cfg = Config("pythia-1b", "h100-80gb", 1, methods=parse_methods("free-lunch"))
    ResultStore(tmp_path / "h100x1" / "results.jsonl").append(make_row(
        cfg, setup="h100x1", outcome="ok", micro_batch=16, gas=64, step_time_s=2.0,
        mbs_search=[{"micro_batch": 16, "outcome": "ok"}, {"micro_batch": 32, "outcome": "oom"}],
        ran={"peak_reserved_gb": [79.0], "alloc_retries": 3, "memory_wall": wall, "notes": [note]}))
    (r,) = analysis.memory_wall(tmp_path).itertuples()
    assert r.state == "checked" and pd.isna(r.below_step_s), "no step time is made up for it"
    assert r.below_untimed == "not timed: it would not end within the time limit"


def test_remeasure_measures_again_exactly_those_rows_under_their_own_search_and_their_unsynced_twins(tmp_path):
    out = tmp_path / "cpu-test" / "results.jsonl"
    stopped, complete = searched("naive"), searched("naive+ckpt")  # tiny: per-GPU batch 8, everything fits
    store = ResultStore(out)
    store.append(ok_row(stopped, 2, 4, [(2, "ok")], search="smart"))
    store.append(ok_row(complete, 8, 1, [(8, "ok")], search="exhaustive"))
    store.append(make_row(stopped, setup="cpu-test", outcome="ok", timing="unsynced", search="naive", micro_batch=2,
                          gas=4, step_time_s=0.5))
    summaries = remeasure(out, "cpu-test", PREDICTED_STOP, device="cpu", progress=False, timeout_s=300)
    assert [(s.search, s.timing, s.ran) for s in summaries] == [("smart", "synced", 1), ("naive", "unsynced", 1)]
    new = ResultStore(out).rows()[3:]
    assert [(r["config_id"], r["search"], r["timing"], r["micro_batch"]) for r in new] == [
        (stopped.id, "smart", "synced", 8), (stopped.id, "naive", "unsynced", 8)]
    assert not stopped_on_prediction(new[0])
    assert remeasure(out, "cpu-test", PREDICTED_STOP, device="cpu", progress=False, timeout_s=300) == []


def test_remeasure_lists_the_selected_rows_and_refuses_a_missing_file(tmp_path, capsys):
    out = tmp_path / "cpu-test" / "results.jsonl"
    ResultStore(out).append(ok_row(searched("naive"), 2, 4, [(2, "ok")], search="naive"))
    assert cli.main(["remeasure", "--out", str(out), "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["micro_batch"], r["search"], r["methods"]) for r in listed] == [(2, "naive", "naive")]
    assert cli.main(["remeasure", "--out", str(tmp_path / "none.jsonl")]) == 2
    assert "no results file at" in capsys.readouterr().err


def test_remeasure_refuses_a_gpu_other_than_the_one_that_made_the_rows(tmp_path, capsys, monkeypatch):
    import torch

    from academic_bench.cli import bench as bench_cli

    out = tmp_path / "h200x1" / "results.jsonl"
    c = Config("pythia-160m", "h200", 1, methods=parse_methods("naive"))
    ResultStore(out).append(make_row(c, setup="h200x1", outcome="ok", micro_batch=4, gas=256, step_time_s=1.0,
                                     mbs_search=[{"micro_batch": 4, "outcome": "ok", "peak_memory_gb": 1.0}]))
    from academic_bench.launch import gpu_in_hand

    monkeypatch.setattr(bench_cli, "device_for", lambda requested, command, workshop=True: "cuda")  # a GPU machine
    monkeypatch.setattr(gpu_in_hand, "gpu_info", lambda: ("NVIDIA H100 80GB HBM3", "580.00"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(gpu_in_hand.GPU_MISMATCH_ENV, "0")
    assert cli.main(["remeasure", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "h200" in err and "NVIDIA H100 80GB HBM3" in err
    assert "--allow-gpu-mismatch" not in err  # remeasure offers no override: the message does not name one


def test_remeasure_refuses_rows_whose_packages_do_not_import_before_any_work(tmp_path, capsys, monkeypatch):
    """Measured again without Mamba's kernels, a measured Mamba row would become an 'unsupported' row that
    supersedes it: the command stops first, naming the missing modules and the rows that need them."""
    from academic_bench.catalog import env, methods as methods_module

    out = tmp_path / "cpu-test" / "results.jsonl"
    store = ResultStore(out)
    store.append(ok_row(searched("naive"), 2, 4, [(2, "ok")], search="smart"))
    fp8 = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch+fp8-tensorwise"), tiny=True)
    store.append(ok_row(fp8, 2, 4, [(2, "ok")], search="smart"))
    before = out.read_text()
    real = env.importable
    monkeypatch.setattr(methods_module, "importable", lambda mod: mod != "torchao" and real(mod))
    assert cli.main(["remeasure", "--out", str(out), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "torchao" in err and "pythia-160m" in err and "FP8" in err.upper() and "--models" in err
    assert out.read_text() == before, "nothing measured, nothing written"


def test_a_configuration_needs_the_packages_of_its_methods_and_mamba_its_kernels_on_the_gpu():
    from academic_bench.catalog.methods import packages_needed

    assert packages_needed(parse_methods("free-lunch"), "sdpa", "cuda") == ()
    assert packages_needed(parse_methods("free-lunch+zero1+offload+fused-ce"), "sdpa", "cuda") == (
        "deepspeed", "liger_kernel")
    assert packages_needed(parse_methods("free-lunch"), "mamba-ssm", "cuda") == ("mamba_ssm", "causal_conv1d")
    assert packages_needed(parse_methods("free-lunch"), "mamba-ssm", "cpu") == ()
    assert packages_needed(parse_methods("naive"), "mamba-ssm", "cuda") == (), "kernels off: the PyTorch path"


def test_remeasure_of_unvalidated_rows_measures_exactly_the_configurations_named_and_reports_the_new_rows(tmp_path):
    """Which rows no validation speaks for is the analysis' to say (``analysis.counted.unvalidated_rows``); the
    sweep measures exactly the configurations it names again, under their own search, and its summary's best is
    the new row, not the superseded one."""
    from academic_bench.results import UNVALIDATED

    out = tmp_path / "cpu-test" / "results.jsonl"
    old, other = searched("naive"), searched("naive+ckpt")
    store = ResultStore(out)
    store.append({**ok_row(old, 8, 1, [(8, "ok")], search="exhaustive"), "step_time_s": 1e-6})  # beats any real step
    store.append(ok_row(other, 8, 1, [(8, "ok")], search="exhaustive"))
    try:
        remeasure(out, "cpu-test", UNVALIDATED, device="cpu", progress=False, timeout_s=300)
    except ValueError as exc:
        assert "unvalidated_rows" in str(exc)
    else:
        raise AssertionError("the selection needs the configurations the analysis names")
    summaries = remeasure(out, "cpu-test", UNVALIDATED, ids={old.id}, device="cpu", progress=False, timeout_s=300)
    assert [(s.search, s.ran) for s in summaries] == [("exhaustive", 1)]
    new = ResultStore(out).rows()[2:]
    assert [(r["config_id"], r["search"], r["outcome"]) for r in new] == [(old.id, "exhaustive", "ok")]
    assert summaries[0].best["pythia-160m"]["step_time_s"] == new[0]["step_time_s"] > 1e-6
