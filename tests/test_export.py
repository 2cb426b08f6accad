"""Export of the best configuration: the files carry the recipe's hyper-parameters, never library defaults.

The rows here are synthetic (placeholder times, not measurements), with figures that agree with their phases
(``measured_fields``), as export re-derives them: export only reads which configuration won and its micro-batch.
"""
from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from academic_bench import cli
from academic_bench.catalog.config import Config
from academic_bench.answer.export import best_row, export_best
from academic_bench.catalog.methods import parse_methods
from academic_bench.results import ResultStore, make_row

from measured import measured_fields, step_at_mfu

BASE_MFU = 0.5  # a step of 1 runs at this MFU: steps 2 and 3 run at a half and a third of it


def row(model: str, gpu: str, n: int, methods: str, micro_batch: int, step: float, tiny: bool = False,
        timing: str = "synced", outcome: str = "ok") -> dict:
    """A row whose step is ``step`` times the one at ``BASE_MFU`` (tiny rows: ``step`` seconds)."""
    c = Config(model, gpu, n, methods=parse_methods(methods), tiny=tiny)
    seconds = step if tiny else step * step_at_mfu(c, BASE_MFU)
    fields = dict(**measured_fields(c, micro_batch, step=seconds, timing=timing),
                  ran={"compiled": c.methods.compile}) if outcome == "ok" else {"reason": "x"}
    return make_row(c, setup="test", outcome=outcome, timing=timing, **fields)


@pytest.fixture
def results(tmp_path):
    store = ResultStore(tmp_path / "h100x2" / "results.jsonl")
    for r in [row("pythia-1b", "h100-80gb", 2, "free-lunch+ckpt+zero3+offload", 16, step=2.0),
              row("pythia-1b", "h100-80gb", 2, "free-lunch+zero2", 8, step=3.0),
              row("pythia-1b", "h100-80gb", 2, "free-lunch", 4, step=0.5, timing="unsynced"),  # never a result
              row("pythia-1b", "h100-80gb", 2, "free-lunch+ckpt", 4, step=0.1, outcome="error"),
              row("roberta-large", "h100-80gb", 2, "free-lunch+ckpt+fsdp_full_shard+offload", 32, step=1.0),
              row("roberta-large", "h100-80gb", 2, "free-lunch+fsdp_shard_grad_op", 32, step=1.5)]:
        store.append(r)
        if r["outcome"] == "ok" and r["timing"] == "synced":  # its method class validated, so that it is a result
            store.append({**r, "mode": "validate", "validate": {"steps": 3, "sustained_step_s": r["step_time_s"],
                                                                "predicted_step_s": r["step_time_s"], "rel_error": 0.0}})
    return store.path


def test_an_unvalidated_method_class_is_not_exported(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    store.append(row("pythia-1b", "h100-80gb", 2, "free-lunch+zero2", 8, step=3.0))
    with pytest.raises(ValueError, match="settings with results: none"):
        best_row(store.rows(), "pythia-1b", "h100-80gb", 2)


def all_strings(doc) -> list[str]:
    if isinstance(doc, dict):
        return [s for k, v in doc.items() for s in [str(k), *all_strings(v)]]
    if isinstance(doc, list):
        return [s for v in doc for s in all_strings(v)]
    return [doc] if isinstance(doc, str) else []


def test_best_row_is_the_fastest_ok_synced_one(results):
    rows = ResultStore(results).rows()
    assert best_row(rows, "pythia-1b", "h100-80gb", 2)["config"]["methods"]["sharding"] == "zero3"
    with pytest.raises(ValueError, match="no ok, synchronized result for pythia-1b on 4 x h100-80gb; settings "
                                         "with results: pythia-1b on 2 x h100-80gb; roberta-large on 2"):
        best_row(rows, "pythia-1b", "h100-80gb", 4)


def test_deepspeed_export_carries_the_recipe(results, tmp_path):
    written = export_best(results.parent.parent, "pythia-1b", "h100-80gb", 2, tmp_path / "out")
    assert set(written) == {"training_args.json", "accelerate.yaml", "deepspeed.json", "recipe.json"}
    docs = {n: (yaml.safe_load if n.endswith(".yaml") else json.loads)(p.read_text()) for n, p in written.items()}
    c = Config("pythia-1b", "h100-80gb", 2, methods=parse_methods("free-lunch+ckpt+zero3+offload"))
    r, o = c.recipe, c.recipe.optimizer
    assert not [s for d in docs.values() for s in all_strings(d) if s.lower() == "auto"]

    ds = docs["deepspeed.json"]
    assert ds["train_batch_size"] == r.global_batch == 16 * ds["gradient_accumulation_steps"] * 2
    assert ds["train_micro_batch_size_per_gpu"] == 16
    assert ds["zero_optimization"]["stage"] == 3
    assert ds["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert ds["zero_optimization"]["offload_param"]["device"] == "cpu"
    assert ds["bf16"]["enabled"] is (r.precision == "bf16") and ds["fp16"]["enabled"] is (r.precision == "fp16")
    p = ds["optimizer"]["params"]
    assert ds["optimizer"]["type"] == {"adam": "Adam", "adamw": "AdamW"}[o.name]
    assert (p["lr"], tuple(p["betas"]), p["eps"], p["weight_decay"]) == (o.lr, o.betas, o.eps, o.weight_decay)
    assert p["adam_w_mode"] is (o.name == "adamw")

    ta = docs["training_args.json"]
    assert (ta["per_device_train_batch_size"], ta["gradient_accumulation_steps"]) == (16, r.global_batch // 2 // 16)
    assert (ta["learning_rate"], ta["adam_beta1"], ta["adam_beta2"], ta["adam_epsilon"], ta["weight_decay"]) == \
        (o.lr, o.betas[0], o.betas[1], o.eps, o.weight_decay)
    assert ta["max_steps"] == r.steps and ta["bf16"] is (r.precision == "bf16")
    assert ta.get("activation_checkpointing", ta.get("gradient_checkpointing")) is True
    assert ta["deepspeed"] == "deepspeed.json"
    import transformers

    assert set(ta) <= {f.name for f in dataclasses.fields(transformers.TrainingArguments)}

    acc = docs["accelerate.yaml"]
    assert acc["distributed_type"] == "DEEPSPEED" and acc["num_processes"] == 2
    assert acc["deepspeed_config"]["deepspeed_config_file"] == "deepspeed.json"
    assert "mixed_precision" not in acc  # accelerate refuses it beside a DeepSpeed file
    assert docs["recipe.json"]["optimizer"]["lr"] == o.lr
    assert docs["recipe.json"]["measured"]["mfu"] == pytest.approx(BASE_MFU / 2)


def test_fsdp_export_and_accelerate_reads_it(results, tmp_path):
    out = tmp_path / "out"
    export_best(results, "pythia-1b", "h100-80gb", 2, out)
    export_best(results, "roberta-large", "h100-80gb", 2, out)
    assert not (out / "deepspeed.json").exists()  # the earlier export's file does not linger
    fsdp = json.loads((out / "fsdp.json").read_text())
    assert fsdp["reshard_after_forward"] is True and fsdp["cpu_offload"] is True
    from accelerate.commands.config.config_args import ClusterConfig

    acc = ClusterConfig.from_yaml_file(str(out / "accelerate.yaml"))
    assert acc.distributed_type == "FSDP" and acc.num_processes == 2
    assert acc.fsdp_config["fsdp_offload_params"] is True and acc.fsdp_config["fsdp_version"] == 2
    assert acc.fsdp_config["fsdp_transformer_layer_cls_to_wrap"]
    assert acc.mixed_precision == Config("roberta-large", "h100-80gb", 2).recipe.precision


def test_training_arguments_build_for_a_plain_run(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    store.append(row("vit-large", "h100-80gb", 1, "naive", 4, step=1.0, tiny=True))
    written = export_best(store.path, "vit-large", "h100-80gb", 1, tmp_path / "out", tiny=True)
    args = json.loads(written["training_args.json"].read_text())
    import transformers

    ta = transformers.TrainingArguments(**{**args, "output_dir": str(tmp_path / "ckpt")})
    recipe = Config("vit-large", "h100-80gb", tiny=True).recipe
    assert ta.learning_rate == recipe.optimizer.lr and ta.weight_decay == recipe.optimizer.weight_decay
    assert ta.per_device_train_batch_size * ta.gradient_accumulation_steps == recipe.global_batch
    assert yaml.safe_load(written["accelerate.yaml"].read_text())["distributed_type"] == "NO"


def test_cli_export(results, tmp_path, capsys):
    assert cli.main(["export", "--results", str(results), "--model", "pythia-1b", "--gpu", "h100-80gb",
                     "--gpus", "2", "--out", str(tmp_path / "x")]) == 0
    assert (tmp_path / "x" / "deepspeed.json").exists()
    assert cli.main(["export", "--results", str(results), "--model", "vit-large", "--gpu", "h100-80gb",
                     "--gpus", "2", "--out", str(tmp_path / "y")]) == 2
    assert "no ok, synchronized result for vit-large" in capsys.readouterr().err
    assert cli.main(["export", "--results", str(tmp_path / "missing"), "--model", "vit-large", "--gpu",
                     "h100-80gb", "--gpus", "2", "--out", str(tmp_path / "z")]) == 2


def test_a_forged_row_is_never_the_best(results, tmp_path, capsys):
    """A row whose step time was edited down (its phases give the measured one) is never exported as the best,
    nor is one whose synchronized MFU is implausible."""
    store = ResultStore(results)
    forged = row("pythia-1b", "h100-80gb", 2, "free-lunch+zero1", 8, step=2.5)
    forged["step_time_s"] /= 10
    store.append(forged)
    store.append(row("pythia-1b", "h100-80gb", 2, "free-lunch+zero1+offload", 8, step=0.6))  # MFU above 0.75
    rows = store.rows()
    assert best_row(rows, "pythia-1b", "h100-80gb", 2)["config"]["methods"]["sharding"] == "zero3"
    assert cli.main(["export", "--results", str(results), "--model", "pythia-1b", "--gpu", "h100-80gb",
                     "--gpus", "2", "--out", str(tmp_path / "x")]) == 0
    measured = json.loads((tmp_path / "x" / "recipe.json").read_text())["measured"]
    assert measured["config_id"] not in (forged["config_id"], rows[-1]["config_id"])
