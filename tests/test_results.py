"""The result store: schema validation, atomic appends, torn-line recovery, loading runs; environment capture."""
from __future__ import annotations

import json
import multiprocessing as mp
import warnings

import pytest

from academic_bench.catalog.config import Config
from academic_bench.catalog.env import ENV_KEYS, capture_env, library_version
from academic_bench.catalog.methods import FREE_LUNCH, NAIVE
from academic_bench.results import ROW_KEYS, ResultStore, RowError, load_runs, make_row

CFG = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, micro_batch=8, tiny=True)


def ok_row(config: Config = CFG, **kw) -> dict:
    # Synthetic placeholder numbers (not measurements): the store only checks their shape.
    fields = dict(micro_batch=8, gas=1, step_time_s=1.0, days=1.0)
    fields.update(kw)
    return make_row(config, setup="test", outcome="ok", **fields)


def test_make_row_has_every_key_and_round_trips(tmp_path):
    store = ResultStore(tmp_path / "r" / "results.jsonl")
    row = ok_row(mfu=float("nan"))
    assert set(ROW_KEYS) <= set(row)
    store.append(row)
    [back] = store.rows()
    assert back["config_id"] == CFG.id and back["mfu"] is None  # NaN is stored as null (strict JSON)
    assert set(back["env"]) == set(ENV_KEYS)
    assert store.done_ids() == {CFG.id}


@pytest.mark.parametrize("change, message", [
    ({"outcome": "crashed"}, "outcome 'crashed' is not one of"),
    ({"timing": "maybe"}, "timing 'maybe' is not one of"),
    ({"outcome": "error", "reason": None}, "needs a reason"),
    ({"step_time_s": None}, "positive step_time_s"),
    ({"gas": 0}, "micro_batch and gas"),
    ({"mfu": "high"}, "mfu must be a number"),
])
def test_append_refuses_rows_that_break_the_schema(tmp_path, change, message):
    store = ResultStore(tmp_path / "results.jsonl")
    with pytest.raises(RowError, match=message):
        store.append({**ok_row(), **change})
    assert not store.path.exists()


def test_missing_keys_are_named(tmp_path):
    row = ok_row()
    del row["env"], row["times"]
    with pytest.raises(RowError, match="missing keys: times, env"):
        ResultStore(tmp_path / "results.jsonl").append(row)


def test_malformed_line_in_the_middle_names_file_and_line(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    store.append(ok_row())
    with open(store.path, "a") as f:
        f.write("{not json\n")
    store.append(ok_row(config=Config("pythia-410m", "h100-80gb", tiny=True)))
    with pytest.raises(RowError, match=r"results.jsonl:2: not a JSON object"):
        store.rows()


def test_valid_json_with_bad_schema_names_the_line(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    store.append(ok_row())
    bad = {**ok_row(), "outcome": "fine"}
    with open(store.path, "a") as f:
        f.write(json.dumps(bad) + "\n")
    with pytest.raises(RowError, match=r"results.jsonl:2: outcome 'fine'"):
        store.rows()


def test_torn_last_line_is_ignored_then_removed_by_the_next_append(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    store.append(ok_row())
    line = json.dumps(ok_row(config=Config("pythia-410m", "h100-80gb", tiny=True)))
    with open(store.path, "a") as f:
        f.write(line[: len(line) // 2])  # a writer killed half-way
    with pytest.warns(UserWarning, match="torn last line"):
        assert [r["config_id"] for r in store.rows()] == [CFG.id]
    third = ok_row(config=Config("pythia-1b", "h100-80gb", tiny=True))
    with pytest.warns(UserWarning, match="removing a torn last line"):
        store.append(third)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r["config_id"] for r in store.rows()] == [CFG.id, third["config_id"]]


def test_a_whole_last_row_without_newline_is_kept(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    store.path.write_text(json.dumps(ok_row()))
    assert len(store.rows()) == 1
    store.append(ok_row(config=Config("pythia-410m", "h100-80gb", tiny=True)))
    assert len(store.rows()) == 2


def _hammer(path: str, worker: int, n: int) -> None:
    store = ResultStore(path)
    for i in range(n):
        cfg = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, micro_batch=1 + (i % 8), tiny=True)
        # a long reason makes each line larger than a pipe buffer, so interleaving would show
        store.append({**make_row(cfg, setup=f"w{worker}", outcome="error", reason="x" * 70_000)})


def test_concurrent_appends_never_interleave(tmp_path):
    path = str(tmp_path / "results.jsonl")
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_hammer, args=(path, w, 15)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    rows = ResultStore(path).rows()
    assert len(rows) == 60 and all(len(r["reason"]) == 70_000 for r in rows)


def test_done_ids_filters_timing_and_mode(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    other = Config("pythia-160m", "h100-80gb", 1, methods=FREE_LUNCH, micro_batch=8, tiny=True)
    store.append(ok_row())
    store.append(ok_row(config=other, timing="unsynced"))
    assert store.done_ids() == {CFG.id, other.id}
    assert store.done_ids(timing="synced", mode="step") == {CFG.id}
    assert store.done_ids(timing="synced", mode="validate") == set()


def test_load_runs_reads_every_setup(tmp_path):
    assert load_runs(tmp_path / "nothing-here") == []
    ResultStore(tmp_path / "h100x1" / "results.jsonl").append(ok_row())
    ResultStore(tmp_path / "h200x2" / "results.jsonl").append(ok_row(config=Config("pythia-410m", "h200", 2,
                                                                                    tiny=True)))
    (tmp_path / "README.md").write_text("not a setup")
    assert [r["config"]["gpu"] for r in load_runs(tmp_path)] == ["h100-80gb", "h200"]


def test_environment_capture():
    env = capture_env()
    assert tuple(env) == ENV_KEYS
    assert env["torch"] and env["python"] and env["hostname"]
    assert library_version("surely_not_a_module_here", "surely-not") is None


# --- the run state ----------------------------------------------------------------------------------------------

def test_every_row_says_its_run_state_and_older_rows_are_read_the_same_way(tmp_path):
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.results import NOT_RUN_PREFIX, status_of

    store = ResultStore(tmp_path / "r.jsonl")
    cfg = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch"), tiny=True)
    store.append(make_row(cfg, setup="t", outcome="ok", micro_batch=1, gas=1, step_time_s=1.0))
    store.append(make_row(cfg, setup="t", outcome="oom", reason="out of memory"))
    store.append(make_row(cfg, setup="t", outcome="not run", reason=f"{NOT_RUN_PREFIX} the budget was spent"))
    ok, oom, left = store.rows()
    assert [r["status"] for r in (ok, oom, left)] == ["measured", "failed", "not run"], "written with the row"
    assert [status_of(r) for r in (ok, oom, left)] == ["measured", "failed", "not run"]
    # A row written before the state existed: a budget's unstarted configuration was stored as a timeout.
    old = {k: v for k, v in left.items() if k != "status"} | {"outcome": "timeout"}
    assert status_of(old) == "not run"
    real = {k: v for k, v in oom.items() if k != "status"} | {"outcome": "timeout", "reason": "no result in 60 s"}
    assert status_of(real) == "failed"
    # A DeepSpeed measurement an engine correction invalidated is read as set aside, whatever it was written as.
    zero = make_row(Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch+zero1+offload"),
                           tiny=True), setup="t", outcome="ok", micro_batch=1, gas=1, step_time_s=1.0, engine=1)
    store.append(zero)
    assert store.rows()[-1]["status"] == "measured" and status_of(store.rows()[-1]) == "set aside"


def test_a_stored_row_whose_state_contradicts_its_outcome_stops_the_load(tmp_path):
    from academic_bench.catalog.methods import parse_methods

    cfg = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch"), tiny=True)
    row = make_row(cfg, setup="t", outcome="oom", reason="out of memory") | {"status": "measured"}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(RowError, match=r"r.jsonl:1: status 'measured' does not match outcome 'oom'"):
        ResultStore(path).rows()


def test_the_fastest_row_is_a_measured_one_and_ties_go_to_the_lower_configuration_id(tmp_path):
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.results import fastest_row

    def row(spec, step, outcome="ok", **kw):
        cfg = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(spec), tiny=True)
        return make_row(cfg, setup="t", outcome=outcome, micro_batch=1, gas=1, step_time_s=step,
                        reason=None if outcome == "ok" else "why", **kw)

    free, ckpt = row("free-lunch", 2.0), row("free-lunch+ckpt", 2.0)
    aside = row("free-lunch+zero1+offload", 1.0, engine=1)  # faster, but an engine correction voided it
    failed = row("naive", 0.5, outcome="error")
    assert fastest_row([free, ckpt, aside, failed]) is min(free, ckpt, key=lambda r: r["config_id"])
    assert fastest_row([free, ckpt], lambda r: r is ckpt) is ckpt
    assert fastest_row([aside, failed]) is None
