"""What the estimates need from a model's meta-device build, kept for every catalog model so that no question about
one waits for torch: its parameter counts and shape (``ModelStats``), the FLOPs torch counts for the families the
transformer formula does not cover, and the activation bytes autograd saves (``ActivationProfile``).

They are kept in ``academic_bench/data/model_facts.json`` under a key that digests what they are computed from: the
catalog's model files, ``meta`` (how they are counted) and ``FACTS_VERSION``. ``make book`` rewrites the file when
the key has changed (``kept.write_shipped``), and a test checks that it equals a fresh computation under the
installed libraries. A file whose key differs is never read; a model it does not hold (a decoder from a
config.json, a tiny variant) is built on the meta device when first asked (``meta``), and what it gave is kept in
the user's cache folder (``catalog.env.cache_dir``) for the next question.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..catalog.env import libraries_quiet
from ..catalog.json_cache import cache_file, digest, read_json, write_json

FACTS_VERSION = 2  # 2: the shape of a decoder's repeated block (``DecoderLayer``), each weight matrix's size
PACKAGE = Path(__file__).resolve().parent.parent
SHIPPED = PACKAGE / "data" / "model_facts.json"
# What the kept facts are computed from (besides the libraries, which the test of the shipped file covers); a
# decoder from a config.json (``from_config``) is never among them.
SOURCES = ("catalog/models/*.py", "estimate/meta.py")
NOT_SOURCES = ("catalog/models/from_config.py", "catalog/models/moe.py", "catalog/models/refusals.py")


@dataclass(frozen=True)
class ModelStats:
    """Parameter counts and shape of a model, from a meta-device build."""

    params: int  # unique parameters (tied weights once)
    input_embedding: int  # token, position and type embedding tables
    tied_output: int  # output projection weights shared with an input embedding table
    block_params: tuple[int, ...]  # per repeated block (spec.block_types): the FSDP/ZeRO-3 unit
    heads: int | None  # attention heads (transformers)
    hidden: int | None  # hidden size (language models)
    attention_dropout: float = 0.0  # dropout on the attention probabilities (transformers)
    matrix_params: int = 0  # weights of the matrix products outside the embedding tables (a tied head counted)
    attention_width: int | None = None  # heads x head size (transformers)
    mlp_width: int | None = None  # the MLP's intermediate size where the config states one
    experts: int = 0  # experts of a mixture of experts (0: none)
    matrix_sizes: tuple[int, ...] = ()  # each weight matrix of ``matrix_params``, ascending (a tied head once more)

    @property
    def root_params(self) -> int:
        """Parameters outside the repeated blocks (embeddings, final norm, head)."""
        return self.params - sum(self.block_params)


@dataclass(frozen=True)
class ActivationProfile:
    """Activation bytes of one sample, split by checkpointed blocks."""

    blocks: tuple[float, ...]  # kept for backward inside each block
    block_inputs: tuple[float, ...]  # each block's input: what checkpointing keeps
    other: float  # embeddings, head, loss

    def per_sample(self, checkpointing: bool) -> float:
        if not self.blocks:
            return self.other
        # With checkpointing: every block's input, and one block recomputed at a time; ``other`` is mostly the
        # LM head's loss tensors, freed before the first block is recomputed, so the larger of the two counts.
        if checkpointing:
            return sum(self.block_inputs) + max(self.other, max(self.blocks))
        return self.other + sum(self.blocks)

    def scaled(self, factor: float) -> "ActivationProfile":
        return ActivationProfile(tuple(b * factor for b in self.blocks),
                                 tuple(b * factor for b in self.block_inputs), self.other * factor)


@dataclass(frozen=True)
class DecoderLayer:
    """The shape of a decoder's repeated block that decides what it saves (``activations.fused_layer``), from its
    meta build."""

    hidden: int
    queries: int  # heads x head size
    keys: int  # key-value heads x head size (each of keys and values)
    mlp: int  # the MLP's intermediate width
    gated: bool  # a gate projection beside the up projection (SwiGLU, GeGLU)
    norms: int  # normalisation layers over the hidden width in the block
    head_norms: bool  # queries and keys normalised per head (Qwen3's q_norm and k_norm): their inputs are kept
    parallel: bool  # attention and MLP read one residual input (GPT-NeoX, GPT-J, Phi)
    fused_qkv: bool  # one projection makes queries, keys and values
    rotary: bool  # rotary position embeddings (new query and key tensors)
    dropout: float  # residual dropout probability


def content_key() -> str:
    """A digest of what the kept facts are computed from, and ``FACTS_VERSION``."""
    h = hashlib.sha256(f"model facts {FACTS_VERSION}".encode())
    for path in sorted(p for pattern in SOURCES for p in PACKAGE.glob(pattern)
                       if str(p.relative_to(PACKAGE)) not in NOT_SOURCES):
        h.update(str(path.relative_to(PACKAGE)).encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:20]


def entry_key(kind: str, *args) -> str:
    """How one fact is named in the kept file: its kind and the arguments that ask for it."""
    return "|".join([kind, *("" if a is None else str(a) for a in args)])


def shipped_digest() -> str:
    """A digest of the shipped facts themselves (not of their key): what the study's answers are computed from."""
    try:
        facts = json.loads(SHIPPED.read_text()).get("facts")
    except (OSError, ValueError):
        facts = None
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


@lru_cache(maxsize=1)
def kept() -> dict:
    """The shipped facts by ``entry_key``, or {} when the file is missing or its key is not today's."""
    try:
        doc = json.loads(SHIPPED.read_text())
    except (OSError, ValueError):
        return {}
    return doc["facts"] if doc.get("key") == content_key() else {}


_AFRESH: list[dict] = []  # while ``afresh`` runs: the facts it computed, nothing kept read


@contextlib.contextmanager
def afresh():
    """Within: every fact is computed on the meta device, none read from the kept file, the user's cache or this
    process's earlier answers; yields the facts computed, by ``entry_key`` (what ``kept.write_shipped`` keeps)."""
    _AFRESH.append({})
    try:
        yield _AFRESH[-1]
    finally:
        _AFRESH.pop()


def _cache_file() -> Path:
    """The user's cache of facts the shipped file does not hold (decoders from config.json files, the catalog's
    models where the shipped key is not today's): one file per key and installed torch, transformers and timm."""
    import importlib.metadata

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "none"

    libraries = digest([version(d) for d in ("torch", "transformers", "timm")], 10)
    return cache_file(f"model-facts-{content_key()}-{libraries}.json")


@lru_cache(maxsize=1)
def cached() -> dict:
    """Facts computed earlier on this machine (``_cache_file``), by ``entry_key``; facts computed in this process
    join them (``_fact``)."""
    found = read_json(_cache_file())
    return dict(found) if isinstance(found, dict) else {}


def _remember(name: str, value) -> None:
    cached()[name] = value
    write_json(_cache_file(), cached())  # a read-only home: computed again by the next process


def _fact(kind: str, compute: str, key: str, *args):
    """A kept fact (the shipped file, else the user's cache), else computed by ``meta.<compute>`` and cached. A
    model's facts are named by its ``facts_key`` where it has one (a decoder from a config.json)."""
    from ..catalog.models import get_model

    spec = get_model(key)
    name = entry_key(kind, spec.facts_key or spec.key, *args)
    fresh = _AFRESH[-1] if _AFRESH else None
    if fresh is None:
        for store in (kept(), cached()):
            if name in store:
                return store[name]
    with libraries_quiet():  # building the model imports transformers' classes, whose libraries log notices
        from . import meta

        value = json.loads(json.dumps(getattr(meta, compute)(key, *args)))  # as the files keep it
    if fresh is None:
        _remember(name, value)
    else:
        fresh[name] = value
    return value


def model_stats_of(key: str, tiny: bool) -> ModelStats:
    d = _fact("stats", "stats_fields", key, tiny)
    return ModelStats(**{**d, "block_params": tuple(d["block_params"]), "matrix_sizes": tuple(d["matrix_sizes"])})


def _sequence(key: str, tiny: bool, seq_len: int | None) -> int | None:
    """``seq_len``, else the recipe's, so that a fact that depends on the sequence is named with it: a decoder from
    a config.json keeps its facts per file (``facts_key``), whatever sequence its recipe trains, and a count at
    4,096 tokens must not be read for the same file at 2,048."""
    from ..catalog.models import get_model

    return seq_len if seq_len is not None else get_model(key).recipe_for(tiny).seq_len


def counted_flops_of(key: str, tiny: bool, seq_len: int | None) -> int:
    return int(_fact("flops", "counted_flops", key, tiny, _sequence(key, tiny, seq_len)))


def saved_tensors_of(key: str, tiny: bool, attn: str, dtype: str, seq_len: int | None) -> ActivationProfile:
    d = _fact("saved", "saved_tensor_bytes", key, tiny, attn, dtype, _sequence(key, tiny, seq_len))
    return ActivationProfile(tuple(d["blocks"]), tuple(d["block_inputs"]), float(d["other"]))


def decoder_layer_of(key: str, tiny: bool) -> DecoderLayer:
    return DecoderLayer(**_fact("layer", "decoder_layer_fields", key, tiny))
