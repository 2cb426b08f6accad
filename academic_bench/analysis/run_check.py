"""Checking a run folder a lab contributes (``notebooks/runs/<setup>/``) before any reader counts it.

A folder is checked for what every answer built on it relies on, and every problem is named with where it is
(the line and configuration id of a row, or the file). Problems come in two levels:

- **errors** make the folder unusable as evidence: a results line that is not JSON or breaks the row schema
  (``results.row_problems``), a row whose ``setup`` is not the folder's name, a row that ran on a GPU without its
  environment or git commit recorded (rows a reader uses; ``invalid`` and ``not run`` rows ran nothing, so they
  have no environment to record), a measured row whose stored figures its phases and recipe do not give, whose
  synchronized MFU is above ``MFU_IMPLAUSIBLE`` of the dense peak (a timing error, not a result), or a row that
  ran on another GPU than its setup's (``results.row_faults``, each naming the field), a row of a tiny model, of a
  run on the CPU or of another GPU in a folder whose name names a GPU (``results.setup_fault``: h100x1 holds H100
  measurements only), lines that repeat an
  earlier row (one notice for all of them; each is checked once), a malformed ``results.skipped.jsonl``, no
  executed ``benchmark.ipynb``, no ``evidence/README.md``.
- **warnings** leave the folder usable, with less in it: a method class that an engine revision measured but did
  not validate against sustained training, or whose latest validation by that revision misses the study's
  tolerance (readers then do not count those measurements, ``analysis.results``), and a superseded row without
  its environment (no reader uses it).

A **workshop run** (every row a tiny model on the CPU, ``--tiny --device cpu``, in a folder whose name names no GPU,
e.g. cpu-tiny) is no evidence of any GPU: its rows need no GPU name, and a missing notebook or evidence README is a warning; the report says what it is.

The exit rule (``check-run``): 0 when there is no error (warnings are printed), 1 when there is any error.
A path that is not a folder, or a folder without ``results.jsonl``, is no run folder at all (``NotARunFolder``).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from . import VALIDATION_TOLERANCE, frame_from_rows, validation_net
from ..catalog.hardware import setup_gpus
from ..results import (ENGINE_REVISION, SKIP_FIELDS, SKIPPED as SKIPPED_STATE, device_fault, duplicates, is_settled,
                       latest_rows, latest_skips, row_faults, row_problems, rows_to_read, setup_fault, status_of)

RESULTS = "results.jsonl"
SKIPPED = "results.skipped.jsonl"
NOTEBOOK = "benchmark.ipynb"
EVIDENCE_README = Path("evidence") / "README.md"
# What a row that ran must say about where it ran: the GPU, the framework, and the code (the commit).
ENV_REQUIRED = ("gpu_name", "torch", "git_commit")
RAN = ("measured", "failed", "set aside")  # run states of rows that ran on a GPU (``results.STATUSES``)
ERROR, WARNING = "error", "warning"


class NotARunFolder(ValueError):
    """The path is not a folder, or holds no ``results.jsonl``."""


@dataclass(frozen=True)
class Problem:
    level: str  # ERROR or WARNING
    where: str  # "results.jsonl:12 (config 144f9d03cb9d41f0)", a file name, or "method class <name>"
    what: str

    def line(self) -> str:
        return f"{self.level}: {self.where}: {self.what}"


@dataclass
class RunCheck:
    folder: str
    problems: list[Problem] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.level == WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return {"folder": self.folder, "ok": self.ok, "errors": len(self.errors), "warnings": len(self.warnings),
                "problems": [asdict(p) for p in self.problems], "summary": self.summary}


def _where(lineno: int, row: Any) -> str:
    cid = row.get("config_id") if isinstance(row, dict) else None
    return f"{RESULTS}:{lineno}" + (f" (config {cid})" if cid else "")


def _json_lines(path: Path, name: str, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """(line number, object) of every line that parses; each line that does not is an error (all of them, not the
    first: the store's own reader, ``results.read_lines``, stops at the first)."""
    for lineno, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            yield lineno, json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(Problem(ERROR, f"{name}:{lineno}", f"not valid JSON ({exc})"))


def _read_rows(path: Path, problems: list[Problem]) -> list[tuple[int, dict]]:
    """Every line that is a row following the schema; each other line is an error."""
    rows = []
    for lineno, row in _json_lines(path, RESULTS, problems):
        bad = row_problems(row)
        if bad:
            problems.append(Problem(ERROR, _where(lineno, row), "schema: " + "; ".join(bad)))
            continue
        rows.append((lineno, row))
    return rows


def _drop_duplicates(rows: list[tuple[int, dict]], problems: list[Problem]) -> list[tuple[int, dict]]:
    """The rows without the lines that repeat an earlier one (one measurement stored twice), with one notice for
    all of them: each is checked once, so its problems are not reported twice."""
    repeats = duplicates([r for _, r in rows])
    if repeats:
        pairs = [f"{rows[i][0]} (= {rows[j][0]})" for i, j in sorted(repeats.items())]
        shown = ", ".join(pairs[:10]) + (f" and {len(pairs) - 10} more" if len(pairs) > 10 else "")
        problems.append(Problem(ERROR, RESULTS, f"{len(repeats)} line(s) repeat an earlier row exactly (one "
                                                f"measurement stored twice): lines {shown}; keep one of each "
                                                "(each is read once)"))
    return [x for i, x in enumerate(rows) if i not in repeats]


def on_the_cpu(row: dict) -> bool:
    """A tiny model run on the CPU: a workshop's or a test's row, no GPU result."""
    return bool(row["config"].get("tiny")) and row["env"].get("device") == "cpu"


def _check_rows(folder: Path, rows: list[tuple[int, dict]], problems: list[Problem]) -> None:
    latest = {id(r) for r in latest_rows([r for _, r in rows])}
    for lineno, row in rows:
        where, status = _where(lineno, row), status_of(row)
        if row["setup"] != folder.name:
            problems.append(Problem(ERROR, where, f"setup {row['setup']!r} is not the folder's name "
                                                  f"{folder.name!r}: readers would file it under another setup "
                                                  f"(bench and notebook take --setup {folder.name})"))
        wrong = setup_fault(row, folder.name)  # a tiny, CPU or other GPU's row among a GPU's evidence
        if wrong is not None:
            problems.append(Problem(ERROR, where, f"{wrong.line()}; no reader may count it as this setup's"))
        if status in RAN:
            required = [k for k in ENV_REQUIRED if not (k == "gpu_name" and on_the_cpu(row))]
            missing = [k for k in required if not row["env"].get(k)]
            if missing:
                used = id(row) in latest
                problems.append(Problem(ERROR if used else WARNING, where,
                                        f"a {status} row without {', '.join(missing)} in its environment"
                                        + ("" if used else " (superseded by a later row; no reader uses it)")))
        # Measured rows: figures re-derived, a plausible MFU, the setup's GPU (``results.row_faults``); a row that
        # ran and failed on another GPU than its setup's is an error too (its failure is another machine's).
        faults = row_faults(row) if row["outcome"] == "ok" else [device_fault(row)] if status in RAN else []
        for f in filter(None, faults):
            problems.append(Problem(ERROR, where, f"{f.line()}; no reader counts it"))


def _check_validations(rows: list[dict], problems: list[Problem], results: Path) -> list[str]:
    """Warnings for method classes that ran without a validation within the tolerance; the validated classes."""
    if not rows:
        return []
    net = validation_net(frame_from_rows(rows_to_read(rows)))
    validated = []
    for r in net.itertuples():
        where = f"method class {r.validation_class} (engine revision {r.engine})"
        if not r.validated:
            if r.measured:  # a validation by another revision speaks for none of this one's measurements
                # An older revision can no longer validate them: they are measured again; the current one's
                # validation net (the notebook's, or bench --validate) still can.
                fix = (f"measure them again: academic-bench remeasure --retry unvalidated --out {results}"
                       if r.engine < ENGINE_REVISION else
                       "validate the class: the notebook's validation net, or academic-bench bench --validate 3")
                problems.append(Problem(WARNING, where, f"{r.measured} synchronized measurement(s) but no "
                                                        "validation against sustained training by the same engine "
                                                        f"revision: they do not count ({fix})"))
        elif not r.within:
            problems.append(Problem(WARNING, where, f"latest validation ({r.model}, {r.methods_label}) is off by "
                                                    f"{r.validate_rel_error:+.1%}, outside the "
                                                    f"{VALIDATION_TOLERANCE:.0%} rule: its measurements do not "
                                                    "count"))
        else:
            validated.append(f"{r.validation_class} (engine revision {r.engine})")
    return validated


def _check_skipped(folder: Path, problems: list[Problem]) -> dict[tuple, dict]:
    """Check the smart search's skips; returns the well-formed ones as ``latest_skips`` gives them."""
    path = folder / SKIPPED
    if not path.exists():
        return {}  # only a smart search writes one
    skips = []
    for lineno, obj in _json_lines(path, SKIPPED, problems):
        if not isinstance(obj, dict) or not obj.get("reason") or not all(obj.get(k) for k in SKIP_FIELDS):
            problems.append(Problem(ERROR, f"{SKIPPED}:{lineno}", "a skip must be an object with its configuration "
                                                                  "and its reason"))
        else:
            skips.append(obj)
    return latest_skips(skips)


def _check_files(folder: Path, problems: list[Problem], workshop: bool = False) -> None:
    level = WARNING if workshop else ERROR  # a workshop run records no GPU: its files are a courtesy
    aside = " (a workshop run on the CPU)" if workshop else ""
    nb = folder / NOTEBOOK
    if not nb.is_file():
        problems.append(Problem(level, NOTEBOOK, "missing: the executed notebook is the run's record" + aside))
    else:
        try:
            cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
        except (UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
            problems.append(Problem(ERROR, NOTEBOOK, f"not a notebook ({exc})"))
        else:
            code = [c for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
            if not any(c.get("execution_count") is not None for c in code):
                problems.append(Problem(ERROR, NOTEBOOK, "not executed: no code cell has run"))
    if not (folder / EVIDENCE_README).is_file():
        problems.append(Problem(level, str(EVIDENCE_README), "missing: it says how and where the run was made"
                                + aside))


def check_run(folder: str | Path) -> RunCheck:
    """Check one run folder; every problem found, errors and warnings (module docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise NotARunFolder(f"{folder} is not a folder")
    if not (folder / RESULTS).is_file():
        raise NotARunFolder(f"{folder} has no {RESULTS}: not a run folder")
    problems: list[Problem] = []
    numbered = _drop_duplicates(_read_rows(folder / RESULTS, problems), problems)
    _check_rows(folder, numbered, problems)
    rows = [r for _, r in numbered]
    validated = _check_validations(rows, problems, folder / RESULTS)
    skips = _check_skipped(folder, problems)
    # a folder named for a GPU is that GPU's evidence, whatever rows it holds
    workshop = bool(rows) and all(on_the_cpu(r) for r in rows) and not setup_gpus(folder.name)
    _check_files(folder, problems, workshop)
    latest = latest_rows(rows)
    # A configuration a budget never started and a smart search then skipped is decided, not left to run: the
    # book's run pages call it skipped too (``is_settled``).
    states = Counter(SKIPPED_STATE if is_settled(r, skips) else status_of(r) for r in latest)
    commits = sorted({r["env"]["git_commit"] for r in rows if r["env"].get("git_commit")})
    summary = {
        "rows": len(rows), "latest_rows": len(latest), "states": dict(sorted(states.items())),
        "models": sorted({r["config"]["model"] for r in rows}),
        "settings": sorted({f"{r['config']['n_gpus']} x {r['config']['gpu']}" for r in rows}),
        "gpu_names": sorted({r["env"]["gpu_name"] for r in rows if r["env"].get("gpu_name")}),
        "validated_classes": validated, "commits": len(commits), "workshop": workshop,
    }
    return RunCheck(str(folder), problems, summary)


def report_text(check: RunCheck) -> str:
    """What ``check-run`` prints: the verdict, each problem on a line, and a summary."""
    s = check.summary
    verdict = "ok" if check.ok else f"{len(check.errors)} error(s)"
    lines = [f"{check.folder}: {verdict} ({len(check.errors)} errors, {len(check.warnings)} warnings)"]
    lines += [p.line() for p in check.errors] + [p.line() for p in check.warnings]
    states = ", ".join(f"{k} {v}" for k, v in s["states"].items())
    lines += [f"rows: {s['rows']} ({s['latest_rows']} latest per configuration: {states})",
              f"settings: {', '.join(s['settings']) or 'none'}; GPUs reported: {', '.join(s['gpu_names']) or 'none'}",
              f"models: {', '.join(s['models']) or 'none'}",
              f"validated method classes: {', '.join(s['validated_classes']) or 'none'}; "
              f"commits recorded: {s['commits']}"]
    if s.get("workshop"):
        lines.append("a workshop run: tiny models on the CPU, which show the method and the tools, not any GPU's speed")
    return "\n".join(lines)
