"""``bench --model PATH/config.json``: a decoder outside the catalog measured like a catalog model (the CPU twin of
the GPU runs that check ``estimate --model PATH/config.json``). Its spec is made from the file in the launching
process and again, from the request, in every worker process (``models.from_config.made_with``)."""
from __future__ import annotations

import json
import math

from academic_bench.cli import main
from academic_bench.catalog.methods import EXPERTS_FAST
from academic_bench.catalog.models.from_config import decoder_spec, made_with
from academic_bench.results import ResultStore
from academic_bench.catalog.units import days_for

# A Llama-shaped decoder small enough for a CPU step: gated MLP, grouped-query attention, untied embeddings.
TINY_LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 64,
              "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "float32"}
TOKENS, SEQ, BATCH = 1e6, 32, 8


def _config_file(tmp_path):
    path = tmp_path / "tiny-llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(TINY_LLAMA))
    return path


def test_a_config_json_decoder_is_measured_in_worker_processes_and_its_days_follow_its_tokens(tmp_path):
    path, out = _config_file(tmp_path), tmp_path / "runs" / "results.jsonl"
    rc = main(["bench", "--model", str(path), "--tokens", str(TOKENS), "--seq-len", str(SEQ), "--global-batch",
               str(BATCH), "--gpu", "h100-80gb", "--gpus", "1", "--methods", "naive", "--micro-batch", "2",
               "--device", "cpu", "--timeout", "300", "--out", str(out)])
    assert rc == 0
    (row,) = ResultStore(out).rows()
    key = decoder_spec(path, seq_len=SEQ, tokens=TOKENS, global_batch=BATCH).spec.key
    assert row["outcome"] == "ok", row["reason"]
    assert row["config"]["model"] == key and made_with(key)["path"] == str(path.resolve())
    assert row["ran"]["weights"] == "float32"  # built with fp32 weights, as the row records
    steps = math.ceil(TOKENS / (BATCH * SEQ))
    assert (row["micro_batch"], row["gas"]) == (2, BATCH // 2)
    assert math.isclose(row["days"], days_for(steps, row["step_time_s"]))


def test_a_config_is_measured_in_the_precision_its_estimate_was_made_in(tmp_path):
    """``--precision`` names the spec ``estimate --precision`` names: a float16 or float32 config.json estimated in
    bf16 is measured in bf16."""
    import argparse

    from academic_bench.cli.args import model_key as _model_key

    path = _config_file(tmp_path)
    args = argparse.Namespace(model=str(path), tokens=TOKENS, seq_len=SEQ, global_batch=BATCH, precision="bf16",
                              tiny=False, gpu="h100-80gb")
    assert _model_key(args) == decoder_spec(path, seq_len=SEQ, tokens=TOKENS, global_batch=BATCH,
                                            precision="bf16").spec.key
    assert made_with(_model_key(args))["precision"] == "bf16"
    # no --precision: the rule's bf16 on an H100 (torch_dtype is storage); fp32 only when asked for
    assert _model_key(argparse.Namespace(**{**vars(args), "precision": None})) == _model_key(args)
    assert _model_key(argparse.Namespace(**{**vars(args), "precision": "fp32"})) != _model_key(args)


def test_config_only_options_and_a_config_without_its_tokens_stop_before_any_work(tmp_path, capsys):
    path, out = _config_file(tmp_path), tmp_path / "results.jsonl"
    common = ["--gpu", "h100-80gb", "--gpus", "1", "--device", "cpu", "--out", str(out)]
    assert main(["bench", "--model", "pythia-160m", "--tokens", "1e9", *common]) == 2
    assert "--tokens only applies to a decoder's config.json" in capsys.readouterr().err
    assert main(["bench", "--model", str(path), *common]) == 2
    assert "needs --tokens and --seq-len" in capsys.readouterr().err
    assert main(["bench", "--model", str(tmp_path / "missing.json"), "--tokens", "1e9", "--seq-len", "32",
                 *common]) == 2
    assert "no such file" in capsys.readouterr().err
    assert not out.exists()


def test_a_config_names_the_same_spec_from_inside_its_folder_and_as_the_workers_absolute_path(tmp_path, monkeypatch):
    """The workers register the spec again from the absolute path (``made_with``): given as "config.json" from its
    own folder, the launching process must name the same key, or every worker fails to find the model."""
    path = _config_file(tmp_path)
    monkeypatch.chdir(path.parent)
    here = decoder_spec("config.json", seq_len=SEQ, tokens=TOKENS, global_batch=BATCH).spec.key
    again = decoder_spec(**made_with(here)).spec.key
    assert here == again and here.startswith("tiny-llama@")


def test_a_config_json_decoder_runs_as_a_submitit_job_too(tmp_path):
    """A submitit job is a fresh process: the spec must reach it with the job, as it reaches the workers."""
    path, out = _config_file(tmp_path), tmp_path / "runs" / "results.jsonl"
    rc = main(["bench", "--model", str(path), "--tokens", str(TOKENS), "--seq-len", str(SEQ), "--global-batch",
               str(BATCH), "--gpu", "h100-80gb", "--gpus", "1", "--methods", "naive", "--micro-batch", "2",
               "--device", "cpu", "--timeout", "300", "--executor", "submitit-local", "--out", str(out)])
    assert rc == 0
    (row,) = ResultStore(out).rows()
    assert row["outcome"] == "ok", row["reason"]


# A mixture of experts (OLMoE's layout, tiny): 4 experts, 2 per token.
TINY_OLMOE = {"model_type": "olmoe", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 4, "intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
              "vocab_size": 256, "max_position_embeddings": 64, "tie_word_embeddings": False, "torch_dtype": "float32"}


def test_a_mixture_of_experts_config_is_measured_with_its_experts_kernel_and_routing_kept(tmp_path):
    path, out = tmp_path / "tiny-olmoe" / "config.json", tmp_path / "runs" / "results.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(TINY_OLMOE))
    rc = main(["bench", "--model", str(path), "--tokens", str(TOKENS), "--seq-len", str(SEQ), "--global-batch",
               str(BATCH), "--gpu", "h100-80gb", "--gpus", "1", "--methods", "kernels", "--micro-batch", "2",
               "--device", "cpu", "--timeout", "300", "--out", str(out)])
    assert rc == 0
    (row,) = ResultStore(out).rows()
    assert row["outcome"] == "ok", row["reason"]
    assert row["ran"]["experts"] == EXPERTS_FAST[0] and f"experts:{EXPERTS_FAST[0]}" in row["ran"]["kernels"]
    counts = row["ran"]["expert_tokens"]  # the routing of a timed micro-batch, per mixture layer
    assert len(counts) == 2 and all(len(c) == 4 and sum(c) == 2 * SEQ * 2 for c in counts)


def test_a_decoder_named_by_the_key_a_command_printed_is_measured_by_that_key(tmp_path):
    """``bench --model name@digest`` (the key ``estimate`` printed for a config.json) resolves to that decoder,
    with no --precision or with its own; another precision is refused, naming what the key trains in."""
    import argparse

    import pytest

    from academic_bench.cli.args import model_key as _model_key

    key = decoder_spec(_config_file(tmp_path), seq_len=SEQ, tokens=TOKENS, global_batch=BATCH,
                       precision="bf16").spec.key
    args = argparse.Namespace(model=key, tokens=None, seq_len=None, global_batch=None, precision=None, tiny=False,
                              gpu="h100-80gb")
    assert _model_key(args) == key
    assert _model_key(argparse.Namespace(**{**vars(args), "precision": "bf16"})) == key
    with pytest.raises(ValueError, match="trains in bf16"):
        _model_key(argparse.Namespace(**{**vars(args), "precision": "fp16"}))
