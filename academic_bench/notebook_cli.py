"""Sub-commands ``notebook`` (execute the benchmark template for a setup) and ``runs-readme``.

    academic-bench notebook --setup h100x1 --models pythia-160m pythia-1b --preset naive smart
    academic-bench runs-readme [--root notebooks/runs] [--check]

Bad names and values stop before papermill starts (exit 2, naming the valid choices). A notebook whose cell
raised keeps its executed copy, with the error, as evidence and exits 1.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .benchmark_params import MAX_STREAM_LINES
from .results import DEFAULT_RUNS

EXIT_FAILED = 1


def _value(text: str) -> Any:
    """A ``-p`` value as YAML, like papermill's ``-y``: 2 -> int, true -> bool, [a, b] -> list, else the text."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    """Notebook parameters from the flags and ``-p KEY VALUE`` pairs (a key given twice is an error)."""
    flags = {"models": args.models, "gpu": args.notebook_gpu, "n_gpus": args.gpus, "preset": args.preset,
             "device": args.device, "tiny": True if args.tiny else None}
    out = {k: v for k, v in flags.items() if v is not None}
    for key, text in args.param:
        if key in out:
            raise ValueError(f"notebook parameter {key!r} is given twice (a flag and -p, or two -p)")
        out[key] = _value(text)
    if isinstance(out.get("models"), list):  # --models a,b c  ->  [a, b, c]
        out["models"] = [m for item in out["models"] for m in item.split(",") if m]
    return out


def _cmd_notebook(args: argparse.Namespace) -> None:
    from .benchmark_params import TEMPLATE
    from .notebook import NotebookFailed, run_notebook

    try:
        path = run_notebook(args.setup, overrides_from(args), output_root=args.output_root,
                            template=args.template or TEMPLATE, max_stream_lines=args.max_stream_lines,
                            echo=not args.quiet)
    except NotebookFailed as exc:
        print(f"academic-bench notebook: the notebook failed: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_FAILED) from None
    print(f"executed notebook: {path}\nresults: {path.parent / 'results.jsonl'}\n"
          f"update the runs README with: academic-bench runs-readme --root {args.output_root}")


def _cmd_runs_readme(args: argparse.Namespace) -> None:
    from .benchmark_params import README_FILE
    from .runs_readme import runs_readme, write_runs_readme

    root = Path(args.root)
    if not root.is_dir():
        raise ValueError(f"no runs folder at {root}")
    if args.check:
        path = root / README_FILE
        if not path.exists() or path.read_text() != runs_readme(root):
            print(f"{path} is out of date: run academic-bench runs-readme --root {root}", file=sys.stderr)
            raise SystemExit(EXIT_FAILED)
        print(f"{path} is up to date")
        return
    print(f"wrote {write_runs_readme(root)}")


def register(sub: argparse._SubParsersAction) -> None:
    from .models import CATALOG
    from .plans import SWEEP_PRESETS

    p = sub.add_parser("notebook", help="run the benchmark notebook for a hardware setup (papermill)",
                       description="Execute notebooks/benchmark.ipynb into <output-root>/<setup>/benchmark.ipynb, "
                                   "with results.jsonl beside it. Unset parameters keep the template's defaults.")
    p.add_argument("--setup", required=True, help="hardware label and folder name, e.g. h100x1, a6000x2, laptop-cpu")
    p.add_argument("--models", nargs="+", type=str.lower, default=None, metavar="MODEL",
                   help=f"catalog models: {', '.join(CATALOG)}")
    p.add_argument("--gpu", dest="notebook_gpu", type=str.lower, default=None, metavar="GPU",
                   help="catalog GPU the configurations are for, or 'auto' to detect it (academic-bench gpus)")
    p.add_argument("--gpus", type=int, default=None, help="GPU count (default: the N of a label like h200xN)")
    p.add_argument("--preset", nargs="+", default=None, choices=SWEEP_PRESETS, metavar="PRESET",
                   help=f"searches to run in sequence: {', '.join(SWEEP_PRESETS)}")
    p.add_argument("--tiny", action="store_true", help="tiny model variants (CPU tests, workshops)")
    p.add_argument("--device", choices=("cuda", "cpu"), default=None)
    p.add_argument("-p", "--param", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                   help="any other template parameter, VALUE as YAML (e.g. -p time_budget_s 3600 "
                        "-p exhaustive_models '[pythia-1b]')")
    p.add_argument("--output-root", default=str(DEFAULT_RUNS), help="folder of runs (default: notebooks/runs)")
    p.add_argument("--template", default=None, help=argparse.SUPPRESS)
    p.add_argument("--max-stream-lines", type=int, default=MAX_STREAM_LINES,
                   help="cut printed outputs longer than this in the saved notebook (logs stay in logs/)")
    p.add_argument("--quiet", action="store_true", help="do not echo the notebook's output while it runs")
    p.set_defaults(func=_cmd_notebook)

    p = sub.add_parser("runs-readme", help="generate notebooks/runs/README.md from the saved runs")
    p.add_argument("--root", default=str(DEFAULT_RUNS), help="folder of runs (default: notebooks/runs)")
    p.add_argument("--check", action="store_true", help="exit 1 if the README is not up to date (CI)")
    p.set_defaults(func=_cmd_runs_readme)


