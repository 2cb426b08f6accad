"""What a benchmark run shows: the executed notebook's tables and chart, and the runs README.

    show(summary_table(run)), failures_table(run), honesty_tables(run), days_chart(run)   the notebook's cells
    write_runs_readme()              ``academic-bench runs-readme``: notebooks/runs/README.md

The report layer above ``notebook`` (the run): it reads what a run stored, never runs anything.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .hardware import get_gpu
from .benchmark_params import (ENV_SOFTWARE, NOTEBOOK_FILE, README_FILE, RESULTS_FILE, check_parameters, command_for,
                               notebook_parameters, setup_parameters, template_parameters)
from .notebook import BenchmarkRun
from .results import (DEFAULT_RUNS, SET_ASIDE, ResultStore, is_settled, latest_rows, latest_skips, load_planned,
                      read_lines, set_aside_reason, skip_is_latest, skip_key, state_of, status_of)

# --- what the notebook shows ------------------------------------------------------------------------------------

def short_reason(reason: str | None, width: int = 160) -> str:
    """One line for a table: the first line, plus the last line of a log tail (usually the exception)."""
    if not reason:
        return ""
    lines = [ln.strip() for ln in reason.splitlines() if ln.strip()]
    text = lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}"
    return text if len(text) <= width else text[: width - 3] + "..."


def _results_path(run: BenchmarkRun | str | Path) -> Path:
    """A run's results file: a ``BenchmarkRun``'s, a results file, or a run folder's (``notebooks/runs/h100x1``)."""
    path = run.results if isinstance(run, BenchmarkRun) else Path(run)
    return path / RESULTS_FILE if path.is_dir() else path


def _rows(run: BenchmarkRun | str | Path) -> list[dict]:
    return latest_rows(ResultStore(_results_path(run)).rows())


def _states(run: BenchmarkRun | str | Path) -> list[tuple[dict, str]]:
    """Each latest row with its ``state``, or 'skipped' for a 'not run' row that a smart search skipped later
    (nothing is left to run: ``results.skip_key``)."""
    return _with_states(_rows(run), _skips(run))


def _with_states(rows: Iterable[dict], skips: Mapping[tuple, Mapping]) -> list[tuple[dict, str]]:
    return [(r, "skipped" if is_settled(r, skips) else state_of(r)) for r in rows]


def _skips(run: BenchmarkRun | str | Path) -> dict[tuple, Mapping]:
    """The latest skip of each configuration a smart search skipped, from the file beside the results."""
    from .results import skipped_path

    path = skipped_path(_results_path(run))
    return latest_skips(s for _, s in read_lines(path)) if path.exists() else {}


def _frame(run: BenchmarkRun | str | Path | list[dict]):
    from .analysis import frame_from_rows

    df = frame_from_rows(run if isinstance(run, list) else _rows(run))
    return df.assign(kind=[_kind(*x) for x in zip(df["search"], df["timing"], df["mode"])])


def _kind(search: str, timing: str, mode: str) -> str:
    extra = [x for x in (timing if timing != "synced" else "", mode if mode != "step" else "") if x]
    return search + (f" ({', '.join(extra)})" if extra else "")


def kind(row: dict) -> str:
    """The search, plus the timing and mode when they are not the usual ones: 'naive (unsynced)'."""
    return _kind(row["search"], row["timing"], row["mode"])


def _counts(outcomes: Iterable[str]) -> str:
    c = Counter(outcomes)
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (kv[0] != "ok", kv[0])))


def summary_table(run: BenchmarkRun | str | Path):
    """Per model and search (with timing and mode when unusual): outcome counts and the fastest that ran."""
    import pandas as pd

    stated = _states(run)
    df = _frame([r for r, _ in stated]).assign(state=[st for _, st in stated])
    cols = ["model", "search", "configurations", "outcomes", "best methods", "micro-batch x GAS", "step s", "days",
            "MFU", "peak GB"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for (model, search), g in df.groupby(["model", "kind"], sort=True):
        ok = g[(g["outcome"] == "ok") & g["days"].notna()].sort_values("days")
        row = {"model": model, "search": search, "configurations": len(g), "outcomes": _counts(g["state"]),
               "best methods": "", "micro-batch x GAS": ""}
        if len(ok):
            b = ok.iloc[0]
            row.update({"best methods": b["methods_label"], "micro-batch x GAS": f"{b['micro_batch']} x {b['gas']}",
                        "step s": b["step_time_s"], "days": b["days"], "MFU": b["mfu"],
                        "peak GB": b["peak_memory_gb"]})
        out.append(row)
    return pd.DataFrame(out, columns=cols).round({"step s": 4, "days": 3, "MFU": 3, "peak GB": 2})


def _reason_key(row: dict, width: int) -> str:
    """What a group of failures shares: the rule for an excluded combination, why a measurement was set
    aside, else the reason's gist."""
    aside = set_aside_reason(row)
    if aside:
        return short_reason(aside, width)
    if row["outcome"] == "invalid":
        from .methods import Methods, exclusion_reason

        rule = exclusion_reason(Methods.from_dict(row["config"]["methods"]), row["config"]["n_gpus"])
        if rule:
            return f"excluded by rule: {rule}"
    return short_reason(row["reason"], width)


def failure_groups(rows: Sequence[dict], width: int = 160) -> list[dict]:
    """Configurations that did not run ok (or whose measurement was set aside), grouped by model, search,
    outcome and reason (rule for invalid)."""
    from .methods import Methods

    groups: dict[tuple, list[str]] = defaultdict(list)
    for r in rows:
        status = status_of(r)
        if status != "measured":
            key = (r["config"]["model"], kind(r), state_of(r, status), _reason_key(r, width))
            groups[key].append(Methods.from_dict(r["config"]["methods"]).label())
    return [dict(zip(("model", "search", "outcome", "reason"), key), configurations=len(labels),
                 methods=_label_list(labels)) for key, labels in sorted(groups.items())]


def skip_groups(rows: Sequence[dict], skips: Mapping[tuple, Mapping], width: int = 160) -> list[dict]:
    """What smart searches decided not to run (``skips``, from ``_skips``), where that is still the latest word on
    the configuration given its latest ``rows``, grouped by model, search and category, with the first reason as
    an example: the reasons of one category differ only in their figures."""
    by_key = {skip_key(r): r for r in rows}
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for key, s in skips.items():
        _, _, search, timing, mode = key
        if skip_is_latest(s, by_key.get(key)):
            groups[(s["config"]["model"], _kind(search, timing, mode), s["category"])].append(s)
    return [dict(zip(("model", "search", "category"), key), reason=short_reason(g[0]["reason"], width),
                 configurations=len(g), methods=_label_list(s["label"] for s in g))
            for key, g in sorted(groups.items())]


def failures_table(run: BenchmarkRun | str | Path):
    """Every configuration that did not run ok, grouped by model, search, outcome and reason."""
    import pandas as pd

    return pd.DataFrame(failure_groups([r for r, st in _states(run) if st != "skipped"]),
                        columns=["model", "search", "outcome", "reason", "configurations", "methods"])


def _label_list(labels: Iterable[str], most: int = 4) -> str:
    labels = sorted(set(labels))
    more = f"; and {len(labels) - most} more" if len(labels) > most else ""
    return "; ".join(labels[:most]) + more


def show(table, empty: str) -> None:
    """Display a table, or say plainly why there is none (an empty frame reads as a glitch)."""
    from IPython.display import display

    if len(table):
        display(table)
    else:
        print(empty)


def honesty_tables(run: BenchmarkRun | str | Path) -> dict:
    """The synced/unsynced pairs and the sustained-run validations this run measured (analysis' tables)."""
    from .analysis import sync_pairs, validation_pairs

    df = _frame(run)
    return {"synced vs unsynced": sync_pairs(df), "extrapolated vs sustained": validation_pairs(df)}


def days_chart(run: BenchmarkRun | str | Path):
    """Projected training days of the fastest configuration per model and search, as a static SVG: it shows
    offline wherever the notebook is read (the book, GitHub, JupyterLab). Without vl-convert (a GPU machine may
    lack it) the chart is Altair's, drawn by the book's vendored vega (``charts.enable_offline``)."""
    import altair as alt

    df = _frame(run)
    ok = df[(df["outcome"] == "ok") & (df["timing"] == "synced") & (df["mode"] == "step") & df["days"].notna()]
    if ok.empty:
        chart = alt.Chart(alt.Data(values=[{"t": "No configuration ran ok, so there are no days to draw."}])
                          ).mark_text(size=13).encode(text="t:N").properties(width=420, height=40)
    else:
        best = ok.sort_values("days").groupby(["model", "search"], sort=True).head(1)
        data = best[["model", "search", "days", "methods_label"]].to_dict("records")
        base = alt.Chart(alt.Data(values=data)).encode(
            y=alt.Y("model:N", title=None), yOffset="search:N",
            x=alt.X("days:Q", scale=alt.Scale(type="log", nice=True), title="projected training days (log scale)"))
        points = base.mark_circle(size=110, opacity=0.9).encode(
            color=alt.Color("search:N", title="search"),
            tooltip=["model:N", "search:N", "methods_label:N", alt.Tooltip("days:Q", format=",.3g")])
        labels = base.mark_text(align="left", dx=9, fontSize=10).encode(text=alt.Text("days:Q", format=",.3g"))
        chart = (points + labels).properties(
            width=460, title=f"Fastest configuration per model and search ({_setup_of(df)}"
                             + (", tiny models: not results)" if df["tiny"].any() else ")"))
    try:
        import vl_convert
    except ImportError:
        from .charts import enable_offline

        enable_offline()
        return chart
    from IPython.display import SVG

    return SVG(vl_convert.vegalite_to_svg(chart.to_dict()))


def _setup_of(df) -> str:
    return ", ".join(sorted(set(df["setup"].dropna()))) or "?"


# --- the runs README ----------------------------------------------------------------------------------------------

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
    from .results import PROFILES_FILE

    path = folder / PROFILES_FILE
    if not path.exists():
        return ""
    n = sum(1 for _ in read_lines(path))
    return f", [{PROFILES_FILE}]({setup}/{PROFILES_FILE}) ({n} step profile{'s' if n != 1 else ''}, torch.profiler)"


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
                "GPUs": str(plan["n_gpus"]), "rows": 0, "ok": 0, "date": ""}
    return lines, overview


def setup_section(folder: Path, rows: list[dict], note: str = "") -> tuple[list[str], dict]:
    """The README's section for one run folder (``rows``: its latest rows), and a line of the overview table;
    ``note``: the plan's word on the setup (``results.load_planned``)."""
    skips = _skips(folder)
    stated = _with_states(rows, skips)
    setup = folder.name
    gpus = "/".join(sorted({str(r["config"]["n_gpus"]) for r in rows})) or "?"
    keys = ", ".join(sorted({r["config"]["gpu"] for r in rows}))
    env = lambda k: _values(rows, k)  # noqa: E731
    if env("gpu_name") == "not installed":
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
             f"- **Machine:** {where}" + (" — tiny models (a test or workshop run, not results)" if tiny else ""),
             "- **Software:** " + ", ".join(f"{k.replace('_', '-')} {env(k)}" for k in ENV_SOFTWARE)
             + f"; academic-bench {env('package_version')}"
             + (f"; git commit {env('git_commit')}" if env("git_commit") not in ("not installed", "unknown")
                else " (git commit not recorded: the run's machine had no git checkout)"),
             f"- **Date (UTC):** {when}",
             "- **Files:** " + (f"[{NOTEBOOK_FILE}]({setup}/{NOTEBOOK_FILE}) (the executed notebook), "
                                 if (folder / NOTEBOOK_FILE).exists() else "")
             + f"[{RESULTS_FILE}]({setup}/{RESULTS_FILE}) ({len(rows)} row{'s' if len(rows) != 1 else ''})"
             + _profiles_note(folder, setup)]
    if note:
        lines.append(f"- **Plan:** {note}")
    if (folder / "evidence" / README_FILE).exists():
        lines.append(f"- **Evidence:** [evidence/{README_FILE}]({setup}/evidence/{README_FILE}) (how these files "
                     "were made, and checks kept beside them)")
    lines.append("")

    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r, st in stated:
        counts[(r["config"]["model"], kind(r))][st] += 1
    outcomes = [o for o in ("ok", "oom", "invalid", "error", "timeout", "unsupported", "not run", "skipped",
                            SET_ASIDE) if any(c[o] for c in counts.values())]
    lines += ["### What ran", "", "Configurations per model and search, by outcome (the latest row of each; "
              "*timeout*: it ran and was stopped at its time limit; *not run*: a time budget was spent before it "
              "started, so running the notebook again measures it; *skipped*: a budget left it unstarted and a "
              "smart search decided it need not run, with the reason in `results.skipped.jsonl`; *set aside*: "
              "measured by an engine revision whose timing of it was since corrected, so measured again by the "
              "next run):", ""]
    lines += _md_table(["model", "search", *outcomes, "total"],
                       [(m, k, *(c[o] or "" for o in outcomes), sum(c.values()))
                        for (m, k), c in sorted(counts.items())])

    failed = failure_groups([r for r, st in stated if st != "skipped"], width=220)
    lines += ["", "### What did not run ok", ""]
    if failed:
        lines += _md_table(["model", "search", "outcome", "reason", "configurations"],
                           [(f["model"], f["search"], f["outcome"], f["reason"],
                             f"{f['configurations']}: {f['methods']}") for f in failed])
    else:
        lines.append("Nothing: every configuration ran ok.")
    skipped = skip_groups(rows, skips, width=220)
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
                "rows": len(rows), "ok": sum(st == "ok" for _, st in stated), "date": when}
    return lines + [""], overview


def runs_readme(root: str | Path = DEFAULT_RUNS) -> str:
    """The text of ``<root>/README.md``: one section per run folder holding a results file, then one per planned
    setup (``<root>/planned-setups.csv``) that has none yet."""
    root = Path(root)
    folders = sorted(p.parent for p in root.glob(f"*/{RESULTS_FILE}"))
    lines = ["# Benchmark runs", "",
             "<!-- Generated by `academic-bench runs-readme` from the files below: do not edit by hand. -->",
             "This file is generated from each run's results and executed notebook by `academic-bench runs-readme`; "
             "edit the generator (`academic_bench/runs_report.py`), not this file.", "",
             "Each folder is one hardware setup: `benchmark.ipynb` is the executed notebook "
             "(`notebooks/benchmark.ipynb` run by `academic-bench notebook`), `results.jsonl` holds one row per "
             "configuration (a measurement, or a failure with its reason), and `logs/` the full log of each.", ""]
    planned = load_planned(root)
    missing = [name for name in planned if not (root / name / RESULTS_FILE).exists()]
    if not folders and not missing:
        return "\n".join(lines + ["No runs yet.", ""])
    sections, overview, every_row = [], [], []
    for folder in folders:
        rows = _rows(folder)  # read once: the section and the planned setups' commands both use them
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


__all__ = ["days_chart", "failures_table", "honesty_tables", "runs_readme", "show",
           "summary_table", "write_runs_readme"]
