"""The result row schema and the append-only store (one JSON object per line).

Each append writes the whole line with a single ``os.write`` on an ``O_APPEND`` descriptor and fsyncs it, under
an exclusive lock, so a reader never sees half a row from a live writer and a crash or kill mid-sweep loses at
most the row being written. A line torn anyway (a killed writer on a file system without atomic appends, a
full disk) can only be the last line: loading ignores it with a warning, and the next append removes it
first, so it never glues itself to a good row. Any other malformed line stops the load with an error naming
the file and line: the store holds evidence, and a silently skipped row is a lost measurement.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterable

from ..catalog.env import capture_env
from .schema import DEFAULT_RUNS, OUTCOMES, SCHEMA, RowError, check_row, now_iso, written_status
from .state import latest_rows, set_aside_reason


def json_safe(value: Any) -> Any:
    """NaN and infinities become null: the store is strict JSON that any reader can parse."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def _parse_object(data: bytes) -> dict | None:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


def _seal_torn_tail(fd: int, path: Path) -> None:
    """Make the file end at a line boundary before appending (a torn fragment would corrupt the next row)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = max(0, size - (1 << 20))
    chunk = os.pread(fd, size - start, start)
    cut = start + chunk.rfind(b"\n") + 1 if b"\n" in chunk else 0
    fragment = os.pread(fd, size - cut, cut)
    if _parse_object(fragment) is not None:
        os.write(fd, b"\n")  # a whole row that lost only its newline
        return
    warnings.warn(f"{path}: removing a torn last line ({len(fragment)} bytes) left by an interrupted write",
                  stacklevel=3)
    os.ftruncate(fd, cut)


def append_line(path: str | os.PathLike, data: bytes) -> None:
    """Append one complete line atomically (single write on O_APPEND, fsync, exclusive lock)."""
    path = Path(path)
    if not data.endswith(b"\n") or b"\n" in data[:-1]:
        raise ValueError("append_line writes exactly one line ending in a newline")
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)  # read: to find a torn tail
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _seal_torn_tail(fd, path)
        written = os.write(fd, data)
        if written != len(data):  # only on a full disk or similar; the next append seals the fragment
            raise OSError(f"{path}: short write ({written} of {len(data)} bytes)")
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock
    if created:  # make the new file's directory entry durable too
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def jsonl_problem(path: str | os.PathLike) -> str | None:
    """Why rows cannot be appended to ``path`` (a folder, a path under a file, an existing file that is not JSON
    lines, no permission to write), or None when they can. Checked before anything is measured."""
    path = Path(path)
    if path.is_dir():
        return f"{path} is a folder; name a file in it, e.g. {path / 'results.jsonl'}"
    above = next((a for a in path.parents if a.exists()), Path("."))
    if not above.is_dir():
        return f"{path} is under {above}, which is a file, not a folder"
    if path.suffix != ".jsonl":
        return f"{path} is not a JSON-lines file; name one ending in .jsonl, e.g. {path.with_suffix('.jsonl')}"
    if path.exists():
        try:
            for _ in read_lines(path):
                pass
        except (RowError, OSError) as exc:
            return f"{path} exists and is not a JSON-lines file of rows ({exc}); name another file"
        if not os.access(path, os.W_OK):
            return f"{path} is not writable"
    elif not os.access(above, os.W_OK):
        return f"cannot create {path}: {above} is not writable"
    return None


def read_lines(path: str | os.PathLike) -> Iterable[tuple[int, dict]]:
    """(line number, object) for each line; a torn last line is skipped with a warning, other bad lines raise."""
    path = Path(path)
    data = path.read_bytes()
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        obj = _parse_object(line)
        if obj is None:
            raise RowError(f"{path}:{lineno}: not a JSON object: {line[:120].decode('utf-8', 'replace')!r}")
        yield lineno, obj
    if torn.strip():
        obj = _parse_object(torn)
        if obj is None:
            warnings.warn(f"{path}:{len(lines) + 1}: ignoring a torn last line ({len(torn)} bytes) left by an "
                          "interrupted write", stacklevel=2)
        else:
            yield len(lines) + 1, obj


class ResultStore:
    """Append-only JSON-lines file of result rows, validated on write and on load."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def append(self, row: dict) -> None:
        """Validate and append ``row``, with its run state written from its final outcome (``written_status``)."""
        if row.get("outcome") in OUTCOMES:
            row = {**row, "status": written_status(row["outcome"])}
        check_row(row, where=f"refusing to append to {self.path}")
        line = json.dumps(json_safe(row), allow_nan=False, separators=(",", ":"), default=str) + "\n"
        append_line(self.path, line.encode("utf-8"))

    def keep(self, row: dict) -> tuple[Path, str | None]:
        """Append ``row``; when this file cannot take it (a full disk, a folder made where the file was, a lost
        permission), write it to a file of its own beside this one, else in the temporary folder. Returns (where
        the row is, why not here or None): a measurement is never lost to an output error."""
        try:
            self.append(row)
            return self.path, None
        except OSError as exc:
            why = f"{self.path}: {exc.strerror or exc}"
            name = f"{self.path.stem}.unsaved-{row.get('config_id')}-{os.getpid()}.jsonl"
            for folder in (self.path.parent, Path(tempfile.gettempdir())):
                try:
                    ResultStore(folder / name).append(row)
                    return folder / name, why
                except OSError:
                    continue
            raise

    def rows(self) -> list[dict]:
        if not self.path.exists():
            return []
        rows = []
        for lineno, row in read_lines(self.path):
            check_row(row, where=f"{self.path}:{lineno}")
            rows.append(row)
        return rows

    def done_ids(self, timing: str | None = None, mode: str | None = None) -> set[str]:
        """Ids of configurations with a row (of this timing and mode when given) whose latest row is not set
        aside: what a resumed sweep skips."""
        return {r["config_id"] for r in latest_rows(self.rows())
                if (timing is None or r["timing"] == timing) and (mode is None or r["mode"] == mode)
                and not set_aside_reason(r)}

    def __len__(self) -> int:
        return len(self.rows())

    def __repr__(self) -> str:
        return f"ResultStore({str(self.path)!r})"

def skipped_path(out: str | os.PathLike) -> Path:
    """Where a smart search's skips are kept, beside its store: ``<store stem>.skipped.jsonl``."""
    out = Path(out)
    return out.with_name(out.stem + ".skipped.jsonl")


PROFILES_FILE = "profiles.jsonl"


def append_profile(path: str | os.PathLike, config, profile: dict, *, setup: str) -> dict:
    """Append one ``measure.profile.profile_step`` result, with its configuration, setup, machine and time."""
    entry = {"schema": SCHEMA, "config_id": config.id, "config": config.to_dict(), "setup": setup, **profile,
             "env": capture_env(), "at": now_iso()}
    append_line(path, (json.dumps(entry, separators=(",", ":"), default=str) + "\n").encode())
    return entry


def _every_setup(root: str | os.PathLike | None, name: str) -> list[dict]:
    """The lines of ``<root>/<setup>/<name>`` for every setup (root: notebooks/runs), setups in name order."""
    root = Path(root) if root is not None else DEFAULT_RUNS
    return [obj for path in sorted(root.glob(f"*/{name}")) for _, obj in read_lines(path)]


def load_profiles(root: str | os.PathLike | None = None) -> list[dict]:
    """Every profile of the shipped runs: ``<root>/<setup>/profiles.jsonl``."""
    return _every_setup(root, PROFILES_FILE)


def load_skipped(root: str | os.PathLike | None = None) -> list[dict]:
    """What the smart searches of every shipped run skipped, and why: ``<root>/<setup>/results.skipped.jsonl``."""
    return _every_setup(root, "results.skipped.jsonl")


PLANNED_FILE = "planned-setups.csv"
PLANNED_COLUMNS = ("setup", "gpu", "n_gpus", "note")


def load_planned(root: str | os.PathLike | None = None) -> dict[str, dict]:
    """The study's planned hardware setups, ``<root>/planned-setups.csv`` (setup, gpu, n_gpus, note), by setup:
    a planned setup with no run yet is shown as missing, not left out. Empty without the file; a malformed
    file stops with its name, line and the valid choices."""
    import csv

    from ..catalog.hardware import catalog

    path = (Path(root) if root is not None else DEFAULT_RUNS) / PLANNED_FILE
    if not path.exists():
        return {}
    gpus = sorted(catalog())
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != PLANNED_COLUMNS:
            raise ValueError(f"{path}: the header must be {','.join(PLANNED_COLUMNS)}, not "
                             f"{','.join(reader.fieldnames or ()) or 'empty'}")
        planned: dict[str, dict] = {}
        for line, rec in enumerate(reader, start=2):
            if rec["gpu"] not in gpus:
                raise ValueError(f"{path}, line {line}: unknown GPU {rec['gpu']!r}; valid: {', '.join(gpus)}")
            if not (rec["n_gpus"] or "").isdigit() or int(rec["n_gpus"]) < 1:
                raise ValueError(f"{path}, line {line}: n_gpus must be a whole number of at least 1, "
                                 f"not {rec['n_gpus']!r}")
            if not rec["setup"] or rec["setup"] in planned:
                raise ValueError(f"{path}, line {line}: each setup needs a name of its own, not {rec['setup']!r}")
            planned[rec["setup"]] = {"gpu": rec["gpu"], "n_gpus": int(rec["n_gpus"]), "note": rec["note"] or ""}
    return planned


def load_runs(root: str | os.PathLike | None = None) -> list[dict]:
    """Validated rows of every shipped run: ``<root>/<setup>/results.jsonl`` (root: notebooks/runs)."""
    root = Path(root) if root is not None else DEFAULT_RUNS
    rows: list[dict] = []
    for path in sorted(root.glob("*/results.jsonl")):
        rows.extend(ResultStore(path).rows())
    return rows
