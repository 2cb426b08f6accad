"""No answer for what cannot run: an answer's settings fit by the memory model or there is no answer, naming what
would fit; a decoder or a sequence beyond any the study's predictions were checked against is refused with the
reason; an absurd budget is flagged; a config.json's ``torch_dtype`` is its storage, the precision trained is the
rule's (bf16 where the GPU has it), stated first, and ``--precision`` overrides it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from academic_bench.cli import main

ROOT = Path(__file__).resolve().parents[1]
# meta-llama/Llama-3.1-8B config.json (Hugging Face, the model's published shape): the table's third case
LLAMA_31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
               "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
               "num_hidden_layers": 32, "vocab_size": 128256, "max_position_embeddings": 131072,
               "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 8192, "rope_type": "llama3"},
               "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
# Qwen/Qwen3-0.6B config.json (Hugging Face)
QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024, "head_dim": 128,
             "intermediate_size": 3072, "num_attention_heads": 16, "num_key_value_heads": 8,
             "num_hidden_layers": 28, "vocab_size": 151936, "max_position_embeddings": 40960,
             "rope_theta": 1000000, "tie_word_embeddings": True, "torch_dtype": "bfloat16"}
SMALL_FP32 = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
              "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 64,
              "torch_dtype": "float32"}  # stored in fp32, as OLMo-2-1B's config.json is


def _config(tmp_path: Path, name: str, data: dict) -> str:
    (tmp_path / name).mkdir()
    path = tmp_path / name / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def _estimate(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(["estimate", *argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_a_35_trillion_parameter_llama_is_refused_naming_the_largest_checked(tmp_path, capsys):
    from academic_bench.answer.decoder import evidence_span

    huge = {**LLAMA_31_8B, "hidden_size": 131072, "intermediate_size": 458752, "num_hidden_layers": 160,
            "num_attention_heads": 1024, "num_key_value_heads": 128}
    rc, d = _estimate(capsys, "--model", _config(tmp_path, "huge", huge), "--tokens", "1e12", "--seq-len", "2048",
                      "--gpu", "h100-80gb", "--gpus", "8")
    span = evidence_span()
    assert d["params"] > span.params
    assert rc == 1 and d["answer"]["kind"] == "none" and d["days"] is None
    assert "beyond the largest decoder" in d["answer"]["rests_on"] and span.params_of in d["answer"]["rests_on"]


def test_a_sequence_of_ten_million_tokens_is_refused(tmp_path, capsys):
    from academic_bench.answer.decoder import evidence_span

    rc, d = _estimate(capsys, "--model", _config(tmp_path, "qwen3-0.6b", QWEN3_06B), "--tokens", "3e11",
                      "--seq-len", "10000000", "--gpu", "h100-80gb", "--gpus", "8")
    assert rc == 1 and d["answer"]["kind"] == "none"
    assert f"{evidence_span().seq_len:,}" in d["answer"]["rests_on"] and "10,000,000" in d["answer"]["rests_on"]


def test_the_evidence_span_is_read_from_what_was_checked():
    """The span's largest decoder and longest sequence are those of the catalog, the runs' evidence and the
    published throughputs, not numbers of its own."""
    from academic_bench.answer.decoder import evidence_span
    from academic_bench.catalog.published import load_published_throughput

    published = load_published_throughput()
    span = evidence_span()
    assert span.params == published["params"].max() and span.seq_len == published["seq_len"].max()


def test_an_absurd_budget_is_flagged(tmp_path, capsys):
    rc, d = _estimate(capsys, "--model", _config(tmp_path, "qwen3-0.6b", QWEN3_06B), "--tokens", "1e30",
                      "--seq-len", "2048", "--gpu", "h100-80gb", "--gpus", "8")
    assert any("outlast the hardware" in w for w in d["warnings"]), d["warnings"]


@pytest.mark.parametrize("gpu, n", [("h100-80gb", 8), ("h200", 8), ("h200", 4), ("a100-80gb", 8), ("h100-80gb", 1)])
def test_every_answer_for_llama_31_8b_at_8192_has_settings_that_fit(tmp_path, capsys, gpu, n):
    """Llama-3.1-8B at 8192 on 8 x H100 was answered with ZeRO-1 + offload, which the same output's memory model
    said did not fit: an answer's settings now fit by the memory model, or there is no answer."""
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.hardware import get_gpu
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.estimate import max_micro_batch

    rc, d = _estimate(capsys, "--model", _config(tmp_path, "llama-3.1-8b", LLAMA_31_8B), "--tokens", "1e12",
                      "--seq-len", "8192", "--gpu", gpu, "--gpus", str(n))
    a = d["answer"]
    if a["kind"] == "none":
        assert rc == 1 and a["rests_on"]
        return
    methods = parse_methods(a["settings"]["methods"])
    assert max_micro_batch(Config(d["model"], gpu, n, methods=methods), get_gpu(gpu).memory_gb) is not None


def test_settings_that_do_not_fit_name_what_would(tmp_path):
    """The refusal's reason: the settings, the memory model's figures, and the methods predicted to fit."""
    from academic_bench.answer.decoder import fit_problem
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.catalog.models.from_config import decoder_spec

    key = decoder_spec(_config(tmp_path, "llama-3.1-8b", LLAMA_31_8B), seq_len=8192, tokens=1e12).spec.key
    why, fits = fit_problem(key, "h100-80gb", 8, parse_methods("free-lunch+zero1+offload"))
    assert "do not fit by the memory model" in why and "GiB usable" in why
    assert "predicted to fit instead: --methods" in why and fits is None
    assert fit_problem(key, "h100-80gb", 8, parse_methods("free-lunch+zero3")) is None


def test_settings_that_fit_no_combination_keep_the_smallest_setup_that_would(tmp_path):
    """Where no memory-saving combination fits the GPUs, the refusal names the smallest setup that would, in its
    words and as data (``fits_from``), as a catalog model's refusal does."""
    from academic_bench.answer.decoder import fit_problem
    from academic_bench.catalog.methods import parse_methods
    from academic_bench.catalog.models.from_config import decoder_spec

    key = decoder_spec(_config(tmp_path, "llama-3.1-8b", LLAMA_31_8B), seq_len=8192, tokens=1e12).spec.key
    why, fits = fit_problem(key, "t4", 1, parse_methods("free-lunch"))
    assert fits is not None and fits.n_gpus > 1 and fits.words() in why


def test_torch_dtype_is_storage_the_rule_trains_in_bf16_and_says_so(tmp_path, capsys):
    """A config.json stored in float32 (OLMo-2-1B's) trained in fp32 without saying so; the rule trains in bf16
    where the GPU has it, says so in the answer's first line, and --precision overrides it."""
    path = _config(tmp_path, "small", SMALL_FP32)
    argv = ["--model", path, "--tokens", "1e9", "--seq-len", "64", "--gpu", "h100-80gb", "--gpus", "1"]
    _, d = _estimate(capsys, *argv)
    assert d["precision"] == "bf16" and "in bf16 (the rule" in d["precision_chosen"]
    assert "torch_dtype float32" in d["precision_chosen"]
    main(["estimate", *argv])
    first = next(line for line in capsys.readouterr().out.splitlines() if "the study's answer" in line)
    assert "in bf16 (the rule: bf16 where the GPU has it" in first
    _, d = _estimate(capsys, *argv, "--precision", "fp32")
    assert d["precision"] == "fp32" and d["precision_chosen"] == "in fp32 (--precision)"


def test_the_rule_is_fp16_on_a_gpu_without_bf16(monkeypatch):
    from academic_bench.catalog import config as cfg
    from academic_bench.catalog.hardware import get_gpu

    gpu = get_gpu("h100-80gb")
    monkeypatch.setattr(cfg, "get_gpu", lambda key: type(gpu)(**{**gpu.__dict__, "peak_tflops": {
        k: v for k, v in gpu.peak_tflops.items() if k != "bf16"}}))
    assert cfg.training_precision("h100-80gb") == "fp16" and cfg.training_precision("h100-80gb", "fp32") == "fp32"
