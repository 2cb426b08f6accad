"""Answers refuse what they cannot answer (exit 2, naming why and what to pass), and every command accepts the
same GPU counts. Configs are written here; nothing is downloaded."""
from __future__ import annotations

import json

import pytest

from academic_bench import cli

LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_attention_heads": 8,
         "num_key_value_heads": 2, "num_hidden_layers": 4, "vocab_size": 1000, "max_position_embeddings": 2048,
         "torch_dtype": "bfloat16"}
# Llama-3-70B's shape (its published config.json), built on the meta device only.
LLAMA_70B = {**LLAMA, "hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64,
             "num_key_value_heads": 8, "num_hidden_layers": 80, "vocab_size": 128256, "max_position_embeddings": 8192}


def _config(tmp_path, name: str, data: dict) -> str:
    (tmp_path / name).mkdir()
    path = tmp_path / name / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def _estimate(path: str, *extra: str) -> list[str]:
    return ["estimate", "--model", path, "--tokens", "3e11", "--seq-len", "512", "--gpu", "h100-80gb", "--gpus", "1",
            *extra]


def test_a_mixture_of_experts_the_study_cannot_charge_is_refused_naming_what_it_lacks(tmp_path, capsys):
    """JetMoE keeps its experts outside transformers' experts interface: neither their kernel nor the experts a
    token runs can be read, so no days are given for it."""
    path = _config(tmp_path, "moe", {"model_type": "jetmoe", "hidden_size": 64, "num_hidden_layers": 2,
                                     "num_attention_heads": 4, "num_key_value_heads": 2, "kv_channels": 16,
                                     "intermediate_size": 32, "num_local_experts": 4, "num_experts_per_tok": 2,
                                     "vocab_size": 256, "max_position_embeddings": 1024})
    assert cli.main(_estimate(path)) == 2
    err = capsys.readouterr().err
    assert "mixture of experts (4 experts)" in err and "experts interface" in err


def test_offloading_beyond_the_host_memory_is_not_feasible(tmp_path, capsys):
    path = _config(tmp_path, "llama70b", LLAMA_70B)
    argv = ["estimate", "--model", path, "--tokens", "3e11", "--seq-len", "2048", "--gpu", "rtx3090", "--gpus", "1",
            "--methods", "free-lunch+ckpt+zero3+offload", "--json"]
    # A 70B decoder is beyond the sizes any prediction was checked against: no answer (exit 1), but the memory
    # model still says what the host would need.
    assert cli.main(argv) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["fits"] is False and "host memory" in d["reason"] and "1-GPU desktop" in d["reason"]
    assert d["host_memory"]["need_gib"] > d["host_memory"]["have_gib"] == 64
    assert cli.main([*argv, "--host-memory", "4096"]) == 1  # a machine that holds it
    d = json.loads(capsys.readouterr().out)
    assert d["fits"] is True and d["host_memory"]["have_gib"] == 4096


def test_tokens_below_one_global_batch_are_refused(tmp_path, capsys):
    path = _config(tmp_path, "llama", LLAMA)
    argv = _estimate(path)
    argv[argv.index("3e11")] = "100"
    assert cli.main(argv) == 2
    assert "less than one optimizer step" in capsys.readouterr().err


@pytest.mark.parametrize("tokens", ["-3e11", "-3E+11"])
def test_negative_tokens_say_what_is_wrong(tmp_path, capsys, tokens):
    path = _config(tmp_path, "llama", LLAMA)
    argv = _estimate(path)
    argv[argv.index("3e11")] = tokens
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--tokens must be a finite number above 0" in err and "expected one argument" not in err


@pytest.mark.parametrize("command", ["estimate", "bench", "profile"])
def test_a_folder_as_model_says_pass_its_config_json(tmp_path, capsys, command):
    path = _config(tmp_path, "llama", LLAMA)
    folder = str(tmp_path / "llama")
    argv = [command, "--model", folder, "--gpu", "h100-80gb", "--gpus", "1", "--out", str(tmp_path / "r.jsonl")]
    assert cli.main(argv if command != "estimate" else argv[:-2]) == 2
    err = capsys.readouterr().err
    assert "is a folder: pass its config.json" in err and path in err


@pytest.mark.parametrize("argv", [["space", "--model", "pythia-1b", "--gpus", "3"],
                                  ["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "3"],
                                  ["estimate", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "3"]],
                         ids=["space", "cost", "estimate"])
def test_every_command_refuses_a_count_the_global_batch_does_not_divide(capsys, argv):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "does not divide over 3 GPUs" in err and "1, 2, 4, 8" in err


def test_an_absurd_budget_is_formatted_sanely(capsys):
    assert cli.main(["plan", "--model", "pythia-160m", "--budget", "1e30"]) == 0
    out = capsys.readouterr().out
    assert "$1e+30" in out and "1,000,000,000,000" not in out
