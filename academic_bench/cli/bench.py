"""Sub-commands ``bench`` (one configuration), ``sweep`` (a preset of configurations) and ``remeasure`` (the rows
of a results file that a rule selects, measured again); ``profile`` (where one configuration's step time goes) is
``cli.profile``.

Names, counts, combinations, the output file and the device (a GPU, unless ``--device cpu`` asks for the CPU) are
checked before any process starts; a bad one exits with status 2 and a message naming the valid choices. A run
that measured nothing exits with status 1. Ctrl-C stops a sweep after killing the running configuration (exit
130, one line); every finished row is kept, and re-running the same command resumes it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from . import args as cli_args
from ..catalog.config import Config
from ..launch import DEFAULT_REPS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP, EXECUTORS, Rendezvous, device_for, run
from ..catalog.methods import Methods, parse_methods
from ..catalog.models import CATALOG, SIXTEEN_BIT, at_precision, is_variant
from ..results import (NOT_RUN_PREFIX, PREDICTED_STOP, REMEASURE_CHOICES, RETRY_CHOICES, UNVALIDATED, ResultStore,
                       synced_micro_batches)
from ..search.plans import SWEEP_PRESETS, plan
from ..search.remeasure import remeasure, to_remeasure
from ..search.sweep import SweepOptions, format_summary, log_path, run_sweep

from .args import EXIT_FAILED, EXIT_INTERRUPTED


def _slurm_params(items: list[str]) -> dict:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--slurm-param takes KEY=VALUE (e.g. partition=gpu), got {item!r}")
        params[key if key.startswith("slurm_") else f"slurm_{key}"] = int(value) if value.isdigit() else value
    return params


def _retry(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [n for n in names if n not in RETRY_CHOICES]
    if bad:
        raise ValueError(f"--retry: unknown outcome {bad[0]!r}; choose from: {', '.join(RETRY_CHOICES)}")
    return names


def _rendezvous(args: argparse.Namespace) -> Rendezvous | None:
    if args.nodes == 1:
        return None
    if args.executor != "local":
        return None  # the SLURM job finds its nodes itself
    if not args.rdzv_endpoint:
        raise ValueError("a multi-node run with --executor local needs --rdzv-endpoint HOST:PORT (node 0's address) "
                         "and --node-rank on each node; or use --executor slurm")
    if not 0 <= args.node_rank < args.nodes:
        raise ValueError(f"--node-rank must be in 0..{args.nodes - 1}, got {args.node_rank}")
    return Rendezvous(args.nodes, args.node_rank, args.rdzv_endpoint)


def _check_run_args(args: argparse.Namespace) -> None:
    if args.timeout <= 0:
        raise ValueError(f"--timeout must be positive, got {args.timeout}")
    if args.validate < 0:
        raise ValueError(f"--validate must be >= 0 optimizer steps, got {args.validate}")
    if args.validate and args.timing == "unsynced":
        raise ValueError("--validate runs real optimizer steps with synchronized timing; drop --timing unsynced")
    if args.warmup < 2 or args.reps < 5:
        raise ValueError(f"--warmup must be >= 2 and --reps >= 5 (got {args.warmup}, {args.reps})")
    if args.executor == "slurm" and shutil.which("sbatch") is None:
        raise ValueError("--executor slurm needs SLURM (sbatch is not on PATH); choose one of: "
                         f"{', '.join(EXECUTORS)}")


def _device(args: argparse.Namespace) -> str | None:
    """The device to measure on, checked here (``launch.device_for``); a SLURM job finds its GPUs on its node."""
    return args.device if args.executor == "slurm" else device_for(args.device, args.command)


def _check_gpu(args: argparse.Namespace) -> None:
    """The GPU in hand must be the one ``--gpu`` names (``launch.gpu_in_hand``), unless overridden; a SLURM job
    runs on a node this machine cannot see (its rows are checked by ``check-run``)."""
    from ..launch.gpu_in_hand import allow_gpu_mismatch, check_gpu_in_hand

    if args.allow_gpu_mismatch:
        allow_gpu_mismatch()
    if args.executor != "slurm":
        check_gpu_in_hand(args.gpu, args.device)


def _run_kwargs(args: argparse.Namespace) -> dict:
    return dict(timing=args.timing, validate=args.validate, timeout_s=args.timeout, device=_device(args),
                warmup=args.warmup, reps=args.reps, rdzv=_rendezvous(args))


def _interrupted(out: str) -> None:
    # after the progress bar's line: one line, no traceback
    print(f"\rinterrupted: every finished configuration is kept in {out}; re-run the same command to resume",
          file=sys.stderr)
    raise SystemExit(EXIT_INTERRUPTED)


# --- commands -----------------------------------------------------------------------------------------

def _cmd_bench(args: argparse.Namespace) -> int:
    config = Config(cli_args.model_key(args), args.gpu, args.gpus, args.nodes, parse_methods(args.methods),
                    args.micro_batch, args.tiny)
    config.check()
    _check_run_args(args)
    cli_args.check_out(args.out)
    kwargs = _run_kwargs(args)  # no GPU, no GPU work: checked first
    cli_args.check_device(config.methods, kwargs["device"])
    _check_gpu(args)
    setup = args.setup or cli_args.default_setup(args.gpu, args.gpus, args.tiny, kwargs["device"])
    cli_args.check_setup_folder(args.out, setup, args.gpu, args.tiny, kwargs["device"])
    mode = "validate" if args.validate else "step"
    out = Path(args.out)
    # An unsynced timing runs at the micro-batch of the same configuration's synced row, when there is one.
    known = synced_micro_batches(ResultStore(out).rows()).get(config.id) if args.timing == "unsynced" else None
    try:
        row = run(config, executor=args.executor, folder=out.parent / "submitit",
                  slurm_params=_slurm_params(args.slurm_param), setup=setup, search="single",
                  log_path=log_path(out, config, args.timing, mode), micro_batch=known,
                  fresh_after_oom=args.fresh_after_oom, **kwargs)
    except KeyboardInterrupt:
        _interrupted(args.out)
    if row is None:
        print(f"node {args.node_rank} done; node 0 writes the row")
        return 0
    if row.get("log"):
        row["log"] = os.path.relpath(row["log"], out.parent)
    where, why = ResultStore(out).keep(row)
    keys = ["config_id", "outcome", "reason", "micro_batch", "gas", "step_time_s", "step_time_spread", "days",
            "mfu", "peak_memory_gb", "log"]
    name = config.name(kwargs["device"])
    data = {"name": name, "tiny": config.tiny, "device": kwargs["device"], **{k: row.get(k) for k in keys},
            "results": str(where), "not_appended_because": why}

    def text() -> str:
        lines = [f"{name}, {config.methods.label()}: {row['outcome']}"]
        if row["outcome"] == "ok":
            # a tiny variant's days are the tiny recipe's: no answer for the model, so only its step is shown
            days = "" if config.tiny else f", {row['days']:.3g} days"
            lines.append(f"  micro-batch {row['micro_batch']} x {row['gas']} accumulation, "
                         f"{row['step_time_s']:.4g} s/step{days}")
        elif row["reason"]:
            lines.append("  " + row["reason"].replace("\n", "\n  "))
        lines.append(f"  row {row['config_id']} appended to {where}" if not why else
                     f"  could not append to {why}; the row {row['config_id']} is kept in {where}")
        return "\n".join(lines)

    cli_args.emit(args, data, text)
    return 0 if row["outcome"] == "ok" else EXIT_FAILED


def _cmd_sweep(args: argparse.Namespace) -> int:
    models = ",".join(at_precision(m.strip(), args.precision) for m in args.model.split(",") if m.strip())
    configs = plan(models, args.gpu, args.gpus, args.preset, tiny=args.tiny, nodes=args.nodes)
    _check_run_args(args)
    _retry(args.retry)
    cli_args.check_out(args.out)
    kwargs = _run_kwargs(args)  # no GPU, no GPU work: checked first
    setup = args.setup or cli_args.default_setup(args.gpu, args.gpus, args.tiny, kwargs["device"])
    cli_args.check_setup_folder(args.out, setup, args.gpu, args.tiny, kwargs["device"])
    _check_gpu(args)
    # as the notebook does: a configuration the budget never started says so in a row of its own
    not_run = (None if args.budget is None else f"{NOT_RUN_PREFIX} the sweep's time budget (--budget {args.budget:g})"
               " was spent before this configuration started; it was never launched")
    try:
        options = SweepOptions(search=args.preset, executor=args.executor,
                               slurm_params=_slurm_params(args.slurm_param), **kwargs)
        summary = run_sweep(configs, args.out, setup, options, progress=not args.no_progress, budget_s=args.budget,
                            not_run_reason=not_run, retry=_retry(args.retry))
    except KeyboardInterrupt:
        _interrupted(args.out)
    cli_args.emit(args, summary.to_dict(), summary.text)
    return 0 if summary.outcomes_all.get("ok") else EXIT_FAILED


def _cmd_remeasure(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if not out.is_file():
        raise ValueError(f"no results file at {out}: give a setup's results.jsonl, e.g. notebooks/runs/h100x1/results.jsonl")
    cli_args.check_out(out)  # rows are appended to it: tried before anything is measured
    setup = args.setup or out.parent.name
    models = [m.strip().lower() for m in args.models.split(",")] if args.models else None
    unknown = sorted(m for m in models or () if m not in CATALOG and not is_variant(m))
    if unknown:
        raise ValueError(f"unknown model(s) {', '.join(unknown)}; choose from: {', '.join(CATALOG)}")
    stored = ResultStore(out).rows()
    ids = _unvalidated_ids(stored) if args.retry == UNVALIDATED else None
    rows = [r for r in to_remeasure(stored, args.retry, ids) if r.get("setup") == setup
            and (models is None or r["config"]["model"] in models)]
    listed = [{"config_id": r["config_id"], "model": r["config"]["model"], "search": r["search"],
               "timing": r["timing"], "mode": r["mode"], "micro_batch": r["micro_batch"], "gas": r["gas"],
               "methods": Methods.from_dict(r["config"]["methods"]).label()} for r in rows]
    if args.list:
        cli_args.emit(args, listed, lambda: f"{len(listed)} rows of {setup} selected by {args.retry}:\n"
                      + cli_args.table(listed, list(listed[0])) if listed else f"no rows of {setup} selected")
        return
    if args.timeout <= 0:
        raise ValueError(f"--timeout must be positive, got {args.timeout}")
    device = device_for(args.device, "remeasure", workshop=False)  # no GPU, no GPU work (as bench and sweep)
    for gpu, tiny in sorted({(r["config"]["gpu"], bool(r["config"].get("tiny"))) for r in rows}):
        cli_args.check_setup_folder(out, setup, gpu, tiny, device)  # a GPU's rows measured again on the CPU
    wanted = sorted({r["config"]["gpu"] for r in rows})
    if len(wanted) > 1:
        raise ValueError(f"the rows of {setup} ran on {', '.join(wanted)}: measure each GPU's rows where they ran")
    if wanted:  # measured again on the kind of GPU that made them
        from ..launch.gpu_in_hand import check_gpu_in_hand

        check_gpu_in_hand(wanted[0], device, overridable=False)
    try:
        summaries = remeasure(out, setup, args.retry, budget_s=args.budget, models=models, ids=ids,
                              timeout_s=args.timeout, device=device, progress=not args.no_progress)
    except KeyboardInterrupt:
        _interrupted(args.out)
    cli_args.emit(args, [s.to_dict() for s in summaries],
                  lambda: "\n".join(map(format_summary, summaries)) or "nothing to measure again")


def _unvalidated_ids(rows: list[dict]) -> set[str]:
    """The configurations whose measured rows no validation speaks for, by the study's rule
    (``analysis.counted.unvalidated_rows``) read over the store's rows as every reader reads them."""
    from ..analysis.counted import unvalidated_rows
    from ..analysis.frame import frame_from_rows
    from ..results import rows_to_read

    return set(unvalidated_rows(frame_from_rows(rows_to_read(rows), checked=True))["config_id"])


def _run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="results file (JSON lines), e.g. notebooks/runs/h100x1/results.jsonl")
    p.add_argument("--setup", default=None, help="hardware label of the run (default e.g. h100x1)")
    p.add_argument("--timing", choices=("synced", "unsynced"), default="synced",
                   help="synced: GPU-synchronized timing (results); unsynced: the paper's method (comparison only)")
    p.add_argument("--validate", type=int, default=0, metavar="K",
                   help="also run K real optimizer steps to check the extrapolated step time")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per configuration")
    p.add_argument("--tiny", action="store_true", help="the tiny CPU/workshop variant of the model")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available")
    p.add_argument("--nodes", type=int, default=1, help="nodes the GPUs are spread over")
    p.add_argument("--node-rank", type=int, default=0, help="this node's rank (multi-node, local executor)")
    p.add_argument("--rdzv-endpoint", default=None, help="HOST:PORT of node 0 (multi-node, local executor)")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: fresh processes here (torchrun on several GPUs); "
                        "slurm: a SLURM job per configuration (submitit); "
                        "submitit-local: the SLURM path on this machine (testing)")
    p.add_argument("--slurm-param", action="append", default=[], metavar="KEY=VALUE",
                   help="a SLURM option for submitit, e.g. partition=gpu (repeatable)")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="untimed repetitions (>= 2)")
    p.add_argument("--reps", type=int, default=DEFAULT_REPS, help="timed repetitions (>= 5)")
    p.add_argument("--allow-gpu-mismatch", action="store_true",
                   help="measure even though the GPU in hand is not --gpu (recorded in every row; check-run and "
                        "the readers reject such rows)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure one configuration in fresh processes; append its row")
    cli_args.add_configuration(p)
    p.add_argument("--micro-batch", type=int, default=None, help="default: the largest that fits")
    p.add_argument("--fresh-after-oom", action="store_true",
                   help="on one GPU, time the micro-batch found in fresh processes when a search trial ran out of "
                        "memory (the two-launch engine; default: one launch searches and times)")
    cli_args.add_config_args(p)
    _run_args(p)
    p.set_defaults(func=_cmd_bench, accepts_config=True, accepts_variant=True)

    p = sub.add_parser("sweep", help="measure a preset of configurations (resumable)")
    cli_args.add_json(p)
    p.add_argument("--model", required=True, type=str.lower, help="one model or a comma-separated list")
    cli_args.add_gpu(p)
    cli_args.add_gpus(p)
    p.add_argument("--preset", required=True, choices=SWEEP_PRESETS)
    p.add_argument("--precision", choices=cli_args.PRECISIONS, default=None,
                   help="measure each model in this precision: a recipe's own is the recipe, and a recipe in fp32 "
                        f"takes {' or '.join(SIXTEEN_BIT)} as configurations of their own (default: the recipe's)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds after which no new configuration starts; each one left gets a 'not run' row")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--retry", default="", metavar="OUTCOMES",
                   help="re-run configurations whose row has one of these outcomes, e.g. error,timeout; "
                        "'all' runs the search again from scratch (the smart search deciding from this run alone)")
    _run_args(p)
    p.set_defaults(func=_cmd_sweep, accepts_variant=True)

    p = sub.add_parser("remeasure", help="measure again the rows of a results file that a rule selects (resumable)")
    cli_args.add_json(p)
    p.add_argument("--out", required=True, help="the setup's results file, e.g. notebooks/runs/h100x1/results.jsonl")
    p.add_argument("--setup", default=None, help="the rows' hardware label (default: the results file's folder)")
    p.add_argument("--retry", default=PREDICTED_STOP, choices=REMEASURE_CHOICES,
                   help="which rows: an outcome, uncommitted, predicted-stop (the default: the micro-batch search "
                        "stopped on the memory model's prediction), memory-wall (timed near the GPU's capacity "
                        "before the engine checked a size at the memory wall against half of it), or unvalidated "
                        "(made by an older engine revision that never validated their method class on the setup)")
    p.add_argument("--list", action="store_true", help="only list the rows selected")
    p.add_argument("--models", default=None, help="comma list: only these models' rows (default: all)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per configuration")
    p.add_argument("--budget", type=float, default=None, help="seconds after which no new configuration starts")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_remeasure)
