"""RoBERTa-large as a masked language model, built from a config.

Architecture: Liu et al. 2019 (RoBERTa) and the released roberta-large config.
Recipe: paper Table 3 (batch 8192 x 512, 500K steps, fp16, Adam); optimizer values from RoBERTa Table 9.
"""
from __future__ import annotations

from .spec import ModelSpec, Optimizer, Recipe

SRC = "Liu et al. 2019 (RoBERTa), Appendix Table 9 (large: peak lr 4e-4, betas 0.9/0.98, eps 1e-6, wd 0.01)"
PAPER_T3 = "paper Table 3 (Appendix C)"
TINY = dict(layers=2, hidden=64, heads=4, vocab=512, seq_len=64)


def _config(layers: int, hidden: int, heads: int, vocab: int, seq_len: int):
    from transformers import RobertaConfig

    return RobertaConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, max_position_embeddings=seq_len + 2, type_vocab_size=1,
        pad_token_id=1, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
    )


def build(tiny: bool, attn: str = "sdpa"):
    from transformers import RobertaForMaskedLM

    if tiny:
        cfg = _config(TINY["layers"], TINY["hidden"], TINY["heads"], TINY["vocab"], TINY["seq_len"])
    else:
        cfg = _config(24, 1024, 16, 50265, 512)
    cfg._attn_implementation = attn
    return RobertaForMaskedLM(cfg)


OPT = Optimizer("adam", 4e-4, (0.9, 0.98), 1e-6, 0.01, source=SRC)
MODELS = [
    ModelSpec(
        key="roberta-large", family="roberta", display="RoBERTa-large", paper_params=355e6, task="masked-lm",
        recipe=Recipe(global_batch=8192, steps=500_000, precision="fp16", optimizer=OPT, seq_len=512,
                      vocab_size=50265,
                      sources={"global_batch": PAPER_T3, "steps": PAPER_T3, "seq_len": PAPER_T3,
                               "precision": PAPER_T3, "architecture": SRC}),
        tiny_recipe=Recipe(global_batch=8, steps=500_000, precision="fp32", optimizer=OPT,
                           seq_len=TINY["seq_len"], vocab_size=TINY["vocab"]),
        build=build,
        transformer_shape=lambda tiny: (TINY["layers"], TINY["hidden"]) if tiny else (24, 1024),
        block_types=("RobertaLayer",),
    )
]
