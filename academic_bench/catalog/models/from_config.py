"""Any decoder from its Hugging Face ``config.json``: a ``ModelSpec`` built with transformers, never downloaded.

The spec is registered under a key of its own (``<name>@<digest>``, the digest of the config and the training
settings), so that every estimate that takes a catalog key (FLOPs, memory, days, ``Config``) takes it too, and a
changed file or setting never reuses another's cached numbers. Registered specs are not in ``CATALOG``: they
never appear in the catalog's listings, sweeps or book.

A file is refused before any model is built, with a ``ConfigError`` naming what is wrong: not JSON, not a
Hugging Face config (no ``model_type``), an architecture that is no decoder-only language model (vision models,
encoder-decoders, masked language models: BERT, RoBERTa and ModernBERT are read by ``encoder_config`` instead), a missing or non-positive shape key, or heads that do not divide.
"""
from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..env import libraries_quiet
from ..json_cache import cache_file, digest, read_json as read_cached, write_json
from . import moe as moe_reader
from . import refusals
from .refusals import STATE_SPACE, Refused, refuse_unanswered
from .moe import EXPERT_KEYS, MoeShape  # noqa: F401  (EXPERT_KEYS: where configs state an expert count)
from .spec import ModelSpec, Optimizer, Recipe

# Sequences per optimizer step when not given: the catalog decoders' recipe (paper Table 3, Pythia).
DEFAULT_GLOBAL_BATCH = 1024
DEFAULT_PRECISION = "bf16"
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
# Shape keys every decoder config must state (or under the config class's alias, e.g. GPT-2's n_layer): filled
# from a config class's defaults instead, a missing layer count would silently become another model's.
REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")
SOURCE = "estimate for a config.json decoder: not a replication recipe"

# The masked language models whose build the study has checked against torch's count (``encoder_config``,
# tests/test_encoder_config.py); any other is refused by name.
ENCODERS = ("bert", "roberta", "modernbert")
REGISTERED: dict[str, ModelSpec] = {}  # specs made from config files, by key (models.get_model reads it)
MADE_WITH: dict[str, dict] = {}  # the arguments of ``decoder_spec`` that made each registered spec, by key
DECODERS: dict[str, "ConfigDecoder"] = {}  # what ``decoder_spec`` returned, by key (``recall``)


class ConfigError(ValueError):
    """A config.json that cannot be estimated: the message says what is wrong with it."""


@dataclass(frozen=True)
class ConfigDecoder:
    """A decoder read from a config.json: its registered spec and what the file says about its shape."""

    spec: ModelSpec
    path: str
    facts: dict[str, Any] = field(default_factory=dict)


def read_json(path: Path) -> dict:
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config.json must be a JSON object, got {type(data).__name__}")
    return data


def _decoder_class(path: Path, data: dict):
    """The config class of a decoder-only language model, or a ConfigError saying why the file is not one."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    kind = data.get("model_type")
    if not isinstance(kind, str) or not kind:
        raise ConfigError(f"{path}: no 'model_type': not a Hugging Face model config")
    if data.get("is_encoder_decoder"):
        raise ConfigError(f"{path}: model_type {kind!r} is an encoder-decoder; only decoder-only language models "
                          "can be estimated")
    if kind in MODEL_FOR_MASKED_LM_MAPPING_NAMES:  # BERT-like encoders also have a causal-LM head class
        raise ConfigError(f"{path}: model_type {kind!r} is an encoder (masked language model), not a decoder; "
                          f"encoders the study answers (estimate only): {', '.join(ENCODERS)}")
    if kind not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        known = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) - set(MODEL_FOR_MASKED_LM_MAPPING_NAMES)
        raise ConfigError(f"{path}: model_type {kind!r} is not a decoder-only language model; decoders "
                          f"transformers knows include {', '.join(k for k in _COMMON if k in known)} "
                          f"({len(known)} in all)")
    try:
        return type(AutoConfig.for_model(kind))
    except (ValueError, KeyError) as exc:
        raise ConfigError(f"{path}: transformers cannot read model_type {kind!r} ({exc})") from None


_COMMON = ("gpt2", "gpt_neox", "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "phi3", "olmo")


def stated_value(data: dict, cls, key: str) -> Any:
    """The value the file states for ``key``, under its own name or the config class's alias; None if absent."""
    if key in data:
        return data[key]
    alias = getattr(cls, "attribute_map", {}).get(key)
    return data.get(alias) if alias else None


def _check_shape(path: Path, data: dict, cls) -> None:
    required = list(REQUIRED)
    if "intermediate_size" in cls().to_dict():  # gated and GPT-NeoX MLPs state it; GPT-2's n_inner may be null
        required.append("intermediate_size")
    missing = [k for k in required if stated_value(data, cls, k) is None]
    if missing:
        raise ConfigError(f"{path}: missing {', '.join(missing)}: a decoder config states its shape "
                          f"({', '.join(required)})")
    for key in [*required, "num_key_value_heads"]:
        value = stated_value(data, cls, key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ConfigError(f"{path}: {key} must be a whole number of at least 1, got {value!r}")
    hidden, heads = stated_value(data, cls, "hidden_size"), stated_value(data, cls, "num_attention_heads")
    kv = stated_value(data, cls, "num_key_value_heads") or heads
    if hidden % heads or heads % kv:
        raise ConfigError(f"{path}: hidden_size {hidden} must divide into num_attention_heads {heads}, and the "
                          f"heads into num_key_value_heads {kv}")


def _precision(path: Path, data: dict, given: str | None) -> str:
    """The precision trained: ``given``, else ``DEFAULT_PRECISION``. The file's ``torch_dtype`` is how its weights
    are stored, never the recipe (``catalog.config.training_precision`` chooses by the GPU's rule)."""
    if given is not None:
        if given not in DTYPES.values():
            raise ConfigError(f"precision {given!r} is not one of: {', '.join(DTYPES.values())}")
        return given
    return DEFAULT_PRECISION


def stored_dtype(path: str | Path) -> str | None:
    """The dtype a config.json stores its weights in (``dtype``, or ``torch_dtype`` in older files), or None."""
    data = read_json(Path(path))
    dtype = data.get("dtype") or data.get("torch_dtype")
    return str(dtype) if dtype else None


def _mlp_kind(net, block_types: tuple[str, ...]) -> str:
    """'gated' (three projections: SwiGLU/GeGLU as in Llama, Qwen, Mistral) or 'plain' (two: GELU as in
    GPT-NeoX/Pythia), read from the built model's first block."""
    from torch import nn

    block = next(m for m in net.modules() if type(m).__name__ in block_types)
    # The MLP child: the one named like it that holds projections (GPT-NeoX also has a 'post_mlp_dropout').
    # GPT-2's projections are Conv1D modules (a weight of inputs x outputs, ``nf`` outputs), not nn.Linear.
    counts = [sum(isinstance(m, nn.Linear) or hasattr(m, "nf") for m in child.modules())
              for name, child in block.named_children() if "mlp" in name.lower() or "feed_forward" in name.lower()]
    n = max(counts, default=0)
    return {3: "gated", 2: "plain"}.get(n, f"other ({n} projections)")


def _read_experts(path: Path, kind: str, cfg, net) -> dict | None:
    """A mixture of experts' shape (``moe.MoeShape`` as a dict), None for a dense decoder; a mixture the study
    cannot charge is refused, naming what it lacks (``moe.refusal``)."""
    experts = moe_reader.stated_experts(cfg)
    if experts <= 1:
        return None
    why = moe_reader.refusal(net, cfg)
    if why:
        raise ConfigError(f"{path}: model_type {kind!r} is a mixture of experts ({experts} experts) that the study "
                          f"cannot charge: {why}; it is not estimated")
    return moe_reader.read_moe(net, cfg).to_dict()


SHAPE_KEYS = (*REQUIRED, "intermediate_size", "num_key_value_heads", "max_position_embeddings")


def _decoder_shape(path: Path, data: dict) -> dict:
    """What transformers reads in a decoder's config: the shape keys it states (under their own names or the config
    class's aliases), the attribute that holds its positions, its repeated layer, MLP kind and tied embeddings;
    or a ConfigError saying why the file is no decoder the estimates can take (``_decoder_class``,
    ``_check_shape``, ``_read_experts``, a model transformers cannot build on the meta device).

    Importing transformers' config and model classes and building the model take seconds, so a file that passed
    is kept with what it gave, in the user's cache folder, under a digest of its content, the installed
    transformers and this module (``_shape_file``): asked again, the answer needs neither torch nor transformers."""
    where = _shape_file(data)
    shape = read_cached(where)
    if shape is None:
        try:
            with libraries_quiet():
                shape = _build_shape(path, data)
        except Refused as exc:  # the build took seconds: the refusal is kept as an answer is
            shape = {"refused": str(exc)}
        write_json(where, shape)  # a read-only home: the shape is read again next time
    if "refused" in shape:
        raise ConfigError(f"{path}: {shape['refused']}")
    return shape


def _build_shape(path: Path, data: dict) -> dict:
    """``_decoder_shape``'s work: transformers' classes imported and the model built on the meta device."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    cls = _decoder_class(path, data)
    if data["model_type"] not in STATE_SPACE:  # their shape has no attention heads to check
        _check_shape(path, data, cls)
    # A copy: transformers fills in nested settings (rope_scaling) in place, and the file's content names it.
    cfg = AutoConfig.for_model(data["model_type"], **{k: v for k, v in copy.deepcopy(data).items()
                                                      if k != "model_type"})
    model_cls = MODEL_FOR_CAUSAL_LM_MAPPING[cls]
    blocks = list(getattr(model_cls, "_no_split_modules", None) or ())
    try:
        with torch.device("meta"):
            net = AutoModelForCausalLM.from_config(cfg)
    except Exception as exc:  # transformers' own checks of the config: a file it cannot build is a bad file
        raise ConfigError(f"{path}: transformers cannot build a {data['model_type']!r} model from it: {exc}") from None
    refuse_unanswered(data, model_cls, sum(p.numel() for p in net.parameters()))
    if not getattr(net, "_supports_sdpa", False):
        # Every estimate builds the decoder with SDPA attention, the kernel the study measures and its profiles time.
        raise ConfigError(f"{path}: transformers runs {model_cls.__name__}'s attention only eagerly (no "
                          "scaled_dot_product_attention, e.g. GPT-OSS's attention sinks); the study's profiles "
                          "time SDPA attention, so it is not estimated")
    if not blocks or not any(type(m).__name__ in blocks for m in net.modules()):
        raise ConfigError(f"{path}: cannot find the repeated decoder layer of {model_cls.__name__}")
    shape = {"stated": {k: stated_value(data, cls, k) for k in SHAPE_KEYS},
             "positions_key": getattr(cls, "attribute_map", {}).get("max_position_embeddings",
                                                                    "max_position_embeddings"),
             "blocks": blocks, "mlp": _mlp_kind(net, tuple(blocks)),
             "tied_embeddings": bool(getattr(net.config, "tie_word_embeddings", False)),
             "moe": _read_experts(path, data["model_type"], cfg, net)}
    if shape["moe"] is not None:  # the experts hold their projections as stacked weights, no nn.Linear modules
        shape["mlp"] = f"routed experts ({'gated' if shape['moe']['gated'] else 'plain'})"
    return shape


def _shape_file(data: dict) -> Path:
    """Where a decoder config's shape is kept: a digest of the file's content, the installed transformers (which
    reads it) and this module's source (how it is read)."""
    import importlib.metadata

    try:
        library = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        library = "none"
    reader = "".join(Path(m.__file__).read_text() for m in (moe_reader, refusals)) + Path(__file__).read_text()
    return cache_file(f"decoders/{digest({'config': data, 'transformers': library, 'reader': reader})}.json")


def decoder_spec(path: str | Path, *, seq_len: int, tokens: float, global_batch: int = DEFAULT_GLOBAL_BATCH,
                 precision: str | None = None) -> ConfigDecoder:
    """The spec of the decoder ``path`` describes, trained on ``tokens`` tokens in sequences of ``seq_len`` at
    ``global_batch`` sequences per step (steps rounded up), registered for ``models.get_model``."""
    path = Path(path)
    data = read_json(path)
    shape = _decoder_shape(path, data)
    stated = shape["stated"]
    for label, value in (("--seq-len", seq_len), ("--tokens", tokens), ("--global-batch", global_batch)):
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 1:
            raise ConfigError(f"{label} must be at least 1, got {value!r}")
    if tokens < global_batch * seq_len:
        raise ConfigError(f"--tokens {tokens:g} is less than one optimizer step: a global batch of {global_batch} "
                          f"sequences of {seq_len} tokens is {global_batch * seq_len:,} tokens (--global-batch sets it)")
    precision = _precision(path, data, precision)
    steps = math.ceil(tokens / (global_batch * seq_len))
    positions = stated["max_position_embeddings"]
    extended = positions is not None and seq_len > positions
    settings = {"config": data, "seq_len": seq_len, "global_batch": global_batch, "steps": steps,
                "precision": precision}
    # The meta-device facts depend on the file and on the positions the sequence length makes it build, not on the
    # tokens, batch or precision: one set per file and built length (``ModelSpec.facts_key``).
    built = {"config": data, "positions": seq_len if extended else None}
    facts_digest = digest(built, 10)
    name, key = config_name(path), config_key(path, settings)

    def build(tiny: bool = False, attn: str = "sdpa"):
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        if tiny:
            raise ValueError(f"{key} comes from a config.json and has no tiny variant")
        cfg = AutoConfig.for_model(data["model_type"], **{k: v for k, v in copy.deepcopy(data).items()
                                                          if k != "model_type"})
        cfg.use_cache = False  # training: a KV cache only costs memory
        if extended:  # as the catalog's Pythia does for its 2048 + 1 tokens; learned positions grow with it
            setattr(cfg, shape["positions_key"], seq_len)
        cfg._attn_implementation = attn
        # fp32 weights, as the catalog's models are built: the recipe's precision is autocast's, with fp32 weights,
        # gradients and Adam states. A config's torch_dtype is the dtype its checkpoint was saved in, and
        # transformers 5 builds in it unless told otherwise: pure 16-bit training (16-bit AdamW moments, no fp32
        # weights), which no recipe of the study runs and which fp16's gradient scaler refuses.
        return AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)

    blocks = tuple(shape["blocks"])
    layers, hidden = stated["num_hidden_layers"], stated["hidden_size"]
    opt = Optimizer("adamw", 3e-4, (0.9, 0.95), 1e-8, 0.1,
                    source=f"{SOURCE}; the memory model counts Adam's two moments and an fp32 master copy")
    recipe = Recipe(global_batch=global_batch, steps=steps, precision=precision, optimizer=opt, seq_len=seq_len,
                    vocab_size=stated["vocab_size"], sources={"all": f"{path} and the command line"})
    spec = ModelSpec(key=key, family=f"config:{data['model_type']}", display=f"{name} ({data['model_type']})",
                     paper_params=0.0, task="causal-lm", recipe=recipe, build=build, tiny_recipe=recipe,
                     transformer_shape=lambda tiny: (layers, hidden), block_types=blocks,
                     facts_key=f"config@{facts_digest}",
                     moe=MoeShape.from_dict(shape["moe"]) if shape.get("moe") else None)
    heads = stated["num_attention_heads"]
    facts = {"model_type": data["model_type"], "layers": layers, "hidden": hidden, "heads": heads,
             "kv_heads": stated["num_key_value_heads"] or heads, "intermediate": stated["intermediate_size"],
             "mlp": shape["mlp"], "vocab": recipe.vocab_size, "tied_embeddings": shape["tied_embeddings"],
             "max_positions": positions, "positions_extended_to": seq_len if extended else None,
             "block": blocks[0], "tokens": steps * global_batch * seq_len, "global_batch": global_batch,
             "seq_len": seq_len, "steps": steps, "precision": precision, "moe": shape.get("moe")}
    REGISTERED[key] = spec
    MADE_WITH[key] = {"path": str(path.resolve()), "seq_len": seq_len, "tokens": tokens,
                      "global_batch": global_batch, "precision": precision}
    DECODERS[key] = ConfigDecoder(spec, str(path), facts)
    if not _key_file(key).is_file():  # so that the key a command printed names the decoder in the next one
        write_json(_key_file(key), MADE_WITH[key])
    return DECODERS[key]


def config_name(path: Path) -> str:
    """A config.json's name, from the resolved path, so that "config.json" given from inside its folder,
    "../x/config.json" and the absolute path the workers receive (``made_with``) all name the same model."""
    where = Path(path).resolve()
    return (where.parent.name if where.name == "config.json" and where.parent.name else where.stem) or "config"


def config_key(path: Path, settings: dict) -> str:
    """A config.json's key, ``name@digest``: its name and a digest of its content and the settings that made the
    spec."""
    return f"{config_name(path)}@{digest(settings, 10)}".lower()


def _key_file(key: str) -> Path:
    return cache_file(f"decoders/keys/{key}.json")


def recall(key: str) -> ConfigDecoder | None:
    """The decoder registered as ``key`` (``name@digest``, as ``estimate`` prints it in the command that exports an
    answer's settings): in this process, else read again from the config.json and settings that made the key on
    this machine (kept in the user's cache folder); None where no config.json was read under that key. A file
    gone or changed since is a ``ConfigError`` saying so: the key names that file's content and settings only."""
    key = key.lower()
    if key in DECODERS:
        return DECODERS[key]
    try:
        made = json.loads(_key_file(key).read_text())
    except (OSError, ValueError):
        return None
    path = Path(made["path"])
    if not path.is_file():
        raise ConfigError(f"{key} was read from {path}, which is gone: pass the decoder's config.json with "
                          "--tokens and --seq-len")
    decoder = decoder_spec(path, seq_len=made["seq_len"], tokens=made["tokens"],
                           global_batch=made["global_batch"], precision=made["precision"])
    if decoder.spec.key != key:
        raise ConfigError(f"{path} changed since it was read as {key} (it reads as {decoder.spec.key} now): pass "
                          "the config.json with --tokens and --seq-len")
    return decoder


def made_with(key: str) -> dict | None:
    """How the spec registered as ``key`` was made (``decoder_spec``'s arguments), or None for a catalog model:
    what a measurement's worker processes need to register it again (``measure.worker``)."""
    return MADE_WITH.get(key.lower())


# cuBLAS picks its fast tensor-core kernels for 16-bit operands only where each leading dimension is a multiple of
# 8 elements (16 bytes); PyTorch's Performance Tuning Guide: "To use Tensor Cores: set sizes to multiples of 8". A
# vocabulary that is not sends the output layer's three matrix products to kernels for unaligned operands
# (``predict.work_validation.variants`` sets GPT-2 beside the same shape with its vocabulary padded); nanoGPT pads
# to a multiple of 64.
TENSOR_CORE_MULTIPLE = 8
PAD_TO = 64


def is_unaligned(size: int) -> bool:
    """Whether a matrix dimension of ``size`` elements keeps 16-bit products off the fast tensor-core kernels."""
    return int(size) % TENSOR_CORE_MULTIPLE != 0


def padded_size(size: int) -> int:
    """``size`` rounded up to a multiple of ``PAD_TO``, as nanoGPT pads GPT-2's vocabulary."""
    return -(-int(size) // PAD_TO) * PAD_TO


def shape_warnings(facts: dict) -> list[str]:
    """What in a decoder's shape slows its step and the user can change: a vocabulary that is no multiple of
    ``TENSOR_CORE_MULTIPLE``."""
    vocab = facts.get("vocab")
    if vocab is None or vocab != vocab or not is_unaligned(vocab):  # none, a table's NaN, aligned
        return []
    vocab = int(vocab)
    return [f"the vocabulary of {vocab:,} is no multiple of {TENSOR_CORE_MULTIPLE}: the output layer's matrix "
            f"products run on slower kernels for unaligned sizes (the work model charges them where the study's "
            f"output-layer sweep measured a GPU of the same architecture); pad it to {padded_size(vocab):,} (as "
            "nanoGPT pads GPT-2's) for a shorter step (the book's \"Other hardware\" page gives the measured cost "
            "on GPT-2)"]
