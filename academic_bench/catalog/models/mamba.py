"""Mamba-2.8B through transformers' Mamba; the fast path runs when mamba-ssm and causal-conv1d import.

Architecture: Gu & Dao 2023 (Mamba), the released mamba-2.8b config (64 layers, d_model 2560).
Recipe: paper Table 3 (batch 128 x 4096 tokens, 572K steps = 300B tokens, bf16, AdamW); optimizer values
from the Mamba paper's training recipe (Appendix E.2: AdamW betas 0.9/0.95, wd 0.1, lr 5x GPT-3's).
"""
from __future__ import annotations

from .spec import ModelSpec, Optimizer, Recipe

SRC = "Gu & Dao 2023 (Mamba), Appendix E.2 improved recipe (AdamW 0.9/0.95, wd 0.1, lr 5x GPT-3 2.7B's 1.6e-4)"
PAPER_T3 = "paper Table 3 (Appendix C)"
TINY = dict(layers=2, hidden=64, vocab=512, seq_len=64)


def _config(layers: int, hidden: int, vocab: int):
    from transformers import MambaConfig

    return MambaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, state_size=16,
                       expand=2, conv_kernel=4, tie_word_embeddings=True, use_cache=False)


def build(tiny: bool, attn: str = "sdpa"):  # noqa: ARG001  (Mamba has no attention)
    # The module itself, not transformers' lazy attribute: it must be imported afresh after the kernel
    # packages were hidden (``measure.apply.apply_kernels_check``).
    from transformers.models.mamba.modeling_mamba import MambaForCausalLM

    cfg = _config(TINY["layers"], TINY["hidden"], TINY["vocab"]) if tiny else _config(64, 2560, 50280)
    return MambaForCausalLM(cfg)


OPT = Optimizer("adamw", 8e-4, (0.9, 0.95), 1e-8, 0.1, source=SRC)
MODELS = [
    ModelSpec(
        key="mamba-2.8b", family="mamba", display="Mamba-2.8B", paper_params=2.8e9, task="causal-lm",
        recipe=Recipe(global_batch=128, steps=572_000, precision="bf16", optimizer=OPT, seq_len=4096,
                      vocab_size=50280,
                      sources={"global_batch": PAPER_T3, "steps": PAPER_T3, "seq_len": PAPER_T3,
                               "precision": PAPER_T3, "architecture": SRC}),
        tiny_recipe=Recipe(global_batch=8, steps=572_000, precision="fp32", optimizer=OPT,
                           seq_len=TINY["seq_len"], vocab_size=TINY["vocab"]),
        build=build, block_types=("MambaBlock",), compiles=False, kernel="mamba-ssm",
    )
]
