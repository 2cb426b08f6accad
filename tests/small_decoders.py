"""Small decoder configs (config.json contents) that the CPU tests build on the meta device: the kinds an estimate
must read, written here so that no test downloads one."""
from __future__ import annotations

# Gated MLP with grouped-query attention.
LLAMA_GQA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_attention_heads": 8,
             "num_key_value_heads": 2, "num_hidden_layers": 4, "vocab_size": 1000, "max_position_embeddings": 1024,
             "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
# Plain GELU MLP with parallel residual.
NEOX = {"model_type": "gpt_neox", "hidden_size": 256, "intermediate_size": 1024, "num_attention_heads": 8,
        "num_hidden_layers": 3, "vocab_size": 1000, "max_position_embeddings": 1024, "rotary_pct": 0.25,
        "use_parallel_residual": True, "hidden_act": "gelu", "tie_word_embeddings": False, "torch_dtype": "float16"}
