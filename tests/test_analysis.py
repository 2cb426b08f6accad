"""The analysis package on synthetic result rows (made up for the test, not measurements) and on no rows at all."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from academic_bench import analysis
from academic_bench.predict import measured as answers
from academic_bench.book import charts
from academic_bench.results import ENGINE_REVISION, ROW_KEYS, SCHEMA, ResultStore

from measured import typed_figures  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("typed_figures")  # synthetic rows with typed-in figures

NAIVE = dict(compile=False, kernels=False, tf32=False, checkpointing=False, sharding="none", offload=False)
FREE = dict(NAIVE, compile=True, kernels=True, tf32=True)


def _row(config_id: str, methods: dict, *, days: float | None, outcome: str = "ok", timing: str = "synced",
         mode: str = "step", search: str = "exhaustive", model: str = "pythia-160m", gpu: str = "h100-80gb",
         n_gpus: int = 1, tiny: bool = False, **extra) -> dict:
    row = {k: None for k in ROW_KEYS}
    step = None if days is None else days * 86400 / 143_000
    row.update(schema=SCHEMA, config_id=config_id, setup="h100x1", timing=timing, mode=mode, search=search,
               outcome=outcome, reason=None if outcome == "ok" else "synthetic", env={}, started_at="2026-01-01T00:00:00",
               duration_s=1.0, days=days, step_time_s=step, micro_batch=8 if outcome == "ok" else None,
               gas=16 if outcome == "ok" else None,
               config={"model": model, "gpu": gpu, "n_gpus": n_gpus, "nodes": 1, "methods": methods,
                       "micro_batch": None, "tiny": tiny}, engine=ENGINE_REVISION)
    if step is not None:
        row["step_time_spread"] = [step * 0.95, step * 1.1]
    if "mfu" in extra and "peak_flops" not in extra:  # rated at the basis every page shows (the dense 16-bit peak)
        row["peak_flops"] = analysis.dense16_peak(gpu)
    row.update(extra)
    return row


def validated(rows: list[dict]) -> list[dict]:
    """``rows`` and one validation within the tolerance per setup, method class and engine revision of their
    measurements: only a validated class gives results (``analysis.results``)."""
    from academic_bench.results import validation_class_of

    seen, out = set(), list(rows)
    for r in rows:
        key = (r["setup"], validation_class_of(r), r.get("engine"))
        if r["outcome"] == "ok" and r["mode"] == "step" and r["timing"] == "synced" and key not in seen:
            seen.add(key)
            out.append({**r, "config_id": r["config_id"] + "-validated", "mode": "validate", "validate": {
                "steps": 3, "sustained_step_s": r["step_time_s"], "predicted_step_s": r["step_time_s"],
                "rel_error": 0.0}})
    return out


@pytest.fixture
def runs(tmp_path) -> pd.DataFrame:
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    rows = [
        _row("naive", NAIVE, days=10.0, search="naive"),
        _row("free", FREE, days=5.0, search="free-lunch", mfu=0.4, predicted_memory_gb=30.0,
             peak_memory_gb=[20.0, 25.0]),
        _row("free", FREE, days=2.0, timing="unsynced", search="free-lunch"),  # honesty comparison only
        _row("ckpt", dict(FREE, checkpointing=True), days=4.0, mfu=0.5),
        _row("zero1-off", dict(FREE, sharding="zero1", offload=True), days=8.0),
        _row("ckpt-off", dict(FREE, checkpointing=True, sharding="zero3", offload=True), days=None, outcome="oom",
             predicted_memory_gb=70.0),
        _row("tiny", FREE, days=0.1, tiny=True),  # a workshop run: never a result
        _row("free", FREE, days=5.0, mode="validate", search="free-lunch",
             validate={"steps": 20, "sustained_step_s": 3.05, "predicted_step_s": 3.0, "rel_error": -0.0164}),
    ]
    for r in validated(rows[:-1]) + rows[-1:]:
        store.append(r)
    return analysis.runs_frame(tmp_path)


def test_no_runs_gives_empty_frames_with_columns(tmp_path):
    df = analysis.runs_frame(tmp_path)
    assert df.empty and list(df.columns) == analysis.COLUMNS
    for fn, cols in [(analysis.best_per_setting, analysis.COLUMNS), (analysis.naive_per_setting, analysis.COLUMNS),
                     (analysis.feasibility, analysis.FEASIBILITY_COLUMNS),
                     (analysis.optimized_speedup, analysis.SPEEDUP_COLUMNS),
                     (analysis.memory_saving_speedup, analysis.SPEEDUP_COLUMNS),
                     (analysis.sync_pairs, analysis.SYNC_COLUMNS),
                     (analysis.validation_pairs, analysis.VALIDATION_COLUMNS),
                     (analysis.variance, analysis.VARIANCE_COLUMNS),
                     (analysis.memory_model_error, analysis.MEMORY_COLUMNS)]:
        out = fn(df)
        assert out.empty, fn.__name__
        assert list(out.columns) == cols, fn.__name__
    assert analysis.combination_spread(df).empty
    assert analysis.setups(df).empty


def test_flat_columns(runs):
    assert list(runs.columns) == analysis.COLUMNS
    free = runs[(runs["config_id"] == "free") & (runs["timing"] == "synced") & (runs["mode"] == "step")].iloc[0]
    assert free["methods_label"] == "free-lunch" and free["method_class"] == "free-lunch"
    assert free["peak_memory_gb"] == 25.0  # the largest rank
    assert runs.loc[runs["config_id"] == "ckpt", "method_class"].iloc[0] == "memory-saving"


def test_best_and_naive_per_setting(runs):
    best = analysis.best_per_setting(runs)
    assert len(best) == 1 and best["config_id"].iloc[0] == "ckpt"  # not the faster unsynced or tiny rows
    naive = analysis.naive_per_setting(runs)
    assert naive["config_id"].tolist() == ["naive"]
    assert set(analysis.results(runs)["timing"]) == {"synced"}


def test_speedups(runs):
    assert analysis.optimized_speedup(runs)["speedup"].iloc[0] == pytest.approx(10 / 4)
    assert analysis.free_lunch_speedup(runs)["speedup"].iloc[0] == pytest.approx(10 / 5)
    assert analysis.memory_saving_speedup(runs)["speedup"].iloc[0] == pytest.approx(5 / 4)
    spread = analysis.combination_spread(runs).iloc[0]
    assert spread["combinations"] == 3  # free-lunch only, ckpt, ZeRO-1 + offload (the OOM one has no days)
    assert spread["best"] == pytest.approx(5 / 4) and spread["worst"] == pytest.approx(5 / 8)


def test_feasibility(runs):
    f = analysis.feasibility(runs).iloc[0]
    assert (f["naive"], f["free_lunch"], f["optimized"]) == ("feasible", "feasible", "feasible")


def test_sync_pairs_compare_the_same_configuration(runs):
    pairs = analysis.sync_pairs(runs)
    assert pairs["config_id"].tolist() == ["free"]
    assert pairs["undercount"].iloc[0] == pytest.approx(1 - 2 / 5)
    assert pairs["days_synced"].iloc[0] == 5.0 and pairs["days_unsynced"].iloc[0] == 2.0
    other_size = runs.assign(micro_batch=runs["micro_batch"].where(runs["timing"] == "synced", 16))
    assert analysis.sync_pairs(other_size).empty, "an unsynced row at another micro-batch times other work"


def test_sync_pairs_count_the_same_work_once(tmp_path):
    """The same methods at the same micro-batch timed both ways under two configuration ids (one with a fixed
    micro-batch) is one configuration: a median over pairs must not count it twice."""
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    for cid, at in (("free", "2026-01-01T00:00:00"), ("free-fixed-mb", "2026-01-02T00:00:00")):
        store.append(_row(cid, FREE, days=5.0, search="free-lunch", started_at=at))
        store.append(_row(cid, FREE, days=2.0 if cid == "free" else 3.0, timing="unsynced", search="free-lunch",
                          started_at=at))
    pairs = analysis.sync_pairs(analysis.runs_frame(tmp_path))
    assert pairs["config_id"].tolist() == ["free-fixed-mb"], "the latest pair of the same work"


def test_validation_variance_and_memory(runs):
    v = analysis.validation_pairs(runs)
    assert sorted(v["validate_rel_error"].tolist()) == [-0.0164, 0.0, 0.0, 0.0, 0.0]  # the fixture's and validated()'s
    assert v["within"].all() and (v["sustained_s"] == v["validate_steps"] * v["sustained_step_s"]).all()
    var = analysis.variance(runs)
    assert var["relative_spread"].dropna().round(6).eq(0.15).all()
    from academic_bench.catalog.config import Config
    from academic_bench.estimate import predict_memory
    from academic_bench.catalog.methods import Methods

    mem = analysis.memory_model_error(runs)
    free = mem[mem["methods_label"] == "free-lunch"].iloc[0]
    now = predict_memory(Config("pythia-160m", "h100-80gb", 1, methods=Methods(**FREE)), 8).allocated / 1e9
    # The error is the current model's, not the one stored when the row was measured.
    assert free["predicted_at_run_gb"] == 30.0 and free["predicted_memory_gb"] == pytest.approx(now)
    assert free["error"] == pytest.approx(now / 25 - 1)
    oom = mem[mem["outcome"] == "oom"]
    assert len(oom) == 1 and oom["predicted_memory_gb"].iloc[0] < 80  # predicted to fit, ran out: a miss


def test_fit_predictions_compare_each_tried_micro_batch_with_the_model(tmp_path):
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    store.append(_row("free", FREE, days=5.0, search="free-lunch", mbs_search=[
        {"micro_batch": 8, "outcome": "ok", "peak_memory_gb": 20.0},
        {"micro_batch": 4096, "outcome": "ok", "peak_memory_gb": 79.0}]))
    fit = analysis.fit_predictions(analysis.runs_frame(tmp_path))
    assert fit[["micro_batch", "measured", "predicted", "correct"]].values.tolist() == [
        [8, "fits", "fits", True], [4096, "fits", "oom", False]]


def _fake_facts() -> pd.DataFrame:
    """Made-up FLOPs (the real ones take seconds per model to count): bf16 transformers with our count, and
    ViT as an fp32 model known only by a Figure 9(a)-style total."""
    from academic_bench.catalog.paper import MODEL_KEYS

    rows = [{"model": m, "display": m, "family": m.split("-")[0], "steps": 1, "precision": "bf16",
             "flops_ours": 2.0e21, "flops_fig9": 1.9e21} for m in MODEL_KEYS if m != "vit-large"]
    rows.append({"model": "vit-large", "display": "ViT", "family": "vit", "steps": 1, "precision": "fp32",
                 "flops_ours": math.nan, "flops_fig9": 4.7e20})
    return pd.DataFrame(rows)


def test_paper_cells_mfu_arithmetic(monkeypatch):
    monkeypatch.setattr(analysis.versus_paper, "model_facts", _fake_facts)
    cells = analysis.paper_cells("table1")
    assert len(cells) == 144
    one = cells[(cells["model"] == "pythia-1b") & (cells["gpu"] == "a100-80gb") & (cells["n_gpus"] == 4)].iloc[0]
    peak = 312e12  # the catalog's dense bf16 A100 rate, checked here as data, not as a measurement
    assert one["peak_flops"] == pytest.approx(peak)
    assert one["mfu"] == pytest.approx(2.0e21 / (one["days"] * 86400 * 4 * peak))
    assert one["mfu_min"] == pytest.approx(2.0e21 / ((one["days"] + 0.5) * 86400 * 4 * peak))
    assert one["implausible"] == (one["mfu_min"] > analysis.MFU_IMPLAUSIBLE)
    vit = cells[cells["model"] == "vit-large"]
    assert set(vit["flops_basis"]) == {"paper Figure 9(a)"} and set(vit["peak_basis"]) == {"tf32"}
    naive_vit = analysis.paper_cells("table4").query("model == 'vit-large'")
    assert set(naive_vit["peak_basis"]) == {"fp32"}  # matmuls stay fp32 unless TF32 is switched on
    measured = cells[cells["status"] == "measured"].dropna(subset=["mfu"])
    assert (measured["mfu_min"] < measured["mfu"]).all()
    assert cells.loc[cells["status"] != "measured", "mfu"].isna().all()
    with pytest.raises(ValueError, match="table1, table4"):
        analysis.paper_cells("table9")


def test_comparison_with_the_paper(runs, monkeypatch):
    monkeypatch.setattr(analysis.versus_paper, "model_facts", _fake_facts)
    long = analysis.table1_long(runs)
    ours = long.dropna(subset=["ours_days"])
    assert ours[["model", "gpu", "n_gpus"]].values.tolist() == [["pythia-160m", "h100-80gb", 1]]
    cmp = analysis.paper_comparison(runs)
    assert cmp["ratio"].iloc[0] == pytest.approx(4.0 / cmp["paper_days"].iloc[0])
    settings = analysis.settings_comparison(runs)
    assert settings["ours_methods"].iloc[0] == "free-lunch + ckpt"


def test_provenance_lists_data_files(tmp_path):
    df = analysis.provenance(tmp_path)
    files = set(df["file"])
    assert "academic_bench/data/paper_table1_optimal_days.csv" in files
    assert "tests/fixtures/survey_example.csv" in files
    assert not df["produced_by"].eq("not described yet").any(), df[df["produced_by"] == "not described yet"]
    shipped = analysis.provenance().set_index("file")
    assert shipped.loc["notebooks/runs/planned-setups.csv", "produced_by"].startswith("written by hand")


def test_provenance_says_what_each_file_of_a_run_folder_is(tmp_path):
    folder = tmp_path / "h100x1"
    ResultStore(folder / "results.jsonl").append(_row("naive", NAIVE, days=10.0, search="naive"))
    (folder / "results.skipped.jsonl").write_text('{"config_id": "x"}\n')
    (folder / "profiles.jsonl").write_text('{"config_id": "x"}\n')
    df = analysis.provenance(tmp_path).set_index("file")
    what = {Path(f).name: w for f, w in df["what"].items() if "h100x1" in f}
    assert what == {"results.jsonl": "benchmark results",
                    "results.skipped.jsonl": "configurations a smart search skipped, with why",
                    "profiles.jsonl": "step profiles (torch.profiler, by kind of work)"}
    by = {Path(f).name: b for f, b in df["produced_by"].items() if "h100x1" in f}
    assert "academic-bench profile" in by["profiles.jsonl"] and "academic-bench profile" not in by["results.jsonl"]
    assert "evidence/README.md" not in by["results.jsonl"]
    (folder / "evidence").mkdir()
    (folder / "evidence" / "README.md").write_text("# How these results were made\n")
    df = analysis.provenance(tmp_path).set_index("file")
    by = {Path(f).name: b for f, b in df["produced_by"].items() if "h100x1" in f}
    assert by["results.jsonl"].startswith("the runs listed in `h100x1/evidence/README.md`; the last: ")
    (folder / "evidence" / "gemm").mkdir()
    (folder / "evidence" / "gemm" / "gemm.jsonl").write_text('{"m": 2048}\n')
    df = analysis.provenance(tmp_path).set_index("file")
    gemm = df.loc[str(folder / "evidence" / "gemm" / "gemm.jsonl")]
    assert "gemm_sweep.py" in gemm["produced_by"] and gemm["rows"] == 1
    (folder / "evidence" / "gemm" / "gemm-output-layer.jsonl").write_text('{"m": 8192}\n{"m": 65536}\n')
    df = analysis.provenance(tmp_path).set_index("file")
    output = df.loc[str(folder / "evidence" / "gemm" / "gemm-output-layer.jsonl")]
    assert "GEMM=output-layer" in output["produced_by"] and output["rows"] == 2


def test_a_setting_with_only_the_naive_baseline_is_not_set_beside_the_papers_optimum(tmp_path):
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    for r in validated([_row("naive-rob", NAIVE, days=300.0, search="naive", model="roberta-large"),
                        _row("naive-160", NAIVE, days=50.0, search="naive"),
                        _row("free-160", FREE, days=9.0, search="smart")]):
        store.append(r)
    df = analysis.runs_frame(tmp_path)
    t1 = analysis.paper_comparison(df, "table1")
    assert list(t1["model"]) == ["pythia-160m"] and float(t1["ours_days"].iloc[0]) == 9.0
    t4 = analysis.paper_comparison(df, "table4")
    assert set(t4["model"]) == {"pythia-160m", "roberta-large"}


def test_a_remeasured_configuration_counts_once_with_its_latest_row(tmp_path):
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    store.append(_row("free", FREE, days=None, outcome="timeout", search="smart"))  # 'not run' (budget spent)
    store.append(_row("free", FREE, days=6.0, search="smart"))  # measured on the next run
    df = analysis.runs_frame(tmp_path)
    assert len(df) == 1 and df["outcome"].iloc[0] == "ok"


# --- smart vs exhaustive -----------------------------------------------------------------------------------

def _search_frames(days: list[float], smart_measures: int, drop: int = 0):
    """Synthetic rows: every valid combination of Pythia-160M on one H100 measured (100 s of GPU time each)
    with the given days; the smart search measured the first ``smart_measures`` and skipped the rest."""
    from academic_bench.catalog.methods import exclusion_reason
    from academic_bench.search.plans import plan

    valid = [c for c in plan("pythia-160m", "h100-80gb", 1, "exhaustive") if exclusion_reason(c.methods, 1) is None]
    rows = [_row(c.id, c.to_dict()["methods"], days=d, search="smart" if i < smart_measures else "exhaustive",
                 duration_s=100.0) for i, (c, d) in enumerate(zip(valid, days))][:len(valid) - drop]
    skipped = pd.DataFrame([{"setup": "h100x1", "config_id": c.id, "search": "smart", "timing": "synced",
                             "mode": "step", "category": "cannot win", "reason": "synthetic"}
                            for c in valid[smart_measures:]])
    return analysis.frame_from_rows(validated(rows)), skipped, len(valid)


def test_smart_vs_exhaustive_reports_the_gap_and_the_share_of_gpu_time():
    df, skipped, n = _search_frames([5.0, 6.0, *[7.0] * 10], smart_measures=2)
    r = analysis.smart_vs_exhaustive(df, skipped).iloc[0]
    assert (r["combinations"], r["exhaustive_measured"], r["smart_measured"], r["smart_skipped"]) == (n, n, 2, n - 2)
    assert r["exhaustive_complete"] and r["smart_complete"]
    assert r["gap"] == 0 and r["gpu_time_share"] == pytest.approx(2 / n)


def test_smart_vs_exhaustive_shows_a_skipped_optimum_as_a_gap():
    df, skipped, _ = _search_frames([5.0, 6.0, 7.0, 4.0, *[7.0] * 8], smart_measures=2)
    assert analysis.smart_vs_exhaustive(df, skipped).iloc[0]["gap"] == pytest.approx(5.0 / 4.0 - 1)


def test_a_gap_inside_the_machine_spread_is_a_tie_that_the_smart_pick_wins():
    df, skipped, _ = _search_frames([5.0, 6.0, 7.0, 4.9, *[7.0] * 8], smart_measures=2)
    r = analysis.smart_vs_exhaustive(df, skipped, spread=0.03).iloc[0]
    assert r["gap"] == pytest.approx(5.0 / 4.9 - 1) and r["tie"] and r["machine_spread"] == 0.03
    assert not analysis.smart_vs_exhaustive(df, skipped, spread=0.01).iloc[0]["tie"]
    assert not analysis.smart_vs_exhaustive(df, skipped).iloc[0]["tie"], "no spread given: only an exact tie"


def test_two_bests_tie_within_the_wider_spread_of_their_kinds_of_step():
    """A step that offloads to the host spreads more between machines than one on the GPU alone: free-lunch (smart's
    pick, on the GPU) against ZeRO-3 + offload (the optimum) ties within the offloading steps' spread, free-lunch
    against free-lunch + ckpt (both on the GPU) only within the GPU's."""
    from academic_bench.results import Spread, step_kind

    spread = Spread({step_kind(False): 0.01, step_kind(True): 0.03}, 0.03)
    offloaded, skipped, _ = _search_frames([5.0, 6.0, 7.0, 4.9, *[7.0] * 8], smart_measures=2)
    r = analysis.smart_vs_exhaustive(offloaded, skipped, spread).iloc[0]
    assert r["exhaustive_best"] == "free-lunch + ZeRO-3 + offload" and r["machine_spread"] == 0.03 and r["tie"]
    assert r["exhaustive_offload"] and not r["smart_offload"]
    # The other way round: smart's pick offloads (ZeRO-1 + offload), the optimum runs on the GPU alone.
    picked, skipped, _ = _search_frames([5.2, 5.0, *[7.0] * 4, 4.9, *[7.0] * 5], smart_measures=2)
    r = analysis.smart_vs_exhaustive(picked, skipped, spread).iloc[0]
    assert r["smart_best"] == "free-lunch + ZeRO-1 + offload" and r["machine_spread"] == 0.03 and r["tie"]
    on_gpu, skipped, _ = _search_frames([5.0, 6.0, *[7.0] * 4, 4.9, *[7.0] * 5], smart_measures=2)
    r = analysis.smart_vs_exhaustive(on_gpu, skipped, spread).iloc[0]
    assert r["exhaustive_best"] == "free-lunch + ckpt" and r["machine_spread"] == 0.01 and not r["tie"]


def test_an_unfinished_exhaustive_search_is_marked_incomplete():
    df, skipped, n = _search_frames([5.0] * 12, smart_measures=2, drop=3)
    r = analysis.smart_vs_exhaustive(df, skipped).iloc[0]
    assert not r["exhaustive_complete"] and r["exhaustive_measured"] == n - 3


def test_no_exhaustive_search_no_comparison():
    assert analysis.smart_vs_exhaustive(analysis.frame_from_rows([]), analysis.skipped_frame("/nonexistent")).empty


def test_search_combinations_list_what_smart_did_with_each_and_mark_the_optimum():
    df, skipped, n = _search_frames([5.0, 6.0, 7.0, 4.0, *[7.0] * 8], smart_measures=2)
    combos = analysis.search_combinations(df, skipped)
    assert len(combos) == n and combos["smart"].value_counts().to_dict() == {"skipped": n - 2, "measured": 2}
    best = combos[combos["best"]]
    assert len(best) == 1 and best.iloc[0]["days"] == 4.0 and best.iloc[0]["smart"] == "skipped"
    assert combos["gpu_minutes"].sum() == pytest.approx(n * 100 / 60)
    # The chart of it draws one bar per combination, coloured by what smart did.
    spec = charts.search_bars(combos.assign(setting="s")).to_dict()
    assert len(spec["data"]["values"] if "values" in spec["data"] else next(iter(spec["datasets"].values()))) == n
    assert spec["spec"]["encoding"]["color"]["field"] == "smart"


def test_no_exhaustive_search_no_combinations_and_an_empty_chart_that_says_so():
    empty = analysis.search_combinations(analysis.frame_from_rows([]), analysis.skipped_frame("/nonexistent"))
    assert empty.empty and list(empty.columns) == analysis.COMBINATION_COLUMNS
    assert "No exhaustive search" in json.dumps(charts.search_bars(empty).to_dict())


def test_coverage_tells_measured_unfinished_failed_and_pending_apart(tmp_path):
    not_run = "not run: the notebook's time budget (time_budget_s=5) was spent before this configuration started"
    rows = [
        _row("n-160", NAIVE, days=10.0, search="naive"),
        _row("n-1b", NAIVE, days=None, outcome="oom", search="naive", model="pythia-1b"),
        _row("s-a", FREE, days=5.0, search="smart"),
        _row("s-b", dict(FREE, checkpointing=True), days=None, outcome="timeout", search="smart", reason=not_run),
        _row("s-c", dict(FREE, sharding="zero1", offload=True), days=None, outcome="timeout", search="smart",
             reason=not_run),  # left by a budget, then skipped by a later smart search: settled
        _row("s-1b", FREE, days=None, outcome="timeout", search="smart", model="pythia-1b",
             reason="no result within the time limit of 300 s"),
        _row("s-x", FREE, days=None, outcome="invalid", search="smart", model="vit-large", reason="excluded by rule"),
        _row("e-a", FREE, days=5.0, search="exhaustive", model="pythia-410m"),
        _row("e-b", dict(FREE, sharding="zero1", offload=True), days=None, outcome="timeout", search="exhaustive",
             model="pythia-410m", reason=not_run),  # smart skipped it, but exhaustive must still measure it
        _row("s-69", dict(FREE, sharding="zero1", offload=True), days=None, outcome="error", search="smart",
             model="pythia-6.9b", reason="exit status 1, no result file"),  # then retried, and ruled out
        _row("s-28", dict(FREE, sharding="zero1", offload=True), days=None, outcome="error", search="smart",
             model="pythia-2.8b", started_at="2026-02-01T00:00:00"),  # ran after the skip: still a failure
    ]
    skip = {"setup": "h100x1", "search": "smart", "timing": "synced", "mode": "step", "category": "cannot win",
            "reason": "synthetic", "at": "2026-01-02T00:00:00"}
    host = dict(skip, category="cannot fit (host memory model)")
    skipped = pd.DataFrame([dict(skip, config_id="s-c"), dict(skip, config_id="e-b"),
                            dict(host, config_id="s-69"), dict(host, config_id="s-28")])
    cov = analysis.coverage(analysis.frame_from_rows(rows), skipped).set_index(["model", "search"])
    status = cov["status"].to_dict()
    assert status[("pythia-160m", "naive")] == "complete"
    assert status[("pythia-160m", "smart")] == "measured, search unfinished"
    assert cov.loc[("pythia-160m", "smart"), "not_run"] == 1, "the skipped one is settled"
    assert status[("pythia-1b", "naive")] == "no configuration fits"
    assert status[("pythia-1b", "smart")] == "failed"
    assert status[("vit-large", "smart")] == "not run yet", "an excluded combination is no result"
    assert status[("pythia-6.9b", "smart")] == "no configuration fits", "a later 'cannot fit' skip explains the error"
    assert status[("pythia-2.8b", "smart")] == "failed", "a skip older than the attempt explains nothing"
    assert status[("pythia-410m", "exhaustive")] == "measured, search unfinished", "a smart skip settles no exhaustive row"
    assert cov.loc[("pythia-410m", "exhaustive"), "not_run"] == 1
    assert len(cov) == 9 * 2 + 1, "every catalog model has a naive and a smart cell, exhaustive only where chosen"
    assert ("pythia-160m", "exhaustive") not in cov.index and ("pythia-410m", "exhaustive") in cov.index
    planned = analysis.coverage(analysis.frame_from_rows(rows), skipped, planned=["h100x1", "h200x4"])
    four = planned[planned["setup"] == "h200x4"]
    assert len(four) == len(cov) and set(four["status"]) == {"not run yet"}, "a planned setup with no run shows"
    assert analysis.unrun_setups(analysis.frame_from_rows(rows), ["h200x4", "h100x1", "h200x2"]) == ["h200x4", "h200x2"]
    assert planned[planned["setup"] == "h100x1"].reset_index(drop=True).equals(
        analysis.coverage(analysis.frame_from_rows(rows), skipped)), "a planned setup that ran is unchanged"
    spec = charts.coverage_grid(cov.reset_index().assign(model_name=lambda d: d["model"])).to_dict()
    assert spec["spec"]["encoding"]["color"]["field"] == "status"
    assert "No benchmark run" in json.dumps(charts.coverage_grid(cov.iloc[:0]).to_dict())


def test_allocator_reserve_is_reserved_over_allocated_on_rows_that_record_it():
    rows = [_row("a", NAIVE, days=1.0, peak_memory_gb=[40.0, 50.0], ran={"peak_reserved_gb": [44.0, 55.0]}),
            _row("b", FREE, days=1.0, peak_memory_gb=[40.0]),  # measured before the reservation was recorded
            _row("c", FREE, days=None, outcome="oom", ran={"peak_reserved_gb": [80.0]})]
    r = analysis.allocator_reserve(analysis.frame_from_rows(rows))
    assert len(r) == 1
    assert r["reserve"].tolist() == [pytest.approx(55.0 / 50.0 - 1)]  # the highest rank of each
    assert analysis.allocator_reserve(analysis.frame_from_rows([])).empty


def test_step_breakdown_splits_the_best_step_into_micro_steps_sync_and_optimizer():
    step = 5.0 * 86400 / 143_000  # what _row makes of 5 days
    times = {"accumulate": {"median": 0.3}, "boundary": {"median": 0.33}, "optimizer": {"median": step * 0.02}}
    rows = [_row("free", FREE, days=5.0, times=times),
            _row("naive", NAIVE, days=10.0, times=times)]  # slower: not the setting's best
    b = analysis.step_breakdown(analysis.frame_from_rows(validated(rows)))
    assert b["methods_label"].tolist() == ["free-lunch"]
    assert b["optimizer_share"].iloc[0] == pytest.approx(0.02)
    assert b["micro_steps_share"].iloc[0] == pytest.approx(0.98)
    assert b["sync_overhead"].iloc[0] == pytest.approx(0.1)
    assert analysis.step_breakdown(analysis.frame_from_rows([])).empty


def test_answers_give_days_only_where_the_smart_search_is_complete_in_catalog_order():
    """The intro's answer table: a naive-only or unfinished search shows no days (its best so far is no
    optimum), a setting where nothing fits says so, and the models come in catalog order, not alphabetical."""
    from academic_bench import cost

    not_run = "not run: the notebook's time budget (time_budget_s=5) was spent before this configuration started"
    zero = dict(FREE, sharding="zero1", offload=True)
    rows = [
        _row("v-s", FREE, days=30.0, search="smart", model="vit-large", mfu=0.3),
        _row("m-s", FREE, days=60.0, search="smart", model="mamba-2.8b", mfu=0.2),
        _row("69-n", NAIVE, days=None, outcome="oom", search="naive", model="pythia-6.9b"),
        _row("69-s", zero, days=None, outcome="oom", search="smart", model="pythia-6.9b"),
        _row("28-s", FREE, days=20.0, search="smart", model="pythia-2.8b", mfu=0.5),
        _row("1b-n", NAIVE, days=10.0, search="naive", model="pythia-1b"),
        _row("1b-s", FREE, days=5.0, search="smart", model="pythia-1b", mfu=0.4),
        _row("1b-s", FREE, days=4.0, search="smart", model="pythia-1b", gpu="h200", setup="h200x1", mfu=0.45),
        _row("410-n", NAIVE, days=8.0, search="naive", model="pythia-410m"),  # the smart search never ran
        _row("160-n", NAIVE, days=3.0, search="naive"),
        _row("160-s", FREE, days=2.0, search="smart"),
        _row("160-z", zero, days=None, outcome="timeout", search="smart", reason=not_run),  # still to run
    ]
    df = analysis.frame_from_rows(validated(rows))
    out = answers.answers(df, analysis.skipped_frame("/nonexistent"))
    assert list(out.columns) == answers.ANSWER_COLUMNS
    assert list(zip(out["model"], out["setup"])) == [
        ("pythia-160m", "h100x1"), ("pythia-410m", "h100x1"), ("pythia-1b", "h100x1"), ("pythia-1b", "h200x1"),
        ("pythia-2.8b", "h100x1"), ("pythia-6.9b", "h100x1"), ("mamba-2.8b", "h100x1"), ("vit-large", "h100x1")]
    by = out.set_index(["model", "setup"])
    assert by.loc[("pythia-160m", "h100x1"), "status"] == "search unfinished"
    assert by.loc[("pythia-410m", "h100x1"), "status"] == "naive only"
    assert by.loc[("pythia-6.9b", "h100x1"), "status"] == "no configuration fits"
    unanswered = out[out["status"].isin(["search unfinished", "naive only", "no configuration fits"])]
    for col in ("days", "gpu_days", "methods_label", "micro_batch", "mfu", "cloud_usd"):
        assert unanswered[col].isna().all(), f"{col}: an unfinished or naive-only search is no optimized answer"
    assert not {"search unfinished", "naive only"} & set(answers.ANSWERED), "the intro lists only ANSWERED rows"
    done = by.loc[("pythia-1b", "h100x1")]
    assert done["status"] == "search complete" and done["status"] in answers.ANSWERED
    assert (done["days"], done["methods_label"], done["micro_batch"], done["mfu"]) == (5.0, "free-lunch", 8, 0.4)
    assert done["cloud_usd"] == pytest.approx(cost.cloud_cost("h100-80gb", 1, 5.0))
    assert (done["model_name"], done["hardware"]) == (analysis.model_label("pythia-1b"),
                                                      cost.setup_label("h100-80gb", 1))
    assert by.loc[("pythia-1b", "h200x1"), "days"] == 4.0, "each setup answers for itself"
    empty = answers.answers(analysis.frame_from_rows([]), analysis.skipped_frame("/nonexistent"))
    assert empty.empty and list(empty.columns) == answers.ANSWER_COLUMNS


def test_configuration_cost_is_the_median_wall_time_of_what_ran_for_models_up_to_1b():
    """The engine's cost per configuration, per setup and revision: synchronized step rows that ran (measured or
    out of memory) of models up to about 1B parameters; validations, unsynchronized timings and larger models
    are not counted."""
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import preset
    from academic_bench.results import make_row

    def row(model, duration, outcome="ok", timing="synced", mode="step"):
        c = Config(model, "h100-80gb", 1, methods=preset("free-lunch"))
        fields = dict(step_time_s=1.0, micro_batch=1, gas=1) if outcome == "ok" else {}
        return {**make_row(c, setup="h100x1", outcome=outcome, timing=timing, mode=mode,
                           reason=None if outcome in ("ok", "oom") else "x", **fields), "duration_s": duration}

    rows = [row("pythia-160m", 10.0), row("pythia-1b", 40.0, outcome="oom"), row("pythia-410m", 30.0),
            row("pythia-160m", 500.0, mode="validate"), row("pythia-160m", 500.0, timing="unsynced"),
            row("pythia-2.8b", 500.0), row("pythia-410m", 500.0, outcome="error")]
    cost = analysis.configuration_cost(analysis.frame_from_rows(rows))
    assert cost[["setup", "engine", "configurations", "median_s", "max_s"]].values.tolist() == [
        ["h100x1", ENGINE_REVISION, 3, 30.0, 40.0]]


def test_the_one_launch_check_pairs_each_configuration_timed_both_ways_and_counts_the_search(tmp_path):
    """The engine page's check: each configuration of ``results-one-launch*.jsonl`` beside its twin in
    ``results-two-launch.jsonl`` (same setup, configuration and commit), the step's relative change, and per model
    and commit of the engine how many of the exhaustive search's valid configurations ran with one launch and what
    they cost in all."""
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.results import make_row

    def row(methods, step, duration, outcome="ok", commit="f" * 40, started_at="2026-01-01T00:00:00+00:00"):
        c = Config("pythia-1b", "h100-80gb", 1, methods=parse_methods(methods))
        fields = dict(step_time_s=step, micro_batch=16, gas=64) if outcome == "ok" else {}
        r = make_row(c, setup="h100x1", outcome=outcome, reason=None if outcome == "ok" else "x", **fields)
        return {**r, "env": {**r["env"], "git_commit": commit}, "started_at": started_at, "duration_s": duration}

    engine = tmp_path / "h100x1" / "evidence" / "engine"
    engine.mkdir(parents=True)
    one = [row("free-lunch", 10.1, 60.0), row("free-lunch+zero1+offload", 9.0, 120.0),
           row("free-lunch+offload", None, 0.0, outcome="invalid"), row("free-lunch+zero3+offload", 12.0, 150.0)]
    for name, rows in (("results-one-launch.jsonl", one), ("results-two-launch.jsonl", [row("free-lunch", 10.0, 90.0)]),
                       ("results-one-launch.second-machine.jsonl", [row("free-lunch", 12.0, 1.0)]),
                       # the same model searched again by a later engine, later the same day (its commit sorts
                       # before the first's, its file name too)
                       # (this engine keeps where each row's wall time went; its first try of free-lunch failed)
                       ("results-one-launch-2.jsonl", [{**row(m, step, s, outcome=outcome, commit="1" * 40 + "+dirty",
                                                              started_at="2026-01-01T09:00:00+00:00"),
                                                        "wall_breakdown": spent}
                                                       for m, step, s, outcome, spent in (
                                                           ("free-lunch", None, 300.0, "error",
                                                            {"trials": 290.0, "teardown": 10.0}),
                                                           ("free-lunch", 10.0, 40.0, "ok",
                                                            {"start": 24.0, "trials": 10.0, "timed": 6.0}),
                                                           ("free-lunch+zero3+offload", 12.0, 90.0, "ok",
                                                            {"build": 54.0, "trials": 20.0, "timed": 16.0}))]),
                       # a search of which one row records where its time went and one does not
                       ("results-one-launch-3.jsonl", [{**row("free-lunch", 10.0, 40.0, commit="2" * 40,
                                                              started_at="2026-01-02T00:00:00+00:00"),
                                                        "wall_breakdown": {"trials": 30.0, "timed": 10.0}},
                                                       row("free-lunch+zero3+offload", 12.0, 90.0, commit="2" * 40,
                                                           started_at="2026-01-02T00:00:00+00:00")])):
        (engine / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    check = analysis.launch_check(tmp_path)
    assert len(check) == 1 and check.loc[0, "methods_label"] == "free-lunch"
    assert check.loc[0, "step_change"] == pytest.approx(0.01) and (check.loc[0, "one_s"], check.loc[0, "two_s"]) == (
        60.0, 90.0), "the row of the twin's commit is the one taken beside it, not a later engine's"
    spent = analysis.search_cost(tmp_path)
    half = spent[spent["commit"] == "2222222"]
    assert len(half) == 1 and math.isnan(half["measured_share"].iloc[0]), (
        "a search with a row that records no breakdown has no share")
    spent = spent[spent["commit"] != "2222222"].reset_index(drop=True)
    assert spent[["model", "commit", "date", "configurations", "of", "median_s", "total_s", "slowest", "slowest_s",
                  "slowest_in_blocks"]].values.tolist() == [
        ["pythia-1b", "fffffff", "2026-01-01", 3, 12, 120.0, 330.0, "free-lunch + ZeRO-3 + offload", 150.0, True],
        ["pythia-1b", "1111111+dirty", "2026-01-01", 2, 12, 65.0, 130.0, "free-lunch + ZeRO-3 + offload", 90.0,
         True]], "one row per commit of the engine, in the order they ran; a commit's configuration counts once"
    assert math.isnan(spent.loc[0, "measured_share"]), "a search whose rows record no breakdown has no share"
    assert spent.loc[1, "measured_share"] == pytest.approx((10 + 6 + 20 + 16) / 130), (
        "the share of the search's wall time that was trial steps and timed repetitions, from the rows it counts "
        "(not the failed try before one of them)")
    assert analysis.launch_check(tmp_path / "none").empty and analysis.search_cost(tmp_path / "none").empty


def test_each_engine_cost_check_pairs_the_same_configurations_before_and_after_with_their_commits(tmp_path):
    """The engine page's cost checks: every folder under ``evidence/engine-cost/`` with ``before/`` and ``after/``
    results, each configuration paired with its twin (the step's relative change, both wall times, both commits,
    each by its first 7 hex digits);
    a configuration measured by one version only, or that did not run, is left out, and so is a folder without
    ``after/``."""
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.results import make_row

    def row(methods, step, duration, commit, outcome="ok"):
        c = Config("pythia-1b", "h200", 1, methods=parse_methods(methods))
        fields = dict(step_time_s=step, micro_batch=32, gas=32) if outcome == "ok" else {}
        r = make_row(c, setup="h200x1", outcome=outcome, reason=None if outcome == "ok" else "x", **fields)
        return {**r, "duration_s": duration, "env": {**r["env"], "git_commit": commit}}

    checks = tmp_path / "h200x1" / "evidence" / "engine-cost"
    files = {"before": [row("free-lunch", 24.0, 50.0, "aaa"), row("free-lunch+zero1+offload", 24.4, 67.0, "aaa"),
                        row("free-lunch+offload", None, 0.0, "aaa", outcome="invalid")],
             "after": [row("free-lunch", 24.24, 40.0, "bbb"), row("free-lunch+offload", None, 0.0, "bbb",
                                                                   outcome="invalid")],
             "exit/before": [row("free-lunch", 24.0, 40.0, "bbb")],
             "exit/after": [row("free-lunch", 23.76, 34.0, "ccc4567" + "d" * 33)],  # a whole hash: shown short
             "unpaired/before": [row("free-lunch", 24.0, 40.0, "bbb")],
             "dirty/before": [row("free-lunch", 24.0, 40.0, "ccc4567" + "d" * 33)],
             "dirty/after": [row("free-lunch", 24.0, 39.0, "ccc4567" + "d" * 33 + "+dirty")]}
    for folder, rows in files.items():
        (checks / folder).mkdir(parents=True)
        (checks / folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = analysis.engine_changes(tmp_path)
    assert got[["check", "methods_label", "before", "after", "before_s", "after_s"]].values.tolist() == [
        ["engine-cost", "free-lunch", "aaa", "bbb", 50.0, 40.0],
        ["engine-cost/dirty", "free-lunch", "ccc4567", "ccc4567+dirty", 40.0, 39.0],  # uncommitted changes stay marked
        ["engine-cost/exit", "free-lunch", "bbb", "ccc4567", 40.0, 34.0]]
    assert got["step_change"].tolist() == pytest.approx([0.01, 0.0, -0.01])
    assert analysis.engine_changes(tmp_path / "none").empty


def test_a_same_machine_check_of_whole_searches_gives_each_folders_commit_count_and_cost(tmp_path):
    """The engine page's check of whole searches on one machine: one row per folder directly under
    ``evidence/engine-cost/<check>/`` with results (the engine before, after, after with workers started afresh),
    its commit, how many configurations ran (out of memory too, an invalid one not) and their median and total wall
    time; a nested pair (``single/before``) is not a search of that check."""
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.results import make_row

    def row(methods, duration, commit, outcome="ok"):
        c = Config("pythia-160m", "h200", 1, methods=parse_methods(methods))
        fields = dict(step_time_s=5.6, micro_batch=64, gas=16) if outcome == "ok" else {}
        r = make_row(c, setup="h200x1", outcome=outcome, reason=None if outcome == "ok" else "x", **fields)
        return {**r, "duration_s": duration, "env": {**r["env"], "git_commit": commit}}

    check = tmp_path / "h200x1" / "evidence" / "engine-cost" / "preload"
    files = {"before": [row("free-lunch", 30.0, "a" * 40), row("free-lunch+zero1+offload", 40.0, "a" * 40),
                        row("free-lunch+zero3+offload", 20.0, "a" * 40, outcome="oom"),
                        row("free-lunch+offload", 0.0, "a" * 40, outcome="invalid")],
             "after": [row("free-lunch", 25.0, "b" * 40), row("free-lunch+zero1+offload", 35.0, "b" * 40)],
             "single/before": [row("free-lunch", 99.0, "a" * 40)]}
    for folder, rows in files.items():
        (check / folder).mkdir(parents=True)
        (check / folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = analysis.check_searches("preload", tmp_path)
    assert got[["folder", "commit", "configurations", "median_s", "total_s"]].values.tolist() == [
        ["after", "bbbbbbb", 2, 30.0, 60.0], ["before", "aaaaaaa", 3, 30.0, 90.0]]
    assert analysis.check_searches("none", tmp_path).empty



def test_the_forked_worker_ab_reads_each_sides_wall_and_configurations(tmp_path):
    """The launcher's A/B: each search's wall from walls.txt (the rule's line beside them ignored) and the
    configurations each side measured."""
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.results import make_row

    def row(methods, duration):
        c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(methods))
        r = make_row(c, setup="h100x1", outcome="ok", reason=None, step_time_s=6.1, micro_batch=32, gas=32)
        return {**r, "duration_s": duration}

    ab = tmp_path / "h100x1" / "evidence" / "engine" / "forked-ab"
    for side, durations in (("on", (20.0, 30.0)), ("off", (25.0, 35.0))):
        (ab / side).mkdir(parents=True)
        rows = [row("free-lunch", durations[0]), row("free-lunch+zero1+offload", durations[1])]
        (ab / side / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (ab / "walls.txt").write_text("pythia-160m on exhaustive rc=0 wall_s=55\npythia-160m off exhaustive rc=0 "
                                  "wall_s=66\nwith the forked-worker launcher 55 s, without 66 s: 16.7% saved\n")
    got = analysis.forked_ab(tmp_path).set_index("side")
    assert got.loc["on", ["wall_s", "configurations", "total_s"]].tolist() == [55.0, 2, 50.0]
    assert got.loc["off", ["wall_s", "configurations", "median_s"]].tolist() == [66.0, 2, 30.0]
    assert analysis.forked_ab(tmp_path / "none").empty

def test_one_process_is_set_beside_the_engines_rows_of_the_same_configurations(tmp_path):
    """The one-process probe against the engine's cost rows: each configuration's two steps paired by its id,
    whether the probe's lies inside the engine row's spread and ran after DeepSpeed's ZeRO-3 in that process, and
    each side's wall and share outside the trials and timed repetitions (the engine's: its rows' durations; the
    probe's: its process's whole life, with its exit status), of the engine's whole search."""
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.results import make_row

    configs = [Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(m))
               for m in ("free-lunch", "free-lunch+zero3+offload", "free-lunch+ckpt", "free-lunch+zero1+offload")]
    engine = tmp_path / "h100x1" / "evidence" / "engine"
    (engine / "one-process").mkdir(parents=True)
    rows = [{**make_row(c, setup="h100x1", outcome="ok", reason=None, step_time_s=step, micro_batch=32, gas=32),
             "step_time_spread": [step * 0.99, step * 1.01], "duration_s": 40.0,
             "wall_breakdown": {"start": 5.0, "build": 15.0, "trials": 10.0, "timed": 10.0}}
            for c, step in zip(configs, (6.0, 12.0, 8.0, 7.0))]
    (engine / "results-one-launch.cost-3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # An earlier search measured the first configuration too: the engine's own spread of it.
    (engine / "results-one-launch.cost-2.jsonl").write_text(json.dumps({**rows[0], "step_time_s": 5.7}) + "\n")
    lines = [{"model": "pythia-160m", "process_ready_s": 4.0}]
    # The fourth configuration never ran: the process was killed before it (its exit status 137).
    lines += [{"config": c.id, "methods": c.methods.label(), "outcome": "ok", "micro_batch": 32, "step_time_s": step,
               "phases": {"build": 3.0, "trials": 10.0, "timed": 10.0}, "measured_s": 24.0, "freed_s": 1.0,
               "host_available_gb_after": host}
              for c, step, host in zip(configs[:3], (6.03, 12.5, 7.0), (120.0, 100.0, 99.0))]
    (engine / "one-process" / "pythia-160m.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (engine / "one-process" / "walls.txt").write_text("pythia-1b one process rc=0 wall_s=500\n"
                                                      "pythia-160m one process rc=137 wall_s=90\n")
    per, searches = analysis.one_process(tmp_path)
    assert per["inside_spread"].tolist() == [True, False, False]
    assert per["after_zero3"].tolist() == [False, False, True]
    assert per["engine_measured"].tolist() == [2, 1, 1]
    assert per["engine_spread"].round(4).tolist() == [round(6.0 / 5.7 - 1, 4), 0.0, 0.0]
    assert per["host_gb_after"].tolist() == [120.0, 100.0, 99.0]
    assert per["step_change"].round(4).tolist() == [0.005, round(12.5 / 12 - 1, 4), -0.125]
    got = searches.set_index("side")
    assert got.loc["a process per configuration", ["configurations", "of", "wall_s", "outside_share"]].tolist() == [
        3, 4, 120.0, 0.5]
    assert got.loc["one process", ["configurations", "of", "wall_s", "median_s", "rc"]].tolist() == [
        3, 4, 90.0, 25.0, 137.0]
    assert got.loc["one process", "outside_share"] == pytest.approx(1 - 60 / 90)
    assert all(f.empty for f in analysis.one_process(tmp_path / "none"))


def test_a_run_folder_name_in_a_sentence_is_given_as_its_hardware():
    names = {"h200x1": "1 x H200 141GB SXM"}
    said = analysis.setups_in_words("on h200x1 (scaled from h200x1); h200x1-tiny stays", names)
    assert said == "on 1 x H200 141GB SXM (scaled from 1 x H200 141GB SXM); h200x1-tiny stays"


def test_a_gpu_key_in_a_refusal_is_given_as_the_gpus_name():
    said = analysis.gpus_in_words("nothing fits 1 x h100-80gb; the smallest: 2 x h100-80gb (free-lunch+zero3); h200x1")
    assert said == ("nothing fits 1 x H100 80GB SXM; the smallest: 2 x H100 80GB SXM (free-lunch+zero3); h200x1")
    assert analysis.gpus_in_words("h100-pcie, not h100-80gb-ish") == "H100 80GB PCIe, not h100-80gb-ish"


def test_a_warm_up_block_kept_as_a_timed_repetition_counts_as_measured_work():
    """Rows written before the engine booked a kept warm-up block as ``timed`` have it under ``warmup``; their note
    says it counted as a repetition, and it is read as the timed work it was. A warm-up left out stays overhead."""
    from academic_bench.analysis.launches import spent_of
    from academic_bench.measure.wall import WARMUP_COUNTED

    spent = {"build": 20.0, "trials": 5.0, "warmup": 30.0, "timed": 30.0}
    kept = {"wall_breakdown": spent, "ran": {"notes": [f"the warm-up block took 30 s, the first timed one 30 s "
                                                       f"(+0.00%): {WARMUP_COUNTED}"]}}
    left = {"wall_breakdown": spent, "ran": {"notes": ["the warm-up block took 40 s, the first timed one 30 s "
                                                       "(+33.33%): it is left out"]}}
    assert spent_of(kept) == {**spent, "warmup": 0.0, "timed": 60.0}
    from academic_bench.measure.wall import WARMUP_BOOKED

    booked = {"wall_breakdown": {**spent, "warmup": 0.5, "timed": 59.5},
              "ran": {"notes": [f"the warm-up block took 30 s, the first timed one 30 s (+0.00%): {WARMUP_BOOKED}"]}}
    assert spent_of(booked) == booked["wall_breakdown"], "a row the engine booked so is read as it is"
    assert spent_of(left) == spent and spent_of({"ran": {}}) is None
    assert sum(spent_of(kept).values()) == sum(spent.values()), "the row's wall time is unchanged"
