"""The switches beyond the paper (bf16 weights, Liger's fused cross-entropy, torchao's FP8 training): named,
labelled "beyond the paper", kept out of the paper's search space, valid only where they apply, and refused
elsewhere before any work, by the command line with exit status 2 and the reason."""
from __future__ import annotations

import json

import pytest

from academic_bench.catalog.config import Config, beyond_paper_space
from academic_bench.catalog.hardware import get_gpu
from academic_bench.catalog.methods import (BEYOND_PAPER, BEYOND_SWITCHES, FREE_LUNCH, Methods, beyond_paper_variants,
                                            device_reason, exclusion_reason, hardware_reason, methods_spec,
                                            parse_methods, search_space, validation_class)
from academic_bench.cli import main

SPECS = ["free-lunch+bf16w", "free-lunch+fused-ce", "free-lunch+fp8-tensorwise", "free-lunch+fp8-rowwise",
         "free-lunch+ckpt+fused-ce", "free-lunch+zero1+fused-ce", "free-lunch+bf16w+fused-ce+fp8-rowwise"]


@pytest.mark.parametrize("spec", SPECS)
def test_each_switch_parses_labels_itself_beyond_the_paper_and_round_trips(spec):
    m = parse_methods(spec)
    assert m.beyond_paper and m.label().endswith(f"[{BEYOND_PAPER}]")
    assert parse_methods(methods_spec(m)) == m, "the --methods text of the answer's settings gives them back"
    assert Methods.from_dict(json.loads(json.dumps(m.to_dict()))) == m
    assert m.paper_methods() == parse_methods(spec.split("+")[0] + "".join(
        f"+{p}" for p in spec.split("+")[1:] if p not in BEYOND_SWITCHES))


def test_switches_off_keep_every_configuration_id_as_it_was():
    assert set(FREE_LUNCH.to_dict()) == {"compile", "kernels", "tf32", "checkpointing", "sharding", "offload"}
    assert not FREE_LUNCH.beyond_paper and "beyond" not in FREE_LUNCH.label()


def test_the_fp8_recipes_are_torchaos_and_one_at_a_time():
    assert parse_methods("free-lunch+fp8-rowwise").fp8 == "rowwise"
    with pytest.raises(ValueError, match="one FP8 recipe"):
        parse_methods("free-lunch+fp8-rowwise+fp8-tensorwise")
    with pytest.raises(ValueError, match="FP8 recipe"):
        Methods(fp8="delayed")
    with pytest.raises(ValueError, match="fused-ce"):  # an unknown switch names the known ones
        parse_methods("free-lunch+liger")


@pytest.mark.parametrize("n_gpus, n_valid", [(1, 12), (2, 22)])
def test_the_papers_search_space_stays_the_papers(n_gpus, n_valid):
    valid, excluded = search_space(n_gpus)
    assert len(valid) == n_valid and not any(m.beyond_paper for m, _ in [(v, "") for v in valid] + excluded)


def test_each_set_of_switches_is_a_method_class_of_its_own_flagged_beyond_the_paper():
    classes = {validation_class(m, 1) for m in beyond_paper_variants()}
    assert len(classes) == len(beyond_paper_variants()) == 11
    assert all(c.endswith(f"[{BEYOND_PAPER}]") for c in classes)
    assert validation_class(parse_methods("free-lunch+fused-ce"), 2) == f"free-lunch + fused CE (DDP) [{BEYOND_PAPER}]"
    assert validation_class(FREE_LUNCH, 1) == "free-lunch", "the paper's classes keep their names"


@pytest.mark.parametrize("spec, n_gpus, reason", [
    ("free-lunch+fused-ce+zero3", 2, "ZeRO-3 gathers a layer's weight only when the layer runs"),
    ("free-lunch+fp8-rowwise+zero1", 2, "PyTorch path"),
    ("free-lunch+fp8-tensorwise+fsdp_full_shard", 2, "PyTorch path"),
    ("kernels+tf32+fp8-rowwise", 1, "needs compile"),
    ("free-lunch+bf16w+zero2", 2, "DeepSpeed and FSDP keep bf16 weights"),
])
def test_structural_exclusions_state_their_reason(spec, n_gpus, reason):
    assert reason in exclusion_reason(parse_methods(spec), n_gpus)


def test_where_they_apply_they_are_valid():
    for spec, n in [("free-lunch+fused-ce+zero2", 2), ("free-lunch+fused-ce+fsdp_shard_grad_op", 2),
                    ("free-lunch+ckpt+fp8-rowwise", 1), ("free-lunch+fp8-tensorwise", 4)]:
        assert exclusion_reason(parse_methods(spec), n) is None, spec


def test_fp8_needs_fp8_tensor_cores_and_the_fused_cross_entropy_a_cuda_gpu():
    fp8 = parse_methods("free-lunch+fp8-rowwise")
    assert "FP8 tensor cores" in hardware_reason(fp8, get_gpu("a100-80gb"))
    assert hardware_reason(fp8, get_gpu("h100-80gb")) is None
    assert hardware_reason(fp8, get_gpu("h200")) is None
    assert "CUDA GPUs only" in device_reason(parse_methods("free-lunch+fused-ce"), "cpu")
    assert device_reason(parse_methods("free-lunch+fused-ce"), "cuda") is None
    assert device_reason(fp8, "cpu") is None  # torchao's float8 runs on the CPU (a workshop run)


def test_the_variants_a_model_and_gpu_allow_each_with_the_reason_for_the_others():
    valid, excluded = beyond_paper_space("pythia-1b", "h100-80gb")  # a bf16 decoder on a Hopper GPU: all 11
    assert len(valid) == 11 and excluded == []
    valid, excluded = beyond_paper_space("pythia-160m", "a100-80gb")  # fp16 recipe, Ampere
    assert [methods_spec(m) for m in valid] == ["free-lunch+fused-ce"]
    reasons = {methods_spec(m): r for m, r in excluded}
    assert "Hopper" in reasons["free-lunch+fp8-rowwise"] and "bf16 recipe" in reasons["free-lunch+bf16w"]
    valid, excluded = beyond_paper_space("roberta-large", "h100-80gb")  # a masked-LM in fp16
    assert [methods_spec(m) for m in valid] == ["free-lunch+fp8-tensorwise", "free-lunch+fp8-rowwise"]
    assert "masked-lm" in dict((methods_spec(m), r) for m, r in excluded)["free-lunch+fused-ce"]
    valid, _ = beyond_paper_space("mamba-2.8b", "h200")  # not compiled: no FP8; a bf16 causal LM: the others
    assert {methods_spec(m) for m in valid} == {"free-lunch+bf16w", "free-lunch+fused-ce", "free-lunch+bf16w+fused-ce"}
    valid, _ = beyond_paper_space("vit-large", "h100-80gb")  # an image classifier: FP8, no fused CE
    assert {methods_spec(m) for m in valid} == {"free-lunch+fp8-tensorwise", "free-lunch+fp8-rowwise"}


# --- the command line: exit 2, the reason, before any work ---------------------------------------------------

def refused(capsys, *argv: str) -> str:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 2, out + err
    return err


@pytest.mark.parametrize("model, gpu, methods, reason", [
    ("pythia-1b", "a100-80gb", "free-lunch+fp8-rowwise", "FP8 tensor cores (Ada, Hopper or Blackwell"),
    ("pythia-1b", "h100-80gb", "kernels+tf32+fp8-tensorwise", "FP8 training needs compile"),
    ("mamba-2.8b", "h100-80gb", "free-lunch+fp8-rowwise", "not compiled"),
    ("roberta-large", "h100-80gb", "free-lunch+fused-ce", "masked-lm model"),
    ("convnext-xlarge", "h100-80gb", "free-lunch+fused-ce", "image-classification model"),
    ("pythia-160m", "h100-80gb", "free-lunch+bf16w", "bf16 weights need a bf16 recipe"),
    ("pythia-1b", "h100-80gb", "free-lunch+fused-ce+zero3+offload", "ZeRO-3"),
    ("pythia-1b", "h100-80gb", "free-lunch+fp8-rowwise+zero1+offload", "PyTorch path"),
])
def test_bench_refuses_a_switch_where_it_does_not_apply(capsys, tmp_path, model, gpu, methods, reason):
    err = refused(capsys, "bench", "--model", model, "--gpu", gpu, "--gpus", "1", "--methods", methods,
                  "--out", str(tmp_path / "results.jsonl"))
    assert reason in err and "invalid combination" in err
    assert not (tmp_path / "results.jsonl").exists(), "nothing ran"


def test_bench_refuses_the_fused_cross_entropy_on_the_cpu(capsys, tmp_path):
    err = refused(capsys, "bench", "--model", "pythia-160m", "--tiny", "--device", "cpu", "--gpu", "h100-80gb", "--gpus", "1",
                  "--methods", "kernels+fused-ce", "--out", str(tmp_path / "r.jsonl"))
    assert "CUDA GPUs only" in err and "drop fused-ce" in err


def test_two_fp8_recipes_are_refused_with_the_choice(capsys, tmp_path):
    err = refused(capsys, "estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1",
                  "--methods", "free-lunch+fp8-rowwise+fp8-tensorwise")
    assert "one FP8 recipe at a time" in err


def test_space_lists_the_variants_beyond_the_paper_with_reasons(capsys):
    rc = main(["space", "--model", "pythia-160m", "--gpus", "1", "--gpu", "a100-80gb", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(data["valid"]) == 12, "the paper's space is unchanged"
    assert [v["methods"] for v in data["beyond_paper"]["valid"]] == ["free-lunch+fused-ce"]
    assert all(e["reason"] for e in data["beyond_paper"]["excluded"])
    rc = main(["space", "--model", "pythia-1b", "--gpus", "1", "--gpu", "h100-80gb"])
    out = capsys.readouterr().out
    assert rc == 0 and "Beyond the paper" in out and "free-lunch+bf16w+fused-ce+fp8-rowwise" in out
