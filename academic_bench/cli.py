"""The ``academic-bench`` command. Each sub-command is one ``_cmd_*`` function and one ``_add_*`` parser.

Bad input (unknown model or GPU, a GPU count below 1, an impossible combination) prints a message naming
the valid choices and exits with status 2, before any work.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from .hardware import UnknownGPUError, catalog as gpu_catalog
from .methods import InvalidCombinationError, search_space
from .models import CATALOG, UnknownModelError

EXIT_USAGE = 2


def _emit(args: argparse.Namespace, data: Any, text: Callable[[], str]) -> None:
    """Print JSON for scripts (--json) or text for people."""
    print(json.dumps(data, indent=2, default=str) if args.json else text())


def _table(rows: list[dict], cols: list[str]) -> str:
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) if rows else len(c) for c in cols}
    line = lambda r: "  ".join(str(r.get(c, "")).ljust(widths[c]) for c in cols)  # noqa: E731
    return "\n".join([line({c: c for c in cols}), line({c: "-" * widths[c] for c in cols}), *map(line, rows)])


# --- models, gpus, space -------------------------------------------------------------------------------

def _cmd_models(args: argparse.Namespace) -> None:
    rows = [{"model": m.key, "family": m.family, "params (paper)": f"{m.paper_params / 1e6:,.0f}M",
             "global batch": m.recipe.global_batch, "steps": m.recipe.steps,
             "seq/image": m.recipe.seq_len or m.recipe.image_size, "precision": m.recipe.precision,
             "optimizer": m.recipe.optimizer.name} for m in CATALOG.values()]
    _emit(args, rows, lambda: _table(rows, list(rows[0])))


def _cmd_gpus(args: argparse.Namespace) -> None:
    rows = [{"gpu": g.key, "name": g.name, "memory GB": g.memory_gb, "arch": g.architecture,
             **{f"{p} TFLOP/s": v for p, v in g.peak_tflops.items()}, "power W": g.board_power_w,
             "price USD": g.price_usd} for g in gpu_catalog().values()]
    _emit(args, rows, lambda: _table(rows, list(rows[0])))


def _cmd_space(args: argparse.Namespace) -> None:
    from .methods import hardware_reason, preset

    base = preset("free-lunch")
    valid, excluded = search_space(args.gpus, base)
    if args.gpu:
        gpu = gpu_catalog()[args.gpu]
        bad = hardware_reason(base, gpu.supports_tf32)
        if bad:
            excluded += [(m, bad) for m in valid]
            valid = []
    data = {"model": args.model, "n_gpus": args.gpus, "gpu": args.gpu,
            "valid": [{"label": m.label(), **m.to_dict()} for m in valid],
            "excluded": [{"label": m.label(), "reason": r, **m.to_dict()} for m, r in excluded]}

    def text() -> str:
        lines = [f"{len(valid)} valid memory-saving combinations for {args.model} on {args.gpus} GPU(s) "
                 "(free-lunch methods on):"]
        lines += [f"  {m.label()}" for m in valid]
        lines.append(f"{len(excluded)} excluded:")
        lines += [f"  {m.label():<55} {r}" for m, r in excluded]
        return "\n".join(lines)

    _emit(args, data, text)


# --- parser ---------------------------------------------------------------------------------------------

def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def _model_arg(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--model", required=required, type=str.lower, help=f"one of: {', '.join(CATALOG)}")


def _gpu_arg(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--gpu", required=required, type=str.lower, help=f"one of: {', '.join(gpu_catalog())}")


def _gpus_arg(p: argparse.ArgumentParser, default: int | None = None) -> None:
    p.add_argument("--gpus", type=int, default=default, required=default is None, help="GPU count (>= 1)")


def _setting_args(p: argparse.ArgumentParser) -> None:
    """--json, --model, --gpu and --gpus: the arguments that name one setting."""
    _common(p)
    _model_arg(p)
    _gpu_arg(p)
    _gpus_arg(p)


def _methods_arg(p: argparse.ArgumentParser, default: str = "free-lunch", note: str = "") -> None:
    p.add_argument("--methods", default=default,
                   help="a preset (naive, free-lunch) joined by '+' with switches, e.g. "
                        f"free-lunch+ckpt+zero3+offload (default: {default}){note}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="academic-bench", description=(
        "How long does pre-training model M take on N GPUs of type G, with which settings, and what does it "
        "cost? Catalogs, estimates, honest (GPU-synchronized) measurement, cost and planning."))
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list the model catalog")
    _common(p)
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("gpus", help="list the GPU catalog")
    _common(p)
    p.set_defaults(func=_cmd_gpus)

    p = sub.add_parser("space", help="valid and excluded memory-saving combinations, with reasons")
    _common(p)
    _model_arg(p)
    _gpus_arg(p)
    _gpu_arg(p, required=False)
    p.set_defaults(func=_cmd_space)

    for register in _EXTRA_COMMANDS:
        register(sub)
    return parser


# Sub-commands defined in other modules register here (estimate, bench/sweep/notebook, cost/plan).
_EXTRA_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = []


def _validate(args: argparse.Namespace) -> None:
    """Names before work: unknown model/GPU and counts < 1 stop here."""
    if getattr(args, "model", None) is not None:
        for name in str(args.model).split(","):
            if name not in CATALOG:
                raise UnknownModelError(f"unknown model {name!r}; choose one of: {', '.join(CATALOG)}")
    if getattr(args, "gpu", None) is not None and args.gpu not in gpu_catalog():
        raise UnknownGPUError(f"unknown GPU {args.gpu!r}; choose one of: {', '.join(gpu_catalog())}")
    if getattr(args, "gpus", None) is not None and args.gpus < 1:
        raise ValueError(f"--gpus must be at least 1, got {args.gpus}")


def main(argv: list[str] | None = None) -> int:
    from . import commands  # noqa: F401  (registers the sub-commands of other modules)

    args = build_parser().parse_args(argv)
    try:
        _validate(args)
        args.func(args)
    except (UnknownModelError, UnknownGPUError, InvalidCombinationError, ValueError) as exc:
        print(f"academic-bench {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())
