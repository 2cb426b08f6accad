"""Sub-commands ``notebook`` (execute the benchmark template for a setup) and ``runs-readme``.

    academic-bench notebook --setup h100x1 --models pythia-160m pythia-1b --preset naive smart
    academic-bench runs-readme [--root notebooks/runs] [--check]

Bad names and values stop before papermill starts (exit 2, naming the valid choices), and so does a machine
without a GPU unless the parameters ask for the CPU (``--device cpu``). A notebook whose cell raised keeps its
executed copy, with the error, as evidence and exits 1; Ctrl-C ends with one line, every finished row kept.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from . import args as cli_args
from ..search.params import MAX_STREAM_LINES
from .args import EXIT_FAILED, EXIT_INTERRUPTED
from ..results import DEFAULT_RUNS


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


def _cmd_notebook(args: argparse.Namespace) -> int:
    from ..search.params import RESULTS_FILE, TEMPLATE, resolve_parameters
    from ..launch import device_for
    from ..launch.gpu_in_hand import allow_gpu_mismatch
    from ..search.papermill_runner import NotebookFailed, run_notebook

    template = args.template or TEMPLATE
    overrides = overrides_from(args)
    if not Path(template).exists():
        raise ValueError(f"no notebook template at {template}")
    device_for(resolve_parameters(args.setup, overrides, template)["device"], "notebook")
    folder = Path(args.output_root) / args.setup  # the run's folder and its results, tried before papermill starts
    cli_args.check_out(folder, folder=True, flag="--output-root")
    cli_args.check_out(folder / RESULTS_FILE, flag="--output-root")
    if args.allow_gpu_mismatch:  # the notebook's kernel inherits it, and its rows record it
        allow_gpu_mismatch()
    results = Path(args.output_root) / args.setup / RESULTS_FILE
    try:
        # under --json, stdout carries only the answer: the notebook's echo goes to stderr
        with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
            path = run_notebook(args.setup, overrides, output_root=args.output_root, template=template,
                                max_stream_lines=args.max_stream_lines, echo=not args.quiet)
    except NotebookFailed as exc:
        if args.json:
            print(json.dumps({"error": f"the notebook failed: {exc}", "results": str(results)}, indent=2))
        print(f"academic-bench notebook: the notebook failed: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_FAILED) from None
    except KeyboardInterrupt:
        print(f"\rinterrupted: every finished configuration is kept in {results}; re-run the same command to "
              "resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    data = {"notebook": str(path), "results": str(path.parent / RESULTS_FILE),
            "next": f"academic-bench runs-readme --root {args.output_root}"}
    cli_args.emit(args, data, lambda: f"executed notebook: {path}\nresults: {data['results']}\n"
                                      f"update the runs README with: {data['next']}")
    return 0


def _cmd_runs_readme(args: argparse.Namespace) -> None:
    from ..search.params import README_FILE
    from ..book.runs_readme import runs_readme, write_runs_readme

    root = Path(args.root)
    if not root.is_dir():
        raise ValueError(f"no runs folder at {root}")
    if args.check:
        path = root / README_FILE
        current = path.exists() and path.read_text() == runs_readme(root)
        if args.json:
            print(json.dumps({"readme": str(path), "up_to_date": current}, indent=2))
        if not current:
            print(f"{path} is out of date: run academic-bench runs-readme --root {root}", file=sys.stderr)
            raise SystemExit(EXIT_FAILED)
        if not args.json:
            print(f"{path} is up to date")
        return
    problem = cli_args.write_problem(root / README_FILE)
    if problem:
        raise ValueError(f"--root: {problem}")
    written = write_runs_readme(root)
    cli_args.emit(args, {"wrote": str(written)}, lambda: f"wrote {written}")


def register(sub: argparse._SubParsersAction) -> None:
    from ..catalog.models import CATALOG
    from ..search.plans import SWEEP_PRESETS

    p = sub.add_parser("notebook", help="run the benchmark notebook for a hardware setup (papermill)",
                       description="Execute notebooks/benchmark.ipynb into <output-root>/<setup>/benchmark.ipynb, "
                                   "with results.jsonl beside it. Unset parameters keep the template's defaults.")
    cli_args.add_json(p)
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
    p.add_argument("--allow-gpu-mismatch", action="store_true",
                   help="run even though the GPU in hand is not --gpu (recorded in every row; check-run and the "
                        "readers reject such rows)")
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
    cli_args.add_json(p)
    p.add_argument("--root", default=str(DEFAULT_RUNS), help="folder of runs (default: notebooks/runs)")
    p.add_argument("--check", action="store_true", help="exit 1 if the README is not up to date (CI)")
    p.set_defaults(func=_cmd_runs_readme)


