"""The GPU catalog, detection of an unknown GPU, and the paper's search-space rules."""
from __future__ import annotations

import pytest

from academic_bench.catalog.hardware import UnknownGPUError, catalog, get_gpu, match_name
from academic_bench.catalog.methods import (FREE_LUNCH, NAIVE, Methods, exclusion_reason, hardware_reason,
                                    parse_methods, search_space)


def test_catalog_has_the_five_gpus_with_sources():
    assert set(catalog()) == {"rtx3090", "a6000", "a100-80gb", "h100-80gb", "h200"}
    for g in catalog().values():
        assert g.memory_gb > 0 and g.board_power_w > 0 and g.price_usd and g.price_source and g.spec_source
        assert g.peak_tflops["bf16"] >= g.peak_tflops["tf32"] >= g.peak_tflops["fp32"] > 0


def test_geforce_fp16_runs_at_the_fp32_accumulate_rate():
    # GeForce cards run fp16 tensor math with fp32 accumulation at half the fp16-accumulate rate.
    g = get_gpu("rtx3090")
    assert g.peak_tflops["fp16"] == g.peak_tflops["bf16"]


def test_fp32_uses_the_tf32_peak_only_when_tf32_is_on():
    g = get_gpu("a100-80gb")
    assert g.peak_flops("fp32", tf32=True) == g.peak_tflops["tf32"] * 1e12
    assert g.peak_flops("fp32", tf32=False) == g.peak_tflops["fp32"] * 1e12


def test_driver_names_match_catalog_entries():
    assert match_name("NVIDIA H100 80GB HBM3").key == "h100-80gb"
    assert match_name("NVIDIA H200").key == "h200"
    assert match_name("NVIDIA A100-SXM4-40GB") is None  # a different card
    assert match_name("Tesla V100-SXM2-32GB") is None


def test_free_lunch_needs_tf32_on_the_gpu():
    assert "TF32" in hardware_reason(FREE_LUNCH, get_gpu("v100-32gb"))
    assert hardware_reason(FREE_LUNCH, get_gpu("a100-80gb")) is None


def test_unknown_gpu_key_names_the_valid_ones():
    with pytest.raises(UnknownGPUError, match="h100-80gb"):
        get_gpu("v100")


@pytest.mark.parametrize("n_gpus, n_valid", [(1, 12), (2, 22), (4, 22), (8, 22)])
def test_search_space_has_the_papers_size(n_gpus, n_valid):
    valid, excluded = search_space(n_gpus)
    assert len(valid) == n_valid and len(valid) + len(excluded) == 24
    assert all(reason for _, reason in excluded)


def test_exclusion_rules():
    assert "sharding" in exclusion_reason(Methods(offload=True), 2)
    assert "no-op" in exclusion_reason(Methods(sharding="zero1"), 1)
    assert exclusion_reason(Methods(sharding="zero1", offload=True), 1) is None
    assert exclusion_reason(Methods(sharding="zero3"), 2) is None
    with pytest.raises(ValueError, match="GPU count"):
        search_space(0)


def test_parse_methods_specs():
    assert parse_methods("naive") == NAIVE
    m = parse_methods("free-lunch+ckpt+zero3+offload")
    assert m.free_lunch and m.checkpointing and m.sharding == "zero3" and m.offload
    assert m.label() == "free-lunch + ckpt + ZeRO-3 + offload"
    with pytest.raises(ValueError, match="switches"):
        parse_methods("free-lunch+turbo")


@pytest.mark.parametrize("spec", ["free-lunch+zero1+offload", "free-lunch+bf16w", "naive+ckpt"])
def test_a_methods_spec_reads_back_as_the_same_methods(spec):
    from academic_bench.catalog.methods import methods_spec

    assert parse_methods(methods_spec(parse_methods(spec))) == parse_methods(spec)


def test_gpus_outside_the_study_are_predicted_never_measured(capsys):
    """The RTX 4090 and the A100 40GB have datasheet rows but are not among the study's GPUs: the answer for them
    is the transfer model's prediction, never a measurement; an AMD GPU is refused with the reason."""
    import json

    from academic_bench.cli import main

    for key in ("rtx4090", "a100-40gb"):
        g = get_gpu(key)
        assert not g.in_study and key not in catalog() and g.memory_bandwidth_gbps and g.pcie_gbps
    assert get_gpu("rtx4090").peak_tflops["bf16"] > get_gpu("rtx3090").peak_tflops["bf16"]
    assert get_gpu("a100-40gb").memory_bandwidth_gbps < get_gpu("a100-80gb").memory_bandwidth_gbps
    assert main(["estimate", "--model", "pythia-160m", "--gpu", "rtx4090", "--gpus", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["answer"]["kind"] in ("predicted", "none")
    assert main(["estimate", "--model", "pythia-160m", "--gpu", "mi250x", "--gpus", "1", "--json"]) == 2
    assert "AMD" in json.loads(capsys.readouterr().out)["error"]
