"""The ``check-run`` sub-command: is a contributed run folder fit to be read as evidence?

    academic-bench check-run notebooks/runs/<setup> [--json]

Exit 0: no error (warnings, such as a method class without a validation, are printed); 1: at least one error,
each named on its line with the row or file it is in; 2: the path is not a folder or has no results.jsonl.
The checks and the line between errors and warnings: ``academic_bench.analysis.run_check``.
"""
from __future__ import annotations

import argparse

from . import args as cli_args

EXIT_PROBLEMS = 1  # the folder was read and has at least one error


def _cmd_check_run(args: argparse.Namespace) -> None:
    from ..analysis.run_check import check_run, report_text

    check = check_run(args.folder)  # NotARunFolder is a ValueError: exit 2 through cli.main
    _check_plausibility(check)
    cli_args.emit(args, check.to_dict(), lambda: report_text(check))
    if not check.ok:
        raise SystemExit(EXIT_PROBLEMS)


def _check_plausibility(check) -> None:
    """A warning for each measured row faster than the study's prediction for its configuration by more than the
    prediction's range (``answer.plausibility``: above ``analysis``, which checks the folder by itself)."""
    from pathlib import Path

    from ..analysis.run_check import RESULTS, WARNING, Problem
    from ..answer.plausibility import faster_than_predicted
    from ..results import ResultStore

    folder = Path(check.folder)
    try:
        rows = ResultStore(folder / RESULTS).rows()
    except ValueError:  # a line that does not parse: already an error of the check
        return
    for config_id, words in faster_than_predicted(rows, folder.name):
        check.problems.append(Problem(WARNING, f"{RESULTS} (config {config_id})", words))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check-run", help="check a contributed run folder (notebooks/runs/<setup>) and name every "
                                         "problem",
                       description="Checks results.jsonl (schema, environment and commit, plausible MFU), the "
                                   "validations per method class, the executed benchmark.ipynb and "
                                   "evidence/README.md. Exit 0: no error; 1: errors; 2: not a run folder.")
    cli_args.add_json(p)
    p.add_argument("folder", help="the run folder, e.g. notebooks/runs/h100x1")
    p.set_defaults(func=_cmd_check_run)
