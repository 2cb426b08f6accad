"""What the work model reads besides the profiles (``work_evidence``): the matrix-product rate by size from a GEMM
sweep, the measured optimum that keeps a profile out of the calibration, attention's per-token part. Synthetic
sweeps and profiles stand in for the measured ones; one test reads the shipped sweep."""
from __future__ import annotations

import pandas as pd
import pytest

from academic_bench.predict import decoder_work as dw
from academic_bench.predict import work_evidence as we
from academic_bench.catalog.hardware import get_gpu

from test_decoder_work import RATES, _decoder, _profile


def _sweep(rate_of, floor_s: float = 2e-5) -> pd.DataFrame:
    """A sweep's lines (gemm_sweep.py's keys) whose products run at ``rate_of(flops)`` FLOP/s, none faster than a
    launch every ``floor_s`` seconds."""
    rows = []
    for m in (2048, 8192, 32768):
        for k in (512, 1024, 2048, 4096):
            for n in (k, 4 * k):
                flops = 2.0 * m * k * n
                for product in ("forward", "input grad", "weight grad"):
                    rows.append({"m": m, "k": k, "n": n, "product": product, "dtype": "bf16",
                                 "seconds": max(flops / rate_of(flops), floor_s), "gpu": "NVIDIA H100 80GB HBM3"})
    return pd.DataFrame(rows)


def test_the_curve_leaves_out_launch_bound_products_and_never_falls_with_size():
    """Products the host's launches timed are left out; the rest give a rate that grows with the product's FLOPs
    and levels off, whatever one shape's dip."""
    def rate(flops):  # a rate that rises to 700 TFLOP/s, with one shape's dip at 1.3e11 FLOPs
        r = 700e12 * flops / (flops + 2e10)
        return 0.8 * r if abs(flops - 1.37e11) < 1e10 else r

    curve = we.gemm_curve(_sweep(rate), "h100-80gb", "test")
    assert min(curve.flops) > 2.0 * 2048 * 512 * 512  # the launch-bound smallest products are gone
    assert list(curve.rates) == sorted(curve.rates)
    assert curve.slowness(min(curve.flops)) > 1.2 and curve.slowness(max(curve.flops)) == pytest.approx(1.0)
    assert curve.rate(1e6) == curve.rates[0] and curve.rate(1e16) == curve.rates[-1]  # held at the ends


def test_small_matrices_cost_more_per_flop_with_the_curve(tmp_path):
    """With a sweep, a decoder's matrix-product work counts each matrix at its size's rate: a narrow decoder's
    products weigh more per FLOP than a wide one's, and without a sweep the work is the FLOPs."""
    curve = we.gemm_curve(_sweep(lambda f: 700e12 * f / (f + 2e10)), "h100-80gb", "test")
    narrow = _decoder(tmp_path, "narrow", hidden_size=512, intermediate_size=1376, num_attention_heads=8)
    wide = _decoder(tmp_path, "wide", hidden_size=4096, intermediate_size=11008, num_attention_heads=32,
                    num_key_value_heads=8)
    for key in (narrow, wide):
        assert dw.work(key, 4, 4).matmul == dw.work(key, 4, 4, None).matmul
    ratio = {k: dw.work(k, 4, 4, curve).matmul / dw.work(k, 4, 4).matmul for k in (narrow, wide)}
    assert ratio[narrow] > ratio[wide] >= 1.0


def _output_layer_sweep(slower: float) -> pd.DataFrame:
    """gemm_sweep.py output-layer's lines: each unaligned vocabulary ``slower`` times as long per output column as
    its padded twin (the next multiple of 64)."""
    rows = []
    for m in (8192, 65536):
        for k, vocab in ((768, 50257), (2048, 32001)):
            for n in (vocab, -(-vocab // 64) * 64):
                per_column = 1e-9 * m * k / 700e3 * (slower if n % 8 else 1.0)
                rows += [{"m": m, "k": k, "n": n, "product": product, "dtype": "bf16", "seconds": per_column * n,
                          "gpu": "NVIDIA H100 80GB HBM3"} for product in ("forward", "input grad", "weight grad")]
    return pd.DataFrame(rows)


def test_an_unaligned_lm_head_is_charged_at_the_output_layer_sweeps_slowness(tmp_path):
    """The output-layer sweep beside a GPU's GEMM sweep sets how much longer per FLOP a vocabulary that is no
    multiple of 8 takes than its padded twin; the work model charges a decoder's LM head that much more where
    its vocabulary is unaligned, and nothing else: a padded vocabulary, the other matrices and a GPU without that
    sweep keep their work. The kept evidence record carries it."""
    import dataclasses

    assert we.unaligned_slowness(_output_layer_sweep(5.0)) == pytest.approx(5.0)
    assert we.unaligned_slowness(_output_layer_sweep(5.0).query("n % 8 == 0")) == 1.0  # no unaligned layer: none
    runs = tmp_path / "runs"
    for setup, beside in (("h100x1", True), ("a100x1", False)):
        (runs / setup / "evidence" / "gemm").mkdir(parents=True)
        lines = _sweep(lambda f: 700e12 * f / (f + 2e10))
        if setup == "a100x1":
            lines = lines.assign(gpu="NVIDIA A100-SXM4-80GB")
        lines.to_json(runs / setup / we.GEMM_FILE, orient="records", lines=True)
        if beside:
            _output_layer_sweep(4.0).to_json(runs / setup / we.OUTPUT_LAYER_FILE, orient="records", lines=True)
    curves = we.gemm_curves(str(runs))
    assert curves["h100-80gb"].unaligned == pytest.approx(4.0) and curves["a100-80gb"].unaligned == 1.0
    curve = curves["h100-80gb"]
    odd, padded = _decoder(tmp_path, "odd", vocab_size=1001), _decoder(tmp_path, "padded", vocab_size=1024)
    aligned_curve = dataclasses.replace(curve, unaligned=1.0)
    head = 6.0 * 1001 * 256 * 4 * 4 * 512 * curve.slowness(2.0 * 4 * 512 * 1001 * 256)
    assert dw.work(odd, 4, 4, curve).matmul - dw.work(odd, 4, 4, aligned_curve).matmul == pytest.approx(3 * head)
    assert dw.work(padded, 4, 4, curve).matmul == dw.work(padded, 4, 4, aligned_curve).matmul
    assert dw.work(odd, 4, 4, None).matmul == dw.work(odd, 4, 4).matmul  # without a sweep, the FLOPs alone
    kept = we.evidence_of(we.evidence_record(we.Evidence(gemm=curves)))
    assert kept.gemm["h100-80gb"].unaligned == pytest.approx(4.0)


def test_a_profile_below_the_measured_optimum_calibrates_nothing():
    """Pythia-410M's profile at micro-batch 8 where its fastest measured run used 16 (the profiler's buffers did
    not fit beside it) is left out; at 16 it counts."""
    slow = {k: 3 * v for k, v in RATES.items()}
    prof = pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 8, 128, rates=slow)])
    optima = we.Evidence(optima={("h100x1", "pythia-410m"): 16})
    assert set(dw.calibration_points(prof)["model"]) == {"pythia-160m", "pythia-410m"}
    assert set(dw.calibration_points(prof, optima)["model"]) == {"pythia-160m"}
    at_optimum = pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 16, 64)])
    assert set(dw.calibration_points(at_optimum, optima)["model"]) == {"pythia-160m", "pythia-410m"}


def test_measured_optima_take_the_fastest_free_lunch_step_on_one_gpu():
    runs = pd.DataFrame([
        {"setup": "h100x1", "model": "pythia-2.8b", "methods_label": "free-lunch", "n_gpus": 1, "micro_batch": 2,
         "step_time_s": 80.0, "config_id": "a"},
        {"setup": "h100x1", "model": "pythia-2.8b", "methods_label": "free-lunch", "n_gpus": 1, "micro_batch": 4,
         "step_time_s": 75.0, "config_id": "b"},
        {"setup": "h100x1", "model": "pythia-2.8b", "methods_label": "free-lunch + ZeRO-1 + offload", "n_gpus": 1,
         "micro_batch": 8, "step_time_s": 70.0, "config_id": "c"}])
    runs = runs.assign(timing="synced", mode="step", outcome="ok", days=1.0, tiny=False, beyond_paper=False)
    assert we.measured_optima(runs) == {("h100x1", "pythia-2.8b"): 4}


def test_the_attention_offset_from_two_sequence_lengths():
    """Seconds per token that go as (sequence + 600) at 2,048 and 8,192 give back 600; attention's work then
    grows with sequence + offset, so a longer sequence costs less per FLOP."""
    def per_token(seq):
        return 1e-9 * (seq + 600)

    assert we.offset_from([(2048, per_token(2048), 8192, per_token(8192))]) == pytest.approx(600)
    assert we.offset_from([]) == 0.0


def test_attention_work_carries_the_offset(tmp_path):
    short = _decoder(tmp_path, "d")
    plain, offset = dw.work(short, 2, 4), dw.work(short, 2, 4, offset=512)
    assert offset.attention == pytest.approx(plain.attention * (512 + 512) / 512)  # the tiny decoder's 512 tokens
    assert (offset.matmul, offset.loss, offset.memory) == (plain.matmul, plain.loss, plain.memory)


def test_the_shipped_evidence_reads():
    """The H100 sweep, the measured optima and the offset from the shipped runs: a curve that rises and levels
    off, Pythia-2.8B's h100x1 optimum above the micro-batch its profile ran at, a positive offset."""
    from conftest import skip_or_fail
    from academic_bench.analysis import profiles

    e = we.runs_evidence()
    if "h100-80gb" not in e.gemm:
        skip_or_fail("no GEMM sweep shipped")
    curve = e.gemm["h100-80gb"]
    assert e.curve_for("h200") is e.gemm.get("h200", curve)  # its own sweep, else the same architecture's
    assert we.Evidence(gemm={"h100-80gb": curve}).curve_for("h200") is curve
    assert curve.slowness(min(curve.flops)) > 1.0 and list(curve.rates) == sorted(curve.rates)
    assert e.attention_offset > 0
    prof = profiles()
    p = prof[(prof["setup"] == "h100x1") & (prof["model"] == "pythia-2.8b") & (prof["methods_label"] == "free-lunch")]
    if not p.empty and int(p["micro_batch"].iloc[0]) < e.optima[("h100x1", "pythia-2.8b")]:
        assert "pythia-2.8b" not in set(dw.calibration_points(prof, e).query("setup == 'h100x1'")["model"])


def test_a_sweep_timed_by_triton_testing_replaces_the_launch_timed_one_of_its_setup(tmp_path):
    """Where a setup has its sweeps again by triton.testing (``evidence/gemm-triton/``), its curve and output-layer
    slowness read those, the small products included; the launch-timed files stay where they are, and a setup
    without the new sweep keeps its own."""
    runs = tmp_path / "runs"
    slow, fast = (lambda f: 300e12 * f / (f + 2e10)), (lambda f: 700e12 * f / (f + 2e10))
    for setup, gpu in (("h100x1", "NVIDIA H100 80GB HBM3"), ("a100x1", "NVIDIA A100-SXM4-80GB")):
        (runs / setup / "evidence" / "gemm").mkdir(parents=True)
        _sweep(slow).assign(gpu=gpu).to_json(runs / setup / we.GEMM_FILE, orient="records", lines=True)
    triton = runs / "h100x1" / "evidence" / "gemm-triton"
    triton.mkdir()
    _sweep(fast, floor_s=0.0).assign(timer="do_bench").to_json(triton / "gemm.jsonl", orient="records", lines=True)
    _output_layer_sweep(3.0).to_json(triton / "gemm-output-layer.jsonl", orient="records", lines=True)
    curves = we.gemm_curves(str(runs))
    assert curves["h100-80gb"].source == "h100x1/evidence/gemm-triton/gemm.jsonl"
    assert curves["h100-80gb"].plateau > 1.5 * curves["a100-80gb"].plateau  # the new sweep's rates, not the old
    assert curves["h100-80gb"].unaligned == pytest.approx(3.0)
    assert len(curves["h100-80gb"].flops) == _sweep(fast).assign(f=lambda x: x.m * x.k * x.n)["f"].nunique()
    assert curves["a100-80gb"].source == "a100x1/evidence/gemm/gemm.jsonl"


def test_the_streaming_bandwidth_is_read_from_the_large_streaming_kernels_and_kept_with_the_evidence():
    """The bandwidth the passes over the weights are charged at: the median bytes per second of the memory sweep's
    adds and casts of 256 MiB or more (smaller ones, and kernels that reduce, left out), kept through
    ``evidence_record`` and ``evidence_of`` as every other piece of the work model's evidence."""
    from academic_bench.results.gemm import STREAMING_BYTES, streaming_bandwidth

    big, small = STREAMING_BYTES, STREAMING_BYTES // 8
    lines = pd.DataFrame([{"op": "add", "bytes": big, "seconds": big / 3e12},
                          {"op": "cast", "bytes": 2 * big, "seconds": 2 * big / 2e12},
                          {"op": "cast", "bytes": 4 * big, "seconds": 4 * big / 2.5e12},
                          {"op": "add", "bytes": small, "seconds": small / 1e12},
                          {"op": "softmax", "bytes": big, "seconds": big / 1e12}])
    assert streaming_bandwidth(lines) == pytest.approx(2.5e12)
    assert streaming_bandwidth(lines[lines["op"] == "softmax"]) is None
    kept = we.evidence_of(we.evidence_record(we.Evidence(bandwidth={"h100-80gb": 3.1e12})))
    assert kept.bandwidth_for("h100-80gb") == pytest.approx(3.1e12)
    assert kept.bandwidth_for("a100-80gb") == pytest.approx(get_gpu("a100-80gb").memory_bandwidth_gbps * 1e9)
