"""The model catalog: one file per family, one small entry per model.

Adding a model: write a ``ModelSpec`` in the family's file (or a new file) and list it in ``MODELS``
there; this registry picks it up.
"""
from __future__ import annotations

from .spec import ModelSpec, Optimizer, Recipe, loss_of
from . import mamba, pythia, roberta, vision
from .from_config import REGISTERED, recall

CATALOG: dict[str, ModelSpec] = {m.key: m for fam in (pythia, roberta, mamba, vision) for m in fam.MODELS}


class UnknownModelError(KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


def get_model(key: str) -> ModelSpec:
    """The catalog entry for ``key`` (or a spec registered from a config.json, ``from_config``, in this process or
    under the ``name@digest`` a command printed for it on this machine: ``from_config.recall``); an unknown key
    names the valid ones."""
    spec = CATALOG.get(key.lower()) or REGISTERED.get(key.lower())
    decoder = spec is None and "@" in key and recall(key)
    if spec is None and not decoder:
        known_where = " (a name@digest is known where a command read its config.json)" if "@" in key else ""
        raise UnknownModelError(f"unknown model {key!r}{known_where}; choose one of: {', '.join(CATALOG)}")
    return spec or decoder.spec


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


__all__ = ["CATALOG", "ModelSpec", "Optimizer", "Recipe", "UnknownModelError", "get_model", "loss_of",
           "model_names", "model_rank"]
