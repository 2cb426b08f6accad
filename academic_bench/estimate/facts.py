"""What the estimates need from a model's meta-device build, kept for every catalog model so that no question about
one waits for torch: its parameter counts and shape (``ModelStats``), the FLOPs torch counts for the families the
transformer formula does not cover, and the activation bytes autograd saves (``ActivationProfile``).

They are kept in ``academic_bench/data/model_facts.json`` under a key that digests what they are computed from: the
catalog's model files, ``meta`` (how they are counted) and ``FACTS_VERSION``. ``make book`` rewrites the file when
the key has changed (``kept.write_shipped``), and a test checks that it equals a fresh computation under the
installed libraries. A file whose key differs is never read; a model it does not hold (a decoder from a
config.json, a tiny variant) is built on the meta device when asked (``meta``), once per process.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FACTS_VERSION = 1
PACKAGE = Path(__file__).resolve().parent.parent
SHIPPED = PACKAGE / "data" / "model_facts.json"
# What the kept facts are computed from (besides the libraries, which the test of the shipped file covers).
SOURCES = ("catalog/models/*.py", "estimate/meta.py")


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


def content_key() -> str:
    """A digest of what the kept facts are computed from, and ``FACTS_VERSION``."""
    h = hashlib.sha256(f"model facts {FACTS_VERSION}".encode())
    for path in sorted(p for pattern in SOURCES for p in PACKAGE.glob(pattern)):
        h.update(str(path.relative_to(PACKAGE)).encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:20]


def entry_key(kind: str, *args) -> str:
    """How one fact is named in the kept file: its kind and the arguments that ask for it."""
    return "|".join([kind, *("" if a is None else str(a) for a in args)])


@lru_cache(maxsize=1)
def kept() -> dict:
    """The shipped facts by ``entry_key``, or {} when the file is missing or its key is not today's."""
    try:
        doc = json.loads(SHIPPED.read_text())
    except (OSError, ValueError):
        return {}
    return doc["facts"] if doc.get("key") == content_key() else {}


COMPUTED: dict[str, object] = {}  # facts computed in this process (not kept), by entry_key
_AFRESH: list[dict] = []  # while ``afresh`` runs: the facts it computed, and the kept file unread


@contextlib.contextmanager
def afresh():
    """Within: every fact is computed on the meta device, none read from the kept file or this process's earlier
    answers; yields the facts computed, by ``entry_key`` (what ``kept.write_shipped`` keeps)."""
    _AFRESH.append({})
    try:
        yield _AFRESH[-1]
    finally:
        _AFRESH.pop()


def _fact(kind: str, compute: str, *args):
    """A kept fact, else computed once in this process by ``meta.<compute>``."""
    name = entry_key(kind, *args)
    fresh = _AFRESH[-1] if _AFRESH else None
    if fresh is None and name in kept():
        return kept()[name]
    store = COMPUTED if fresh is None else fresh
    if name not in store:
        from . import meta

        store[name] = getattr(meta, compute)(*args)
    return store[name]


def model_stats_of(key: str, tiny: bool) -> ModelStats:
    d = _fact("stats", "stats_fields", key, tiny)
    return ModelStats(**{**d, "block_params": tuple(d["block_params"])})


def counted_flops_of(key: str, tiny: bool, seq_len: int | None) -> int:
    return int(_fact("flops", "counted_flops", key, tiny, seq_len))


def saved_tensors_of(key: str, tiny: bool, attn: str, dtype: str, seq_len: int | None) -> ActivationProfile:
    d = _fact("saved", "saved_tensor_bytes", key, tiny, attn, dtype, seq_len)
    return ActivationProfile(tuple(d["blocks"]), tuple(d["block_inputs"]), float(d["other"]))
