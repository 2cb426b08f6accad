"""The work model (``decoder_work``): a decoder's step from the kinds of work its shape implies, at the seconds
per unit of work of the catalog decoders' profiles. Synthetic profiles stand in for the measured ones."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from academic_bench.predict import decoder_work as dw
from academic_bench.predict.work_units import counted_shape
from academic_bench.predict import transfer
from academic_bench.predict import transfer_validation as tv, work_validation as wv
from academic_bench.analysis.profiles import PROFILE_COLUMNS
from academic_bench.catalog.models import get_model
from academic_bench.catalog.models.from_config import ConfigError, decoder_spec
from academic_bench.catalog.units import days_for

KINDS = {"matrix multiplication": "matmul", "attention": "attention", "loss and softmax": "loss",
         "elementwise and other": "memory", "optimizer": "optimizer"}
RATES = {"matmul": 1.4e-15, "attention": 2.2e-14, "loss": 1.1e-11, "memory": 1.3e-11, "optimizer": 1e-11,
         "idle": 4e-4}  # seconds per unit: the order of magnitude of an H100's


def _profile(model: str, micro_batch: int, gas: int, setup: str = "h100x1", gpu: str = "h100-80gb",
             rates: dict = RATES, config_id: str | None = None) -> pd.DataFrame:
    """One configuration's profile rows whose every kind takes ``rates`` x the model's units of work, the
    memory-bound kernels also the micro-steps' passes over the fp32 weights at the datasheet's bandwidth."""
    w = dw.work(model, micro_batch, gas)
    seconds = {kind: rates[k] * w.get(k) for kind, k in KINDS.items()}
    seconds["elementwise and other"] += dw.weight_passes_s(model, gas, gpu)
    busy = sum(seconds.values())
    wall = busy + rates["idle"] * w.idle
    rows = [{"model": model, "gpu": gpu, "n_gpus": 1, "setup": setup, "config_id": config_id or f"{model}-{setup}",
             "methods_label": "free-lunch", "micro_batch": micro_batch, "gas": gas, "kind": kind, "seconds": t,
             "share": t / busy, "busy_s": busy, "busy_share": busy / wall, "step_wall_s": wall,
             "timer": "gpu kernels", "tiny": False, "at": "2026-01-01T00:00:00+00:00"}
            for kind, t in seconds.items()]
    return pd.DataFrame(rows, columns=PROFILE_COLUMNS)


def _decoder(tmp_path, name: str, **shape) -> str:
    data = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_attention_heads": 8,
            "num_key_value_heads": 2, "num_hidden_layers": 4, "vocab_size": 1000, "max_position_embeddings": 2048,
            "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16", **shape}
    (tmp_path / name).mkdir()
    path = tmp_path / name / "config.json"
    path.write_text(json.dumps(data))
    return decoder_spec(path, seq_len=512, tokens=1e9, global_batch=64).spec.key


def test_a_profiled_decoder_is_predicted_at_its_profiled_step():
    """Calibrated on its own profile alone, a decoder's predicted step is its profiled wall time, range and all:
    the kinds of work cover every second of the profile."""
    prof = _profile("pythia-160m", 32, 32)
    points = dw.calibration_points(prof)
    p = dw.predict_on_setup("pythia-160m", "h100x1", points, 32, 32)
    wall = float(prof["step_wall_s"].iloc[0])
    assert (p.step_s, p.low_s, p.high_s) == pytest.approx((wall, wall, wall))
    assert p.calibration == ("pythia-160m",)


def test_work_follows_the_vocabulary_the_mlp_width_and_the_sequences(tmp_path):
    """What a parameter count misses: a larger vocabulary adds loss work and the LM head's products, a wider MLP
    adds memory-bound work, and the units grow with the tokens of the step."""
    base = _decoder(tmp_path, "base")
    vocab = _decoder(tmp_path, "vocab", vocab_size=4000)
    wide = _decoder(tmp_path, "wide", intermediate_size=1376)
    a, b, c = dw.work(base, 2, 4), dw.work(vocab, 2, 4), dw.work(wide, 2, 4)
    tokens = 2 * 4 * 512
    assert b.loss / a.loss == pytest.approx(4.0)
    assert b.matmul - a.matmul == pytest.approx(6 * 3000 * 256 * tokens)  # the untied head only
    assert c.memory - a.memory == pytest.approx(4 * (1376 - 688) * tokens)  # 4 layers
    assert (b.memory, b.attention) == (a.memory, a.attention)
    assert dw.work(base, 4, 4).matmul == pytest.approx(2 * a.matmul)
    assert dw.work(base, 2, 8).idle == 2 * a.idle  # idle is per micro-step and layer


def test_a_decoder_of_another_shape_is_predicted_from_the_rates_alone(tmp_path):
    """Two catalog decoders profiled at the same rates: any decoder's step is those rates times its work."""
    prof = pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 16, 64)])
    points = dw.calibration_points(prof)
    for kind in dw.KINDS:
        assert points[kind].to_numpy() == pytest.approx([RATES[kind]] * 2)
    key = _decoder(tmp_path, "other", vocab_size=8000)
    p = dw.predict_on_setup(key, "h100x1", points, 8, 8)
    w = dw.work(key, 8, 8)
    passes = dw.weight_passes_s(key, 8, "h100-80gb")
    assert p.step_s == pytest.approx(sum(RATES[k] * w.get(k) for k in dw.KINDS) + passes)
    assert p.low_s == pytest.approx(p.step_s) and p.high_s == pytest.approx(p.step_s)


def test_each_micro_step_passes_over_every_weight_at_the_swept_bandwidth(tmp_path):
    """Per micro-step, fp32 weights are cast and their gradients cast back (12 bytes a parameter), and each gradient
    after the step's first is added to the one held (12 more); 16-bit weights' gradients are only added (6): the
    time grows with parameters x micro-steps, at the
    bandwidth of the GPU's sweep where there is one, else its datasheet's; calibration takes it out of the
    profiles' memory-bound seconds, so a decoder at more micro-steps pays for its weights, not for more tokens."""
    from academic_bench.catalog.hardware import get_gpu
    from academic_bench.predict.work_evidence import Evidence

    key = _decoder(tmp_path, "d")
    params = counted_shape(key).params
    sheet = get_gpu("h100-80gb").memory_bandwidth_gbps * 1e9
    assert dw.weight_passes_s(key, 8, "h100-80gb") == pytest.approx(params * (8 * 12 + 7 * 12) / sheet)
    assert dw.weight_passes_s(key, 8, "h100-80gb", weights="bfloat16") == pytest.approx(params * 7 * 6 / sheet)
    assert dw.weight_passes_s(key, 1, "h100-80gb", weights="bfloat16") == 0.0  # one micro-step adds nothing
    swept = Evidence(bandwidth={"h100-80gb": sheet / 2})
    assert dw.weight_passes_s(key, 8, "h100-80gb", swept) == pytest.approx(2 * dw.weight_passes_s(key, 8, "h100-80gb"))
    points = dw.calibration_points(_profile("pythia-160m", 32, 32))
    few, many = (dw.predict_on_setup(key, "h100x1", points, mb, 64 // mb) for mb in (8, 2))
    extra = dw.weight_passes_s(key, 32, "h100-80gb") - dw.weight_passes_s(key, 8, "h100-80gb")
    assert many.seconds["memory"] - few.seconds["memory"] == pytest.approx(extra)
    # DeepSpeed's bf16 mode and bf16 weights run on 16-bit weights; autocast (alone, DDP, FSDP) on fp32 ones.
    from academic_bench.catalog.methods import parse_methods
    kept = {m: dw.built_in(parse_methods(m)) for m in ("free-lunch", "free-lunch+zero2", "free-lunch+bf16w",
                                                       "free-lunch+fsdp_full_shard")}
    assert kept == {"free-lunch": "float32", "free-lunch+zero2": "bfloat16", "free-lunch+bf16w": "bfloat16",
                    "free-lunch+fsdp_full_shard": "float32"}


def test_the_range_spans_the_lowest_and_highest_rates():
    slow = {k: 2 * v for k, v in RATES.items()}
    prof = pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 16, 64, rates=slow)])
    p = dw.predict_on_setup("pythia-1b", "h100x1", dw.calibration_points(prof), 16, 64)
    passes = dw.weight_passes_s("pythia-1b", 64, "h100-80gb")  # at the bandwidth, not a calibrated rate
    assert p.high_s - passes == pytest.approx(2 * (p.low_s - passes))
    # Wider than both, Pythia-1B gets the widest one's rates: here the slow ones, the top of the range.
    assert p.step_s == pytest.approx(p.high_s)


def test_each_kinds_rate_follows_the_hidden_size_between_the_profiled_decoders():
    """Pythia-160M (hidden 768) at twice Pythia-410M's (1024) rates: a decoder as wide as one gets its rates, one in
    between a rate between them (in the logarithm of the width), one narrower or wider the nearest one's."""
    import math

    fast = {k: 2 * v for k, v in RATES.items()}
    points = dw.calibration_points(pd.concat([_profile("pythia-160m", 32, 32, rates=fast),
                                              _profile("pythia-410m", 16, 64)]))
    for kind in ("matmul", "memory", "idle"):
        small, large = (float(points.loc[points["model"] == m, kind].iloc[0]) for m in ("pythia-160m", "pythia-410m"))
        assert small == pytest.approx(2 * large, rel=0.05)
        assert dw.rate_at(points, kind, 768) == pytest.approx(small)
        assert dw.rate_at(points, kind, 1024) == pytest.approx(large)
        share = math.log(896 / 768) / math.log(1024 / 768)
        assert dw.rate_at(points, kind, 896) == pytest.approx(small + share * (large - small))
        assert dw.rate_at(points, kind, 512) == pytest.approx(small)
        assert dw.rate_at(points, kind, 4096) == pytest.approx(large)
    # A profile that says nothing of a kind leaves the rate to the others.
    gap = points.assign(memory=[float("nan") if m == "pythia-410m" else v
                                for m, v in zip(points["model"], points["memory"])])
    assert dw.rate_at(gap, "memory", 1024) == pytest.approx(dw.rate_at(points, "memory", 768))


def test_on_the_profiled_gpu_the_days_are_the_steps_days_and_elsewhere_the_transfer_models(tmp_path):
    prof = pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 16, 64)])
    key = _decoder(tmp_path, "d")
    steps = get_model(key).recipe.steps
    here = dw.predict_decoder(key, "h100-80gb", 1, dw.calibration_points(prof))
    assert here.source_setup == "h100x1" and here.days == pytest.approx(days_for(steps, here.step_time_s))
    assert here.basis.startswith("work model") and "scaled from" not in here.basis
    there = dw.predict_decoder(key, "a100-80gb", 4, dw.calibration_points(prof))
    assert there.source_setup == "h100x1" and there.n_gpus == 4 and "scaled from h100x1" in there.basis
    assert there.days_low <= there.days <= there.days_high and there.mfu <= transfer.MFU_CAP


def test_without_a_profile_of_a_catalog_decoder_there_is_no_prediction(tmp_path):
    key = _decoder(tmp_path, "d")
    none = dw.calibration_points(pd.DataFrame(columns=PROFILE_COLUMNS))
    assert dw.predict_decoder(key, "h100-80gb", 1, none) is None
    # Profiles of other families or other settings calibrate nothing.
    vit = _profile("pythia-160m", 32, 32).assign(model="vit-large")
    naive = _profile("pythia-160m", 32, 32).assign(methods_label="naive")
    assert dw.predict_decoder(key, "h100-80gb", 1, dw.calibration_points(pd.concat([vit, naive]))) is None


def test_leave_one_out_predicts_each_calibration_decoder_from_the_others(monkeypatch):
    from academic_bench import analysis

    prof = pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 16, 64),
                      _profile("pythia-1b", 16, 64, rates={**RATES, "memory": 2 * RATES["memory"]})])
    monkeypatch.setattr(analysis, "profiles", lambda root=None: prof)
    got = wv.work_model_leave_one_out().set_index("model")
    assert list(got.columns) == [c for c in wv.WORK_MODEL_COLUMNS if c != "model"]
    assert got.loc["pythia-1b", "error"] < 0 and not got.loc["pythia-1b", "in_range"]  # its slower memory work
    assert got.loc["pythia-160m", "in_range"] and got.loc["pythia-160m", "predicted_step_high_s"] > \
        got.loc["pythia-160m", "profiled_step_s"]


def test_a_decoder_in_another_precision_gets_no_work_model_answer(tmp_path):
    """The rates are bf16 kernels' seconds: an fp32 or fp16 decoder is left to the MFU the study measured."""
    prof = _profile("pythia-160m", 32, 32)
    data = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_attention_heads": 8,
            "num_hidden_layers": 4, "vocab_size": 1000, "max_position_embeddings": 2048, "torch_dtype": "float32"}
    (tmp_path / "fp32").mkdir()
    (tmp_path / "fp32" / "config.json").write_text(json.dumps(data))
    key = decoder_spec(tmp_path / "fp32" / "config.json", seq_len=512, tokens=1e9, global_batch=64,
                       precision="fp32").spec.key  # trained in fp32 by --precision (torch_dtype is storage)
    assert get_model(key).recipe.precision == "fp32"
    assert dw.predict_decoder(key, "h100-80gb", 1, dw.calibration_points(prof)) is None
    bf16 = decoder_spec(tmp_path / "fp32" / "config.json", seq_len=512, tokens=1e9, global_batch=64,
                        precision="bf16").spec.key
    assert dw.predict_decoder(bf16, "h100-80gb", 1, dw.calibration_points(prof)) is not None


def test_the_work_counts_every_weight_matrix_and_the_attention_width(tmp_path):
    """By hand: the tiny Llama's matrices (q, k, v, o, gate, up, down per layer, and the untied head); GPT-2's
    Conv1D layers count as matrices too, and its tied head once more; attention follows heads x head size, not
    the hidden size, and grows with the sequence."""
    key = _decoder(tmp_path, "llama")
    per_layer = 256 * 256 * 2 + 256 * 64 * 2 + 256 * 688 * 3
    tokens = 2 * 4 * 512
    w = dw.work(key, 2, 4)
    assert w.matmul == 6 * (4 * per_layer + 1000 * 256) * tokens
    assert w.attention == 4 * 256 * 512 * tokens and w.loss == 1000 * tokens
    wide_heads = _decoder(tmp_path, "heads", head_dim=64)  # 8 heads of 64: attention width 512, hidden 256
    assert dw.work(wide_heads, 2, 4).attention == 2 * w.attention
    (tmp_path / "gpt2").mkdir()
    (tmp_path / "gpt2" / "config.json").write_text(json.dumps(
        {"model_type": "gpt2", "n_embd": 128, "n_layer": 2, "n_head": 4, "vocab_size": 1000, "n_positions": 1024}))
    gpt2 = decoder_spec(tmp_path / "gpt2" / "config.json", seq_len=512, tokens=1e9, global_batch=64).spec.key
    per_layer = 128 * 384 + 128 * 128 + 128 * 512 + 512 * 128
    assert dw.work(gpt2, 1, 1).matmul == 6 * (2 * per_layer + 1000 * 128) * 512
    assert dw.work(gpt2, 1, 1).memory == 2 * (128 + 4 * 128) * 512  # no intermediate size stated: 4 x hidden
    longer = decoder_spec(tmp_path / "gpt2" / "config.json", seq_len=1024, tokens=1e9, global_batch=64).spec.key
    assert dw.work(longer, 1, 1).attention == 4 * dw.work(gpt2, 1, 1).attention  # twice the tokens, each twice


def test_a_mixture_of_experts_outside_the_experts_interface_is_refused_where_it_is_read(tmp_path):
    """Its experts cannot be counted per token, and counted as dense it would be several times too many days: no
    spec is made for it, so no estimate either (the mixtures the study reads: tests/test_moe.py)."""
    (tmp_path / "jetmoe").mkdir()
    (tmp_path / "jetmoe" / "config.json").write_text(json.dumps(
        {"model_type": "jetmoe", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "kv_channels": 16, "intermediate_size": 32, "num_local_experts": 4,
         "num_experts_per_tok": 2, "vocab_size": 256, "max_position_embeddings": 1024}))
    with pytest.raises(ConfigError, match="mixture of experts"):
        decoder_spec(tmp_path / "jetmoe" / "config.json", seq_len=512, tokens=1e9, global_batch=64)


def test_a_transferred_range_never_claims_more_than_the_cap(tmp_path):
    """Rates so fast that the step would beat MFU_CAP: the answer and both ends of its range stay at or below it."""
    fast = {k: v / 50 for k, v in RATES.items()}
    prof = pd.concat([_profile("pythia-160m", 32, 32, rates=fast), _profile("pythia-410m", 16, 64, rates=RATES)])
    key = _decoder(tmp_path, "d")
    for gpu, n in (("h100-80gb", 1), ("a100-80gb", 4)):
        p = dw.predict_decoder(key, gpu, n, dw.calibration_points(prof))
        assert p.mfu <= transfer.MFU_CAP * (1 + 1e-9)
        assert p.mfu * p.step_time_s / p.step_low_s <= transfer.MFU_CAP * (1 + 1e-9)


def test_by_kind_sets_each_kind_of_the_work_model_beside_a_decoders_profile(tmp_path):
    """A decoder profiled at the calibration's rates is predicted kind by kind; one whose memory-bound kernels
    take twice as long shows it in that kind alone, and in the step."""
    points = dw.calibration_points(pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 16, 64)]))
    key = _decoder(tmp_path, "d")
    same = _profile(key, 4, 16, config_id="same").assign(model="d@same")
    slow = _profile(key, 4, 16, rates={**RATES, "memory": 2 * RATES["memory"]}, config_id="slow")
    got = wv.by_kind(pd.concat([same, slow.assign(model="d@slow")]), {"d@same": key, "d@slow": key}, points)
    assert list(got.columns) == wv.BY_KIND_COLUMNS and set(got["kind"]) == {*dw.KINDS, "step"}
    err = got.assign(m=[m for m in ("same", "slow") for _ in range(len(dw.KINDS) + 1)]).set_index(["m", "kind"])
    assert err.loc["same", "error"].abs().max() == pytest.approx(0.0, abs=1e-9)
    # Twice the memory-bound kernels' rate; the passes over the weights, at the bandwidth, the same.
    units, passes = dw.work(key, 4, 16).memory * RATES["memory"], dw.weight_passes_s(key, 16, "h100-80gb")
    assert err.loc[("slow", "memory"), "error"] == pytest.approx((units + passes) / (2 * units + passes) - 1)
    assert err.loc[("slow", "matmul"), "error"] == pytest.approx(0.0, abs=1e-9)
    assert err.loc[("slow", "step"), "error"] < 0
    assert wv.by_kind(same, {}, points).empty  # a profile whose decoder is not known is left out


def test_zero_and_fsdp_step_each_gpus_shard_of_the_optimizer(tmp_path):
    """The profiles' optimizer rate is per parameter: with ZeRO or FSDP each of 8 GPUs steps an eighth of the
    parameters, with plain data parallelism every GPU steps them all, on the profiled GPU and elsewhere alike."""
    from academic_bench.catalog.methods import parse_methods

    prof = pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 16, 64)])
    points = dw.calibration_points(prof)
    key = _decoder(tmp_path, "d")
    whole = dw.work(key, 1, 1).optimizer * RATES["optimizer"]
    for gpu in ("h100-80gb", "a100-80gb"):
        ddp = dw.predict_decoder(key, gpu, 8, points, parse_methods("free-lunch"), micro_batch=1)
        for sharding in ("zero1", "fsdp_full_shard"):
            sharded = dw.predict_decoder(key, gpu, 8, points, parse_methods(f"free-lunch+{sharding}"), micro_batch=1)
            assert sharded.optimizer_s == pytest.approx(ddp.optimizer_s / 8)
        if gpu == "h100-80gb":  # the profiled GPU: the rate itself
            assert ddp.optimizer_s == pytest.approx(whole)
