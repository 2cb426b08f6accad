"""The model catalog: one file per family, one small entry per model.

Adding a model: write a ``ModelSpec`` in the family's file (or a new file) and list it in ``MODELS``
there; this registry picks it up.

A catalog model trained in fp32 (the paper's recipe for ConvNeXt-XL and ViT-L/16) can also be measured in a 16-bit
precision: ``at_precision`` names that variant ``<key>@<precision>``, a spec of its own whose recipe has that
precision (``get_model`` makes it), so that the configurations of the recipe keep their ids and the 16-bit ones get
new ones. A variant is never in ``CATALOG``: the catalog's listings, sweeps, book and answers are the recipes'.
"""
from __future__ import annotations

from dataclasses import replace

from .spec import ModelSpec, Optimizer, Recipe, loss_of
from . import mamba, pythia, roberta, vision
from .from_config import REGISTERED, recall

CATALOG: dict[str, ModelSpec] = {m.key: m for fam in (pythia, roberta, mamba, vision) for m in fam.MODELS}
# The precisions a model whose recipe trains in fp32 may also be measured in (autocast, with fp32 weights, as the
# recipes in 16 bits run).
SIXTEEN_BIT = ("bf16", "fp16")
_VARIANTS: dict[str, ModelSpec] = {}


class UnknownModelError(KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


def get_model(key: str) -> ModelSpec:
    """The catalog entry for ``key``, a catalog model in another precision (``at_precision``'s ``<key>@<precision>``),
    or a spec registered from a config.json, ``from_config``, in this process or under the ``name@digest`` a
    command printed for it on this machine: ``from_config.recall``); an unknown key names the valid ones."""
    spec = CATALOG.get(key.lower()) or REGISTERED.get(key.lower()) or _variant(key.lower())
    decoder = spec is None and "@" in key and recall(key)
    if spec is None and not decoder:
        known_where = " (a name@digest is known where a command read its config.json)" if "@" in key else ""
        raise UnknownModelError(f"unknown model {key!r}{known_where}; choose one of: {', '.join(CATALOG)}")
    return spec or decoder.spec


def precisions(key: str) -> tuple[str, ...]:
    """The precisions catalog model ``key`` can be measured in: its recipe's first, then ``SIXTEEN_BIT`` where the
    recipe's is fp32 (a recipe in 16 bits keeps its own: the paper's decoders and encoder)."""
    spec = CATALOG[recipe_model(key)]
    return (spec.recipe.precision, *(SIXTEEN_BIT if spec.recipe.precision == "fp32" else ()))


def at_precision(key: str, precision: str | None) -> str:
    """The key of catalog model ``key`` trained in ``precision``: ``key`` itself at its recipe's precision (or
    None), else ``<key>@<precision>``. A precision the model cannot take raises a ValueError naming those it can."""
    spec = get_model(key)
    if precision is None or precision == spec.recipe.precision:
        return spec.key  # a decoder's name@digest or a variant named outright, too
    if spec.key not in CATALOG:
        raise ValueError(f"--precision {precision}: {key} names {spec.display}, which trains in "
                         f"{spec.recipe.precision}; --precision applies to a catalog model or a decoder's config.json")
    allowed = precisions(spec.key)
    if precision not in allowed:
        raise ValueError(f"{spec.key} trains in {spec.recipe.precision}, its recipe's precision, and in no other; "
                         f"choose one of: {', '.join(allowed)}")
    return f"{spec.key}@{precision}"


def recipe_model(key: str) -> str:
    """The catalog model a key names, in whatever precision (``vit-large@bf16``: ``vit-large``)."""
    return key.lower().partition("@")[0] if is_variant(key) else get_model(key).key


def is_variant(key: str) -> bool:
    """Whether ``key`` names a catalog model in a precision not its recipe's (``at_precision``)."""
    return _variant(str(key).lower()) is not None


def _variant(key: str) -> ModelSpec | None:
    """The spec ``<key>@<precision>`` names: the catalog model's, with the recipe (and the tiny variant's) in that
    precision; its meta-device facts are the model's own (``facts_key``). None where ``key`` names none."""
    base, sep, precision = key.partition("@")
    spec = CATALOG.get(base)
    if not sep or spec is None or precision == spec.recipe.precision or precision not in precisions(base):
        return None
    if key not in _VARIANTS:
        note = f"{precision} autocast (--precision): not the recipe's {spec.recipe.precision}"
        _VARIANTS[key] = replace(
            spec, key=key, display=f"{spec.display} ({precision})", facts_key=spec.key,
            recipe=replace(spec.recipe, precision=precision, sources={**spec.recipe.sources, "precision": note}),
            tiny_recipe=replace(spec.tiny_recipe, precision=precision))
    return _VARIANTS[key]


def variant_keys() -> list[str]:
    """Every catalog model in every precision not its recipe's (``at_precision``)."""
    return [f"{key}@{p}" for key in CATALOG for p in precisions(key)[1:]]


def model_names() -> list[str]:
    return list(CATALOG)


def model_rank(name: str) -> int:
    """A model's place in the catalog, from its key ('pythia-410m') or its display label ('Pythia-410M'): the
    families together, each by size (Pythia-160M, -410M, -1B, -2.8B, -6.9B), never by name. Tables, chart axes
    and menus sort models with it; a name the catalog does not know comes after every model."""
    name = str(name).lower()
    for i, (key, spec) in enumerate(CATALOG.items()):
        if name in (key, spec.display.lower()):
            return i
    return len(CATALOG)


__all__ = ["CATALOG", "SIXTEEN_BIT", "ModelSpec", "Optimizer", "Recipe", "UnknownModelError", "at_precision",
           "get_model", "is_variant", "loss_of", "model_names", "model_rank", "precisions", "recipe_model",
           "variant_keys"]
