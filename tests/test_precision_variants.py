"""A catalog model trained in fp32 (ConvNeXt-XL, ViT-L/16: the paper's recipe) measured in a 16-bit precision
(``models.at_precision``): a spec of its own, ``<key>@<precision>``, so that every stored configuration id stays and
the 16-bit configurations get new ones; bench, sweep and estimate take ``--precision`` for it, under the GPUs'
rules; its step runs under autocast, as the recipes in 16 bits do (the CPU twin of ``bench --precision bf16``)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import NAIVE
from academic_bench.catalog.models import CATALOG, at_precision, get_model, model_names, recipe_model
from academic_bench.cli import main
from academic_bench.measure.stepper import Stepper
from academic_bench.results import ResultStore

ROOT = Path(__file__).resolve().parents[1]


def test_every_stored_row_keeps_its_configuration_id_and_its_model_at_its_own_precision():
    rows = [json.loads(line) for path in sorted(ROOT.glob("notebooks/runs/*/results.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]
    assert len(rows) > 100
    for row in rows:
        cfg = Config.from_dict(row["config"])
        assert cfg.id == row["config_id"], row["config_id"]
        own = get_model(cfg.model).recipe.precision
        for precision in (None, own):  # the recipe's precision, asked for or not, names the model itself
            assert Config.from_dict({**row["config"], "model": at_precision(cfg.model, precision)}).id == cfg.id


def test_a_16_bit_variant_is_the_models_recipe_in_that_precision_under_a_key_of_its_own():
    for key in ("vit-large", "convnext-xlarge"):
        base = get_model(key)
        for precision in ("bf16", "fp16"):
            variant = get_model(at_precision(key, precision))
            assert variant.key == f"{key}@{precision}" and recipe_model(variant.key) == key
            assert variant.recipe == replace(base.recipe, precision=precision, sources=variant.recipe.sources)
            assert variant.tiny_recipe.precision == precision and variant.facts_key == key
            assert variant.key not in CATALOG and variant.key not in model_names()
            assert Config(variant.key, "h100-80gb").id != Config(key, "h100-80gb").id
    # a model whose recipe is in 16 bits trains it, and says so
    with pytest.raises(ValueError, match=r"pythia-160m trains in fp16.*choose one of: fp16$"):
        at_precision("pythia-160m", "bf16")
    with pytest.raises(KeyError, match="unknown model 'vit-large@fp32'"):  # the recipe has one key
        get_model("vit-large@fp32")


@pytest.mark.parametrize("argv", [
    ["estimate", "--model", "vit-large", "--precision", "bf16", "--gpu", "v100-32gb", "--gpus", "1", "--json"],
    ["bench", "--model", "convnext-xlarge", "--precision", "bf16", "--gpu", "t4", "--gpus", "1", "--json"],
    ["sweep", "--model", "vit-large", "--precision", "bf16", "--gpu", "v100-32gb", "--gpus", "1", "--preset",
     "naive", "--json"],
])
def test_bf16_before_ampere_is_refused_before_any_work_naming_fp16(argv, tmp_path, capsys):
    out = tmp_path / "runs" / "results.jsonl"
    extra = ["--out", str(out)] if argv[0] != "estimate" else []
    assert main([*argv, *extra]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert "bf16 tensor cores" in error and "--precision fp16" in error
    assert not out.exists()


def test_an_estimate_in_16_bits_counts_that_precision_and_answers_the_recipe_only(capsys):
    volta = ["--gpu", "v100-32gb", "--gpus", "1", "--methods", "compile+kernels", "--json"]  # no TF32 on Volta
    rc = main(["estimate", "--model", "vit-large", "--precision", "fp16", *volta])
    d = json.loads(capsys.readouterr().out)
    assert rc == 1 and d["model"] == "vit-large@fp16" and d["precision"] == "fp16"  # no answer: exit 1
    assert d["answer"]["kind"] == "none" and "recipe's fp32" in d["answer"]["rests_on"]
    from academic_bench.catalog.hardware import get_gpu

    assert d["peak_flops_per_gpu"] == get_gpu("v100-32gb").peak_flops("fp16")
    assert main(["estimate", "--model", "vit-large", *volta]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["precision"] == "fp32"  # the recipe, as before


def _linear_output_dtypes(cfg: Config) -> set[torch.dtype]:
    """The dtypes the model's matrix products return in one micro-step of the stepper (``measure.stepper``)."""
    stepper = Stepper(cfg, 2, 4, "cpu")
    seen = set()
    for m in stepper.model.modules():
        if isinstance(m, torch.nn.Linear):
            m.register_forward_hook(lambda mod, args, out: seen.add(out.dtype))
    batch = cfg.spec.make_batch(2, tiny=True, generator=torch.Generator().manual_seed(0))
    stepper.micro_step(batch, sync=True)
    assert {p.dtype for p in stepper.model.parameters()} == {torch.float32}  # fp32 weights, as every recipe
    return seen


def test_the_16_bit_step_is_autocast_over_fp32_weights_and_the_recipes_step_is_unchanged():
    assert _linear_output_dtypes(Config("vit-large@bf16", "h100-80gb", methods=NAIVE, tiny=True)) == {torch.bfloat16}
    assert _linear_output_dtypes(Config("vit-large", "h100-80gb", methods=NAIVE, tiny=True)) == {torch.float32}


def test_a_tiny_vision_model_in_bf16_is_measured_through_the_bench_workers(tmp_path):
    out = tmp_path / "cpu-tiny" / "results.jsonl"
    rc = main(["bench", "--model", "vit-large", "--precision", "bf16", "--tiny", "--gpu", "h100-80gb", "--gpus", "1",
               "--methods", "naive", "--micro-batch", "4", "--device", "cpu", "--timeout", "300", "--out", str(out)])
    assert rc == 0
    (row,) = ResultStore(out).rows()
    assert row["outcome"] == "ok", row["reason"]
    assert row["config"]["model"] == "vit-large@bf16"
    assert row["config_id"] == Config("vit-large@bf16", "h100-80gb", methods=NAIVE, micro_batch=4, tiny=True).id
    assert row["ran"]["precision"] == "bf16" and row["ran"]["weights"] == "float32"


@pytest.mark.parametrize("command", [["cost", "--days", "3"], ["space"], ["export", "--best", "--out", "x"]])
def test_a_variant_named_outright_is_refused_by_the_commands_that_answer_the_recipes(command, tmp_path, capsys,
                                                                                       monkeypatch):
    """``cost``, ``space`` and ``export`` answer the catalog's recipes: a ``<model>@<precision>`` key stops there
    with exit status 2, naming the plain keys and the commands that take another precision; nothing is written."""
    from academic_bench.cli.args import PRECISION_COMMANDS

    monkeypatch.chdir(tmp_path)
    rc = main([command[0], "--model", "vit-large@bf16", "--gpu", "h100-80gb", "--gpus", "1", *command[1:],
               "--json"])
    said = json.loads(capsys.readouterr().out)
    assert rc == 2 and said["choices"] == list(CATALOG) and not list(tmp_path.iterdir())
    assert all(c in said["error"] for c in PRECISION_COMMANDS)


def test_the_commands_that_take_another_precision_are_the_ones_that_say_so():
    """Every parser that accepts a variant key is a command of ``PRECISION_COMMANDS``, and each of those takes
    ``--precision``."""
    import argparse

    from academic_bench.cli import build_parser
    from academic_bench.cli.args import PRECISION_COMMANDS

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    takes = {name for name, p in sub.choices.items() if p.get_default("accepts_variant")}
    assert takes == set(PRECISION_COMMANDS)
    for name in PRECISION_COMMANDS:
        assert any("--precision" in a.option_strings for a in sub.choices[name]._actions), name


def test_a_precision_the_gpu_lacks_is_refused_before_any_work_naming_those_it_has(tmp_path, capsys):
    out = tmp_path / "p"
    rc = main(["profile", "--model", "vit-large", "--precision", "bf16", "--gpu", "v100-32gb", "--gpus", "1",
               "--out", str(out), "--json"])
    said = json.loads(capsys.readouterr().out)
    assert rc == 2 and "--precision fp16" in said["error"] and said["choices"] == ["fp16", "fp32"]
    assert not out.exists()
