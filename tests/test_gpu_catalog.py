"""The GPU catalog of every generation a lab reports (data/gpus.csv), its per-architecture method rules, and a GPU
a user describes in a YAML file (``--gpu my-gpu.yaml``)."""
from __future__ import annotations

import json

import pytest

from academic_bench.catalog.config import Config
from academic_bench.catalog.hardware import (ARCHITECTURES, GPUFileError, catalog, every_gpu, get_gpu,
                                             load_gpu_file)
from academic_bench.catalog.methods import (FREE_LUNCH, Methods, attention_kernel, free_lunch_for, gpu_rules,
                                            hardware_reason)
from academic_bench.cli import main

ISSUE_KEYS = ("v100-16gb", "v100-32gb", "t4", "rtx2080ti", "rtx3090", "a10", "a40", "a6000", "a100-40gb", "a100-80gb",
              "rtx4090", "l4", "l40s", "rtx6000-ada", "h100-pcie", "h100-80gb", "h100-nvl", "h200", "rtx5090",
              "rtx-pro-6000", "b200", "mi250x", "mi300x")
GEFORCE = ("rtx2080ti", "rtx3090", "rtx4090", "rtx5090")


def test_every_generation_a_lab_reports_has_its_rows_with_sources():
    gpus = every_gpu()
    assert set(ISSUE_KEYS) <= set(gpus)
    assert {g.architecture for g in gpus.values()} == set(ARCHITECTURES) - {"pascal"}
    for g in gpus.values():
        assert g.memory_gb > 0 and g.board_power_w > 0 and g.memory_bandwidth_gbps and g.pcie_gbps and g.pcie_gen
        assert g.spec_source and g.price_source and g.sources["memory_bandwidth"] and g.sources["pcie"]
        assert g.peak_tflops["fp32"] > 0 and g.peak_tflops["fp16"] > g.peak_tflops["fp32"]
        assert (g.price_usd is None) == (not g.price_date)  # a purchase price is dated, an empty one says why


def test_the_study_still_measures_the_same_five():
    assert set(catalog()) == {"rtx3090", "a6000", "a100-80gb", "h100-80gb", "h200"}
    assert all(not every_gpu()[k].in_study for k in set(ISSUE_KEYS) - set(catalog()))


def test_precisions_follow_the_architecture():
    for g in every_gpu().values():
        if g.vendor != "nvidia":
            continue
        before_ampere = g.architecture in ("volta", "turing")
        assert ("bf16" in g.peak_tflops) is not before_ampere and ("tf32" in g.peak_tflops) is not before_ampere
        assert (g.fp8_tflops is not None) is (g.architecture in ("ada", "hopper", "blackwell"))
        assert g.supports_fp8 is (g.fp8_tflops is not None)


def test_geforce_rates_are_fp32_accumulate_and_no_p2p_since_the_4090():
    for key in GEFORCE:
        g = get_gpu(key)
        assert g.peak_tflops["fp16"] == g.peak_tflops.get("bf16", g.peak_tflops["fp16"])
        assert g.pcie_p2p is False  # NVIDIA's own driver: no PCIe peer access on GeForce
    assert not get_gpu("rtx4090").nvlink_gbps and not get_gpu("rtx5090").nvlink_gbps  # and no bridge since the 4090


def test_a_precision_the_gpu_lacks_is_refused_not_priced():
    with pytest.raises(ValueError, match="no bf16 tensor rate"):
        get_gpu("v100-32gb").peak_flops("bf16")


# --- the per-architecture rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu", ["v100-16gb", "v100-32gb", "t4", "rtx2080ti"])
def test_a_bf16_recipe_before_ampere_is_refused_naming_fp16(gpu):
    methods = free_lunch_for(get_gpu(gpu))
    with pytest.raises(ValueError, match=r"bf16.*--precision fp16"):
        Config("pythia-1b", gpu, 8, methods=methods).check()
    Config("roberta-large", gpu, 8, methods=methods).check()  # an fp16 recipe runs


def test_tf32_and_flash_attention_from_ampere():
    t4, a10 = get_gpu("t4"), get_gpu("a10")
    assert "TF32" in hardware_reason(FREE_LUNCH, t4) and hardware_reason(FREE_LUNCH, a10) is None
    assert not free_lunch_for(t4).tf32 and free_lunch_for(t4).compile and free_lunch_for(a10) == FREE_LUNCH
    assert "memory-efficient" in attention_kernel(t4) and "FlashAttention-2" in attention_kernel(a10)


@pytest.mark.parametrize("gpu, has_fp8", [("a100-80gb", False), ("rtx3090", False), ("l4", True), ("rtx4090", True),
                                          ("h100-pcie", True), ("b200", True), ("rtx5090", True)])
def test_fp8_only_where_the_hardware_has_it(gpu, has_fp8):
    reason = hardware_reason(Methods(compile=True, fp8="rowwise"), get_gpu(gpu))
    assert (reason is None) is has_fp8
    assert has_fp8 or "FP8 tensor cores" in reason


def test_compile_needs_triton_and_amd_is_refused_with_the_reason(tmp_path):
    pascal = load_gpu_file(_gpu_file(tmp_path, key="my-p100", architecture="pascal", compute_capability=6.0))
    assert "Triton" in hardware_reason(Methods(compile=True), pascal)
    assert not free_lunch_for(pascal).compile and hardware_reason(free_lunch_for(pascal), pascal) is None
    for amd in ("mi250x", "mi300x"):
        assert "AMD" in hardware_reason(FREE_LUNCH, get_gpu(amd))


def test_links_as_the_gpu_has_them():
    rules = {r["rule"]: r for r in gpu_rules(get_gpu("rtx4090"))}
    assert not rules["pcie peer-to-peer"]["applies"] and not rules["nvlink"]["applies"]
    rules = {r["rule"]: r for r in gpu_rules(get_gpu("b200"))}
    assert rules["nvlink"]["applies"] and "every GPU" in rules["nvlink"]["why"]
    assert "two cards" in {r["rule"]: r for r in gpu_rules(get_gpu("a40"))}["nvlink"]["why"]


def test_space_says_what_applies_on_the_gpu_and_why(capsys):
    assert main(["space", "--model", "pythia-1b", "--gpus", "8", "--gpu", "v100-32gb", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["valid"] == [] and all("--precision fp16" in e["reason"] or "offloading is only" in e["reason"]
                                       for e in data["excluded"])
    rules = {r["rule"]: r for r in data["gpu_rules"]}
    assert not rules["bf16"]["applies"] and rules["compile"]["applies"] and not rules["fp8"]["applies"]
    assert main(["space", "--model", "roberta-large", "--gpus", "2", "--gpu", "t4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["base"] == "compile+kernels" and len(data["valid"]) == 22


# --- a GPU nobody listed ----------------------------------------------------------------------------------------

def _gpu_file(tmp_path, **fields) -> str:
    d = {"key": "my-a5000", "name": "NVIDIA RTX A5000", "memory_gb": 24, "architecture": "ampere",
         "compute_capability": 8.6, "fp32_tflops": 27.8, "tf32_tflops": 55.6, "bf16_tflops": 111.1,
         "fp16_tflops": 111.1, "board_power_w": 230, "memory_bandwidth_gbps": 768, "pcie_gbps": 32, **fields}
    path = tmp_path / "my-gpu.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in d.items() if v is not None))
    return str(path)


def test_a_gpu_described_in_a_file_is_checked_like_a_catalog_one(tmp_path, capsys):
    path = _gpu_file(tmp_path)
    assert main(["space", "--model", "pythia-1b", "--gpus", "2", "--gpu", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpu"] == "my-a5000" and len(data["valid"]) == 22
    assert get_gpu("my-a5000").peak_tflops["bf16"] == 111.1 and not get_gpu("my-a5000").in_study


@pytest.mark.parametrize("fields, words", [
    ({"memory_gb": None}, "missing field 'memory_gb'"),
    ({"memory_gb": "lots"}, "'memory_gb' must be a positive number"),
    ({"architecture": "kepler"}, "'architecture' must be one of: pascal, volta"),
    ({"nvlink_gbps": 600}, "'nvlink_scope' is needed"),
    ({"key": "h100-80gb"}, "a catalog GPU's"),
    ({"turbo": 1}, "unknown field(s) turbo"),
])
def test_a_bad_gpu_file_stops_naming_the_field(tmp_path, capsys, fields, words):
    path = _gpu_file(tmp_path, **fields)
    with pytest.raises(GPUFileError) as info:
        load_gpu_file(path)
    assert words in str(info.value) and path in str(info.value)
    assert main(["space", "--model", "pythia-1b", "--gpus", "2", "--gpu", path, "--json"]) == 2
    assert words in json.loads(capsys.readouterr().out)["error"]


def test_a_missing_gpu_file_names_itself(tmp_path, capsys):
    assert main(["space", "--model", "pythia-1b", "--gpus", "1", "--gpu", str(tmp_path / "none.yaml")]) == 2
    assert "cannot read the GPU file" in capsys.readouterr().err
