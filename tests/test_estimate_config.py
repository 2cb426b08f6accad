"""``estimate --model PATH/config.json``: any Hugging Face decoder, built on the meta device from its config.

Every config is written here into ``tmp_path``; nothing is downloaded (transformers builds from the config alone).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from academic_bench import estimate as est
from academic_bench.cli import main
from academic_bench.catalog.config import Config
from academic_bench.cli.estimate import estimate_summary
from academic_bench.catalog.methods import preset
from academic_bench.catalog.models import get_model
from academic_bench.catalog.models.from_config import ConfigError, decoder_spec
from small_decoders import LLAMA_GQA, NEOX

GPU, N = "h100-80gb", 1
SEQ = 256
TOKENS = 1e9

# Small decoders of the three kinds the command must read: gated MLP with grouped-query attention (Llama), plain
# GELU MLP with parallel residual (GPT-NeoX) from ``small_decoders``, and tied input and output embeddings (Qwen2).
TIED = {"model_type": "qwen2", "hidden_size": 128, "intermediate_size": 352, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 2000, "max_position_embeddings": 1024,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16"}
# The released Pythia-160M config's shape (EleutherAI/pythia-160m config.json), as a lab would pass it.
PYTHIA_160M = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 768,
               "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 12, "vocab_size": 50304,
               "max_position_embeddings": 2048, "rotary_pct": 0.25, "rotary_emb_base": 10000,
               "use_parallel_residual": True, "hidden_act": "gelu", "layer_norm_eps": 1e-5,
               "tie_word_embeddings": False, "torch_dtype": "float16", "attention_dropout": 0.0,
               "hidden_dropout": 0.0}
VIT = {"model_type": "vit", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
       "intermediate_size": 3072, "image_size": 224, "patch_size": 16}
BERT = {"model_type": "bert", "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 512, "vocab_size": 1000}


@pytest.fixture(autouse=True)
def _offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _write(tmp_path: Path, name: str, data: dict | str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def _meta_built(data: dict):
    """The model transformers builds from the same dict, on the meta device: what the spec must agree with."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(data["model_type"], **{k: v for k, v in data.items() if k != "model_type"})
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(cfg)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _estimate_json(capsys, path: str, *extra: str, tokens: float = TOKENS, seq: int = SEQ) -> dict:
    rc, out, err = _run(capsys, "estimate", "--model", path, "--tokens", str(tokens), "--seq-len", str(seq),
                        "--gpu", GPU, "--gpus", str(N), "--json", *extra)
    d = json.loads(out)
    assert rc == (0 if d["answer"]["kind"] != "none" else 1), err  # no answer exits 1 (README)
    return d


@pytest.mark.parametrize("name, data, mlp, tied", [("llama", LLAMA_GQA, "gated", False),
                                                   ("neox", NEOX, "plain", False),
                                                   ("tied", TIED, "gated", True)])
def test_parameters_and_flops_come_from_the_meta_built_model(tmp_path, name, data, mlp, tied) -> None:
    decoder = decoder_spec(_write(tmp_path, name, data), seq_len=SEQ, tokens=TOKENS)
    net = _meta_built(data)
    params = sum(p.numel() for p in net.parameters())  # tied weights once
    assert est.model_stats(decoder.spec).params == params
    facts = decoder.facts
    assert (facts["mlp"], facts["tied_embeddings"]) == (mlp, tied)
    assert facts["kv_heads"] == data.get("num_key_value_heads", data["num_attention_heads"])
    # FLOPs per sequence from the real shapes: every matmul weight (the output projection counts even when it
    # shares the input table) x 6, plus attention's 12 x layers x attention width (heads x head size) x sequence,
    # per token (tests/test_flops_count.py sets the convention beside torch's count).
    embedding = sum(m.weight.numel() for m in net.modules() if isinstance(m, torch.nn.Embedding))
    head = net.get_output_embeddings().weight.numel()
    matmul = params - embedding + (head if tied else 0)
    heads = net.config.num_attention_heads
    width = heads * (getattr(net.config, "head_dim", None) or data["hidden_size"] // heads)
    per_token = 6 * matmul + 12 * data["num_hidden_layers"] * width * SEQ
    assert est.flops_per_sample(decoder.spec) == per_token * SEQ


def test_a_pythia_160m_config_answers_as_the_catalogs_pythia_160m(tmp_path, capsys) -> None:
    """The catalog's Pythia-160M is built from the same GPT-NeoX shape (its positions extended to the recipe's
    2048 + 1 tokens, which rotary embeddings make free of parameters): FLOPs, memory, micro-batch and days at
    the same MFU agree exactly."""
    spec = get_model("pythia-160m")
    r = spec.recipe
    d = _estimate_json(capsys, _write(tmp_path, "pythia-160m", PYTHIA_160M), "--precision", r.precision,
                       tokens=r.steps * r.global_batch * r.seq_len, seq=r.seq_len)  # the recipe's, not the rule's
    catalog = estimate_summary(Config("pythia-160m", GPU, N, methods=preset("free-lunch")))
    assert d["params"] == est.model_stats(spec).params
    assert d["flops"] == catalog["flops"]
    assert d["precision"] == r.precision and d["architecture"]["steps"] == r.steps
    assert d["memory_gib"] == catalog["memory_gib"] and d["max_micro_batch"] == catalog["max_micro_batch"]
    assert d["days_analytic"]["lower_bound"] == pytest.approx(est.analytic_days(spec, GPU, N, 1.0))
    assert d["days"] == pytest.approx(est.analytic_days(spec, GPU, N, d["answer"]["mfu"]))
    assert d["architecture"]["positions_extended_to"] == r.seq_len


def test_json_has_days_with_a_range_memory_and_micro_batch(tmp_path, capsys) -> None:
    d = _estimate_json(capsys, _write(tmp_path, "llama", LLAMA_GQA))
    for key in ("days", "days_range", "answer", "days_analytic", "memory_gib", "max_micro_batch", "micro_batch",
                "params", "flops", "architecture", "fits"):
        assert key in d, key
    low, high = d["days_range"]
    assert low <= d["days"] <= high
    a = d["answer"]
    assert a["kind"] == "predicted" and a["rests_on"] and a["settings"]["methods"]
    at_peak = d["days_analytic"]["lower_bound"]
    assert d["days"] == pytest.approx(at_peak / a["mfu"])
    # tokens are trained in whole steps of the global batch
    a = d["architecture"]
    assert a["tokens"] >= TOKENS and a["tokens"] - TOKENS < a["global_batch"] * a["seq_len"]


def test_a_given_mfu_is_a_what_if_beside_the_answer(tmp_path, capsys) -> None:
    path = _write(tmp_path, "llama", LLAMA_GQA)
    d = _estimate_json(capsys, path, "--mfu", "0.5")
    assert d["what_if"]["days"] == pytest.approx(d["days_analytic"]["lower_bound"] / 0.5)
    assert d["answer"] == _estimate_json(capsys, path)["answer"]  # the answer does not move


def test_text_output_names_the_architecture_and_the_range(tmp_path, capsys) -> None:
    path = _write(tmp_path, "llama", LLAMA_GQA)
    rc, out, err = _run(capsys, "estimate", "--model", path, "--tokens", "1e9", "--seq-len", str(SEQ),
                        "--gpu", GPU, "--gpus", "2")
    assert rc == 0, err
    assert "llama" in out and "(2 key-value)" in out and "gated MLP" in out and " to " in out and "rests on" in out
    assert "Max micro-batch predicted to fit" in out


@pytest.mark.parametrize("data, words", [
    ("{\"model_type\": \"llama\", \"hidden_size\": 64,", ["not valid JSON"]),
    (VIT, ["'vit'", "not a decoder-only language model", "llama"]),
    ({**BERT, "model_type": "electra"}, ["'electra'", "masked language model", "bert, roberta, modernbert"]),
    ({k: v for k, v in LLAMA_GQA.items() if k != "num_hidden_layers"}, ["missing num_hidden_layers"]),
    ({k: v for k, v in LLAMA_GQA.items() if k != "model_type"}, ["no 'model_type'"]),
    ({**LLAMA_GQA, "num_key_value_heads": 3}, ["num_key_value_heads 3"]),
])
def test_a_bad_config_stops_with_a_message_and_exit_2(tmp_path, capsys, data, words) -> None:
    rc, out, err = _run(capsys, "estimate", "--model", _write(tmp_path, "bad", data), "--tokens", "1e9",
                        "--seq-len", str(SEQ), "--gpu", GPU, "--gpus", "1")
    assert rc == 2 and not out
    assert all(w in err for w in words), err


def test_bad_arguments_around_a_config_stop_with_exit_2(tmp_path, capsys) -> None:
    path = _write(tmp_path, "llama", LLAMA_GQA)
    rc, _, err = _run(capsys, "estimate", "--model", path, "--tokens", "1e9", "--seq-len", "8", "--gpu", "tpu-v5",
                      "--gpus", "1")
    assert rc == 2 and "unknown GPU" in err and GPU in err
    rc, _, err = _run(capsys, "estimate", "--model", path, "--gpu", GPU, "--gpus", "1")
    assert rc == 2 and "--tokens and --seq-len" in err
    rc, _, err = _run(capsys, "estimate", "--model", str(tmp_path / "nowhere.json"), "--tokens", "1e9",
                      "--seq-len", "8", "--gpu", GPU, "--gpus", "1")
    assert rc == 2 and "no such file" in err
    rc, _, err = _run(capsys, "estimate", "--model", "pythia-160m", "--tokens", "1e9", "--gpu", GPU, "--gpus", "1")
    assert rc == 2 and "--tokens" in err and "config.json" in err


def test_the_commands_that_answer_take_a_config_path_with_its_tokens_and_length(capsys) -> None:
    # space, cost, plan and export --best read a config.json as estimate does (tests/test_every_command_config.py)
    rc, _, err = _run(capsys, "space", "--model", "x/config.json", "--gpus", "1")
    assert rc == 2 and "--tokens and --seq-len" in err


def test_a_config_spec_is_not_in_the_catalog(tmp_path) -> None:
    from academic_bench.catalog.models import CATALOG

    decoder = decoder_spec(_write(tmp_path, "llama", LLAMA_GQA), seq_len=SEQ, tokens=TOKENS)
    assert decoder.spec.key not in CATALOG and get_model(decoder.spec.key) is decoder.spec
    with pytest.raises(ConfigError):
        decoder_spec(_write(tmp_path, "vit", VIT), seq_len=SEQ, tokens=TOKENS)


def test_a_config_json_asked_again_reads_no_run_and_loads_neither_torch_nor_transformers(tmp_path):
    """Asked twenty times while planning: the first estimate of a file reads it with transformers and builds it
    on the meta device; asked again (other tokens, GPUs, methods), the kept shape and facts (the user's cache
    folder) and the kept work-model calibration (``answer.store.work_model``) answer without torch, transformers or
    re-reading the runs, and the answer is the same."""
    import os
    import subprocess
    import sys

    path = _write(tmp_path, "llama", LLAMA_GQA)
    code = ("import json, sys\nfrom academic_bench.cli import main\n"
            "for gpu, n, methods, tokens in ((%r, 1, 'free-lunch', '1e9'), ('a100-80gb', 4,\n"
            "                                 'free-lunch+zero2+offload', '3e9')):\n"
            "    assert main(['estimate', '--model', %r, '--tokens', tokens, '--seq-len', '256', '--gpu', gpu,\n"
            "                 '--gpus', str(n), '--methods', methods, '--json']) == 0\n"
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules), file=sys.stderr)") % (GPU, path)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    root = Path(__file__).resolve().parents[1]
    first, again = (subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                                   timeout=600) for _ in range(2))
    assert first.returncode == 0 and again.returncode == 0, first.stderr[-2000:] + again.stderr[-2000:]
    assert len(_documents(first.stdout)) == 2
    assert first.stderr.strip().splitlines()[-1] == "['torch', 'transformers']"  # the first time: read and built
    assert again.stderr.strip().splitlines()[-1] == "[]"
    assert _documents(first.stdout) == _documents(again.stdout)


def _documents(text: str) -> list:
    """The JSON documents printed one after another."""
    decoder, out, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        doc, at = decoder.raw_decode(text, at)
        out.append(doc)
    return out
