"""Sub-commands ``bench`` (one configuration), ``sweep`` (a preset of configurations), ``remeasure`` (the rows of
a results file that a rule selects, measured again) and ``profile`` (where one configuration's step time goes).

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
from ..catalog.models import CATALOG
from ..catalog.models.from_config import DTYPES
from ..results import PREDICTED_STOP, RETRY_CHOICES, ResultStore, latest_rows, synced_micro_batches
from ..search.plans import SWEEP_PRESETS, plan
from ..search.sweep import format_summary, log_path, remeasure, run_sweep, to_remeasure

from .args import EXIT_FAILED, EXIT_INTERRUPTED


def default_setup(gpu: str, gpus: int, tiny: bool) -> str:
    """A hardware label like 'h100x1' (the folder name under notebooks/runs)."""
    return f"{gpu.split('-')[0]}x{gpus}" + ("-tiny" if tiny else "")


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

def _model_key(args: argparse.Namespace) -> str:
    """The catalog model, or the key of the decoder a config.json describes (registered for this run and, through
    the request, for its workers)."""
    from ..catalog.models.from_config import DEFAULT_GLOBAL_BATCH, ConfigError, decoder_spec

    given = [o for o, v in (("--tokens", args.tokens), ("--seq-len", args.seq_len),
                            ("--global-batch", args.global_batch), ("--precision", args.precision))
             if v is not None]
    if not cli_args.is_config_path(args.model):
        if given:
            raise ValueError(f"{', '.join(given)} only apply to a decoder's config.json, not to {args.model}")
        return args.model
    if args.tiny:
        raise ConfigError("--tiny applies to the catalog's models; a config.json describes one model at full size")
    if args.tokens is None or args.seq_len is None:
        raise ConfigError("a config.json needs --tokens and --seq-len: the tokens to train on and the sequence "
                          "length, which set the steps and the batch's shape")
    return decoder_spec(args.model, seq_len=args.seq_len, tokens=args.tokens,
                        global_batch=DEFAULT_GLOBAL_BATCH if args.global_batch is None else args.global_batch,
                        precision=args.precision).spec.key


def _cmd_bench(args: argparse.Namespace) -> int:
    config = Config(_model_key(args), args.gpu, args.gpus, args.nodes, parse_methods(args.methods),
                    args.micro_batch, args.tiny)
    config.check()
    _check_run_args(args)
    cli_args.check_out(args.out)
    kwargs = _run_kwargs(args)  # no GPU, no GPU work: checked first
    _check_gpu(args)
    setup = args.setup or default_setup(args.gpu, args.gpus, args.tiny)
    mode = "validate" if args.validate else "step"
    out = Path(args.out)
    # An unsynced timing runs at the micro-batch of the same configuration's synced row, when there is one.
    known = synced_micro_batches(ResultStore(out).rows()).get(config.id) if args.timing == "unsynced" else None
    try:
        row = run(config, executor=args.executor, folder=out.parent / "submitit",
                  slurm_params=_slurm_params(args.slurm_param), setup=setup, search="single",
                  log_path=log_path(out, config, args.timing, mode), micro_batch=known, **kwargs)
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
    configs = plan(args.model, args.gpu, args.gpus, args.preset, tiny=args.tiny, nodes=args.nodes)
    _check_run_args(args)
    _retry(args.retry)
    cli_args.check_out(args.out)
    setup = args.setup or default_setup(args.gpu, args.gpus, args.tiny)
    kwargs = _run_kwargs(args)  # no GPU, no GPU work: checked first
    _check_gpu(args)
    try:
        summary = run_sweep(configs, args.out, setup, search=args.preset, executor=args.executor,
                            progress=not args.no_progress, budget_s=args.budget,
                            slurm_params=_slurm_params(args.slurm_param), retry=_retry(args.retry), **kwargs)
    except KeyboardInterrupt:
        _interrupted(args.out)
    cli_args.emit(args, summary, lambda: format_summary(summary))
    return 0 if summary["outcomes_all"].get("ok") else EXIT_FAILED


def _cmd_remeasure(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if not out.is_file():
        raise ValueError(f"no results file at {out}: give a setup's results.jsonl, e.g. notebooks/runs/h100x1/results.jsonl")
    setup = args.setup or out.parent.name
    models = [m.strip().lower() for m in args.models.split(",")] if args.models else None
    unknown = sorted(set(models or ()) - set(CATALOG))
    if unknown:
        raise ValueError(f"unknown model(s) {', '.join(unknown)}; choose from: {', '.join(CATALOG)}")
    rows = [r for r in to_remeasure(ResultStore(out).rows(), args.retry) if r.get("setup") == setup
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
    device = device_for(args.device, "remeasure")  # no GPU, no GPU work (as bench and sweep)
    wanted = sorted({r["config"]["gpu"] for r in rows})
    if len(wanted) > 1:
        raise ValueError(f"the rows of {setup} ran on {', '.join(wanted)}: measure each GPU's rows where they ran")
    if wanted:  # measured again on the kind of GPU that made them
        from ..launch.gpu_in_hand import check_gpu_in_hand

        check_gpu_in_hand(wanted[0], device)
    try:
        summaries = remeasure(out, setup, args.retry, budget_s=args.budget, models=models, timeout_s=args.timeout,
                              device=device, progress=not args.no_progress)
    except KeyboardInterrupt:
        _interrupted(args.out)
    cli_args.emit(args, summaries, lambda: "\n".join(map(format_summary, summaries)) or "nothing to measure again")


def _cmd_profile(args: argparse.Namespace) -> None:
    from ..measure.profile import check_profilable
    from ..results import append_profile

    if args.gpus != 1:
        raise ValueError(f"the profiler runs one process on one GPU: use --gpus 1 (got {args.gpus})")
    if args.reps < 1:
        raise ValueError(f"--reps must be at least 1, got {args.reps}")
    out = cli_args.check_out(args.out)
    device = device_for(args.device, args.command)
    config, mbs = _profile_target(args, out)
    check_profilable(config)
    # A config.json states its own size (a small one is how the CPU tests profile it); a catalog model is large.
    if device == "cpu" and not args.tiny and not cli_args.is_config_path(args.model):
        raise ValueError("profiling a full-size model on the CPU would take hours: add --tiny, or run on a GPU")
    setup = args.setup or default_setup(args.gpu, args.gpus, args.tiny)
    profiled = _profile_or_say_why(config, mbs, device, args.reps, smaller_on_oom=args.micro_batch is None)
    entry = append_profile(out, config, profiled, setup=setup)

    def text() -> str:
        lines = [f"{config.name(device)}, {config.methods.label()}, micro-batch {entry['micro_batch']} x "
                 f"{entry['gas']}: busy {entry['busy_share']:.0%} of {entry['step_wall_s']:.4g} s per step "
                 f"({entry['timer']})"]
        lines += [f"  {k['kind']:<24} {k['share']:6.1%}  {k['seconds']:.4g} s" for k in entry["kinds"]]
        lines.append(f"  appended to {out}")
        return "\n".join(lines)

    cli_args.emit(args, entry, text)


def _profile_target(args: argparse.Namespace, out: Path) -> tuple[Config, int]:
    """The configuration to profile and its micro-batch: as named, at the micro-batch of its synced row in the
    results file beside ``out`` (or ``--micro-batch``); or, for ``--methods best``, the fastest measured there
    that the profiler can take (no sharding, no offloading)."""
    from ..measure.profile import profilable
    from ..search.params import RESULTS_FILE
    from ..search.notebook import best_row

    results = out.with_name(RESULTS_FILE)
    rows = latest_rows(ResultStore(results).rows())
    model = _model_key(args)
    if args.methods == "best":
        mine = [r for r in rows if r["config"]["gpu"] == args.gpu and bool(r["config"].get("tiny")) == args.tiny
                and r["micro_batch"] and profilable(Config.from_dict(r["config"]))]
        best = best_row(mine, model)
        if best is None:
            raise ValueError(f"--methods best: no measured configuration of {args.model} on 1 x {args.gpu} without "
                             f"sharding or offloading in {results}; name the methods (e.g. --methods free-lunch)")
        return Config.from_dict(best["config"]), args.micro_batch or best["micro_batch"]
    config = Config(model, args.gpu, 1, 1, parse_methods(args.methods), None, args.tiny)
    config.check()
    mbs = args.micro_batch or synced_micro_batches(rows).get(config.id)
    if not mbs:
        raise ValueError(f"no measured micro-batch for {config.model} {config.methods.label()} in {results}: "
                         "give --micro-batch, or measure the configuration first (academic-bench bench)")
    return config, mbs


def _profile_or_say_why(config: Config, mbs: int, device: str, reps: int, smaller_on_oom: bool) -> dict:
    """``profile_step``, with a missing kernel library or a full GPU told as a message (exit 2), not a trace.
    The profiler's own buffers can push a measured micro-batch past the GPU's memory (Pythia-2.8B on one H100,
    Pythia-6.9B on one H200): with ``smaller_on_oom`` (no --micro-batch given) it says so and tries the next
    smaller micro-batch that divides the per-GPU batch. The entry records the micro-batch it profiled."""
    from ..measure.apply import Unsupported
    from ..measure.profile import profile_step
    from ..measure.stepper import free_after_oom, is_oom

    while True:
        try:
            return profile_step(config, mbs, device, reps=reps)
        except Unsupported as exc:
            raise ValueError(f"cannot profile {config.methods.label()} here: {exc}") from exc
        except (RuntimeError, MemoryError) as exc:
            if not is_oom(exc):
                raise
            smaller = max((d for d in range(1, mbs // 2 + 1) if config.per_gpu_batch % d == 0), default=None)
            if not smaller_on_oom or smaller is None:
                raise ValueError(f"out of memory at micro-batch {mbs} under the profiler; give a smaller "
                                 "--micro-batch") from exc
        # outside the handler, so that the failed attempt's frames (and its tensors) are already released
        print(f"out of memory at micro-batch {mbs} under the profiler; trying micro-batch {smaller}",
              file=sys.stderr)
        free_after_oom(None, device)
        mbs = smaller


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
                   help="local: torchrun here; slurm: a SLURM job per configuration (submitit); "
                        "submitit-local: the SLURM path on this machine (testing)")
    p.add_argument("--slurm-param", action="append", default=[], metavar="KEY=VALUE",
                   help="a SLURM option for submitit, e.g. partition=gpu (repeatable)")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="untimed repetitions (>= 2)")
    p.add_argument("--reps", type=int, default=DEFAULT_REPS, help="timed repetitions (>= 5)")
    p.add_argument("--allow-gpu-mismatch", action="store_true",
                   help="measure even though the GPU in hand is not --gpu (recorded in every row; check-run and "
                        "the readers reject such rows)")


def _config_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("a decoder from its config.json")
    g.add_argument("--tokens", type=cli_args.positive("--tokens"), default=None, help="training tokens (e.g. 3e11): the days' steps")
    g.add_argument("--seq-len", type=int, default=None, help="tokens per sequence")
    g.add_argument("--global-batch", type=int, default=None, help="sequences per optimizer step (default 1024)")
    g.add_argument("--precision", choices=sorted(set(DTYPES.values())), default=None,
                   help="training precision (default: the config's dtype, else bf16), as estimate takes it")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure one configuration in fresh processes; append its row")
    cli_args.add_json(p)
    p.add_argument("--model", required=True, type=cli_args.model_or_config,
                   help=f"one of: {', '.join(CATALOG)}; or a decoder's PATH/config.json (with --tokens and --seq-len)")
    cli_args.add_gpu(p)
    cli_args.add_gpus(p)
    cli_args.add_methods(p)
    p.add_argument("--micro-batch", type=int, default=None, help="default: the largest that fits")
    _config_args(p)
    _run_args(p)
    p.set_defaults(func=_cmd_bench, accepts_config=True)

    p = sub.add_parser("sweep", help="measure a preset of configurations (resumable)")
    cli_args.add_json(p)
    p.add_argument("--model", required=True, type=str.lower, help="one model or a comma-separated list")
    cli_args.add_gpu(p)
    cli_args.add_gpus(p)
    p.add_argument("--preset", required=True, choices=SWEEP_PRESETS)
    p.add_argument("--budget", type=float, default=None, help="seconds after which no new configuration starts")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--retry", default="", metavar="OUTCOMES",
                   help="re-run configurations whose row has one of these outcomes, e.g. error,timeout")
    _run_args(p)
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("remeasure", help="measure again the rows of a results file that a rule selects (resumable)")
    cli_args.add_json(p)
    p.add_argument("--out", required=True, help="the setup's results file, e.g. notebooks/runs/h100x1/results.jsonl")
    p.add_argument("--setup", default=None, help="the rows' hardware label (default: the results file's folder)")
    p.add_argument("--retry", default=PREDICTED_STOP, choices=RETRY_CHOICES,
                   help="which rows: an outcome, uncommitted, or predicted-stop (the default: the micro-batch search "
                        "stopped on the memory model's prediction)")
    p.add_argument("--list", action="store_true", help="only list the rows selected")
    p.add_argument("--models", default=None, help="comma list: only these models' rows (default: all)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per configuration")
    p.add_argument("--budget", type=float, default=None, help="seconds after which no new configuration starts")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_remeasure)

    p = sub.add_parser("profile", help="where one configuration's step time goes (torch.profiler), by kind of work")
    cli_args.add_json(p)
    p.add_argument("--model", required=True, type=cli_args.model_or_config,
                   help=f"one of: {', '.join(CATALOG)}; or a decoder's PATH/config.json (with --tokens and --seq-len)")
    cli_args.add_gpu(p)
    cli_args.add_gpus(p)
    cli_args.add_methods(p, note="; or best: the fastest measured without sharding or offloading, in the results "
                             "file beside --out")
    p.add_argument("--micro-batch", type=int, default=None,
                   help="default: the micro-batch of this configuration's synced row in the results file beside "
                        "--out (a smaller one if the profiler runs out of memory at it)")
    p.add_argument("--out", required=True, help="profiles file (JSON lines), e.g. notebooks/runs/h100x1/profiles.jsonl")
    p.add_argument("--setup", default=None, help="hardware label of the run (default e.g. h100x1)")
    p.add_argument("--reps", type=int, default=3, help="profiled repetitions of each phase (default 3)")
    p.add_argument("--tiny", action="store_true", help="the tiny CPU/workshop variant of the model")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available")
    _config_args(p)
    p.set_defaults(func=_cmd_profile, accepts_config=True)


