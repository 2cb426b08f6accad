"""The smart search's rules against the shipped measurements: no rule may be contradicted by what was measured,
where a difference inside the machine-to-machine spread (read from the shipped repeated measurements) is a tie
that the cheaper setting wins."""
from __future__ import annotations

import math
from dataclasses import replace
from collections import defaultdict
from pathlib import Path

import pytest

from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import (Spread, as_spread, faster_beyond_spread, latest_rows, load_runs, machine_spread,
                                    make_row, repeated_measurements, status_of, step_kind, step_spreads)
from academic_bench.results import ENGINE_REVISION
from academic_bench.results import DEFAULT_RUNS, step_ceiling
from academic_bench.estimate.stats import RECOMPUTE_FRACTION, recomputed_share
from academic_bench.search.smart import SmartPruner


def contradictions(rows: list[dict], spread: Spread | float) -> list[str]:
    """Each pair (c, o) of one setting where the pruner, having seen only o, skips c though c's own row says
    otherwise: c measured although it 'cannot fit' or 'cannot finish', or c faster than o beyond the spread the
    two compare within although it 'cannot win'."""
    by_setting: dict[tuple, list[tuple[Config, dict]]] = defaultdict(list)
    for r in latest_rows(rows):
        if r["timing"] == "synced" and r["mode"] == "step" and not r["config"].get("tiny"):
            c = Config.from_dict(r["config"])
            by_setting[(r["setup"], c.model, c.gpu, c.n_gpus)].append((c, r))
    found = []
    for key, items in by_setting.items():
        for o, seen in items:
            if status_of(seen) not in ("measured", "failed"):
                continue  # a sweep's pruner never sees a row set aside or never started
            # The host-memory rule is about the machine running the sweep, which the rows do not record.
            pruner = SmartPruner(timeout_s=600, host_memory_gb=math.inf, spread=spread,
                                 ceiling=lambda gpu: step_ceiling(gpu, Path(DEFAULT_RUNS)))
            pruner.observe(o, seen)
            for c, mine in items:
                why = None if c.id == o.id else pruner.skip(c)
                if not why or status_of(mine) != "measured":
                    continue
                within = as_spread(spread).of(c.methods.offload, o.methods.offload)
                wins = (seen["outcome"] != "ok"
                        or faster_beyond_spread(mine["step_time_s"], seen["step_time_s"], within))
                if not why[0].startswith("cannot win") or wins:
                    found.append(f"{key}: {c.methods.label()} ({mine['step_time_s']:.4g} s) skipped as "
                                 f"'{why[0]}' after {o.methods.label()} ({seen['outcome']}, "
                                 f"{seen.get('step_time_s')} s)")
    return found


def test_no_shipped_measurement_contradicts_a_smart_rule():
    rows = load_runs()
    assert contradictions(rows, step_spreads(rows)) == []


def test_a_contradiction_is_found_when_one_is_there():
    """The check itself (synthetic rows, not measurements): within one library, a configuration that saves more
    memory measured 10% faster than one that already runs the whole batch contradicts 'cannot win', unless the
    spread is wider than that."""
    less, more = (Config("pythia-1b", "h100-80gb", 1, methods=parse_methods(m))
                  for m in ("free-lunch+zero1+offload", "free-lunch+ckpt+zero1+offload"))
    rows = [make_row(less, setup="t", outcome="ok", micro_batch=less.per_gpu_batch, gas=1, step_time_s=1.0),
            make_row(more, setup="t", outcome="ok", micro_batch=8, gas=less.per_gpu_batch // 8, step_time_s=0.9)]
    assert len(contradictions(rows, 0.05)) == 1 and contradictions(rows, 0.2) == []


def test_the_spread_is_the_largest_difference_between_measurements_of_the_same_work():
    c, other = (Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(m)) for m in ("free-lunch", "naive"))
    rows = [make_row(c, setup="a", outcome="ok", micro_batch=32, gas=32, step_time_s=t) for t in (1.0, 1.02, 1.01)]
    rows += [make_row(c, setup="a", outcome="ok", micro_batch=16, gas=64, step_time_s=2.0),  # other work
             make_row(c, setup="b", outcome="ok", micro_batch=32, gas=32, step_time_s=3.0),  # another setup
             make_row(other, setup="a", outcome="ok", micro_batch=32, gas=32, step_time_s=1.5, timing="unsynced"),
             make_row(other, setup="a", outcome="ok", micro_batch=32, gas=32, step_time_s=1.0, timing="unsynced")]
    assert list(repeated_measurements(rows)) == [("a", c.id, 32, ENGINE_REVISION)]
    assert machine_spread(rows) == pytest.approx(0.02)
    assert machine_spread(rows[3:]) == 0.0
    # Another engine revision's timing of the same work, and a timing its own sustained check contradicted
    # (the sustained steps 5% away), say nothing of how far two machines differ.
    older = {**rows[0], "engine": ENGINE_REVISION - 1, "step_time_s": 1.2}
    missed = {**rows[0], "step_time_s": 1.1, "validate": {"steps": 3, "rel_error": -0.05}}
    held = {**rows[0], "step_time_s": 1.025, "validate": {"steps": 3, "rel_error": 0.01}}
    assert machine_spread(rows + [older, missed]) == pytest.approx(0.02)
    assert machine_spread(rows + [held]) == pytest.approx(0.025)
    # The same size fixed by hand (``--micro-batch 32``) times the same work as the search's 32.
    fixed = make_row(replace(c, micro_batch=32), setup="a", outcome="ok", micro_batch=32, gas=32, step_time_s=1.04)
    assert machine_spread(rows + [fixed]) == pytest.approx(0.04)
    assert list(repeated_measurements(rows + [fixed])) == [("a", c.id, 32, ENGINE_REVISION)]
    assert not faster_beyond_spread(1.0, 1.02, 0.02) and faster_beyond_spread(1.0, 1.03, 0.02)


def test_steps_offloading_to_the_host_have_a_spread_of_their_own():
    """A step that offloads also runs on the host's processors and memory, which a GPU of the kind does not bring
    along: its spread is read apart from that of steps on the GPU alone, two kinds compare within the wider of
    theirs, and a kind nothing was measured twice of gets the widest measured."""
    gpu, host = (Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(m))
                 for m in ("free-lunch", "free-lunch+zero1+offload"))
    rows = [make_row(gpu, setup="a", outcome="ok", micro_batch=32, gas=32, step_time_s=t) for t in (1.0, 1.01)]
    rows += [make_row(host, setup="a", outcome="ok", micro_batch=32, gas=32, step_time_s=t) for t in (2.0, 2.1)]
    s = step_spreads(rows)
    assert s.by_kind == pytest.approx({step_kind(False): 0.01, step_kind(True): 0.05})
    assert s.overall == pytest.approx(0.05)
    assert s.counts == {step_kind(False): 1, step_kind(True): 1}
    assert s.of(False) == pytest.approx(0.01) and s.of(False, True) == pytest.approx(0.05)
    assert machine_spread(rows) == pytest.approx(0.05), "the study-wide figure is the widest of the kinds"
    assert s.kind_of(False, True) == step_kind(True) and s.kind_of(False) == step_kind(False)
    only_gpu = step_spreads(rows[:2])
    assert only_gpu.of(True) == pytest.approx(0.01), "no offloading step measured twice: the widest measured"
    assert step_spreads(rows + rows).counts == s.counts, "a row read twice is one measurement"
    assert as_spread(0.02).of(True, False) == 0.02


def test_a_sweep_reads_its_own_repeats_beside_the_shipped_ones_per_kind_of_step():
    """A sweep's file that measured an offloading step twice, 50% apart, widens that kind's spread for its pruner;
    the spread of steps on the GPU alone stays the shipped runs'."""
    from academic_bench.search.sweep import _spread

    host = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch+zero1+offload"))
    stored = [make_row(host, setup="mine", outcome="ok", micro_batch=32, gas=32, step_time_s=t) for t in (2.0, 3.0)]
    shipped = step_spreads(load_runs())
    assert _spread(stored).of(True) == pytest.approx(0.5)
    assert _spread(stored).of(False) == pytest.approx(shipped.of(False))
    assert _spread([]).by_kind == shipped.by_kind
    # A notebook's file is among the shipped runs: its rows, read twice, are one measurement each.
    again = _spread(load_runs())
    assert again.counts == shipped.counts and again.by_kind == shipped.by_kind


def test_the_shipped_spread_comes_from_repeated_measurements():
    rows = load_runs()
    repeats = repeated_measurements(rows)
    assert repeats, "the shipped runs measure some configurations more than once"
    assert machine_spread(rows) == max(max(t) / min(t) - 1 for t in repeats.values())


def test_cannot_win_compares_only_with_a_step_doing_no_more_work_per_micro_step():
    """A step on bf16 weights (DeepSpeed, FSDP) is not overhead on free-lunch's autocast over fp32 weights: ZeRO-1 +
    offload and FSDP + offload are still measured after free-lunch ran the whole batch, or when the memory model
    gives them no larger micro-batch, while checkpointing on free-lunch's path is skipped. ZeRO-3 is judged by
    ZeRO-1 + offload, FSDP's offloading is not (the other library's step is other work: on one H100 ckpt + FSDP
    full-shard + offload beat ZeRO-3 + offload); a switch beyond the paper on one side makes other work."""
    class Same:  # a memory model that predicts the same largest micro-batch for everything
        @staticmethod
        def max_micro_batch(config, gpu_gb):
            return 16

        @staticmethod
        def predict_memory(config, micro_batch):
            return 1e9

        @staticmethod
        def usable_bytes(gpu_gb):
            return gpu_gb * 1e9

        @staticmethod
        def host_memory_need(config):
            return 0.0

    def cfg(m: str) -> Config:
        return Config("pythia-1b", "h100-80gb", 1, methods=parse_methods(m))

    def after(measured: str, gas: int) -> SmartPruner:
        base = cfg(measured)
        p = SmartPruner(host_memory_gb=math.inf)
        p.estimate = Same()
        p.observe(base, make_row(base, setup="t", outcome="ok", micro_batch=base.per_gpu_batch // gas, gas=gas,
                                 step_time_s=1.0))
        return p

    for gas, category in ((1, "cannot win (batch already fits)"), (64, "cannot win (no larger micro-batch)")):
        p = after("free-lunch", gas)
        assert p.skip(cfg("free-lunch+ckpt"))[0] == category
        assert p.skip(cfg("free-lunch+fsdp_full_shard+offload")) is None
        assert p.skip(cfg("free-lunch+zero1+offload")) is None
        p = after("free-lunch+zero1+offload", gas)
        assert p.skip(cfg("free-lunch+fsdp_shard_grad_op+offload")) is None
        assert p.skip(cfg("free-lunch+zero3+offload"))[0] == category
        assert after("free-lunch+fp8-rowwise", gas).skip(cfg("free-lunch+ckpt")) is None


def test_fp8_out_of_memory_at_its_smallest_micro_batch_says_nothing_of_micro_batch_1():
    """FP8 training cannot run below micro-batch 16 with Pythia's sequences, so its "even 16 does not fit" (Pythia-6.9B
    on one H200) does not mean that free-lunch, which saves no less memory by the rule's measure, cannot fit at 1:
    free-lunch ran there at micro-batch 2."""
    fp8, plain = (Config("pythia-6.9b", "h200", 1, methods=parse_methods(m))
                  for m in ("free-lunch+fused-ce+fp8-tensorwise", "free-lunch"))
    pruner = SmartPruner(timeout_s=600, host_memory_gb=math.inf)
    row = make_row(fp8, setup="t", outcome="oom", reason="even micro-batch 16 does not fit")
    pruner.observe(fp8, {**row, "mbs_search": [{"micro_batch": 16, "outcome": "oom", "peak_memory_gb": None}]})
    assert pruner.skip(plain) is None


def test_checkpointing_is_skipped_only_where_its_recompute_cannot_be_won_back():
    """Rule 6: after free-lunch ran at an MFU that, with checkpointing's extra forward added, already needs more of
    the peak than the GPU's matrix products reach, free-lunch + ckpt cannot win and is skipped; at a low MFU (a
    larger micro-batch could still pay for the recompute), or with no ceiling known for the GPU, it runs."""
    base = Config("pythia-1b", "h100-80gb", 1, methods=parse_methods("free-lunch"))
    ckpt = replace(base, methods=parse_methods("free-lunch+ckpt"))
    sharded = replace(base, methods=parse_methods("free-lunch+ckpt+zero1+offload"))

    def pruner_after(mfu: float, ceiling: float | None, peak: float = 1000e12,
                     spread: Spread | float = 0.05) -> SmartPruner:
        p = SmartPruner(use_memory_model=False, ceiling=lambda gpu: ceiling, spread=spread)
        p.observe(base, make_row(base, setup="t", outcome="ok", micro_batch=16, gas=64, step_time_s=25.0, mfu=mfu,
                                 peak_flops=peak))
        return p

    skipped = pruner_after(0.6, 700e12).skip(ckpt)
    assert skipped and skipped[0] == "cannot win (recompute)" and "700 TFLOP/s at most" in skipped[1]
    assert pruner_after(0.3, 700e12).skip(ckpt) is None
    assert pruner_after(0.6, None).skip(ckpt) is None
    # Sharding and offloading beside checkpointing only add time to the same hardware FLOPs: skipped too.
    assert pruner_after(0.6, 700e12).skip(sharded)[0] == "cannot win (recompute)"
    # Only a configuration that saves less memory speaks: ZeRO-3 + offload measured says nothing of ckpt alone.
    zero3 = replace(base, methods=parse_methods("free-lunch+zero3+offload"))
    p = SmartPruner(use_memory_model=False, ceiling=lambda gpu: 700e12, spread=0.05)
    p.observe(zero3, make_row(zero3, setup="t", outcome="ok", micro_batch=16, gas=64, step_time_s=25.0, mfu=0.6,
                              peak_flops=1000e12))
    assert p.skip(ckpt) is None
    fp8 = (replace(base, methods=parse_methods(m)) for m in ("free-lunch+fp8-rowwise", "free-lunch+fp8-rowwise+ckpt"))
    fp8_base, fp8_ckpt = fp8
    p = SmartPruner(use_memory_model=False, ceiling=lambda gpu: 700e12, spread=0.05)
    p.observe(fp8_base, make_row(fp8_base, setup="t", outcome="ok", micro_batch=16, gas=64, step_time_s=20.0,
                                 mfu=0.6, peak_flops=1000e12))
    assert p.skip(fp8_ckpt) is None  # FP8's products run faster than the bf16 ceiling
    # An MFU of a lower peak (an fp32 recipe's) is a lower rate of hardware FLOPs: no skip.
    assert pruner_after(0.6, 700e12, peak=67e12).skip(ckpt) is None
    # Winning "by more than the spread" reads the spread of the two steps' kinds: ckpt alone against free-lunch
    # (both on the GPU) within the GPU's, ckpt + ZeRO-1 + offload within the offloading steps' wider one.
    recompute = RECOMPUTE_FRACTION * recomputed_share("pythia-1b")
    mfu = 700e12 / (1000e12 * (1 + recompute) * 1.25)  # needs 0.8 of the ceiling, 1.2 of it with a 50% spread
    kinds = Spread({step_kind(False): 0.0, step_kind(True): 0.5}, 0.5)
    assert pruner_after(mfu, 700e12, spread=kinds).skip(ckpt) is None
    skipped = pruner_after(mfu, 700e12, spread=kinds).skip(sharded)
    assert skipped[0] == "cannot win (recompute)" and "(50.0%)" in skipped[1]


def test_todays_rules_replayed_on_every_exhaustive_search_find_its_optimum_at_a_quarter_of_its_gpu_time():
    """The smart search's target, on the shipped exhaustive searches: fed each search's rows in the smart search's order,
    today's rules keep a configuration within 3% of the optimum (or tied with it within the machine spread) and
    measure at most a quarter of the exhaustive search's GPU time."""
    from academic_bench.analysis.search import smart_replayed

    replayed = smart_replayed()
    assert not replayed.empty
    for r in replayed.itertuples():
        assert r.gap <= max(0.03, r.machine_spread) and r.gpu_time_share <= 0.25, r
