"""The in-rank half of the benchmark on the CPU: phases, timing arithmetic, the micro-batch search, what ran.

Multi-process paths (DDP, FSDP, 8 gloo ranks, torchrun isolation) are exercised through the launcher in
tests/test_launch.py; these call the worker's functions directly in this process.
"""
from __future__ import annotations

import sys
import time
import types

import pytest
import torch

import faulty_worker
from academic_bench.catalog.config import Config
from academic_bench.measure import data, extrapolation, microbatch, timing, wall, worker
from academic_bench.measure.apply import (MAMBA_MODELING, Ran, Unsupported, apply_compile, apply_kernels_check,
                                          deepspeed_config)
from academic_bench.measure.stepper import Stepper
from academic_bench.catalog.methods import FREE_LUNCH, Methods, parse_methods
from academic_bench.catalog.models import get_model


def tiny(model="pythia-160m", methods=Methods(kernels=True), **kw) -> Config:
    return Config(model, "h100-80gb", 1, methods=methods, tiny=True, **kw)


def test_phases_are_timed_at_least_five_times_after_warmup():
    cfg = tiny()
    stepper = Stepper(cfg, 2, cfg.per_gpu_batch // 2, "cpu")
    phases = timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=5)
    assert set(phases) == {"accumulate_first", "accumulate", "boundary", "optimizer"}
    assert all(len(v) == 5 and all(t > 0 for t in v) for v in phases.values())
    stepper = Stepper(cfg, 4, 2, "cpu")  # two micro-steps a step: no steady accumulating one to time
    assert set(timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=5)) == {"accumulate_first", "boundary",
                                                                             "optimizer"}


def test_timing_near_its_deadline_keeps_five_repetitions_and_says_it_stopped():
    import time

    cfg = tiny()
    stepper = Stepper(cfg, 2, cfg.per_gpu_batch // 2, "cpu")
    phases = timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=8, deadline=time.time())
    assert len(phases["boundary"]) == timing.MIN_REPS == 5 and len(phases["accumulate"]) == 5
    assert stepper.ran.notes[-1] == "timing stopped after 5 of 8 repetitions to end within the time limit"
    stepper = Stepper(cfg, 2, cfg.per_gpu_batch // 2, "cpu")
    phases = timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=8, deadline=time.time() + 3600)
    assert len(phases["boundary"]) == 8 and not any("timing stopped" in n for n in stepper.ran.notes)


def test_timing_stops_after_three_repetitions_that_settle_the_step_and_only_then(monkeypatch):
    """Three repetitions whose fastest and slowest phases give steps within 1% of each other settle the step: the
    timing stops there and says so. A wider third repetition, or no step to judge by, times all five."""
    cfg = tiny()

    def timed_with(chains: list[float], step: bool) -> tuple[dict, Stepper]:
        stepper = Stepper(cfg, 2, cfg.per_gpu_batch // 2, "cpu")
        seconds = iter(chains)  # one repetition's scale: its phases take it times (1, 1, 1.2, 0.5)

        def chain(phases, device):
            scale = next(seconds)
            return [(name, scale * w) for (name, _), w in zip(phases, (1.0, 1.0, 1.2, 0.5))]

        monkeypatch.setattr(timing, "time_chain", chain)
        rebuilt = (lambda t: extrapolation.rebuilt_step(t, stepper.gas, "synced")) if step else None
        return timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=5, step=rebuilt), stepper

    phases, stepper = timed_with([2.0, 2.0, 1.0, 1.004, 1.009, 1.5, 1.5], step=True)  # two warm-ups, then timed
    assert len(phases["boundary"]) == timing.AGREED_REPS == 3
    assert stepper.ran.notes[-1] == ("timing stopped after 3 of 5 repetitions: the steps from each phase's fastest "
                                     "and slowest repetition differ by at most 1%")
    phases, stepper = timed_with([2.0, 2.0, 1.0, 1.004, 1.011, 1.5, 1.5], step=True)
    assert len(phases["boundary"]) == 5 and not any("stopped" in n for n in stepper.ran.notes)
    phases, _ = timed_with([2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0], step=False)
    assert len(phases["boundary"]) == 5
    stepper = Stepper(cfg, 2, cfg.per_gpu_batch // 2, "cpu")  # asked for more than five: the bound does not hold
    seconds = iter([2.0, 2.0] + [1.0] * 8)
    monkeypatch.setattr(timing, "time_chain", lambda phases, device: [(n, next(seconds) if n == "boundary" else 1.0)
                                                                       for n, _ in phases])
    phases = timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=8,
                                step=lambda t: extrapolation.rebuilt_step(t, stepper.gas, "synced"))
    assert len(phases["boundary"]) == 8


def test_a_step_settled_by_three_repetitions_is_within_one_percent_of_the_step_of_five():
    """The bound the early stop rests on: wherever three repetitions settle the step (``timing.settled``), the step
    from the medians of five, whatever the last two took, is within ``AGREED_SPREAD`` of the step from three."""
    import random
    import statistics

    rng = random.Random(7)
    names, gas = ("accumulate_first", "accumulate", "boundary", "optimizer"), 16
    step = lambda t: extrapolation.rebuilt_step(t, gas, "synced")  # noqa: E731
    checked = 0
    for _ in range(2000):
        base = {n: rng.uniform(0.01, 1.0) for n in names}
        reps = [[(n, base[n] * rng.uniform(0.99, 1.012)) for n in names] for _ in range(3)]
        reps += [[(n, base[n] * rng.uniform(0.5, 2.0)) for n in names] for _ in range(2)]  # anything at all
        if not timing.settled(reps[:3], step, "cpu"):
            continue
        checked += 1
        three, five = ({n: statistics.median(dict(r)[n] for r in rs) for n in names} for rs in (reps[:3], reps))
        assert abs(step(five) / step(three) - 1) <= timing.AGREED_SPREAD * 1.0000001
    assert checked > 100


def test_the_sustained_run_streams_its_batches_while_timed_phases_take_batches_pinned_in_advance(monkeypatch):
    """A training run's data workers prepare batches off the main thread: the sustained run takes one batch per
    micro-step from ``micro_batches`` (a DataLoader with worker processes); the synchronized phases take batches
    pinned in advance, so that no collation sits inside them (engine revision 5 streamed them there, and the
    exposed host work put ZeRO-1 + offload 8.3% above its sustained step)."""
    cfg = tiny()
    stepper = Stepper(cfg, 2, cfg.per_gpu_batch // 2, "cpu")
    taken = []
    real = timing.micro_batches

    def counted(cfg, mbs, device, seed):
        for batch in real(cfg, mbs, device, seed):
            taken.append(seed)
            yield batch

    monkeypatch.setattr(timing, "micro_batches", counted)
    micro_steps = []
    original = stepper.micro_step
    monkeypatch.setattr(stepper, "micro_step", lambda batch, sync: micro_steps.append(sync) or original(batch, sync))
    timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=5)
    assert taken == [] and len(micro_steps) == 7 * 3
    micro_steps.clear()
    timing.validate(stepper, cfg, "cpu", steps=2)
    assert len(taken) == len(micro_steps) == 3 * cfg.per_gpu_batch // 2, "one streamed batch per micro-step"


def test_the_sustained_run_s_batches_are_collated_in_data_worker_processes(monkeypatch, tmp_path):
    """A training run's DataLoader prepares batches in worker processes, so the main thread, which drives the GPU,
    only takes them: the sustained run's loader must too (each sample read writes down the process reading it)."""
    import os

    import torch.utils.data as data

    readers = tmp_path / "readers"

    class Recorded(data.TensorDataset):
        def __getitem__(self, index):
            with open(readers, "a") as f:
                f.write(f"{os.getpid()}\n")
            return super().__getitem__(index)

    monkeypatch.setattr(data, "TensorDataset", Recorded)
    stream = timing.micro_batches(tiny(), 2, "cpu", seed=0)
    for _ in range(3):
        next(stream)
    pids = set(readers.read_text().split())
    assert pids and str(os.getpid()) not in pids, "collated in worker processes, not the main one"


def test_a_streamed_micro_batch_is_a_whole_batch_of_the_model_and_the_stream_cycles():
    cfg = tiny()
    stream = timing.micro_batches(cfg, 2, "cpu", seed=0)
    first = [next(stream) for _ in range(data.STREAM_BATCHES)]
    again = next(stream)
    assert all(len(v) == 2 for b in first for v in b.values())
    assert set(first[0]) == set(cfg.spec.make_batch(2, tiny=True))
    assert all(torch.equal(again[k], first[0][k]) for k in again), "cycled from the start"
    assert not torch.equal(first[0][next(iter(again))], first[1][next(iter(again))])


def test_an_image_model_s_stream_collates_uint8_images_that_reach_the_step_normalised(monkeypatch):
    """The sustained run's workers collate an image model's images as uint8, a quarter of fp32's bytes (fp32 images
    made the 16-bit vision validations miss: the host's work to collate, pin and copy them was not hidden); each
    micro-step gets them as normalised fp32 of the model's shape. ``uint8_images=False`` is the fp32 stream the
    engine fed before, which the data-path probe still times; a model of tokens streams as it did."""
    import torch.utils.data as tud

    collated = []  # the dtype of the images the DataLoader's dataset holds (its workers collate them)

    class Recorded(tud.TensorDataset):
        def __init__(self, *tensors):
            collated.append(tensors[0].dtype)
            super().__init__(*tensors)

    monkeypatch.setattr(tud, "TensorDataset", Recorded)
    cfg = tiny("vit-large")
    made = cfg.spec.make_batch(2, tiny=True)
    batch = next(timing.micro_batches(cfg, 2, "cpu", seed=0, workers=0))
    assert collated == [torch.uint8]
    assert batch["pixel_values"].dtype == torch.float32 and batch["pixel_values"].shape == made["pixel_values"].shape
    assert -3 < batch["pixel_values"].min() < 0 < batch["pixel_values"].max() < 3, "normalised, not 0-255"
    assert batch["labels"].shape == made["labels"].shape
    collated.clear()
    old = next(timing.micro_batches(cfg, 2, "cpu", seed=0, workers=0, uint8_images=False))
    assert collated == [torch.float32] and old["pixel_values"].shape == made["pixel_values"].shape
    assert data.images_fed(cfg) == data.UINT8_IMAGES and data.images_fed(cfg, uint8_images=False) == data.FP32_IMAGES
    assert data.images_fed(tiny()) is None
    tokens = next(timing.micro_batches(tiny(), 2, "cpu", seed=0, workers=0))
    assert torch.equal(tokens["input_ids"], data.host_batches(tiny(), 2 * data.STREAM_BATCHES, 1, 0)[0]["input_ids"][:2])


def test_a_validated_image_model_s_row_says_its_images_came_as_uint8():
    """A reader tells the validations fed fp32 images (rows without the key) from those fed uint8 ones."""
    cfg = tiny("vit-large", Methods())
    row = worker.measure({"config": cfg.to_dict(), "timing": "synced", "validate_steps": 1, "warmup": 1, "reps": 5,
                          "micro_batch": 4}, "cpu", rank=0)
    assert row["outcome"] == "ok", row.get("reason")
    assert row["validate"]["images"] == data.UINT8_IMAGES and row["validate"]["sustained_step_s"] > 0
    tokens = worker.measure({"config": tiny().to_dict(), "timing": "synced", "validate_steps": 1, "warmup": 1,
                             "reps": 5, "micro_batch": 4}, "cpu", rank=0)
    assert "images" not in tokens["validate"]


def test_step_time_is_the_first_accumulation_and_gas_minus_two_more_plus_boundary_plus_optimizer():
    cfg = tiny()  # per-GPU batch 8
    phases = {"accumulate_first": [0.75] * 5, "accumulate": [1.0] * 5, "boundary": [2.0] * 5, "optimizer": [0.5] * 5}
    out = extrapolation.extrapolate(cfg, 2, phases, "synced")
    assert out["gas"] == 4 and out["step_time_s"] == pytest.approx(0.75 + 2 * 1.0 + 2.0 + 0.5)
    assert extrapolation.extrapolate(cfg, 8, {k: v for k, v in phases.items() if "acc" not in k}, "synced")[
        "step_time_s"] == pytest.approx(2.5)  # one micro-step a step: the boundary and the optimizer
    r = cfg.recipe
    assert out["days"] == pytest.approx(r.steps * out["step_time_s"] / 86400)
    assert out["throughput"] == pytest.approx(r.global_batch * r.seq_len / out["step_time_s"])


def test_unsynced_extrapolation_is_the_papers_formula():
    cfg = tiny()
    phases = {"boundary": [2.0, 2.0, 2.0], "optimizer": [0.5, 0.5, 0.5]}
    out = extrapolation.extrapolate(cfg, 2, phases, "unsynced")
    assert out["step_time_s"] == pytest.approx(2.0 * 4 + 0.5)  # every micro-step timed as a syncing one


def test_mfu_uses_model_flops_and_the_precisions_peak():
    cfg = Config("pythia-1b", "h100-80gb", 2, methods=FREE_LUNCH)
    phases = {"accumulate": [1.0] * 5, "boundary": [1.0] * 5, "optimizer": [1.0] * 5}
    out = extrapolation.extrapolate(cfg, 8, phases, "synced")
    from academic_bench.estimate import model_flops_per_step
    from academic_bench.catalog.hardware import get_gpu

    expected = model_flops_per_step(cfg.spec) / (out["step_time_s"] * 2 * get_gpu("h100-80gb").peak_flops("bf16"))
    assert out["mfu"] == pytest.approx(expected)


def test_micro_batch_search_finds_the_largest_power_of_two_that_fits(monkeypatch):
    cfg = tiny()
    faulty_worker.install({"oom_above_micro_batch": 2}, monkeypatch.setattr)
    found = microbatch.find_micro_batch(cfg, "cpu")
    assert found.micro_batch == 2 and found.stepper is None
    assert [(e["micro_batch"], e["outcome"]) for e in found.log] == [(1, "ok"), (2, "ok"), (4, "oom")]


def test_micro_batch_search_reports_when_nothing_fits(monkeypatch):
    faulty_worker.install({"oom_above_micro_batch": 0}, monkeypatch.setattr)
    found = microbatch.find_micro_batch(tiny(), "cpu")
    assert found.micro_batch is None and found.log == [{"micro_batch": 1, "outcome": "oom", "peak_memory_gb": None}]


def test_a_search_that_never_ran_out_of_memory_keeps_its_stepper_to_time_in_place(monkeypatch):
    cfg = tiny()  # per-GPU batch 8: 1, 2, 4, 8 all fit, the last one tried is kept, warm
    found = microbatch.find_micro_batch(cfg, "cpu", keep=True)
    assert found.micro_batch == 8 and found.stepper is not None and found.stepper.mbs == 8 and found.warm


def test_one_model_runs_every_size_the_search_tries_and_is_timed_at_the_size_found(monkeypatch):
    """In one process without DeepSpeed, the search builds (and compiles) the model once: each larger size runs on
    it, and after the size above runs out of memory the model goes back to the size found, warm, to be timed.
    A model built per size took three builds and three compiles of Pythia-1B (32 fits, 64 does not, 32 again)."""
    cfg = tiny()  # per-GPU batch 8
    faulty_worker.install({"oom_above_micro_batch": 4}, monkeypatch.setattr)
    built = []
    real_init = microbatch.Stepper.__init__
    monkeypatch.setattr(microbatch.Stepper, "__init__",
                        lambda self, c, m, g, d: (built.append(m), real_init(self, c, m, g, d))[1])
    found = microbatch.find_micro_batch(cfg, "cpu", keep=True)
    assert [(e["micro_batch"], e["outcome"]) for e in found.log] == [(2, "ok"), (4, "ok"), (8, "oom")]
    assert built == [2] and found.micro_batch == 4 and found.after_oom
    assert found.stepper is not None and found.stepper.mbs == 4 and found.stepper.gas == 2 and found.warm
    assert all(p.grad is None for p in found.stepper.model.parameters())  # the cut-short step left no gradients
    assert microbatch.find_micro_batch(cfg, "cpu", keep=True, fresh_after_oom=True).stepper is None


def test_a_model_that_cannot_go_on_after_an_out_of_memory_is_built_again(monkeypatch):
    """DDP and FSDP keep state between a backward and the next forward that an out-of-memory cuts short, and a
    DeepSpeed engine is configured for one micro-batch size: after a trial that ran out of memory, the search
    builds the size found again (timed cold, no warm-up counted), and DeepSpeed builds every size."""
    cfg = tiny()
    faulty_worker.install({"oom_above_micro_batch": 4}, monkeypatch.setattr)
    built = []
    real_init = microbatch.Stepper.__init__
    monkeypatch.setattr(microbatch.Stepper, "__init__",
                        lambda self, c, m, g, d: (built.append(m), real_init(self, c, m, g, d))[1])
    monkeypatch.setattr(microbatch.Stepper, "survives_oom", property(lambda self: False))
    found = microbatch.find_micro_batch(cfg, "cpu", keep=True)
    assert built == [2] and found.micro_batch == 4 and found.stepper is None and found.after_oom
    built.clear()
    monkeypatch.setattr(microbatch.Stepper, "resizable", property(lambda self: False))
    found = microbatch.find_micro_batch(cfg, "cpu", keep=True)
    assert built == [2, 4, 8] and found.micro_batch == 4 and found.stepper is None  # 8 ran out building
    with pytest.raises(ValueError, match="DeepSpeed"):
        microbatch.Stepper(cfg, 2, 4, "cpu").resize(4, 2)


def test_a_warm_stepper_counts_the_searchs_two_steps_as_warm_up():
    """Warm-up is at least two repetitions; the search's two full steps at the size found count towards it, and one
    repetition always stays, to refill the allocator's cache that a larger trial emptied."""
    assert worker.warmup_reps({"warmup": 3}, warm=False) == 3 and worker.warmup_reps({"warmup": 3}, warm=True) == 1
    assert worker.warmup_reps({"warmup": 1}, warm=False) == 2 and worker.warmup_reps({"warmup": 2}, warm=True) == 1
    assert worker.warmup_reps({"warmup": 6}, warm=True) == 4
    req = {"config": tiny().to_dict(), "timing": "synced", "validate_steps": 0, "warmup": 3, "reps": 5,
           "in_place": True}
    row = worker.measure(req, "cpu", rank=0)
    assert row["ran"]["kept_warm"] and row["ran"]["warmup_reps"] == 1
    row = worker.measure({**req, "in_place": False}, "cpu", rank=0)  # searched in processes of its own: cold
    assert not row["ran"]["kept_warm"] and row["ran"]["warmup_reps"] == 3


def test_searching_to_time_in_place_starts_above_the_guess_so_the_size_found_is_the_last_built(monkeypatch):
    """When the memory model's guess is right, trying the size above it first (out of memory) and then the guess
    leaves the guess's stepper warm to time: two builds where guess, above, guess again took three. A search in
    processes of its own (no ``keep``) starts at the guess, where the order saves nothing."""
    cfg = tiny()  # per-GPU batch 8
    faulty_worker.install({"start_micro_batch": 4, "oom_above_micro_batch": 4}, monkeypatch.setattr)
    found = microbatch.find_micro_batch(cfg, "cpu", keep=True)
    assert [(e["micro_batch"], e["outcome"]) for e in found.log] == [(4, "ok"), (8, "oom")]
    assert found.micro_batch == 4 and found.stepper is not None and found.stepper.mbs == 4 and found.after_oom
    assert microbatch.find_micro_batch(cfg, "cpu", keep=True, fresh_after_oom=True).stepper is None
    tried = []
    monkeypatch.setattr(microbatch, "try_micro_batch",
                        lambda c, m, *a, **k: (tried.append(m) or (m <= 4, 1.0, None)))
    assert microbatch.find_micro_batch(cfg, "cpu", keep=True).micro_batch == 4 and tried == [8, 4]
    tried.clear()
    assert microbatch.find_micro_batch(cfg, "cpu").micro_batch == 4 and tried == [4, 8]


def test_the_search_stops_only_at_a_measured_out_of_memory_however_wrong_the_memory_model(monkeypatch):
    """The memory model chooses where the search starts, never where it stops: a stand-in model that says "no"
    from micro-batch 4 on (seen on one H100: 46% too high, so micro-batch 16 was never tried though it fit) does
    not keep the search from trying 4, 8 and 16, which fit, up to 32, which runs out of memory."""
    from academic_bench import estimate

    cfg = Config("pythia-160m", "h100-80gb", 1, methods=FREE_LUNCH)
    usable = estimate.usable_bytes(80)
    overestimate = types.SimpleNamespace
    monkeypatch.setattr(estimate, "predict_memory", lambda c, m, *a: overestimate(total=usable * m / 2))
    monkeypatch.setattr(estimate, "max_micro_batch", lambda c, gb, *a: 2)
    tried = []

    def trial(c, m, *a, **k):  # the GPU: everything up to 16 fits
        tried.append(m)
        return m <= 16, 1.0, None

    monkeypatch.setattr(microbatch, "try_micro_batch", trial)
    found = microbatch.find_micro_batch(cfg, "cpu")
    assert tried == [2, 4, 8, 16, 32] and found.micro_batch == 16
    assert [(e["micro_batch"], e["outcome"]) for e in found.log][-2:] == [(16, "ok"), (32, "oom")]
    tried.clear()  # sizes known from an earlier search of it are not tried again: it goes on above them
    known = [{"micro_batch": 8, "outcome": "ok", "peak_memory_gb": 1.0}]
    assert microbatch.find_micro_batch(cfg, "cpu", known=known).micro_batch == 16 and tried == [16, 32]


def test_the_search_stops_at_the_per_gpu_batch_without_an_out_of_memory(monkeypatch):
    cfg = tiny()  # per-GPU batch 8
    tried = []
    monkeypatch.setattr(microbatch, "try_micro_batch", lambda c, m, *a, **k: (tried.append(m) or (True, 1.0, None)))
    assert microbatch.find_micro_batch(cfg, "cpu").micro_batch == 8 and tried == [1, 2, 4, 8]


def test_fp8_never_tries_a_micro_batch_whose_tokens_its_products_cannot_take(monkeypatch):
    """FP8's weight-gradient products take micro-batch x sequence tokens as one dimension, which must be divisible
    by 16: with Pythia's 2049-token sequences, micro-batches 1 and 2 stopped Pythia-6.9B on one H200 with
    "size(1)=2049 not divisible by 16". The search tries nothing below 16, and says so when 16 does not fit."""
    from academic_bench import estimate
    from academic_bench.catalog.methods import parse_methods

    cfg = Config("pythia-6.9b", "h200", 1, methods=parse_methods("free-lunch+fp8-tensorwise"))
    assert cfg.smallest_micro_batch == 16 and Config("pythia-6.9b", "h200", 1).smallest_micro_batch == 1
    monkeypatch.setattr(estimate, "max_micro_batch", lambda c, gb, *a: 1)
    tried = []
    monkeypatch.setattr(microbatch, "try_micro_batch", lambda c, m, *a, **k: (tried.append(m) or (False, None, None)))
    assert microbatch.find_micro_batch(cfg, "cpu").micro_batch is None and tried == [16]
    with pytest.raises(ValueError, match=r"micro-batch 2 cannot run FP8 training.*choose one of: \[16, 32"):
        Config("pythia-6.9b", "h200", 1, methods=cfg.methods, micro_batch=2).check()


def test_measure_writes_a_complete_ok_result_with_validation():
    req = {"config": tiny().to_dict(), "timing": "synced", "validate_steps": 2, "warmup": 2, "reps": 5}
    row = worker.measure(req, "cpu", rank=0)
    assert row["outcome"] == "ok" and row["micro_batch"] == 8 and row["gas"] == 1
    assert row["validate"]["steps"] == 2 and row["validate"]["sustained_step_s"] > 0
    assert row["ran"]["attention"] == "sdpa" and row["ran"]["parallel"] == "single"
    assert row["ran"]["alloc_retries"] == 0 and row["ran"]["memory_wall"] is None


def test_a_size_found_at_the_memory_wall_is_timed_against_half_of_it_and_the_faster_kept(monkeypatch):
    # The search finds 8 (the tiny per-GPU batch); timed at 8 the allocator retries and the step is slower.
    faulty_worker.install({"memory_wall_at_micro_batch": 8, "memory_wall_slowdown": 50.0, "start_micro_batch": 8},
                          monkeypatch.setattr)
    req = {"config": tiny().to_dict(), "timing": "synced", "validate_steps": 2, "warmup": 2, "reps": 5,
           "in_place": True}  # one process: the search tries 8 alone (the whole batch), kept warm and timed
    row = worker.measure(req, "cpu", rank=0)
    wall = row["ran"]["memory_wall"]
    assert row["micro_batch"] == 4 and row["gas"] == 2 and row["validate"]["steps"] == 2
    assert wall["micro_batch"] == 8 and wall["alloc_retries"] > 0 and wall["kept"] == 4
    assert wall["below_step_time_s"] == row["step_time_s"] < wall["step_time_s"]
    assert [(t["micro_batch"], t["outcome"]) for t in row["mbs_search"]] == [(4, "ok"), (8, "ok")]
    assert any("ran at the memory wall" in n and "4 kept, the faster" in n for n in row["ran"]["notes"])
    assert row["ran"]["kept_warm"] is False  # the half was built again to be timed


def test_the_size_at_the_wall_stays_when_it_is_still_the_faster(monkeypatch):
    faulty_worker.install({"memory_wall_at_micro_batch": 8, "memory_wall_slowdown": 0.01}, monkeypatch.setattr)
    row = worker.measure({"config": tiny().to_dict(), "timing": "synced"}, "cpu", rank=0)
    assert row["micro_batch"] == 8 and row["ran"]["memory_wall"]["kept"] == 8
    assert row["ran"]["memory_wall"]["below_step_time_s"] > row["step_time_s"]


def test_the_measurement_at_the_wall_is_kept_when_half_of_it_cannot_be_timed(monkeypatch):
    faulty_worker.install({"memory_wall_at_micro_batch": 8, "oom_below_the_wall": True}, monkeypatch.setattr)
    row = worker.measure({"config": tiny().to_dict(), "timing": "synced"}, "cpu", rank=0)
    assert row["micro_batch"] == 8 and row["ran"]["memory_wall"]["kept"] == 8
    assert any("micro-batch 4 ran out of memory when timed: 8 kept" in n for n in row["ran"]["notes"])
    faulty_worker.install({"memory_wall_at_micro_batch": 8}, monkeypatch.setattr)
    row = worker.measure({"config": tiny().to_dict(), "timing": "synced", "deadline": time.time() + 1.0}, "cpu", 0)
    assert row["micro_batch"] == 8 and row["ran"]["memory_wall"]["below_step_time_s"] is None
    assert any("micro-batch 4 not timed: it would not end within the time limit" in n for n in row["ran"]["notes"])


def test_a_micro_batch_the_configuration_sets_is_timed_as_asked_even_at_the_wall(monkeypatch):
    faulty_worker.install({"memory_wall_at_micro_batch": 8}, monkeypatch.setattr)
    row = worker.measure({"config": tiny(micro_batch=8).to_dict(), "timing": "synced"}, "cpu", rank=0)
    assert row["micro_batch"] == 8 and row["ran"]["memory_wall"] is None and row["ran"]["alloc_retries"] > 0
    row = worker.measure({"config": tiny().to_dict(), "timing": "unsynced"}, "cpu", rank=0)
    assert row["micro_batch"] == 8 and row["ran"]["memory_wall"] is None  # the paper's clock, kept as it was


def test_a_validation_that_would_pass_the_time_limit_is_skipped_and_the_measurement_kept():
    import time

    req = {"config": tiny().to_dict(), "timing": "synced", "validate_steps": 2, "warmup": 2, "reps": 5,
           "deadline": time.time()}
    row = worker.measure(req, "cpu", rank=0)
    assert row["outcome"] == "ok" and row["step_time_s"] > 0 and "validate" not in row
    assert any(n.startswith("validation skipped: 2 real steps") for n in row["ran"]["notes"])
    row = worker.measure({**req, "deadline": time.time() + 3600}, "cpu", rank=0)
    assert row["validate"]["steps"] == 2 and not any("validation skipped" in n for n in row["ran"]["notes"])


def test_unsynced_timing_runs_the_papers_protocol():
    req = {"config": tiny(micro_batch=2).to_dict(), "timing": "unsynced"}
    row = worker.measure(req, "cpu", rank=0)
    assert row["times"]["boundary"]["n"] == 3 and "accumulate" not in row["times"]


def test_naive_means_eager_attention():
    stepper = Stepper(tiny(methods=Methods()), 2, 4, "cpu")
    assert stepper.ran.attention == "eager"


def test_mamba_without_its_kernels_is_unsupported_on_gpus():
    cfg = Config("mamba-2.8b", "h100-80gb", 1, methods=FREE_LUNCH)
    with pytest.raises(Unsupported, match="mamba_ssm"):
        apply_kernels_check(cfg.spec, cfg, "cuda", Ran())


def _fake_mamba_kernels(monkeypatch) -> None:
    """mamba-ssm and causal-conv1d as if installed, with functions that fail when called."""
    def kernel(*args, **kwargs):
        raise RuntimeError("a mamba-ssm kernel was called")

    mods = {name: types.ModuleType(name) for name in
            ("mamba_ssm", "mamba_ssm.ops", "mamba_ssm.ops.selective_scan_interface", "causal_conv1d")}
    mods["mamba_ssm"].ops = mods["mamba_ssm.ops"]
    mods["mamba_ssm.ops"].selective_scan_interface = mods["mamba_ssm.ops.selective_scan_interface"]
    mods["mamba_ssm.ops.selective_scan_interface"].mamba_inner_fn = kernel
    mods["mamba_ssm.ops.selective_scan_interface"].selective_scan_fn = kernel
    mods["causal_conv1d"].causal_conv1d_fn = mods["causal_conv1d"].causal_conv1d_update = kernel
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    # transformers (5.25) calls an installed package's kernel only for inputs on a device it lists for that package
    # (the GPU, where every measured step runs); the fake lists the CPU too, so that this CPU twin takes the path a
    # GPU step would.
    from transformers.integrations import hub_kernels

    for package in ("mamba_ssm", "causal_conv1d"):
        monkeypatch.setitem(hub_kernels._PACKAGE_SUPPORTED_DEVICES, package, ("cuda", "cpu"))
    monkeypatch.delitem(sys.modules, MAMBA_MODELING, raising=False)  # restored afterwards


def _train_step(cfg: Config) -> None:
    model = cfg.spec.build(True).train()
    ids = torch.randint(0, 512, (2, 16))
    model(input_ids=ids, labels=ids).loss.backward()


def test_mamba_with_kernels_off_runs_the_pytorch_path_even_where_the_kernels_import(monkeypatch):
    """transformers binds mamba-ssm's kernels whenever they import; naive (kernels off) must not use them."""
    cfg = tiny("mamba-2.8b", Methods())
    _fake_mamba_kernels(monkeypatch)
    with pytest.raises(RuntimeError, match="mamba-ssm kernel was called"):  # the fake is what transformers uses
        _train_step(cfg)
    monkeypatch.delitem(sys.modules, MAMBA_MODELING)
    ran = Ran()
    apply_kernels_check(cfg.spec, cfg, "cuda", ran)
    _train_step(cfg)
    assert ran.kernels == []
    with pytest.raises(ImportError):
        import mamba_ssm  # noqa: F401


def test_mamba_is_not_compiled_and_says_so(monkeypatch):
    for name in ("mamba_ssm", "causal_conv1d"):  # off the GPU the kernels are hidden: undo that afterwards
        monkeypatch.setitem(sys.modules, name, None)
    stepper = Stepper(tiny("mamba-2.8b", FREE_LUNCH), 2, 4, "cpu")
    assert not stepper.ran.compiled and any("Mamba" in n for n in stepper.ran.notes)


def test_compile_never_falls_back_to_eager_silently():
    import torch._dynamo

    model = get_model("pythia-160m").build(True)
    apply_compile(model, get_model("pythia-160m"), Ran())
    assert torch._dynamo.config.suppress_errors is False
    assert torch._dynamo.config.fail_on_recompile_limit_hit is True
    torch._dynamo.reset()


def test_deepspeed_config_spells_out_the_recipes_optimizer():
    cfg = Config("pythia-1b", "h100-80gb", 2, methods=parse_methods("free-lunch+zero3+offload"))
    ds = deepspeed_config(cfg, micro_batch=4, gas=2)
    opt = cfg.recipe.optimizer
    assert ds["optimizer"]["type"] == "Adam" and ds["optimizer"]["params"]["adam_w_mode"] is False
    assert ds["optimizer"]["params"]["lr"] == opt.lr and ds["optimizer"]["params"]["betas"] == list(opt.betas)
    assert ds["optimizer"]["params"]["weight_decay"] == opt.weight_decay
    assert ds["zero_optimization"]["stage"] == 3
    assert ds["zero_optimization"]["offload_param"]["device"] == "cpu"
    assert ds["bf16"]["enabled"] and not ds["fp16"]["enabled"]
    assert "auto" not in str(ds)


@pytest.mark.parametrize("spec", ["free-lunch+fsdp_full_shard", "naive+ckpt+fsdp_shard_grad_op+offload"])
def test_fsdp_on_two_gloo_processes(spec, tmp_path):
    from academic_bench.launch import run_config

    methods = parse_methods(spec)
    methods = Methods(**{**methods.to_dict(), "compile": False})  # compiling on 2 CPU cores takes minutes
    cfg = Config("pythia-160m", "h100-80gb", 2, methods=methods, micro_batch=2, tiny=True)
    row = run_config(cfg, setup="cpu-twin", device="cpu", timeout_s=240, log_path=tmp_path / "run.log")
    assert row["outcome"] == "ok", row["reason"]
    assert row["ran"]["parallel"] == "fsdp" and row["gas"] == 2
    assert any(f"offload={methods.offload}" in n for n in row["ran"]["notes"])


def test_fsdp_in_one_process_started_without_torchrun(tmp_path):
    """The launcher starts a one-GPU configuration's worker itself (no torchrun): FSDP still finds the process
    group of one that it needs, which the worker makes on a store of its own."""
    from academic_bench.launch import run_config

    methods = Methods(**{**parse_methods("naive+fsdp_full_shard+offload").to_dict(), "compile": False})
    cfg = Config("pythia-160m", "h100-80gb", 1, methods=methods, micro_batch=2, tiny=True)
    row = run_config(cfg, setup="cpu-twin", device="cpu", timeout_s=240, log_path=tmp_path / "run.log")
    assert row["outcome"] == "ok", row["reason"]
    assert row["ran"]["parallel"] == "fsdp"
    assert "torch.distributed.run" not in (tmp_path / "run.log").read_text()


def test_a_single_process_search_and_measurement_make_no_collective(monkeypatch, tmp_path):
    """One GPU needs no NCCL communicator: created lazily after a timed run, when the caching allocator held
    nearly the whole GPU, its buffers did not fit and the finished measurement was lost."""
    import torch.distributed as dist

    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        def no_collective(*args, **kwargs):
            raise AssertionError("a collective in a single-process run")

        monkeypatch.setattr(dist, "all_reduce", no_collective)
        req = {"config": tiny().to_dict(), "timing": "synced", "warmup": 2, "reps": 5}
        row = worker.measure(req, "cpu", rank=0)
        assert row["outcome"] == "ok"
        assert [e["outcome"] for e in row["mbs_search"]] == ["ok"] * len(row["mbs_search"])
    finally:
        dist.destroy_process_group()


def test_zero3_with_offload_times_its_whole_steady_run_as_one_block():
    """Host-bound ZeRO-3 + offload under-counted its accumulation when its micro-steps were timed one at a time
    (engine revision 3): its steady phase is now the whole run of GAS - 2 micro-steps, sampled per micro-step."""
    from types import SimpleNamespace

    from academic_bench.catalog.methods import parse_methods

    def cfg(spec):
        return Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(spec), tiny=True)

    assert timing.steady_block(cfg("free-lunch+zero3+offload"), 32) == 30
    assert [timing.steady_block(cfg(s), 32) for s in ("free-lunch", "free-lunch+zero3", "free-lunch+zero2+offload",
                                                      "free-lunch+fsdp_full_shard+offload")] == [1, 1, 1, 1]
    calls = []
    stepper = SimpleNamespace(gas=32, micro_step=lambda batch, sync: calls.append((batch, sync)),
                              optimizer_step=lambda: calls.append("opt"))
    phases = dict(timing.step_phases(stepper, iter(range(100)), block=30))
    phases["accumulate"]()
    assert calls == [(j, False) for j in range(30)], "30 accumulating micro-steps, each with the next batch"


def test_a_blocked_timing_also_stops_before_a_repetition_that_would_pass_the_deadline(monkeypatch):
    """ZeRO-3 + offload's repetitions are whole accumulations, its slowest: a near time limit must stop them
    (after one kept repetition, with a note) rather than let the configuration be killed with nothing written."""
    from types import SimpleNamespace

    cfg = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch+zero3+offload"), tiny=True)
    gas = cfg.per_gpu_batch // 1
    assert timing.steady_block(cfg, gas) > 1, "the tiny recipe accumulates enough for a block"
    stepper = SimpleNamespace(gas=gas, mbs=1, ran=SimpleNamespace(notes=[]), micro_step=lambda batch, sync: None,
                              optimizer_step=lambda: None)
    monkeypatch.setattr(timing, "host_batches", lambda cfg, mbs, n, seed: [{}, {}])
    monkeypatch.setattr(timing, "warmup_agrees", lambda *a: False)  # a counted warm-up is the test below
    phases = timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=10, deadline=time.time() - 1)
    assert len(phases["accumulate"]) == 1 and len(phases["boundary"]) == 1
    assert any(f"timing stopped after 1 of {timing.BLOCK_REPS}" in n for n in stepper.ran.notes), stepper.ran.notes
    # A warm-up that agrees is the second repetition already: nothing is left to stop, even past the deadline.
    monkeypatch.setattr(timing, "warmup_agrees", lambda *a: True)
    stepper.ran.notes.clear()
    phases = timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=10, deadline=time.time() - 1)
    assert len(phases["accumulate"]) == timing.BLOCK_REPS
    assert not any("timing stopped" in n for n in stepper.ran.notes), stepper.ran.notes


@pytest.mark.parametrize("warm_s,calls,counted", [(10.05, 2, True), (10.3, 3, False)])
def test_a_warm_up_block_counts_as_a_repetition_only_when_it_agrees_with_the_first_timed_one(monkeypatch, warm_s,
                                                                                             calls, counted):
    """ZeRO-3 + offload's warm-up is a whole step: where it takes as long as the first timed block (within
    ``WARMUP_AGREES``) it is kept as the first of ``BLOCK_REPS`` repetitions, saving a whole step; where it does
    not (a cold stepper, an allocator still filling), it is left out and another block is timed, as before. The
    notes say which, with both times."""
    from types import SimpleNamespace

    cfg = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods("free-lunch+zero3+offload"), tiny=True)
    gas = cfg.per_gpu_batch
    block = timing.steady_block(cfg, gas)
    assert block > 1 and timing.BLOCK_REPS == 2 and timing.WARMUP_AGREES < 0.03
    chains = iter([warm_s, 10.0, 10.1, 10.2])  # the whole step of each repetition, in the order they run
    ran = []

    def chain(phases, device):
        s = next(chains)
        ran.append(s)
        return [("accumulate_first", 0.0), ("accumulate", s - 2.0), ("boundary", 1.0), ("optimizer", 1.0)]

    monkeypatch.setattr(timing, "time_chain", chain)
    monkeypatch.setattr(timing, "host_batches", lambda cfg, mbs, n, seed: [{}, {}])
    moved = []
    monkeypatch.setattr(timing, "recount", lambda seconds, was, now: moved.append((seconds, was, now)))
    stepper = SimpleNamespace(gas=gas, mbs=1, ran=SimpleNamespace(notes=[]), micro_step=lambda batch, sync: None,
                              optimizer_step=lambda: None)
    phases = timing.time_phases(stepper, cfg, "cpu", warmup=2, reps=10)
    assert len(ran) == calls, "one block fewer when the warm-up counts"
    assert moved == ([(pytest.approx(warm_s), "warmup", "timed")] if counted else []), (
        "a warm-up block kept as a repetition is booked as timed work in the row's wall_breakdown")
    kept = [warm_s, 10.0] if counted else [10.0, 10.1]  # in the order they ran
    assert phases["accumulate"] == pytest.approx([(s - 2.0) / block for s in kept])
    said = [n for n in stepper.ran.notes if n.startswith("the warm-up block took")]
    assert len(said) == 1 and said[0].endswith(wall.WARMUP_BOOKED if counted else "it is left out"), said


def test_the_phase_clock_moves_seconds_already_counted_from_one_phase_to_another_and_no_more_than_it_holds():
    from academic_bench.measure.wall import PhaseClock

    clock = PhaseClock()
    clock.seconds.update(warmup=10.0, timed=5.0)
    clock.recount(8.0, "warmup", "timed")
    assert clock.seconds["warmup"] == pytest.approx(2.0) and clock.seconds["timed"] == pytest.approx(13.0)
    clock.recount(8.0, "warmup", "timed")
    assert clock.seconds["warmup"] == 0.0 and clock.seconds["timed"] == pytest.approx(15.0), (
        "a phase never goes below zero: the wall time stays the sum of the phases")


def test_deepspeeds_host_queries_run_once_per_process(monkeypatch):
    """DeepSpeed's CPU Adam asks py-cpuinfo about the host at every build (a subprocess each time); after
    ``cpu_info_once`` the first answer is kept for the process, the same answer every time."""
    from academic_bench.measure.apply import cpu_info_once

    asked = []
    fake = types.ModuleType("cpuinfo")
    fake.get_cpu_info = lambda: asked.append(1) or {"arch": "X86_64", "vendor_id_raw": "GenuineIntel"}
    monkeypatch.setitem(sys.modules, "cpuinfo", fake)
    cpu_info_once()
    cpu_info_once()
    from cpuinfo import get_cpu_info  # as DeepSpeed imports it, at each call

    assert [get_cpu_info()["arch"] for _ in range(3)] == ["X86_64"] * 3 and len(asked) == 1
