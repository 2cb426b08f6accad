"""Turn the best measured configuration of a setting into the files someone needs to really train with it.

    export_best("notebooks/runs", "pythia-1b", "h100-80gb", 1, "out/")

writes, into ``out/``:
- ``training_args.json``: Hugging Face ``TrainingArguments`` keyword arguments (per-device batch, gradient
  accumulation, the recipe's lr / betas / eps / weight decay, steps, precision, compile, checkpointing);
- ``accelerate.yaml``: the ``accelerate launch --config_file`` configuration (processes, machines, precision,
  and the DeepSpeed or FSDP section);
- ``deepspeed.json`` (ZeRO runs): the same DeepSpeed configuration the benchmark ran, with the recipe's optimizer
  and hyper-parameters spelled out (no "auto" values, which would fall back to library defaults);
- ``fsdp.json`` (FSDP runs): the FSDP2 settings the benchmark ran;
- ``recipe.json``: the recipe's optimizer, batch and data shape, the measured row it came from, and notes.
Every value comes from the recipe or the measured row; where a library default would otherwise apply (learning
rate schedule, gradient clipping), the value the benchmark ran with is written explicitly.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..analysis import frame_from_rows, validation_state
from ..catalog.config import Config, run_name
from ..results import ResultStore, fastest_row, load_runs, rejection, rows_to_read, run_label, status_of

EXPORT_FILES = ("training_args.json", "accelerate.yaml", "deepspeed.json", "fsdp.json", "recipe.json")


def load_rows(results: str | os.PathLike) -> list[dict]:
    """Rows from a results file, a setup folder holding ``results.jsonl``, or a runs root of setups."""
    path = Path(results)
    if path.is_file():
        return ResultStore(path).rows()
    if (path / "results.jsonl").is_file():
        return ResultStore(path / "results.jsonl").rows()
    if path.is_dir():
        return load_runs(path)
    raise FileNotFoundError(f"no results at {path}: give a results.jsonl file or a folder of runs")


def best_row(rows: list[dict], model: str, gpu: str, n_gpus: int, tiny: bool = False) -> dict:
    """The ok, synchronized row of the setting with the shortest step time (never a row set aside by a
    correction of the engine, ``results.set_aside_reason``, nor one whose figures its phases do not give, with an
    implausible MFU or from another GPU, ``results.rejection``, nor one of a method class that the engine revision
    which made it did not validate on its setup within the study's rule, ``analysis.validation_state``), of the
    paper's methods: a configuration with a switch beyond the paper is measured beside the replication, and its
    training configuration is not one these files can write yet."""
    def setting(r: dict) -> tuple:
        c = r["config"]
        return c["model"], c["gpu"], c["n_gpus"], bool(c.get("tiny"))

    want = (model, gpu, n_gpus, tiny)
    rows = rows_to_read(rows)
    state = validation_state(frame_from_rows(rows, checked=True)).tolist()
    usable = [r for r, st in zip(rows, state) if status_of(r) == "measured" and r["timing"] == "synced"
              and r["mode"] == "step" and (st == "validated" or r["config"].get("tiny")) and not rejection(r)
              and not Config.from_dict(r["config"]).methods.beyond_paper]
    ok = [r for r in usable if setting(r) == want]
    if not ok:
        have = sorted({setting(r) for r in usable})
        choices = "; ".join(run_name(m, g, n, t) + (f" (--tiny --gpu {g} --gpus {n})" if t else "")
                            for m, g, n, t in have) or "none"
        raise ValueError(f"no ok, synchronized result for {run_name(model, gpu, n_gpus, tiny)}; settings with "
                         f"results: {choices}")
    return fastest_row(ok)


def optimizer_dict(config: Config) -> dict:
    o = config.recipe.optimizer
    return {"name": o.name, "lr": o.lr, "betas": list(o.betas), "eps": o.eps, "weight_decay": o.weight_decay,
            "weight_decay_kind": "decoupled (AdamW)" if o.name == "adamw" else "coupled L2 (Adam)",
            "source": o.source}


def _checkpointing_arg() -> str:
    """transformers 5 renamed ``gradient_checkpointing`` to ``activation_checkpointing`` (old name deprecated).
    The installed ``TrainingArguments``' fields are read from its source, not imported: importing it imports torch
    (about 1.4 s of an export that needs neither)."""
    return "activation_checkpointing" if "activation_checkpointing" in training_arguments_fields() \
        else "gradient_checkpointing"


def training_arguments_fields() -> set[str]:
    """The field names of the installed ``transformers.TrainingArguments`` dataclass, read from its module's source
    (``ast``) without importing transformers."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        return set()
    source = Path(next(iter(spec.submodule_search_locations))) / "training_args.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TrainingArguments")
    return {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def training_args(config: Config, row: dict) -> dict:
    """Keyword arguments of ``transformers.TrainingArguments`` for this configuration."""
    r, m, o = config.recipe, config.methods, config.recipe.optimizer
    args: dict[str, Any] = {
        "output_dir": "checkpoints",
        "per_device_train_batch_size": row["micro_batch"],
        "gradient_accumulation_steps": row["gas"],
        "max_steps": r.steps,
        "learning_rate": o.lr, "adam_beta1": o.betas[0], "adam_beta2": o.betas[1], "adam_epsilon": o.eps,
        "weight_decay": o.weight_decay,
        # The benchmark ran a constant learning rate and no clipping; the Trainer's defaults would differ.
        "lr_scheduler_type": "constant", "warmup_steps": 0, "max_grad_norm": 0.0,
        "fp16": r.precision == "fp16", "bf16": r.precision == "bf16", "tf32": m.tf32,
        "torch_compile": bool((row.get("ran") or {}).get("compiled", m.compile)),
        _checkpointing_arg(): m.checkpointing,
    }
    if o.name == "adamw":
        args["optim"] = "adamw_torch"
    if m.uses_deepspeed:
        args["deepspeed"] = "deepspeed.json"
    return args


def deepspeed_json(config: Config, row: dict) -> dict:
    """The DeepSpeed configuration the benchmark ran (measure.apply), for the real accumulation."""
    from ..catalog.config import deepspeed_config

    ds = deepspeed_config(config, row["micro_batch"], row["gas"])
    return {"train_batch_size": config.recipe.global_batch, **ds}


def fsdp_json(config: Config) -> dict:
    """The FSDP2 (``fully_shard``) settings the benchmark ran (measure.apply.apply_fsdp)."""
    m, r = config.methods, config.recipe
    return {"fsdp_version": 2, "reshard_after_forward": m.sharding == "fsdp_full_shard",
            "cpu_offload": m.offload, "wrap_blocks": list(config.spec.block_types),
            "mixed_precision": ({"param_dtype": {"fp16": "float16", "bf16": "bfloat16"}[r.precision],
                                 "reduce_dtype": "float32"} if r.precision in ("fp16", "bf16") else None)}


def accelerate_yaml(config: Config, row: dict) -> dict:
    m, r = config.methods, config.recipe
    doc: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE", "debug": False, "num_processes": config.n_gpus,
        "num_machines": config.nodes, "machine_rank": 0, "rdzv_backend": "static", "same_network": True,
        "main_training_function": "main", "use_cpu": _ran_on_cpu(row), "downcast_bf16": "no", "gpu_ids": "all",
        "distributed_type": "NO" if config.n_gpus == 1 and m.sharding == "none" else "MULTI_GPU",
    }
    if m.uses_deepspeed:
        # With a DeepSpeed file, precision comes from the file; accelerate refuses a second source for it.
        doc.update(distributed_type="DEEPSPEED", deepspeed_config={
            "deepspeed_config_file": "deepspeed.json", "zero3_init_flag": m.sharding == "zero3"})
    else:
        doc["mixed_precision"] = r.precision if r.precision in ("fp16", "bf16") else "no"
    if m.uses_fsdp:
        f = fsdp_json(config)
        doc.update(distributed_type="FSDP", fsdp_config={
            "fsdp_version": 2, "fsdp_reshard_after_forward": f["reshard_after_forward"],
            "fsdp_offload_params": f["cpu_offload"], "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_transformer_layer_cls_to_wrap": ",".join(f["wrap_blocks"]),
            "fsdp_state_dict_type": "SHARDED_STATE_DICT", "fsdp_cpu_ram_efficient_loading": True,
            # checkpointing is the model's own switch (in training_args.json), as measured
            "fsdp_activation_checkpointing": False})
    return doc


def _ran_on_cpu(row: dict) -> bool:
    """A tiny (workshop) row the launcher recorded as run on the CPU: its export trains on the CPU too."""
    return bool((row.get("config") or {}).get("tiny")) and (row.get("env") or {}).get("device") == "cpu"


def measured_provenance(row: dict, results: str) -> dict:
    """Where exported settings come from when a measured row has them, the run named as every output names it
    (``results.run_label``). A tiny row is a workshop run: its days are the tiny recipe's and its MFU is rated at
    a GPU it need not have used, so neither is written (as ``bench`` prints none)."""
    tiny = bool(row["config"].get("tiny"))
    return {"measured": {"run": run_label(row), "results": results, "config_id": row["config_id"],
                         "setup": row["setup"], "step_time_s": row["step_time_s"],
                         "step_time_spread": row["step_time_spread"],
                         **({} if tiny else {"days": row["days"], "mfu": row["mfu"]}), "env": row["env"]}}


def recipe_json(config: Config, row: dict, provenance: dict) -> dict:
    r = config.recipe
    notes = ["Launch with: accelerate launch --config_file accelerate.yaml your_train.py, building "
             "TrainingArguments(**json.load(open('training_args.json'))).",
             "The benchmark ran a constant learning rate without gradient clipping; the recipe's own schedule "
             "and clipping are not part of this catalog: set them from the model's paper before a real run."]
    if r.optimizer.name == "adam" and not config.methods.uses_deepspeed:
        notes.append("Hugging Face Trainer has no Adam with coupled (L2) weight decay: build "
                     "torch.optim.Adam(params, lr, betas, eps, weight_decay) with the values in 'optimizer' and "
                     "pass Trainer(optimizers=(optimizer, None)).")
    if row.get("ran", {}) and row["ran"].get("compiled"):
        notes.append("The benchmark compiled each repeated block (torch.compile per block); torch_compile=True "
                     "compiles the whole model instead.")
    # A tiny row is named where it ran (``results.run_label``), never by the GPU its configuration names.
    return {"run": run_label(row) if "config" in row else config.name(), "model": config.model,
            "gpu": None if config.tiny else config.gpu, "n_gpus": config.n_gpus, "nodes": config.nodes,
            "tiny": config.tiny, "methods": config.methods.to_dict(), "methods_label": config.methods.label(),
            "global_batch": r.global_batch, "micro_batch": row["micro_batch"], "gas": row["gas"],
            "steps": r.steps, "precision": r.precision, "seq_len": r.seq_len, "image_size": r.image_size,
            "optimizer": optimizer_dict(config), "sources": r.sources, **provenance, "notes": notes}


def export_row(row: dict, out_dir: str | os.PathLike, results: str = "") -> dict[str, Path]:
    """Write the export files for one ok row; returns {file name: path}."""
    return export_settings(Config.from_dict(row["config"]), row, measured_provenance(row, results), out_dir)


def export_settings(config: Config, row: dict, provenance: dict, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write the export files for ``config`` at ``row``'s ``micro_batch`` and ``gas`` (``row`` may hold only
    those, as for settings the study predicts rather than measured); ``provenance`` says where they come from
    (``recipe.json``). Returns {file name: path}."""
    import yaml

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    docs: dict[str, Any] = {"training_args.json": training_args(config, row),
                            "accelerate.yaml": accelerate_yaml(config, row),
                            "recipe.json": recipe_json(config, row, provenance)}
    if config.methods.uses_deepspeed:
        docs["deepspeed.json"] = deepspeed_json(config, row)
    if config.methods.uses_fsdp:
        docs["fsdp.json"] = fsdp_json(config)
    for stale in set(EXPORT_FILES) - set(docs):  # from an earlier export of another configuration
        (out / stale).unlink(missing_ok=True)
    written = {}
    for name, doc in docs.items():
        path = out / name
        text = yaml.safe_dump(doc, sort_keys=False) if name.endswith(".yaml") else json.dumps(doc, indent=2)
        path.write_text(text + ("" if text.endswith("\n") else "\n"))
        written[name] = path
    return written


def export_best(results: str | os.PathLike, model: str, gpu: str, n_gpus: int, out_dir: str | os.PathLike,
                tiny: bool = False) -> dict[str, Path]:
    """Export the best ok row of (model, gpu, n_gpus) found in ``results``."""
    row = best_row(load_rows(results), model, gpu, n_gpus, tiny)
    return export_row(row, out_dir, results=str(results))
