"""The ``academic-bench`` command. Each sub-command is one ``_cmd_*`` function and one ``_add_*`` parser.

Bad input (unknown model or GPU, a GPU count below 1, an impossible combination) prints a message naming
the valid choices and exits with status 2, before any work.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys

from . import args as cli_args
from ..catalog.hardware import UnknownGPUError, catalog as gpu_catalog, get_gpu
from ..catalog.methods import InvalidCombinationError, search_space
from ..catalog.models import CATALOG, UnknownModelError, is_variant
from .args import EXIT_USAGE
from ..catalog.config import check_gpu_count


# --- models, gpus, space -------------------------------------------------------------------------------

def _cmd_models(args: argparse.Namespace) -> None:
    rows = [{"model": m.key, "family": m.family, "params (paper)": f"{m.paper_params / 1e6:,.0f}M",
             "global batch": m.recipe.global_batch, "steps": m.recipe.steps,
             "seq/image": m.recipe.seq_len or m.recipe.image_size, "precision": m.recipe.precision,
             "optimizer": m.recipe.optimizer.name} for m in CATALOG.values()]
    cli_args.emit(args, rows, lambda: cli_args.table(rows, list(rows[0])))


def _cmd_gpus(args: argparse.Namespace) -> None:
    """Every GPU the answer knows (data/gpus.csv), the five the study measured first: an answer on any other is
    predicted from them, and a precision a GPU lacks is an empty rate."""
    from ..catalog.hardware import every_gpu

    gpus = sorted(every_gpu().values(), key=lambda g: not g.in_study)  # stable: the file's order within each
    precisions = ("fp32", "tf32", "bf16", "fp16", "fp8")
    rows = [{"gpu": g.key, "name": g.name, "memory GB": g.memory_gb, "arch": g.architecture,
             **{f"{p} TFLOP/s": (g.fp8_tflops if p == "fp8" else g.peak_tflops.get(p)) for p in precisions},
             "power W": g.board_power_w, "price USD": g.price_usd, "measured": "yes" if g.in_study else "no"}
            for g in gpus]
    cli_args.emit(args, rows, lambda: cli_args.table(rows, list(rows[0])))


def _cmd_space(args: argparse.Namespace) -> None:
    from ..catalog.config import beyond_paper_space
    from ..catalog.hardware import get_gpu
    from ..catalog.methods import (BEYOND_PAPER, EXPERTS_KERNELS_NOTE, free_lunch_for, gpu_rules, methods_spec,
                                   precision_reason, preset, vendor_reason)
    from ..catalog.models import get_model

    cli_args.config_decoder(args)  # a config.json or a name@digest: its key
    base, rules, gpu = preset("free-lunch"), [], None
    if args.gpu:
        gpu = get_gpu(args.gpu)
        base, rules = free_lunch_for(gpu), gpu_rules(gpu)
    valid, excluded = search_space(args.gpus, base)
    refusal = gpu and (vendor_reason(gpu) or precision_reason(get_model(args.model).recipe.precision, gpu))
    if refusal:  # nothing runs: every combination carries the reason
        excluded, valid = excluded + [(m, refusal) for m in valid], []
    beyond_ok, beyond_out = beyond_paper_space(args.model, args.gpu, args.gpus, base=base)
    data = {"model": args.model, "n_gpus": args.gpus, "gpu": args.gpu, "experts_kernel": EXPERTS_KERNELS_NOTE,
            "base": methods_spec(base), "gpu_rules": rules,
            "valid": [{"label": m.label(), **m.to_dict()} for m in valid],
            "excluded": [{"label": m.label(), "reason": r, **m.to_dict()} for m, r in excluded],
            "beyond_paper": {
                "valid": [{"methods": methods_spec(m), "label": m.label()} for m in beyond_ok],
                "excluded": [{"methods": methods_spec(m), "label": m.label(), "reason": r} for m, r in beyond_out]}}

    def text() -> str:
        lines = []
        if gpu:
            lines.append(f"The {gpu.name} ({gpu.generation}): what applies, and why the rest does not")
            lines += [f"  {'applies' if r['applies'] else 'no':<8} {r['rule']:<18} {r['why']}" for r in rules]
        lines.append(f"{len(valid)} valid memory-saving combinations for {args.model} on {args.gpus} GPU(s) "
                     f"({base.label()} methods on):")
        lines += [f"  {m.label()}" for m in valid]
        lines.append(f"Kernels switch, {EXPERTS_KERNELS_NOTE}")
        if refusal:  # the one reason, once
            lines.append(f"Nothing runs on this GPU: {refusal}")
        else:
            lines.append(f"{len(excluded)} excluded:")
            lines += [f"  {m.label():<55} {r}" for m, r in excluded]
        lines.append(f"{BEYOND_PAPER.capitalize()} (measured beside this search space, never in it): "
                     f"{len(beyond_ok)} valid --methods" + ("" if args.gpu else " (give --gpu for the GPU's rules)"))
        lines += [f"  {methods_spec(m)}" for m in beyond_ok]
        lines.append(f"{len(beyond_out)} excluded:")
        lines += [f"  {methods_spec(m):<45} {r}" for m, r in beyond_out]
        return "\n".join(lines)

    cli_args.emit(args, data, text)


# --- parser ---------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="academic-bench", description=(
        "How long does pre-training model M take on N GPUs of type G, with which settings, and what does it "
        "cost? Catalogs, estimates, honest (GPU-synchronized) measurement, cost and planning."))
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list the model catalog")
    cli_args.add_json(p)
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("gpus", help="list the GPU catalog")
    cli_args.add_json(p)
    p.set_defaults(func=_cmd_gpus)

    p = sub.add_parser("space", help="valid and excluded memory-saving combinations, with reasons")
    cli_args.add_json(p)
    cli_args.add_model_or_config(p)
    cli_args.add_gpus(p)
    cli_args.add_gpu(p, required=False)
    cli_args.add_config_args(p)
    p.set_defaults(func=_cmd_space, accepts_config=True)

    # loaded when a parser is built, not on import
    from . import bench, cost, estimate, export, notebook, profile, run_check

    # cost/plan, estimate, bench/sweep/remeasure, profile, export, notebook/runs-readme, check-run
    for module in (cost, estimate, bench, profile, export, notebook, run_check):
        module.register(sub)
    for command in sub.choices.values():  # "--tokens -3e11" is a value its check refuses, not a missing one
        cli_args.read_negative_numbers(command)
    return parser


def command_help(name: str) -> str:
    """A sub-command's help, as ``academic-bench NAME --help`` prints it (the book's "run it" page shows them)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # argparse keeps them here
    if name not in sub.choices:
        raise ValueError(f"unknown command {name!r}; choose one of: {', '.join(sub.choices)}")
    return sub.choices[name].format_help()


def _validate(args: argparse.Namespace) -> None:
    """Names before work: unknown model/GPU and counts < 1 stop here."""
    if getattr(args, "model", None) is not None:
        config_ok = getattr(args, "accepts_config", False)  # commands that read a config.json themselves
        for name in str(args.model).split(","):
            cli_args.check_model_path(name, config_ok)
            # a catalog model in another precision (``models.at_precision``) is named as its recipe's is, where the
            # command measures or estimates one; the others answer the recipes only
            if is_variant(name) and not getattr(args, "accepts_variant", False):
                raise UnknownModelError(
                    f"{name} names a catalog model in a precision not its recipe's, which only "
                    f"{', '.join(cli_args.PRECISION_COMMANDS)} take; {args.command} answers the recipes: choose one "
                    f"of: {', '.join(CATALOG)}")
            catalog = name in CATALOG or is_variant(name)
            if catalog and getattr(args, "gpus", None):  # every command accepts the same counts
                check_gpu_count(name, args.gpus, bool(getattr(args, "tiny", False)))
            if not catalog and not (config_ok and (cli_args.is_config_path(name)
                                                   or cli_args.is_decoder_key(name))):
                raise UnknownModelError(f"unknown model {name!r}; choose one of: {', '.join(CATALOG)}"
                                        + (", or a decoder's PATH/config.json" if config_ok else ""))
    if getattr(args, "gpu", None) is not None:  # a catalog key, or a GPU file read (and checked) here
        args.gpu = get_gpu(args.gpu).key
        if not getattr(args, "tiny", False):  # a workshop's tiny run names a GPU it does not run on
            _check_precision(getattr(args, "precision", None), args.gpu)
    if getattr(args, "gpus", None) is not None and args.gpus < 1:
        raise ValueError(f"--gpus must be at least 1, got {args.gpus}")


def _check_precision(precision: str | None, gpu: str) -> None:
    """A ``--precision`` the GPU cannot train in stops before any work (``methods.precision_reason``), naming those
    it can."""
    from ..catalog.methods import precision_reason

    why = precision and precision_reason(precision, get_gpu(gpu))
    if why:
        exc = ValueError(f"--precision {precision}: {why}")
        exc.choices = [p for p in cli_args.PRECISIONS if not precision_reason(p, get_gpu(gpu))]
        raise exc


def _parse(argv: list[str] | None, wants_json: bool) -> argparse.Namespace:
    """argparse's own refusals (a missing argument, an invalid choice) as JSON under ``--json``, exit 2."""
    if not wants_json:
        return build_parser().parse_args(argv)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            return build_parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code != EXIT_USAGE:
            sys.stderr.write(said.getvalue())
            raise
        lines = said.getvalue().strip().splitlines()
        print(cli_args.error_json(lines[-1].partition(": error: ")[2] if lines else "invalid arguments"))
        raise


def _refusal(args: argparse.Namespace, wants_json: bool, message: str, extra: dict | None = None,
             choices: list[str] | None = None, prefix: str = "error: ") -> None:
    """A refusal or a question without an answer, for scripts (``{"error": ..., "choices": [...]}`` and ``extra``)
    or for people (one line on stderr)."""
    if wants_json:
        doc = {"error": message, "choices": cli_args.choices_in(message) if choices is None else choices,
               **(extra or {})}
        print(cli_args.json_text(doc))
    else:
        print(f"academic-bench {args.command}: {prefix}{message}", file=sys.stderr)


def _run(args: argparse.Namespace, wants_json: bool) -> int:
    try:
        _validate(args)
        rc = args.func(args)
    except (UnknownModelError, UnknownGPUError, InvalidCombinationError, ValueError) as exc:
        _refusal(args, wants_json, str(exc), choices=getattr(exc, "choices", None))
        return EXIT_USAGE
    except cli_args.NoAnswer as exc:  # a valid question without an answer: its reason, exit 1 (README)
        _refusal(args, wants_json, str(exc), {"answer": exc.answer}, choices=[], prefix="")
        return cli_args.EXIT_NO_ANSWER
    except KeyboardInterrupt:  # a command with rows to keep says where (``cli.bench.interrupted``); one line here
        print(f"academic-bench {args.command}: interrupted", file=sys.stderr)
        return cli_args.EXIT_INTERRUPTED
    except BrokenPipeError:
        raise
    except OSError as exc:  # the machine refused mid-work (a full disk, a folder removed): one line, no traceback
        _refusal(args, wants_json, f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""),
                 choices=[])
        return cli_args.EXIT_FAILED
    return rc or 0  # a command that ran and produced no result returns EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    # The package reports progress through logging; a command shows it on stderr (a caller's own setup stands).
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    wants_json = "--json" in (sys.argv[1:] if argv is None else argv)
    args = _parse(argv, wants_json)
    try:
        return _run(args, wants_json)
    except BrokenPipeError:  # the reader went away (`... | head`): what it wanted was printed; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush does not fail again
        return 0


if __name__ == "__main__":
    sys.exit(main())
