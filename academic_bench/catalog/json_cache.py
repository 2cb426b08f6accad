"""Content-keyed JSON files: what the package computes once and keeps, under a digest of what it was computed from,
so that a changed input is computed again rather than read stale (``catalog.env.cache_dir`` is the user's folder
for them). One helper for every such file: the decoder shapes read from config.json files
(``models.from_config``), the facts of models the shipped file does not hold (``estimate.facts``) and the answers
for runs other than the shipped ones (``answer.store``)."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .env import cache_dir

__all__ = ["cache_file", "digest", "read_json", "write_atomic", "write_json"]


def digest(content: Any, length: int = 20) -> str:
    """A hex digest of ``content`` as canonical JSON (keys sorted, anything else by its ``str``)."""
    blob = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def cache_file(name: str) -> Path:
    """The file ``name`` (a path relative to it, with its content key in it) in the user's cache folder."""
    return cache_dir() / name


def read_json(path: Path) -> Any | None:
    """The file's JSON, or None where it is missing, unreadable or cut short (it is then computed again)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write_atomic(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` whole or not at all (a file of this process's own, then renamed: a reader in
    another process never sees half of it), making its folder; False where it cannot be written (a read-only home:
    the caller computes again next time)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
        return True
    except OSError:
        return False


def write_json(path: Path, data: Any, **dumps: Any) -> bool:
    """``write_atomic`` of ``data`` as JSON (``dumps``: ``json.dumps``'s options)."""
    return write_atomic(path, json.dumps(data, **dumps) + ("\n" if dumps.get("indent") is not None else ""))
