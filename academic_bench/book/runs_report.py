"""What a benchmark run shows: the executed notebook's tables and chart (the runs README is ``runs_readme``).

    show(summary_table(run)), failures_table(run), honesty_tables(run), days_chart(run)   the notebook's cells

The report layer above ``notebook`` (the run): it reads what a run stored, never runs anything.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..search.params import RESULTS_FILE
from ..search.notebook import BenchmarkRun
from ..results import (SKIPPED, ResultStore, engine_revision, is_settled, latest_rows, latest_skips, read_lines,
                      rows_to_read, run_label, set_aside_reason, state_of, status_of, validation_class_of)

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


def run_rows(run: BenchmarkRun | str | Path) -> list[dict]:
    return latest_rows(every_row(run))


def every_row(run: BenchmarkRun | str | Path) -> list[dict]:
    return ResultStore(_results_path(run)).rows()


NOT_VALIDATED = "not validated"  # measured, but no result: the revision that made it did not validate its class


def unvalidated_reasons(rows: Sequence[dict], every: Sequence[dict] | None = None) -> dict[int, str]:
    """Per synchronized measurement of ``rows`` that is no result because the engine revision that made it did
    not validate its method class on its setup within the study's rule (``analysis.validation_state``):
    ``id(row)`` -> why. ``every``: all rows of the store (earlier revisions' validations), else ``rows``."""
    from ..analysis import VALIDATION_TOLERANCE, frame_from_rows, validation_verdicts

    verdicts = validation_verdicts(frame_from_rows(rows_to_read(every if every is not None else rows)))
    out = {}
    for r in rows:
        if (status_of(r) != "measured" or r["timing"] != "synced" or r["mode"] != "step"
                or r["config"].get("tiny")):
            continue
        cls, engine = validation_class_of(r), engine_revision(r)
        verdict = verdicts.get((r.get("setup"), cls, engine))
        if verdict is None:
            out[id(r)] = (f"not validated: no validation of its method class ({cls}) against sustained training "
                          f"by the engine revision that measured it ({engine})")
        elif not verdict:
            out[id(r)] = (f"not validated: its method class's ({cls}) validation by engine revision {engine} "
                          f"missed the {VALIDATION_TOLERANCE:.0%} rule")
    return out


def _states(run: BenchmarkRun | str | Path) -> list[tuple[dict, str]]:
    """Each latest row with its ``state``: 'skipped' for a 'not run' row that a smart search skipped later
    (nothing is left to run: ``results.skip_key``), 'not validated' for a measurement that is no result."""
    every = every_row(run)
    return with_states(latest_rows(every), skips_of(run), unvalidated_reasons(latest_rows(every), every))


def with_states(rows: Iterable[dict], skips: Mapping[tuple, Mapping],
                 unvalidated: Mapping[int, str] = {}) -> list[tuple[dict, str]]:  # noqa: B006 (read only)
    return [(r, SKIPPED if is_settled(r, skips) else NOT_VALIDATED if id(r) in unvalidated else state_of(r))
            for r in rows]


def skips_of(run: BenchmarkRun | str | Path) -> dict[tuple, Mapping]:
    """The latest skip of each configuration a smart search skipped, from the file beside the results."""
    from ..results import skipped_path

    path = skipped_path(_results_path(run))
    return latest_skips(s for _, s in read_lines(path)) if path.exists() else {}


def _frame(run: BenchmarkRun | str | Path | list[dict]):
    from ..analysis import frame_from_rows

    df = frame_from_rows(run if isinstance(run, list) else run_rows(run))
    return df.assign(kind=[kind_of(*x) for x in zip(df["search"], df["timing"], df["mode"])])


def kind_of(search: str, timing: str, mode: str) -> str:
    extra = [x for x in (timing if timing != "synced" else "", mode if mode != "step" else "") if x]
    return search + (f" ({', '.join(extra)})" if extra else "")


def shown_model(row: dict) -> str:
    """The model as the tables name a row's: its key, or for a tiny variant the workshop run it is, on the device it
    ran on (``results.run_label``, as ``bench`` prints it), never under the name of the GPU its config names."""
    return run_label(row) if row["config"].get("tiny") else row["config"]["model"]


def kind(row: dict) -> str:
    """The search, plus the timing and mode when they are not the usual ones: 'naive (unsynced)'."""
    return kind_of(row["search"], row["timing"], row["mode"])


def _counts(outcomes: Iterable[str]) -> str:
    c = Counter(outcomes)
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: (kv[0] != "ok", kv[0])))


def summary_table(run: BenchmarkRun | str | Path):
    """Per model and search (with timing and mode when unusual): outcome counts and the fastest that ran."""
    import pandas as pd

    from ..analysis import MFU_DIGITS, shown_mfu

    stated = _states(run)
    df = _frame([r for r, _ in stated]).assign(state=[st for _, st in stated],
                                               model=[shown_model(r) for r, _ in stated])
    df = df.assign(mfu_shown=shown_mfu(df))  # the study's one basis and rounding (the dense 16-bit peak)
    cols = ["model", "search", "configurations", "outcomes", "best methods", "micro-batch x GAS", "step s", "days",
            "MFU", "peak GB"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for (model, search), g in df.groupby(["model", "kind"], sort=True):
        ok = g[(g["state"] == "ok") & g["days"].notna()].sort_values("days")  # results only: never set aside
        # or not validated
        row = {"model": model, "search": search, "configurations": len(g), "outcomes": _counts(g["state"]),
               "best methods": "", "micro-batch x GAS": ""}
        if len(ok):
            b = ok.iloc[0]
            row.update({"best methods": b["methods_label"], "micro-batch x GAS": f"{b['micro_batch']} x {b['gas']}",
                        "step s": b["step_time_s"], "peak GB": b["peak_memory_gb"]})
            if not b["tiny"]:  # a tiny run's days and MFU would read as a GPU's (bench prints its step only)
                row.update({"days": b["days"], "MFU": b["mfu_shown"]})
        out.append(row)
    return pd.DataFrame(out, columns=cols).round({"step s": 4, "days": 3, "MFU": MFU_DIGITS, "peak GB": 2})


def _reason_key(row: dict, width: int) -> str:
    """What a group of failures shares: the rule for an excluded combination, why a measurement was set
    aside, else the reason's gist."""
    aside = set_aside_reason(row)
    if aside:
        return short_reason(aside, width)
    if row["outcome"] == "invalid":
        from ..catalog.methods import Methods, exclusion_reason

        rule = exclusion_reason(Methods.from_dict(row["config"]["methods"]), row["config"]["n_gpus"])
        if rule:
            return f"excluded by rule: {rule}"
    return short_reason(row["reason"], width)


def failure_groups(rows: Sequence[dict], width: int = 160,
                   unvalidated: Mapping[int, str] = {}) -> list[dict]:  # noqa: B006 (read only)
    """Configurations that did not run ok, whose measurement was set aside, or that are no result because their
    method class was not validated (``unvalidated``: ``unvalidated_reasons``), grouped by model, search, outcome
    and reason (rule for invalid)."""
    from ..catalog.methods import Methods

    groups: dict[tuple, list[str]] = defaultdict(list)
    for r in rows:
        status = status_of(r)
        if id(r) in unvalidated:
            key = (shown_model(r), kind(r), NOT_VALIDATED, short_reason(unvalidated[id(r)], width))
        elif status != "measured":
            key = (shown_model(r), kind(r), state_of(r, status), _reason_key(r, width))
        else:
            continue
        groups[key].append(Methods.from_dict(r["config"]["methods"]).label())
    return [dict(zip(("model", "search", "outcome", "reason"), key), configurations=len(labels),
                 methods=label_list(labels)) for key, labels in sorted(groups.items())]


def failures_table(run: BenchmarkRun | str | Path):
    """Every configuration that did not run ok, grouped by model, search, outcome and reason."""
    import pandas as pd

    every = every_row(run)
    rows = latest_rows(every)
    skips = skips_of(run)
    return pd.DataFrame(failure_groups([r for r in rows if not is_settled(r, skips)],
                                       unvalidated=unvalidated_reasons(rows, every)),
                        columns=["model", "search", "outcome", "reason", "configurations", "methods"])


def label_list(labels: Iterable[str], most: int = 4) -> str:
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
    from ..analysis import sync_pairs, validation_pairs

    df = _frame(run)
    return {"synced vs unsynced": sync_pairs(df), "extrapolated vs sustained": validation_pairs(df)}


def days_chart(run: BenchmarkRun | str | Path):
    """Projected training days of the fastest configuration per model and search, as a static SVG: it shows
    offline wherever the notebook is read (the book, GitHub, JupyterLab). Without vl-convert (a GPU machine may
    lack it) the chart is Altair's, drawn by the book's vendored vega (``charts.enable_offline``)."""
    import altair as alt

    stated = _states(run)
    df = _frame([r for r, _ in stated]).assign(state=[st for _, st in stated])
    # Tiny rows are workshop runs: their days are the tiny recipe's, no training days of a model on a GPU.
    ok = df[(df["state"] == "ok") & (df["timing"] == "synced") & (df["mode"] == "step") & df["days"].notna()
            & ~df["tiny"].astype(bool)]
    if ok.empty:
        none = ("Tiny models only: workshop runs, which have no training days to draw." if df["tiny"].any() else
                "No configuration ran ok, so there are no days to draw.")
        chart = alt.Chart(alt.Data(values=[{"t": none}])
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
                             + (", tiny models left out: workshop runs)" if df["tiny"].any() else ")"))
    try:
        import vl_convert
    except ImportError:
        from .charts import enable_offline

        enable_offline()
        return chart
    from IPython.display import SVG

    return SVG(vl_convert.vegalite_to_svg(chart.to_dict()))


def _setup_of(df) -> str:
    """The setups of ``df`` as hardware ('1 x H100 80GB SXM'), never by their run folder's name."""
    from .. import analysis

    names = analysis.setup_names(df)
    return ", ".join(sorted({names.get(s, s) for s in df["setup"].dropna()})) or "?"


__all__ = ["NOT_VALIDATED", "days_chart", "every_row", "failure_groups", "failures_table", "honesty_tables", "kind",
           "kind_of", "label_list", "run_rows", "show", "short_reason", "shown_model", "skips_of", "summary_table",
           "unvalidated_reasons", "with_states"]
