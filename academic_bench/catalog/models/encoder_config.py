"""An encoder (a masked language model: BERT, RoBERTa, ModernBERT) from its Hugging Face ``config.json``: a
``ModelSpec`` built with transformers' masked-LM class on the meta device, never downloaded.

The spec is registered as a decoder's is (``from_config.REGISTERED``, a key of its own per file and settings), so
every estimate that takes a catalog key (FLOPs, memory, days, ``Config``) takes it too. Its FLOPs are the study's
dense convention with the masked-LM head (``estimate.stats``), as the catalog's RoBERTa-large counts them: the
head's output projection, tied to the token embedding, multiplies every position (transformers computes the logits
of every position, masked or not).

A file is refused before any model is built, with a ``ConfigError`` naming what is missing: a masked language
model other than the ``ENCODERS`` the study has checked, a missing or non-positive shape key, heads that do not
divide, a ModernBERT whose local (sliding-window) attention layers see less than the whole sequence (the study's
convention and RoBERTa-large's evidence have global attention only; SDPA with a window mask computes the full
square, so neither its FLOPs nor its time are the window's), or one that predicts only the masked positions
(``sparse_prediction``: a head the convention's per-position head over-counts).
"""
from __future__ import annotations

import copy
import math
from pathlib import Path

from ..json_cache import digest
from .from_config import (DTYPES, ENCODERS, MADE_WITH, REGISTERED, REQUIRED, ConfigDecoder, ConfigError,
                          config_key, config_name, read_json, stated_value)
from .roberta import MODELS as ROBERTA
from .spec import ModelSpec, Recipe

# Sequences per optimizer step when not given: RoBERTa-large's recipe (paper Table 3), the evidence encoders are
# answered from.
DEFAULT_GLOBAL_BATCH = ROBERTA[0].recipe.global_batch
DEFAULT_PRECISION = "bf16"
SOURCE = "estimate for a config.json encoder: not a replication recipe"


def is_encoder(path: str | Path) -> bool:
    """Whether ``path`` is a config.json of one of the ``ENCODERS``, which the encoder's reader answers; any other
    masked language model is refused by name by the decoder's (``from_config``). Read without transformers, so
    that a decoder's kept shape still answers without importing it."""
    try:
        data = read_json(Path(path))
    except ConfigError:
        return False  # the decoder's reader says what is wrong with the file
    return not data.get("is_encoder_decoder") and data.get("model_type") in ENCODERS


def _config(path: Path, data: dict, seq_len: int):
    """transformers' config of the encoder, or a ConfigError naming what the study lacks to charge it."""
    from transformers import AutoConfig

    kind = data.get("model_type")
    if kind not in ENCODERS:
        raise ConfigError(f"{path}: model_type {kind!r} is no encoder the study has checked; encoders it answers: "
                          f"{', '.join(ENCODERS)}")
    cls = type(AutoConfig.for_model(kind))
    required = (*REQUIRED, "intermediate_size")
    missing = [k for k in required if stated_value(data, cls, k) is None]
    if missing:
        raise ConfigError(f"{path}: missing {', '.join(missing)}: an encoder config states its shape "
                          f"({', '.join(required)})")
    for key in required:
        value = stated_value(data, cls, key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{path}: {key} must be a whole number of at least 1, got {value!r}")
    hidden, heads = stated_value(data, cls, "hidden_size"), stated_value(data, cls, "num_attention_heads")
    if hidden % heads:
        raise ConfigError(f"{path}: hidden_size {hidden} must divide into num_attention_heads {heads}")
    cfg = AutoConfig.for_model(kind, **{k: v for k, v in copy.deepcopy(data).items() if k != "model_type"})
    local = [i for i, t in enumerate(getattr(cfg, "layer_types", None) or ()) if t == "sliding_attention"]
    # ModernBERT's sliding window reaches local_attention // 2 positions each side (its modeling file).
    reach = int(getattr(cfg, "local_attention", 0) or 0) // 2
    if local and seq_len - 1 > reach:
        raise ConfigError(f"{path}: {len(local)} of its {len(cfg.layer_types)} layers attend within a window of "
                          f"{reach} positions each side (local_attention {cfg.local_attention}), shorter than the "
                          f"sequence of {seq_len}: the study charges global attention only (RoBERTa-large's "
                          "evidence; SDPA with a window mask computes the full square), so its attention cannot be "
                          "charged; it is not estimated")
    if getattr(cfg, "sparse_prediction", False):
        raise ConfigError(f"{path}: sparse_prediction is on: its head predicts only the masked positions, which "
                          "the study's convention (a head over every position, as RoBERTa-large's) does not "
                          "charge; it is not estimated")
    return cfg


def _positions(cfg) -> tuple[int | None, int]:
    """(the positions the config states, how many of them a sequence can use): RoBERTa's learned positions start
    after its padding index (transformers' create_position_ids_from_input_ids)."""
    stated = getattr(cfg, "max_position_embeddings", None)
    offset = int(cfg.pad_token_id) + 1 if cfg.model_type == "roberta" else 0
    return stated, (stated - offset if stated is not None else math.inf)


def encoder_spec(path: str | Path, *, seq_len: int, tokens: float, global_batch: int | None = None,
                 precision: str | None = None) -> ConfigDecoder:
    """The spec of the encoder ``path`` describes, trained as a masked language model on ``tokens`` tokens in
    sequences of ``seq_len`` at ``global_batch`` sequences per step (default RoBERTa-large's; steps rounded up),
    registered for ``models.get_model``."""
    from ..env import libraries_quiet

    path = Path(path)
    data = read_json(path)
    global_batch = DEFAULT_GLOBAL_BATCH if global_batch is None else global_batch
    for label, value in (("--seq-len", seq_len), ("--tokens", tokens), ("--global-batch", global_batch)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 1:
            raise ConfigError(f"{label} must be at least 1, got {value!r}")
    if tokens < global_batch * seq_len:
        raise ConfigError(f"--tokens {tokens:g} is less than one optimizer step: a global batch of {global_batch} "
                          f"sequences of {seq_len} tokens is {global_batch * seq_len:,} tokens (--global-batch sets it)")
    if precision is not None and precision not in DTYPES.values():
        raise ConfigError(f"precision {precision!r} is not one of: {', '.join(DTYPES.values())}")
    precision = precision or DEFAULT_PRECISION
    with libraries_quiet():
        cfg = _config(path, data, seq_len)
    stated, usable = _positions(cfg)
    extended = seq_len > usable
    steps = math.ceil(tokens / (global_batch * seq_len))
    settings = {"config": data, "seq_len": seq_len, "global_batch": global_batch, "steps": steps,
                "precision": precision, "reader": "encoder"}
    built = {"config": data, "positions": seq_len if extended else None, "reader": "encoder"}
    facts_digest = digest(built, 10)
    name, key = config_name(path), config_key(path, settings)

    def build(tiny: bool = False, attn: str = "sdpa"):
        import torch
        from transformers import AutoModelForMaskedLM

        if tiny:
            raise ValueError(f"{key} comes from a config.json and has no tiny variant")
        c = copy.deepcopy(cfg)
        if extended:  # learned positions grow with the sequence, as the config decoders' do
            c.max_position_embeddings = seq_len + (stated - usable)
        c._attn_implementation = attn
        # fp32 weights under the recipe's autocast, as the catalog's RoBERTa-large is built (``from_config``)
        return AutoModelForMaskedLM.from_config(c, dtype=torch.float32)

    with libraries_quiet():
        block, gated = _block(build)
    layers, hidden, heads = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads
    opt = ROBERTA[0].recipe.optimizer
    recipe = Recipe(global_batch=global_batch, steps=steps, precision=precision, optimizer=opt, seq_len=seq_len,
                    vocab_size=cfg.vocab_size, sources={"all": f"{path} and the command line",
                                                        "optimizer": opt.source})
    spec = ModelSpec(key=key, family=f"config:{data['model_type']}", display=f"{name} ({data['model_type']})",
                     paper_params=0.0, task="masked-lm", recipe=recipe, build=build, tiny_recipe=recipe,
                     transformer_shape=lambda tiny: (layers, hidden), block_types=(block,),
                     facts_key=f"encoder@{facts_digest}")
    facts = {"model_type": data["model_type"], "encoder": True, "layers": layers, "hidden": hidden, "heads": heads,
             "kv_heads": heads, "intermediate": cfg.intermediate_size, "mlp": "gated" if gated else "plain",
             "vocab": cfg.vocab_size, "tied_embeddings": bool(getattr(cfg, "tie_word_embeddings", True)),
             "max_positions": stated, "positions_extended_to": seq_len if extended else None, "block": block,
             "tokens": steps * global_batch * seq_len, "global_batch": global_batch, "seq_len": seq_len,
             "steps": steps, "precision": precision, "moe": None}
    REGISTERED[key] = spec
    MADE_WITH[key] = {"path": str(path.resolve()), "seq_len": seq_len, "tokens": tokens,
                      "global_batch": global_batch, "precision": precision}
    return ConfigDecoder(spec, str(path), facts)


def _block(build) -> tuple[str, bool]:
    """(the class name of the repeated encoder layer, whether its MLP is gated), from a meta build: the layer is
    the element of the model's list of ``num_hidden_layers`` modules (BERT's and RoBERTa's name none for
    sharding); a gated MLP (ModernBERT's GeGLU) projects to twice its intermediate size."""
    import torch
    from torch import nn

    with torch.device("meta"):
        net = build()
    cfg = net.config
    stack = next(m for m in net.modules() if isinstance(m, nn.ModuleList) and len(m) == cfg.num_hidden_layers)
    first = stack[0]
    gated = any(isinstance(m, nn.Linear) and m.out_features == 2 * cfg.intermediate_size for m in first.modules())
    return type(first).__name__, gated
