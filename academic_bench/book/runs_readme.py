"""The runs README (``academic-bench runs-readme``: notebooks/runs/README.md): per run folder, what ran, what did
not run ok or is no result, what the smart search skipped, and the command that runs it again; per planned setup
with no run yet, the command that would.

The report layer above ``notebook`` (the run), beside ``runs_report`` (what the executed notebook shows): it
reads what a run stored, never runs anything.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..search.params import (ENV_SOFTWARE, NOTEBOOK_FILE, README_FILE, RESULTS_FILE, check_parameters, command_for,
                               notebook_parameters, setup_parameters, template_parameters)
from ..catalog.hardware import get_gpu
from ..results import DEFAULT_RUNS, SET_ASIDE, SKIPPED, load_planned, read_lines, run_label, skip_is_latest, skip_key
from .runs_report import (NOT_VALIDATED, every_row, failure_groups, kind, kind_of, label_list, run_rows, short_reason,
                          shown_model,
                          skips_of, unvalidated_reasons, with_states)

_CITED = (re.compile(r"than for (?P<label>.+?), (?P<time>measured at (?P<s>[0-9.e+-]+) s/step)"),
          re.compile(r"because (?P<label>.+?) already (?:fits|runs) .*?(?P<time>at (?P<s>[0-9.e+-]+) s/step)"))


def _skip_reason(reason: str, model: str, states: Mapping[tuple[str, str], tuple[str, float]]) -> str:
    """A skip's reason as the README may quote it: where it cites the step time of a configuration whose latest
    row is no result (``states``: (model, methods label) -> state and step time of its latest row), or a time
    that row no longer has (the search read an earlier row of it), the time is replaced by what the
    latest row says."""
    m = next((m for m in (p.search(reason) for p in _CITED) if m), None)
    state, step = states.get((model, m["label"]), (None, None)) if m else (None, None)
    if state is None or (state == "ok" and f"{step:.4g}" == m["s"]):
        return reason
    now = (f"measured again at {step:.4g} s/step (the {m['s']} s/step it read was an earlier row)" if state == "ok"
           else f"whose measurement is {state} (no result)")
    return reason[:m.start("time")] + now + reason[m.end("time"):]


def skip_groups(rows: Sequence[dict], skips: Mapping[tuple, Mapping], width: int = 160,
                states: Mapping[tuple[str, str], tuple[str, float]] = {}) -> list[dict]:  # noqa: B006
    """What smart searches decided not to run (``skips``, from ``skips_of``), where that is still the latest word on
    the configuration given its latest ``rows``, grouped by model, search and category, with the first reason as
    an example: the reasons of one category differ only in their figures. ``states``: (model, methods label) ->
    the state and step time of its latest synchronized step row, so that a reason never quotes a time that is
    no result (``_skip_reason``)."""
    by_key = {skip_key(r): r for r in rows}
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for key, s in skips.items():
        _, _, search, timing, mode = key
        if skip_is_latest(s, by_key.get(key)):
            groups[(s["config"]["model"], kind_of(search, timing, mode), s["category"])].append(s)
    return [dict(zip(("model", "search", "category"), key),
                 reason=short_reason(_skip_reason(g[0]["reason"], key[0], states), width),
                 configurations=len(g), methods=label_list(s["label"] for s in g))
            for key, g in sorted(groups.items())]


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows]
    return lines


def _values(rows: Sequence[dict], key: str) -> str:
    vals = sorted({str(r["env"].get(key)) for r in rows if r["env"].get(key) is not None})
    return ", ".join(vals) if vals else "not installed"


def _profiles_note(folder: Path, setup: str) -> str:
    """The Files line's mention of the step profiles (``academic-bench profile``), when there are any."""
    from ..results import PROFILES_FILE

    path = folder / PROFILES_FILE
    if not path.exists():
        return ""
    n = sum(1 for _ in read_lines(path))
    return f", [{PROFILES_FILE}]({setup}/{PROFILES_FILE}) ({n} step profile{'s' if n != 1 else ''}, torch.profiler)"


def _row_count(in_file: int, latest: int) -> str:
    """How many rows a results file holds, and how many of them are the latest of their configuration (what the
    tables count: an append-only file keeps every earlier attempt too)."""
    return (f"{in_file} row{'s' if in_file != 1 else ''}, {latest} of them the latest of their configuration, timing "
            "and mode")


def planned_section(setup: str, plan: Mapping[str, Any], rows: list[dict]) -> tuple[list[str], dict]:
    """The README's section for a planned setup with no run yet (``results.load_planned``), and a line of the
    overview table: why nothing ran, and the command that runs on it what the shipped setups ran (``rows``)."""
    gpu = get_gpu(plan["gpu"])
    fixed = {"gpu": plan["gpu"], "n_gpus": plan["n_gpus"]}
    if rows:
        params = setup_parameters(setup, rows, **fixed)
    else:
        params = {**template_parameters(), "setup": setup, "output_dir": ".", **fixed}
        check_parameters(params)
    lines = [f"## {setup}", "", f"- **Machine:** planned: {plan['n_gpus']} x {gpu.name}; **not run yet**, no row",
             *([f"- **Plan:** {plan['note']}"] if plan["note"] else []), "",
             "### Run it", "", "From the repository root, on that hardware: every model and search the shipped "
             "setups ran, with the template's time budget (change it with `-p time_budget_s`):", "", "```bash",
             command_for(params), "```", ""]
    overview = {"setup": f"[{setup}](#{setup.replace('.', '')})", "GPU": f"{gpu.name} (planned, not run yet)",
                "GPUs": str(plan["n_gpus"]), "rows (latest)": 0, "ok": 0, "date": ""}
    return lines, overview


def setup_section(folder: Path, rows: list[dict], note: str = "") -> tuple[list[str], dict]:
    """The README's section for one run folder (``rows``: its latest rows), and a line of the overview table;
    ``note``: the plan's word on the setup (``results.load_planned``)."""
    from ..analysis import VALIDATION_TOLERANCE

    skips = skips_of(folder)
    every = every_row(folder)
    unvalidated = unvalidated_reasons(rows, every)
    stated = with_states(rows, skips, unvalidated)
    setup = folder.name
    gpus = "/".join(sorted({str(r["config"]["n_gpus"]) for r in rows})) or "?"
    keys = ", ".join(sorted({r["config"]["gpu"] for r in rows}))
    env = lambda k: _values(rows, k)  # noqa: E731
    tiny_only = bool(rows) and all(r["config"].get("tiny") for r in rows)
    if tiny_only:  # workshop runs: named where they ran (``results.run_label``), never by a GPU's name
        machine = where = "; ".join(sorted({run_label({**r, "config": {**r["config"], "model": "models"}})
                                            for r in rows}))
    elif env("gpu_name") == "not installed":
        machine = "no GPU"
        where = f"no GPU: ran on the CPU (configurations named for {gpus} x {keys})"
    else:
        machine = env("gpu_name")
        where = (f"{gpus} x {machine} (driver {env('driver')}, CUDA {env('cuda')}); configurations for the "
                 f"catalog GPU {keys}")
    tiny = any(r["config"].get("tiny") for r in rows)
    dates = sorted(r["started_at"] for r in rows if r.get("started_at"))
    when = f"{dates[0][:10]} to {dates[-1][:10]}" if dates and dates[0][:10] != dates[-1][:10] else \
        (dates[0][:10] if dates else "unknown")
    lines = [f"## {setup}", "",
             f"- **Machine:** {where}" + (" — tiny models (a test or workshop run, not results)"
                                          if tiny and not tiny_only else ""),
             "- **Software:** " + ", ".join(f"{k.replace('_', '-')} {env(k)}" for k in ENV_SOFTWARE)
             + f"; academic-bench {env('package_version')}"
             + (f"; git commit {env('git_commit')}" if env("git_commit") not in ("not installed", "unknown")
                else " (git commit not recorded: the run's machine had no git checkout)"),
             f"- **Date (UTC):** {when}",
             "- **Files:** " + (f"[{NOTEBOOK_FILE}]({setup}/{NOTEBOOK_FILE}) (the executed notebook), "
                                 if (folder / NOTEBOOK_FILE).exists() else "")
             + f"[{RESULTS_FILE}]({setup}/{RESULTS_FILE}) ({_row_count(len(every), len(rows))})"
             + _profiles_note(folder, setup)]
    if note:
        lines.append(f"- **Plan:** {note}")
    if (folder / "evidence" / README_FILE).exists():
        lines.append(f"- **Evidence:** [evidence/{README_FILE}]({setup}/evidence/{README_FILE}) (how these files "
                     "were made, and checks kept beside them)")
    lines.append("")

    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r, st in stated:
        counts[(shown_model(r), kind(r))][st] += 1
    outcomes = [o for o in ("ok", "oom", "invalid", "error", "timeout", "unsupported", "not run", SKIPPED,
                            SET_ASIDE, NOT_VALIDATED) if any(c[o] for c in counts.values())]
    lines += ["### What ran", "", "Configurations per model and search, by outcome (the latest row of each; "
              "*timeout*: it ran and was stopped at its time limit; *not run*: a time budget was spent before it "
              "started, so running the notebook again measures it; *skipped*: a budget left it unstarted and a "
              "smart search decided it need not run, with the reason in `results.skipped.jsonl`; *set aside*: "
              "measured by an engine revision whose timing of it was since corrected, so measured again by the "
              "next run; *not validated*: measured, but the engine revision that measured it has not validated its "
              f"method class on this setup within {VALIDATION_TOLERANCE:.0%} of sustained training, so it is no "
              "result):", ""]
    lines += _md_table(["model", "search", *outcomes, "total"],
                       [(m, k, *(c[o] or "" for o in outcomes), sum(c.values()))
                        for (m, k), c in sorted(counts.items())])

    failed = failure_groups([r for r, st in stated if st != SKIPPED], width=220, unvalidated=unvalidated)
    lines += ["", "### What did not run ok", ""]
    if failed:
        lines += _md_table(["model", "search", "outcome", "reason", "configurations"],
                           [(f["model"], f["search"], f["outcome"], f["reason"],
                             f"{f['configurations']}: {f['methods']}") for f in failed])
    else:
        lines.append("Nothing: every configuration ran ok.")
    from ..catalog.methods import Methods

    step_states = {(r["config"]["model"], Methods.from_dict(r["config"]["methods"]).label()): (st, r["step_time_s"])
                   for r, st in stated if r["timing"] == "synced" and r["mode"] == "step"}
    skipped = skip_groups(rows, skips, width=220, states=step_states)
    if skipped:
        lines += ["", "### What the smart search skipped", "",
                  "Configurations a smart search decided not to run, by the rule that ruled them out "
                  "(`results.skipped.jsonl` holds each one's own reason; one is shown per group):", ""]
        lines += _md_table(["model", "search", "rule", "example reason", "configurations"],
                           [(g["model"], g["search"], g["category"], g["reason"],
                             f"{g['configurations']}: {g['methods']}") for g in skipped])
    params = notebook_parameters(folder)
    last = params if params and {"setup", "models"} <= set(params) else None
    whole = setup_parameters(setup, rows, (last or {}).get("device"))
    budget = whole["time_budget_s"]
    lines += ["", "### Re-run it", "",
              "From the repository root, on the same hardware. Every model and search these rows came from, "
              f"with the template's time budget ({'none' if budget is None else f'{budget / 3600:g} h'}; change it "
              "with `-p time_budget_s`):", "", "```bash", command_for(whole), "```", "",
              "Into the same folder a run resumes: it measures what a time budget left unstarted and skips "
              "configurations that have a row (unless their outcome is listed in `retry`). "
              + ("The last run here, as its executed notebook records it:" if last else
                 f"No executed notebook with papermill parameters in {setup}/ records the last run.")]
    if last:
        lines += ["", "```bash", command_for(last), "```"]
    overview = {"setup": f"[{setup}](#{setup.replace('.', '')})", "GPU": machine, "GPUs": gpus,
                "rows (latest)": f"{len(every)} ({len(rows)})", "ok": sum(st == "ok" for _, st in stated),
                "date": when}
    return lines + [""], overview


def runs_readme(root: str | Path = DEFAULT_RUNS) -> str:
    """The text of ``<root>/README.md``: one section per run folder holding a results file, then one per planned
    setup (``<root>/planned-setups.csv``) that has none yet."""
    root = Path(root)
    folders = sorted(p.parent for p in root.glob(f"*/{RESULTS_FILE}"))
    lines = ["# Benchmark runs", "",
             "<!-- Generated by `academic-bench runs-readme` from the files below: do not edit by hand. -->",
             "This file is generated from each run's results and executed notebook by `academic-bench runs-readme`; "
             "edit the generator (`academic_bench/book/runs_report.py`), not this file.", "",
             "Each folder is one hardware setup: `benchmark.ipynb` is the executed notebook "
             "(`notebooks/benchmark.ipynb` run by `academic-bench notebook`), `results.jsonl` holds one row per "
             "configuration (a measurement, or a failure with its reason), and `logs/` the full log of each.", ""]
    planned = load_planned(root)
    missing = [name for name in planned if not (root / name / RESULTS_FILE).exists()]
    if not folders and not missing:
        return "\n".join(lines + ["No runs yet.", ""])
    sections, overview, every_row = [], [], []
    for folder in folders:
        rows = run_rows(folder)  # read once: the section and the planned setups' commands both use them
        section, line = setup_section(folder, rows, planned.get(folder.name, {}).get("note", ""))
        sections += section
        overview.append(line)
        every_row += rows
    for name in missing:
        section, line = planned_section(name, planned[name], every_row)
        sections += section
        overview.append(line)
    cols = list(overview[0])
    lines += _md_table(cols, [[o[c] for c in cols] for o in overview]) + [""]
    return "\n".join(lines + sections)


def write_runs_readme(root: str | Path = DEFAULT_RUNS) -> Path:
    path = Path(root) / README_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(runs_readme(root))
    return path

