"""The ``profile`` sub-command: where one configuration's step time goes (``torch.profiler``), by kind of work,
appended to a profiles file (``results.append_profile``). The device (a GPU, unless ``--device cpu`` asks for the
CPU) and the GPU in hand are checked before anything is profiled; a bad name, count or file exits with status 2.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import args as cli_args
from ..catalog.config import Config
from ..catalog.methods import parse_methods
from ..launch import device_for
from ..launch.gpu_in_hand import check_gpu_in_hand
from ..results import ResultStore, latest_rows, synced_micro_batches


def _cmd_profile(args: argparse.Namespace) -> None:
    from ..measure.profile import check_profilable
    from ..results import append_profile

    if args.gpus != 1:
        raise ValueError(f"the profiler runs one process on one GPU: use --gpus 1 (got {args.gpus})")
    if args.reps < 1:
        raise ValueError(f"--reps must be at least 1, got {args.reps}")
    out = cli_args.check_out(args.out)
    device = device_for(args.device, args.command)  # no GPU, no GPU work
    check_gpu_in_hand(args.gpu, device, overridable=False)  # a profile filed under another GPU's name
    config, mbs = _profile_target(args, out)
    check_profilable(config)
    cli_args.check_device(config.methods, device)
    # A config.json states its own size (a small one is how the CPU tests profile it); a catalog model is large.
    if device == "cpu" and not args.tiny and not cli_args.is_config_path(args.model):
        raise ValueError("profiling a full-size model on the CPU would take hours: add --tiny, or run on a GPU")
    setup = args.setup or cli_args.default_setup(args.gpu, args.gpus, args.tiny, device)
    cli_args.check_setup_folder(out, setup, args.gpu, args.tiny, device)
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
    model = cli_args.model_key(args)
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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="where one configuration's step time goes (torch.profiler), by kind of work")
    cli_args.add_configuration(p, methods_note="; or best: the fastest measured without sharding or offloading, in "
                                               "the results file beside --out")
    p.add_argument("--micro-batch", type=int, default=None,
                   help="default: the micro-batch of this configuration's synced row in the results file beside "
                        "--out (a smaller one if the profiler runs out of memory at it)")
    p.add_argument("--out", required=True, help="profiles file (JSON lines), e.g. notebooks/runs/h100x1/profiles.jsonl")
    p.add_argument("--setup", default=None, help="hardware label of the run (default e.g. h100x1)")
    p.add_argument("--reps", type=int, default=3, help="profiled repetitions of each phase (default 3)")
    p.add_argument("--tiny", action="store_true", help="the tiny CPU/workshop variant of the model")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when available")
    cli_args.add_config_args(p)
    p.set_defaults(func=_cmd_profile, accepts_config=True, accepts_variant=True)


