"""``estimate --model PATH/config.json`` for an encoder (BERT, RoBERTa, ModernBERT): masked-LM FLOPs by the study's
dense convention, checked against ``torch.utils.flop_counter.FlopCounterMode`` on transformers' own masked-LM build,
the answer from RoBERTa-large's evidence, and the refusals that name what is missing.

Every config is written here into ``tmp_path`` with fields of transformers' BertConfig, RobertaConfig and
ModernBertConfig; nothing is downloaded.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from academic_bench import estimate as est
from academic_bench.catalog.models.encoder_config import encoder_spec, is_encoder
from academic_bench.catalog.models.from_config import ConfigError
from academic_bench.cli import main

TOLERANCE = 0.01  # as tests/test_flops_count.py holds the decoders
SEQ = 128
# BERT-base's shape (BertConfig's defaults, stated as a config.json states them).
BERT_BASE = {"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
             "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2,
             "pad_token_id": 0}
ROBERTA = {"model_type": "roberta", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
           "intermediate_size": 2048, "vocab_size": 50265, "max_position_embeddings": 514, "type_vocab_size": 1,
           "pad_token_id": 1}
# ModernBERT with every third layer global and a local window of 128 (ModernBertConfig's fields).
MODERNBERT = {"model_type": "modernbert", "hidden_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8,
              "intermediate_size": 768, "vocab_size": 50368, "global_attn_every_n_layers": 3,
              "local_attention": 128}


@pytest.fixture(autouse=True)
def _offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _write(tmp_path: Path, name: str, data: dict) -> str:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


def _library_per_token(data: dict, seq_len: int) -> float:
    """FlopCounterMode's FLOPs per token of one forward and backward of transformers' masked-LM model built from
    ``data`` alone, on the meta device."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    cfg = AutoConfig.for_model(data["model_type"], **{k: v for k, v in data.items() if k != "model_type"})
    cfg._attn_implementation = "sdpa"
    with torch.device("meta"):
        net = AutoModelForMaskedLM.from_config(cfg).train()
    ids = torch.zeros(1, seq_len, dtype=torch.long, device="meta")
    counter = FlopCounterMode(display=False)
    with counter:
        net(input_ids=ids, labels=ids).loss.backward()
    return counter.get_total_flops() / seq_len


@pytest.mark.parametrize("name, data, seq_len", [("bert", BERT_BASE, SEQ), ("roberta", ROBERTA, SEQ),
                                                 # every position within the window: all its attention is global
                                                 ("modernbert", MODERNBERT, 64)])
def test_an_encoders_flops_per_token_are_what_flop_counter_mode_counts(tmp_path, name, data, seq_len) -> None:
    spec = encoder_spec(_write(tmp_path, name, data), seq_len=seq_len, tokens=1e10).spec
    ours = est.flops_per_sample(spec) / seq_len
    library = _library_per_token(data, seq_len)
    assert ours == pytest.approx(library, rel=TOLERANCE), f"{name}: {ours / library - 1:+.2%}"
    st = est.model_stats(spec)
    assert st.tied_output > 0  # the masked-LM head multiplies every position though tied to the token table


def test_bert_base_is_read_as_transformers_builds_it(tmp_path) -> None:
    from transformers import BertConfig, BertForMaskedLM

    path = _write(tmp_path, "bert-base", BERT_BASE)
    assert is_encoder(path)
    got = encoder_spec(path, seq_len=512, tokens=1e11)
    with torch.device("meta"):
        net = BertForMaskedLM(BertConfig(**{k: v for k, v in BERT_BASE.items() if k != "model_type"}))
    assert est.model_stats(got.spec).params == sum(p.numel() for p in net.parameters())
    assert got.spec.task == "masked-lm" and got.spec.block_types == ("BertLayer",)
    assert got.facts["encoder"] and got.facts["mlp"] == "plain" and got.spec.recipe.global_batch == 8192


@pytest.mark.parametrize("data, seq_len, words", [
    (MODERNBERT, 512, ["window of 64", "global attention only", "not estimated"]),
    ({**MODERNBERT, "sparse_prediction": True}, 64, ["sparse_prediction", "not estimated"]),
    ({"model_type": "electra", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 1024, "vocab_size": 30522}, SEQ, ["'electra'", "bert, roberta, modernbert"]),
    ({k: v for k, v in BERT_BASE.items() if k != "intermediate_size"}, SEQ, ["missing intermediate_size"]),
    ({**BERT_BASE, "num_attention_heads": 7}, SEQ, ["num_attention_heads 7"]),
])
def test_an_encoder_the_study_cannot_charge_is_refused_naming_what_is_missing(tmp_path, data, seq_len, words):
    with pytest.raises(ConfigError) as exc:
        encoder_spec(_write(tmp_path, "x", data), seq_len=seq_len, tokens=1e10)
    assert all(w in str(exc.value) for w in words), str(exc.value)


def test_the_cli_answers_a_bert_base_config_with_a_labelled_prediction_and_range(tmp_path, capsys) -> None:
    path = _write(tmp_path, "bert-base", BERT_BASE)
    argv = ["estimate", "--model", path, "--tokens", "1e11", "--seq-len", "512", "--gpu", "h100-80gb", "--gpus", "8"]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    a = d["answer"]
    assert a["kind"] == "predicted" and a["by"] == "RoBERTa-large by model FLOPs"
    assert a["days_low"] < a["days"] < a["days_high"] and "published BERT-large points" in a["range_basis"]
    assert "RoBERTa-large's measured step" in a["rests_on"] and "MFU" in a["rests_on"]
    assert d["architecture"]["encoder"] and d["architecture"]["model_type"] == "bert"
    # the days follow the FLOPs: the analytic bound at the answer's MFU is the answer
    assert a["days"] == pytest.approx(d["days_analytic"]["lower_bound"] / a["mfu"], rel=1e-6)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "an encoder trained as a masked language model" in out and "(predicted, " in out and " to " in out


def test_an_encoder_beyond_the_evidence_or_its_methods_gets_no_answer(tmp_path, capsys) -> None:
    path = _write(tmp_path, "bert-base", BERT_BASE)
    base = ["estimate", "--model", path, "--tokens", "1e11", "--gpu", "h100-80gb", "--gpus", "1", "--json"]
    assert main([*base, "--seq-len", "4096"]) == 1  # longer than any encoder prediction was checked at
    assert "beyond the longest" in json.loads(capsys.readouterr().out)["answer"]["rests_on"]
    assert main([*base, "--seq-len", "512", "--methods", "free-lunch+ckpt"]) == 1
    assert "free-lunch" in json.loads(capsys.readouterr().out)["answer"]["rests_on"]
