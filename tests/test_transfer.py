"""The transfer model: a measured step scaled part by part to a GPU the study did not measure, and its check
against held-out measurements. CPU only: synthetic sources, the GPU catalog, and the shipped runs."""
from __future__ import annotations

import dataclasses
import math
import re

import pandas as pd
import pytest

from academic_bench.predict import gpu_ratios, method_costs, transfer, transfer_validation as tv, work_validation as wv
from academic_bench.catalog.hardware import UnknownGPUError, get_gpu
from academic_bench.catalog.methods import Methods, preset
from academic_bench.catalog.models import model_rank
from measured import typed_figures  # noqa: F401  (a fixture)


def _source(split: dict, flops: float = 1e15, **kw) -> transfer.Source:
    """Pythia-160M free-lunch on one H100 (global batch 1024 = 32 x 32), a 10 s step split as given."""
    base = dict(setup="synthetic", model="pythia-160m", gpu="h100-80gb", n_gpus=1, methods=preset("free-lunch"),
                micro_batch=32, gas=32, step_time_s=10.0, model_flops_per_step=flops, split=split,
                split_basis="configuration")
    return transfer.Source(**(base | kw))


def _with_gpu(monkeypatch, key: str, **changes) -> None:
    """Make ``transfer`` see ``key`` in the catalog as the H100 with ``changes``."""
    fake = dataclasses.replace(get_gpu("h100-80gb"), key=key, **changes)
    real = transfer.get_gpu
    monkeypatch.setattr(transfer, "get_gpu", lambda k: fake if k == key else real(k))


def test_a_doubled_peak_halves_the_matrix_part_and_leaves_the_memory_part(monkeypatch):
    h100 = get_gpu("h100-80gb")
    _with_gpu(monkeypatch, "h100-2x", peak_tflops={p: 2 * v for p, v in h100.peak_tflops.items()})
    only_flop = transfer.predict(_source({"flop": 1.0}), "h100-2x", 1)
    assert only_flop.step_time_s == pytest.approx(5.0)
    mixed = transfer.predict(_source({"flop": 0.6, "memory": 0.4}), "h100-2x", 1)
    assert mixed.step_time_s == pytest.approx(0.6 * 10 / 2 + 0.4 * 10)
    assert mixed.step_low_s <= mixed.step_time_s <= mixed.step_high_s


def test_a_doubled_bandwidth_halves_the_memory_part(monkeypatch):
    _with_gpu(monkeypatch, "h100-fastmem", memory_bandwidth_gbps=2 * get_gpu("h100-80gb").memory_bandwidth_gbps)
    p = transfer.predict(_source({"flop": 0.5, "memory": 0.5}), "h100-fastmem", 1)
    assert p.step_time_s == pytest.approx(0.5 * 10 + 0.5 * 10 / 2)


def test_an_mfu_answer_never_exceeds_the_cap():
    """A source whose scaled step would beat 75% of the target's peak is capped there, and says so."""
    h100 = get_gpu("h100-80gb")
    flops = 0.9 * 10.0 * h100.peak_flops("fp16", tf32=True)  # 90% MFU on the source already
    for gpu in ("rtx3090", "a6000", "a100-80gb", "h100-80gb", "h200"):
        p = transfer.predict(_source({"flop": 1.0}, flops=flops), gpu, 2)
        assert p.capped and p.mfu == pytest.approx(transfer.MFU_CAP) and "capped" in p.basis
        assert p.step_low_s >= p.step_time_s - 1e-12 and p.days_low <= p.days <= p.days_high


@pytest.mark.parametrize("gpu", ["tpu-v5", "", "H100 80GB"])
def test_an_unknown_gpu_gives_the_catalogs_error(gpu):
    with pytest.raises(UnknownGPUError) as e:
        transfer.predict(_source({"flop": 1.0}), gpu, 1)
    assert f"unknown GPU {gpu!r}" in str(e.value) and "h100-80gb" in str(e.value)


@pytest.mark.parametrize("n", [0, -2, 1.5])
def test_a_bad_gpu_count_is_refused(n):
    with pytest.raises(ValueError, match="at least 1"):
        transfer.predict(_source({"flop": 1.0}), "h200", n)


def test_more_gpus_split_the_work_and_add_the_collectives():
    src = _source({"flop": 1.0})
    one, two = transfer.predict(src, "h100-80gb", 1), transfer.predict(src, "h100-80gb", 2)
    assert two.step_time_s > one.step_time_s / 2  # half the work each, plus the gradient all-reduce
    ddp = method_costs.collective_s(Methods(), 2, get_gpu("h100-80gb"), 1.6e8, 2, 16)
    assert ddp == pytest.approx(2 * 0.5 * 1.6e8 * 4 / 450e9)  # DDP's all-reduce of fp32 gradients over NVLink
    # a bridge joins two cards only: from three GPUs, RTX 3090s talk over PCIe
    assert get_gpu("rtx3090").link_gbps(2) > get_gpu("rtx3090").link_gbps(4) == get_gpu("rtx3090").pcie_gbps


def test_without_a_profile_the_default_split_widens_the_range():
    own = transfer.predict(_source(None, split_basis="configuration"), "a100-80gb", 1)
    default = transfer.predict(_source(None, split_basis="default"), "a100-80gb", 1)
    assert own.step_time_s == pytest.approx(default.step_time_s)
    assert default.step_high_s - default.step_low_s > own.step_high_s - own.step_low_s


def test_the_catalog_carries_bandwidths_with_their_sources():
    import csv
    from importlib import resources

    rows = list(csv.DictReader(resources.files("academic_bench").joinpath("data/gpus.csv").read_text().splitlines()))
    for r in rows:
        assert float(r["memory_bandwidth_gbps"]) > 0 and r["memory_bandwidth_source"]
        assert float(r["pcie_gbps"]) > 0 and r["pcie_source"] and r["nvlink_source"]
    assert get_gpu("h200").memory_bandwidth_gbps == 4800 and get_gpu("a6000").memory_bandwidth_gbps == 768


# --- validation --------------------------------------------------------------------------------------------

def test_errors_are_computed_from_the_rows():
    frame = pd.DataFrame({"predicted_days": [9.0, 12.0], "predicted_days_low": [8.0, 11.0],
                          "predicted_days_high": [11.0, 13.0], "measured_days": [10.0, 10.0]})
    out = tv.add_errors(frame)
    assert out["error"].tolist() == pytest.approx([-0.1, 0.2])
    assert out["in_range"].tolist() == [True, False]
    s = tv.error_summary(out)
    assert s["median_abs_error"] == pytest.approx(0.15) and s["worst_abs_error"] == pytest.approx(0.2)


def test_the_held_out_frame_on_the_shipped_runs():
    """h200x1 predicted from h100x1: one row per model complete on both, errors from its own columns."""
    df = tv.h100_to_h200()
    assert list(df.columns) == tv.VALIDATION_COLUMNS and len(df) >= 5
    assert (df["source_setup"] == "h100x1").all() and (df["target_setup"] == "h200x1").all()
    assert list(df["model"]) == sorted(df["model"], key=model_rank)  # the catalog's order, as every table
    assert df["error"].to_numpy() == pytest.approx((df["predicted_days"] / df["measured_days"] - 1).to_numpy())
    assert (df["predicted_mfu"] <= transfer.MFU_CAP).all()
    assert (df["predicted_days_low"] <= df["predicted_days"]).all()
    assert (df["predicted_days"] <= df["predicted_days_high"]).all()


def test_the_paper_frame_keeps_plausible_cells_only():
    df = tv.paper_beside_predictions()
    assert list(df.columns) == tv.PAPER_COLUMNS and len(df)
    assert (df["paper_mfu"] <= tv.PAPER_MFU_PLAUSIBLE).all() and (df["predicted_mfu"] <= transfer.MFU_CAP).all()
    assert df["ratio"].to_numpy() == pytest.approx((df["predicted_days"] / df["paper_days"]).to_numpy())
    # Re-rated on the dense 16-bit peak, the highest dense peak of a GPU, neither MFU grows.
    from academic_bench.analysis import mfu_on_dense16
    for side in ("paper", "predicted"):
        dense16 = mfu_on_dense16(df, mfu=f"{side}_mfu", peak=f"{side}_peak_flops")
        assert (dense16 <= df[f"{side}_mfu"] + 1e-12).all() and (dense16 > 0).all()
    # The predicted MFU's peak is the one the prediction rated it on: the GPU's, in the recipe's precision.
    for r in df.itertuples():
        p = tv.predict_setting(r.model, r.gpu, r.n_gpus)
        assert r.predicted_peak_flops == p.peak_flops == get_gpu(r.gpu).peak_flops(
            transfer.recipe_precision(r.model), p.methods.tf32)


def test_a_config_decoder_is_compared_with_the_estimate_made_before_it_ran(tmp_path):
    """``config_decoders`` reads each measured decoder's row beside the estimate kept for it, and computes the
    error from the two files alone (an estimate for another GPU is not compared)."""
    import json

    from academic_bench.catalog.config import Config
    from academic_bench.catalog.models.from_config import decoder_spec
    from academic_bench.results import ResultStore, make_row

    folder = tmp_path / "runs" / "h100x1" / "evidence" / "decoders"
    (folder / "tiny").mkdir(parents=True)
    cfg_file = folder / "tiny" / "config.json"
    cfg_file.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
                                    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
                                    "vocab_size": 256, "max_position_embeddings": 64}))
    key = decoder_spec(cfg_file, seq_len=32, tokens=1e6, global_batch=8).spec.key
    estimate = {"architecture": {"model_type": "llama", "seq_len": 32, "tokens": 1e6, "global_batch": 8,
                                 "precision": "bf16"},
                "params": 123, "gpu": "h100-80gb", "n_gpus": 1, "days": 12.0, "days_range": [10.0, 13.0],
                "mfu": {"value": 0.5, "source": "ours (h100x1)"}}
    (folder / "tiny" / "estimate.json").write_text(json.dumps(estimate))
    config = Config(key, "h100-80gb", 1, methods=preset("free-lunch"))
    row = make_row(config, setup="h100x1", outcome="ok", step_time_s=1.0, micro_batch=2, gas=4, days=10.0, mfu=0.6)
    ResultStore(folder / "results.jsonl").append(row)
    other = make_row(Config(key, "h200", 1, methods=preset("free-lunch")), setup="h200x1", outcome="ok",
                     step_time_s=1.0, micro_batch=2, gas=4, days=9.0, mfu=0.6)
    ResultStore(folder / "results.jsonl").append(other)
    (got,) = wv.config_decoders(str(tmp_path / "runs")).to_dict("records")
    assert (got["decoder"], got["predicted_days"], got["measured_days"]) == ("tiny", 12.0, 10.0)
    assert got["error"] == pytest.approx(0.2) and not got["within"] and got["in_range"]
    # No profile in this runs folder calibrates the work model, and the estimate kept was not made by it.
    assert got["estimated_with"] == "MFU interpolated in parameters" and not got["work_model_held_out"]
    assert not got["across_shapes"] and got["vocab"] is None  # this estimate's architecture names no vocabulary
    assert got["work_model_days"] != got["work_model_days"]  # NaN


def test_the_check_across_shapes_reads_only_estimates_the_one_answer_made_and_names_its_misses():
    """``shapes_summary`` sums up the decoders whose kept estimate came from the work model through the study's one
    answer (the estimate.json carries ``answer``), against item 4's targets, and lists the rows past the worst
    one, worst first; an older work-model estimate (no ``answer``) or an MFU-by-size one is not among them."""
    frame = tv.add_errors(pd.DataFrame({
        "decoder": ["old", "a", "b", "c"], "predicted_days": [20.0, 10.5, 9.0, 6.0],
        "predicted_days_low": [19.0, 10.0, 8.0, 5.0], "predicted_days_high": [21.0, 11.0, 9.5, 7.0],
        "measured_days": [10.0, 10.0, 10.0, 10.0], "across_shapes": [False, True, True, True]}))
    s = wv.shapes_summary(frame)
    assert s["n"] == 3 and s["median_abs_error"] == pytest.approx(0.1) and s["worst_abs_error"] == pytest.approx(0.4)
    assert not s["median_met"] and not s["worst_met"] and s["in_range"] == 1
    assert list(s["misses"]["decoder"]) == ["c"]
    assert wv.shapes_summary(frame.assign(across_shapes=False))["n"] == 0


def test_an_estimate_says_what_it_rests_on_in_either_format():
    """estimate.json files carry the answer (``by``, ``mfu``) since the estimate gave the study's one answer; the
    older ones an ``mfu`` block. Both say what the days rested on."""
    assert wv._made_by({"answer": {"by": "work model", "mfu": 0.4}, "days": 1.0}) == ("work model", 0.4)
    assert wv._made_by({"mfu": {"value": 0.5, "source": "work model (h100x1 profiles)"}}) == (
        "work model (h100x1 profiles)", 0.5)


def test_a_micro_batch_measured_to_fit_outranks_the_memory_model():
    """Pythia-6.9B ran at micro-batch 2 on one H200 where the memory model fits only 1: the same GPU and count
    keep the measured 2. One H200 to two adds data parallelism's buckets, and a smaller GPU holds less: the
    memory model decides there."""
    from academic_bench.catalog.config import Config
    from academic_bench.estimate import max_micro_batch

    src = _source({"flop": 1.0}, model="pythia-6.9b", gpu="h200", micro_batch=2, gas=512)
    modelled = {(g, n): max_micro_batch(Config("pythia-6.9b", g, n, methods=preset("free-lunch")),
                                        get_gpu(g).memory_gb) for g, n in (("h200", 1), ("h200", 2), ("a100-80gb", 1))}
    assert modelled[("h200", 1)] in (None, 1)
    assert transfer.target_micro_batch(src, "h200", 1) == 2
    assert transfer.target_micro_batch(src, "h200", 2) == modelled[("h200", 2)]
    assert transfer.target_micro_batch(src, "a100-80gb", 1) == modelled[("a100-80gb", 1)]
    several = dataclasses.replace(src, n_gpus=2)  # plain data parallelism on two: each GPU holds it all at any count
    assert transfer.target_micro_batch(several, "h200", 8) == 2


def test_where_the_best_configuration_does_not_fit_the_next_fastest_that_does_answers():
    """Mamba-2.8B's fastest measured configuration (free-lunch) fits no micro-batch on a 24 GB RTX 3090; the
    prediction rests on the fastest measured combination that does, and says so."""
    best = tv.choose_source("mamba-2.8b", "rtx3090", 1)
    p = tv.predict_setting("mamba-2.8b", "rtx3090", 1)
    assert best is not None and p is not None and p.step_time_s is not None
    assert "offload" in p.basis and f"the fastest measured there ({best['methods_label']})" in p.basis
    assert p.mfu <= transfer.MFU_CAP


def test_from_several_gpus_to_one_the_collectives_go_and_an_offload_copy_stays():
    """Two GPUs to one: the measured collectives (kernel time and the exposed boundary) have nothing to do on one
    GPU; with offloading, the boundary's copy to the host stays, over the one GPU's PCIe and at its doubled
    share of the work."""
    two = dict(n_gpus=2, micro_batch=16, sync_s=1.0)
    plain = transfer.predict(_source({"flop": 0.8}, **two), "h100-80gb", 1)
    assert transfer.predict(_source({"flop": 0.8, "comm": 0.2}, **two), "h100-80gb", 1).step_time_s == \
        pytest.approx(plain.step_time_s)
    assert plain.step_time_s == pytest.approx(0.8 * (10.0 - 1.0) * 2)  # the micro-steps' FLOP part, twice the work
    off = dict(two, methods=dataclasses.replace(preset("free-lunch"), sharding="zero2", offload=True))
    with_copy = transfer.predict(_source({"flop": 0.8}, **off), "h100-80gb", 1)
    # ZeRO-2's copies in each micro-step go with the accumulation steps: the source's (each GPU copies its half
    # in 32 micro-steps) out of the carried part, the target's (the whole partition, in its own) charged.
    from academic_bench.estimate import BYTES, model_stats

    h100, m = get_gpu("h100-80gb"), off["methods"]
    params, width = float(model_stats("pythia-160m").params), BYTES[transfer.recipe_precision("pythia-160m")]
    source_copies = method_costs.micro_step_copy_s(m, 2, h100, params, width, 32)
    target_copies = method_costs.micro_step_copy_s(m, 1, h100, params, width, with_copy.gas)
    assert with_copy.step_time_s == pytest.approx(0.8 * (10.0 - 1.0 - source_copies) * 2 + target_copies + 2 * 1.0)


# --- every counted configuration, from the other setups ------------------------------------------------------

@pytest.mark.usefixtures("typed_figures")  # synthetic rows with typed-in figures
def test_each_setup_is_predicted_from_the_other_setups_only(tmp_path):
    """``setups_held_out``: a configuration's prediction rests on the other setups' rows, never its own: a
    different measurement on the target changes its measured days and error, not its prediction."""
    from test_cost import write_synthetic_runs

    for folder, h200_days in (("one", 9.0), ("two", 18.0)):
        write_synthetic_runs(tmp_path / folder, [("pythia-1b", "h100-80gb", 1, 40.0, 0.5)], setup="a")
        write_synthetic_runs(tmp_path / folder, [("pythia-1b", "h200", 1, h200_days, 0.5)], setup="b")
    one, two = (tv.setups_held_out(str(tmp_path / f)).set_index("target_setup") for f in ("one", "two"))
    assert list(one.reset_index().columns) == tv.SETUPS_COLUMNS
    assert (one.loc["b", "source_setup"], one.loc["a", "source_setup"]) == ("a", "b")
    assert two.loc["b", "predicted_days"] == pytest.approx(one.loc["b", "predicted_days"])
    assert two.loc["b", "measured_days"] == 18.0 and two.loc["b", "error"] != one.loc["b", "error"]
    assert two.loc["a", "predicted_days"] > one.loc["a", "predicted_days"]  # a's prediction rests on b


def test_every_counted_configuration_of_the_shipped_setups_is_predicted_or_says_why():
    """One row per counted configuration (the fastest per setup, model and methods), each predicted from another
    setup or with the reason it is not; the per-class figures are the rows'."""
    from academic_bench.analysis import counted, runs_frame

    df = tv.setups_held_out()
    rows = counted.results(runs_frame())
    assert len(df) == len(rows.groupby(["setup", "model", "methods_label"])) and len(df) >= 50
    p = df[df["predicted_days"].notna()]
    assert (p["source_setup"] != p["target_setup"]).all() and len(p) >= 0.9 * len(df)
    assert df.loc[df["predicted_days"].isna(), "why_not"].notna().all()
    assert p["error"].to_numpy() == pytest.approx((p["predicted_days"] / p["measured_days"] - 1).to_numpy())
    classes = tv.by_method_class(df).set_index("method_class")
    assert classes["configurations"].sum() == len(df) and classes["predicted"].sum() == len(p)
    for cls, g in p.groupby("method_class"):
        assert classes.loc[cls, "worst_abs_error"] == pytest.approx(g["abs_error"].max())
        assert classes.loc[cls, "worst_met"] == (g["abs_error"].max() <= tv.CLASS_TARGET["worst"])


def _profile(micro_batch: int, gas: int, flop_s: float, memory_s: float, idle_s: float) -> pd.DataFrame:
    """A synthetic kernel profile of Pythia-160M free-lunch on the setup "synthetic": matrix and memory-bound
    kernels' seconds per optimizer step, and ``idle_s`` of the GPU's idle time in it."""
    busy = flop_s + memory_s
    return pd.DataFrame([{"setup": "synthetic", "model": "pythia-160m", "methods_label": "free-lunch",
                          "config_id": "p", "micro_batch": micro_batch, "gas": gas, "kind": kind, "seconds": s,
                          "busy_s": busy, "step_wall_s": busy + idle_s, "tiny": False, "timer": "gpu kernels"}
                         for kind, s in (("matrix multiplication", flop_s), ("elementwise", memory_s))])


def test_a_profile_at_another_micro_batch_lends_its_idle_time_per_micro_step():
    """A profile at micro-batch 2 (512 micro-steps) idles a second per 64 micro-steps; a row at micro-batch 32
    (32 micro-steps) of the same model splits its step with that idle time per micro-step, not with the
    profile's share of idle time, which its 16 times fewer launches and host waits do not have."""
    prof = _profile(2, 512, flop_s=6.0, memory_s=2.0, idle_s=8.0)
    row = {"setup": "synthetic", "model": "pythia-160m", "gpu": "h100-80gb", "n_gpus": 1, "micro_batch": 32,
           "gas": 32, "step_time_s": 8.5, "model_flops_per_step": 1e15, "methods_label": "free-lunch + ckpt",
           **dataclasses.asdict(preset("free-lunch")), "checkpointing": True}
    src = transfer.source_from_row(row, prof)
    assert src.split_basis == "model"
    idle = 8.0 * 32 / 512  # the profile's idle seconds per micro-step, times the row's micro-steps
    assert src.split["idle"] == pytest.approx(idle / (6.0 + 2.0 + idle))
    assert src.split["flop"] / src.split["memory"] == pytest.approx(6.0 / 2.0)
    # at the profile's own micro-batch the shares are the profile's
    same = transfer.source_from_row(row | {"micro_batch": 2, "gas": 512}, prof)
    assert same.split["idle"] == pytest.approx(8.0 / 16.0)


def _decoder_folder(folder, name: str, config: dict, days: float, seq_len: int = 32) -> str:
    """A decoder outside the catalog as the study keeps one: its config.json, the estimate kept before it ran
    (12 days, made by the MFU rule) and its measured row (``days``)."""
    import json

    from academic_bench.catalog.config import Config
    from academic_bench.catalog.models.from_config import decoder_spec
    from academic_bench.results import ResultStore, make_row

    (folder / name).mkdir(parents=True)
    (folder / name / "config.json").write_text(json.dumps(config))
    key = decoder_spec(folder / name / "config.json", seq_len=seq_len, tokens=1e6, global_batch=8).spec.key
    (folder / name / "estimate.json").write_text(json.dumps({
        "architecture": {"model_type": "llama", "seq_len": seq_len, "tokens": 1e6, "global_batch": 8,
                         "precision": "bf16", "vocab": config["vocab_size"]}, "params": 1,
        "gpu": "h100-80gb", "n_gpus": 1, "days": 12.0, "days_range": [10.0, 13.0],
        "mfu": {"value": 0.5, "source": "ours (h100x1)"}}))
    ResultStore(folder / "results.jsonl").append(make_row(
        Config(key, "h100-80gb", 1, methods=preset("free-lunch")), setup="h100x1", outcome="ok", step_time_s=1.0,
        micro_batch=2, gas=4, days=days, mfu=0.5))
    return key


def test_a_variant_that_changes_one_thing_of_a_decoder_is_set_beside_it_and_counted_apart(tmp_path):
    """A folder that extends a measured decoder's name with a changed config.json (GPT-2 with its vocabulary padded)
    is a variant of it: ``variants`` says what it changes, how much faster it trained and how much of the base's
    profiled step ran in kernels for unaligned operands; the check across shapes counts each decoder once. A folder
    that copies the config to train it at another length is a new configuration, not a variant."""
    import json

    from academic_bench.catalog.config import Config

    folder = tmp_path / "runs" / "h100x1" / "evidence" / "decoders"
    base = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 251, "max_position_embeddings": 64}
    key = _decoder_folder(folder, "small", base, days=15.0)
    _decoder_folder(folder, "small-vocab256", {**base, "vocab_size": 256}, days=10.0)
    _decoder_folder(folder, "small-seq64", base, days=20.0, seq_len=64)
    _decoder_folder(folder, "small-wide-seq64", {**base, "intermediate_size": 256}, days=20.0, seq_len=64)
    (folder / "profiles.jsonl").write_text(json.dumps({
        "config_id": "p1", "config": Config(key, "h100-80gb", 1, methods=preset("free-lunch")).to_dict(),
        "setup": "h100x1", "at": "2026-01-01T00:00:00+00:00", "micro_batch": 2, "gas": 4, "step_wall_s": 2.0,
        "busy_s": 2.0, "busy_share": 1.0, "timer": "gpu kernels",
        "kinds": [{"kind": "matrix multiplication", "seconds": 1.2, "share": 0.6}],
        "top": [{"name": "cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_tn_align1", "seconds": 0.5,
                 "kind": "matrix multiplication"},
                {"name": "nvjet_sm90_tst_192x192_64x3_2x1_v_bz_coopB_TNN", "seconds": 0.7,
                 "kind": "matrix multiplication"}]}) + "\n")
    d = wv.config_decoders(str(tmp_path / "runs"))
    assert {r.decoder: r.variant_of if isinstance(r.variant_of, str) else None for r in d.itertuples()} == {
        "small": None, "small-vocab256": "small", "small-seq64": None, "small-wide-seq64": None}
    (v,) = wv.variants(d, str(tmp_path / "runs")).to_dict("records")
    assert v["setup"] == "h100x1" and v["change"] == "vocab_size 251 -> 256" and v["speedup"] == pytest.approx(1.5)
    assert v["error"] == pytest.approx(0.2) and v["base_error"] == pytest.approx(-0.2)
    assert v["base_unaligned_share"] == pytest.approx(0.25)
    d = d.assign(across_shapes=True)
    assert wv.shapes_summary(d)["n"] == 3, "the variant is shown apart, its base and the new lengths counted"
    (folder / "small-vocab256" / "config.json").unlink()  # a variant whose config is gone is no variant
    assert wv.config_decoders(str(tmp_path / "runs"))["variant_of"].isna().all()


def test_an_unaligned_vocabulary_is_warned_of_and_kept_out_of_the_work_models_ranges(tmp_path, capsys):
    """``estimate`` on a config.json whose vocabulary is no multiple of 8 warns of the slower kernels and names the
    padded size; an aligned one has no warning. The work model's charge for them was made after such decoders
    missed (``test_work_evidence``), so their errors under it are no held-out check and widen no range."""
    import json

    from academic_bench.predict import ranges
    from academic_bench.catalog.models.from_config import shape_warnings
    from academic_bench.cli import main

    assert shape_warnings({"vocab": 50304}) == shape_warnings({"vocab": None}) == []
    assert shape_warnings({"vocab": math.nan}) == [], "a table's gap is no vocabulary"
    assert shape_warnings({"vocab": 50257.0}) == shape_warnings({"vocab": 50257}), "a table's float is the same size"
    (warning,) = shape_warnings({"vocab": 50257})
    assert "50,257" in warning and "50,304" in warning
    cfg = tmp_path / "odd" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
                               "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
                               "vocab_size": 251, "max_position_embeddings": 64}))
    assert main(["estimate", "--model", str(cfg), "--tokens", "1e6", "--seq-len", "32", "--gpu", "h100-80gb",
                 "--gpus", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == shape_warnings({"vocab": 251})
    assert main(["estimate", "--model", str(cfg), "--tokens", "1e6", "--seq-len", "32", "--gpu", "h100-80gb",
                 "--gpus", "1"]) == 0
    assert "Warning:  " + shape_warnings({"vocab": 251})[0] in capsys.readouterr().out
    decoders = pd.DataFrame([{"decoder": d, "n_gpus": 1, "gpu": "h100-80gb", "vocab": v, "measured_days": 10.0,
                              "work_model_held_out": True, "work_model_days": w, "estimated_with": wv.WORK_MODEL,
                              "predicted_days": w, "predicted_days_low": None, "predicted_days_high": None}
                             for d, v, w in (("aligned", 256, 10.5), ("odd", 251, 6.0))])
    got = ranges.observed_errors(setups=pd.DataFrame(columns=["predicted_days"]), decoders=decoders)
    assert list(got["point"]) == ["aligned on 1 x h100-80gb"]


def test_offloadings_copies_in_every_micro_step_go_with_the_accumulation_steps():
    """FSDP with offload gathers its weight shard from the host in every micro-step, so the same batch in half as
    many micro-steps of twice the size copies half as much: the transfer takes the copies of the source's 128
    micro-steps out and charges the target's 64, and the rest of the step is carried per sample. ZeRO-3, whose
    phases do not follow its copies (``method_costs.COPIES_EXPOSED``), and the work model's step, which holds no
    copies (``copies_in_step``), are carried per sample whole."""
    from academic_bench.estimate import BYTES, model_stats

    h100 = get_gpu("h100-80gb")
    params, width = float(model_stats("pythia-160m").params), BYTES[transfer.recipe_precision("pythia-160m")]
    fsdp, zero3 = Methods(sharding="fsdp_full_shard", offload=True), Methods(sharding="zero3", offload=True)
    copies = method_costs.micro_step_copy_s(fsdp, 1, h100, params, width, 128)
    assert copies == pytest.approx(2 * 128 * params * 4 / (h100.pcie_gbps * 1e9))  # two fp32 gathers a micro-step
    src = _source({"flop": 1.0}, methods=fsdp, micro_batch=8, gas=128, step_time_s=100.0)
    got = transfer.predict(src, "h100-80gb", 1, micro_batch=16)
    assert (got.micro_batch, got.gas) == (16, 64)
    assert got.step_time_s == pytest.approx(100.0 - copies + copies / 2)
    assert got.step_low_s < got.step_time_s < got.step_high_s
    for kept in (dataclasses.replace(src, methods=zero3), dataclasses.replace(src, copies_in_step=False)):
        assert transfer.predict(kept, "h100-80gb", 1, micro_batch=16).step_time_s == pytest.approx(100.0)


def test_the_copies_carried_by_micro_step_are_those_the_phases_show_exposed():
    """The shipped phases: on the 1B and larger decoders, each method the transfer carries by micro-step takes
    about its copies' time more per accumulating micro-step than ZeRO-1 + offload at the same micro-batch (within
    0.75-1.5 times, or as close as the base's own measurements lie apart), and ZeRO-3 does not (so it is carried
    as measured)."""
    from conftest import skip_or_fail
    from academic_bench.predict.offload_phases import RULE_MIN_PARAMS, micro_step_excess

    d = micro_step_excess(min_params=RULE_MIN_PARAMS)
    if d.empty:
        skip_or_fail("no offloaded pair of a 1B or larger decoder shipped")
    exposed = d[d["sharding"].isin(method_costs.COPIES_EXPOSED)]
    # An excess is a difference from the base's measurements, so it is known no closer than they lie apart.
    agrees = exposed["ratio"].between(0.75, 1.5) | ((exposed["excess_s"] - exposed["copies_s"]).abs()
                                                   <= exposed["base_range_s"])
    assert not exposed.empty and agrees.all()
    zero3 = d[d["sharding"] == "zero3"]
    assert zero3.empty or not zero3["ratio"].between(0.75, 1.5).all()


def test_the_profiles_of_one_configuration_on_two_gpus_set_each_part_beside_the_ratio_the_model_takes(
        tmp_path, monkeypatch):
    """Where a carry between GPUs goes wrong, kind by kind: the same configuration's kernels on both setups,
    summed into the transfer model's parts (the optimizer, timed apart, left out), the target's over the source's,
    beside the datasheet ratio the model scales that part by; tiny profiles and other models pair with nothing."""
    from academic_bench.analysis.profiles import PROFILE_COLUMNS

    monkeypatch.setenv("ACADEMIC_BENCH_RUNS", str(tmp_path))  # no sweep of memory-bound kernels: the datasheets

    def rows(setup, gpu, seconds, model="pythia-160m", tiny=False, micro_batch=32):
        return [{"model": model, "gpu": gpu, "n_gpus": 1, "setup": setup, "config_id": f"{model}-{setup}",
                 "methods_label": "free-lunch", "micro_batch": micro_batch, "gas": 1024 // micro_batch, "kind": k,
                 "seconds": t, "share": 0.0, "busy_s": 1.0, "busy_share": 1.0, "step_wall_s": 1.0,
                 "timer": "gpu kernels", "tiny": tiny, "at": "2026-01-01T00:00:00+00:00"} for k, t in seconds.items()]

    h100 = {"matrix multiplication": 3.0, "attention": 1.0, "elementwise and other": 1.5, "normalisation": 0.5,
            "optimizer": 0.4}
    h200 = {"matrix multiplication": 3.0, "attention": 1.0, "elementwise and other": 1.2, "normalisation": 0.4,
            "optimizer": 9.9}
    prof = pd.DataFrame(rows("h100x1", "h100-80gb", h100) + rows("h200x1", "h200", h200, micro_batch=64)
                        + rows("h200x1", "h200", h200, model="pythia-410m")
                        + rows("h100x1", "h100-80gb", h100, tiny=True), columns=PROFILE_COLUMNS)
    frame = tv.kinds_across_gpus(prof, "h100x1", "h200x1")
    got = frame.set_index("part")
    assert set(got.index) == {"flop", "memory"} and (frame["model"] == "pythia-160m").all()
    assert got.loc["flop", "ratio"] == pytest.approx(1.0) and got.loc["memory", "ratio"] == pytest.approx(0.8)
    bandwidth = get_gpu("h100-80gb").memory_bandwidth_gbps / get_gpu("h200").memory_bandwidth_gbps
    # One chip: the two GPUs' measured matrix-product rates agree within a percent (data/matmul_rates.csv).
    assert got.loc["memory", "model_ratio"] == pytest.approx(bandwidth)
    assert got.loc["flop", "model_ratio"] == pytest.approx(1.0, rel=0.01)
    assert (got.loc["memory", "source_micro_batch"], got.loc["memory", "target_micro_batch"]) == (32, 64)
    summary = tv.kinds_summary(frame)["memory"]
    assert summary["median"] == pytest.approx(0.8) and summary["configurations"] == 1
    assert tv.at_micro_batches(summary["least"]) == "pythia-160m at micro-batches 32 and 64"
    assert tv.kinds_across_gpus(prof.iloc[:0], "h100x1", "h200x1").empty


def test_memory_bound_kernels_scale_as_two_gpus_memory_sweeps_timed_them_where_both_were_swept(tmp_path, monkeypatch):
    """Where both GPUs ran the sweep of memory-bound kernels (``gemm_sweep.py memory``), the step's memory-bound
    part scales by how many times as long the same kernels took on the target (the median over the kernels both
    timed, those as short as a launch left out), and the basis says so; where one GPU was not swept, by the
    datasheets' bandwidth ratio."""
    import json

    def sweep(setup, name, seconds_of):
        folder = tmp_path / setup / "evidence" / "gemm"
        folder.mkdir(parents=True)
        lines = [{"op": op, "m": m, "k": 1024, "dtype": "bf16", "bytes": 1, "seconds": seconds_of(op, m), "gpu": name}
                 for op in ("add", "gelu", "cast") for m in (8192, 32768)]
        (folder / "gemm-memory.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    sweep("h100x1", "NVIDIA H100 80GB HBM3", lambda op, m: m * 1e-9)
    # The smallest kernels took the host's launch interval on both GPUs: left out of the ratio.
    sweep("h200x1", "NVIDIA H200", lambda op, m: m * 1e-9 * (1.0 if m == 8192 else 0.8 if op != "cast" else 0.9))
    monkeypatch.setenv("ACADEMIC_BENCH_RUNS", str(tmp_path))
    h100, h200, a100 = (get_gpu(k) for k in ("h100-80gb", "h200", "a100-80gb"))
    assert gpu_ratios.memory_ratio(h100, h200) == (pytest.approx(0.8), "sweep")
    assert gpu_ratios.memory_ratio(h200, h100) == (pytest.approx(1.25), "sweep")
    datasheet = h100.memory_bandwidth_gbps / a100.memory_bandwidth_gbps
    assert gpu_ratios.memory_ratio(h100, a100) == (pytest.approx(datasheet), "datasheet")
    p = transfer.predict(_source({"memory": 1.0}), "h200", 1)
    assert p.step_time_s == pytest.approx(0.8 * 10) and "memory sweeps" in p.basis
    monkeypatch.setenv("ACADEMIC_BENCH_RUNS", str(tmp_path / "none"))
    p = transfer.predict(_source({"memory": 1.0}), "h200", 1)
    bandwidth = h100.memory_bandwidth_gbps / h200.memory_bandwidth_gbps
    assert p.step_time_s == pytest.approx(bandwidth * 10) and "memory sweeps" not in p.basis


def test_matrix_products_follow_the_rates_others_measured():
    """A step's matrix products scale by the rates a public torch.matmul table measured on both GPUs (the median of
    each GPU's rows), not by the datasheets; where the table lacks a GPU, by the datasheets' dense peaks."""
    import csv
    import statistics
    from importlib import resources

    from academic_bench.catalog.hardware import get_gpu
    from academic_bench.predict.gpu_ratios import flop_ratio

    text = resources.files("academic_bench").joinpath("data/matmul_rates.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))

    def median(gpu):
        return statistics.median(float(r["tflops"]) for r in rows if (r["gpu"], r["precision"]) == (gpu, "bf16"))

    h100, rtx3090, h200, a10 = (get_gpu(k) for k in ("h100-80gb", "rtx3090", "h200", "a10"))
    assert flop_ratio(h100, rtx3090, "bf16", True) == (pytest.approx(median("h100-80gb") / median("rtx3090")),
                                                       "measured")
    assert flop_ratio(h100, h200, "bf16", True) == (pytest.approx(median("h100-80gb") / median("h200")), "measured")
    assert flop_ratio(h100, h100, "bf16", True) == (1.0, "datasheet")
    assert flop_ratio(h100, a10, "bf16", True)[1] == "datasheet"  # the table has no A10
    # Every row names a catalog GPU, a precision the catalog gives it, the table at one commit or the issue its
    # run posted, and its line.
    table = "https://github.com/zzc0721/torch-performance-test-data/"
    for r in rows:
        assert r["precision"] in get_gpu(r["gpu"]).peak_tflops and r["tflops"] in r["quote"]
        at_commit = re.fullmatch(re.escape(table) + r"blob/[0-9a-f]{40}/database\.md", r["url"])
        assert (at_commit or re.fullmatch(re.escape(table) + r"issues/\d+", r["url"])) and r["device"] in r["quote"]
