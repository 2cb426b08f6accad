"""Pythia (GPT-NeoX) 160M-6.9B, built from a config: never downloads weights.

Architecture: Biderman et al. 2023 (Pythia), Table 1 and the released model configs.
Recipe: paper Table 3 (batch 1024 x 2049 tokens, 143K steps, fp16 except bf16 for 1B, Adam).
"""
from __future__ import annotations

from .spec import ModelSpec, Optimizer, Recipe

PYTHIA_SRC = "Biderman et al. 2023 (Pythia), Table 1 and released GPT-NeoX configs"
PAPER_T3 = "paper Table 3 (Appendix C)"

# name: (layers, hidden, heads, lr, paper params, precision, vocab)
SIZES = {
    "160m": (12, 768, 12, 6.0e-4, 160e6, "fp16", 50304),
    "410m": (24, 1024, 16, 3.0e-4, 410e6, "fp16", 50304),
    "1b": (16, 2048, 8, 3.0e-4, 1.0e9, "bf16", 50304),
    "2.8b": (32, 2560, 32, 1.6e-4, 2.8e9, "fp16", 50304),
    "6.9b": (32, 4096, 32, 1.2e-4, 6.9e9, "fp16", 50432),
}
TINY = dict(layers=2, hidden=64, heads=4, vocab=512, seq_len=64)


def _config(layers: int, hidden: int, heads: int, vocab: int, seq_len: int):
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, max_position_embeddings=max(2048, seq_len), rotary_pct=0.25,
        use_parallel_residual=True, tie_word_embeddings=False, attention_dropout=0.0, hidden_dropout=0.0,
        use_cache=False,  # training: a KV cache only costs memory (and makes torch.compile recompile per layer)
    )


def _spec(size: str) -> ModelSpec:
    layers, hidden, heads, lr, params, precision, vocab = SIZES[size]
    opt = Optimizer("adam", lr, (0.9, 0.95), 1e-8, 0.01, source=f"{PYTHIA_SRC}: lr, Adam betas, eps, weight decay")
    recipe = Recipe(
        global_batch=1024, steps=143_000, precision=precision, optimizer=opt, seq_len=2049, vocab_size=vocab,
        sources={"global_batch": PAPER_T3, "steps": PAPER_T3, "seq_len": PAPER_T3 + " (2048 + 1)",
                 "precision": PAPER_T3, "architecture": PYTHIA_SRC},
    )
    tiny = Recipe(global_batch=8, steps=143_000, precision="fp32", optimizer=opt, seq_len=TINY["seq_len"],
                  vocab_size=TINY["vocab"], sources={"all": "tiny CPU variant, not a replication"})

    def build(tiny_: bool, attn: str = "sdpa"):
        from transformers import GPTNeoXForCausalLM

        if tiny_:
            cfg = _config(TINY["layers"], TINY["hidden"], TINY["heads"], TINY["vocab"], TINY["seq_len"])
        else:
            cfg = _config(layers, hidden, heads, vocab, 2049)
        cfg._attn_implementation = attn
        return GPTNeoXForCausalLM(cfg)

    def shape(tiny_: bool) -> tuple[int, int]:
        return (TINY["layers"], TINY["hidden"]) if tiny_ else (layers, hidden)

    return ModelSpec(
        key=f"pythia-{size}", family="pythia", display=f"Pythia-{size.upper()}", paper_params=params,
        task="causal-lm", recipe=recipe, tiny_recipe=tiny, build=build, transformer_shape=shape,
        block_types=("GPTNeoXLayer",),
    )


MODELS = [_spec(s) for s in SIZES]
