"""The ``estimate`` sub-command: analytic days, predicted memory per GPU, max micro-batch and feasibility.

    academic-bench estimate --model pythia-1b --gpu h100-80gb --gpus 8 --methods free-lunch+zero3 [--json]
"""
from __future__ import annotations

import argparse
from dataclasses import replace

from . import cli_args
from . import estimate as est
from .config import Config
from .hardware import get_gpu
from .methods import InvalidCombinationError, Methods, exclusion_reason, parse_methods, search_space

MEMORY_ROWS = [("weights", "weights"), ("gradients", "gradients"), ("optimizer_states", "optimizer states"),
               ("activations", "activations"), ("buffers", "comm. buckets"), ("overhead", "overhead"),
               ("total", "total"), ("cpu", "offloaded to CPU")]
SHOW_ALTERNATIVES = 4


def methods_spec(m: Methods) -> str:
    """The ``--methods`` text that gives ``m`` (inverse of ``methods.parse_methods``)."""
    if m.free_lunch:
        parts = ["free-lunch"]
    else:
        parts = [n for n in ("compile", "kernels", "tf32") if getattr(m, n)] or ["naive"]
    parts += ["ckpt"] * m.checkpointing + [m.sharding] * (m.sharding != "none") + ["offload"] * m.offload
    return "+".join(parts)


def _config(args: argparse.Namespace) -> Config:
    """The configuration to estimate; an invalid combination names the rule and the valid options."""
    methods = parse_methods(args.methods)
    reason = exclusion_reason(methods, args.gpus)
    if reason:
        base = replace(methods, checkpointing=False, sharding="none", offload=False)
        valid = ", ".join(methods_spec(m) for m in search_space(args.gpus, base)[0])
        raise InvalidCombinationError(
            f"invalid combination --methods {args.methods} on {args.gpus} GPU(s): {reason}. "
            f"Valid --methods on {args.gpus} GPU(s): {valid}")
    config = Config(args.model, args.gpu, args.gpus, methods=methods, micro_batch=args.micro_batch)
    config.check()
    return config


def _fitting_alternatives(config: Config, gpu_gb: float) -> list[dict]:
    """Valid memory-saving combinations (same free-lunch switches) predicted to fit, with their micro-batch."""
    base = replace(config.methods, checkpointing=False, sharding="none", offload=False)
    out = []
    for m in search_space(config.n_gpus, base)[0]:
        mbs = est.max_micro_batch(replace(config, methods=m, micro_batch=None), gpu_gb)
        if mbs is not None and m != config.methods:
            out.append({"methods": methods_spec(m), "max_micro_batch": mbs})
    return out


def estimate_summary(config: Config, mfu: float = est.DEFAULT_MFU) -> dict:
    """Everything the command prints, as one dict (also the ``--json`` output)."""
    spec, gpu, m = config.spec, get_gpu(config.gpu), config.methods
    r = spec.recipe
    capacity = est.usable_bytes(gpu.memory_gb)
    best = est.max_micro_batch(config, gpu.memory_gb)
    mbs = config.micro_batch or best or 1
    mem = est.predict_memory(config, mbs)
    fits = mem.total <= capacity
    parts = ("weights", "gradients", "optimizer_states", "activations", "buffers")
    largest = max(parts, key=lambda k: getattr(mem, k))
    if fits:
        why = f"fits at micro-batch {mbs}: {mem.total / est.GIB:.1f} of {capacity / est.GIB:.1f} GiB usable"
    else:
        why = (f"does not fit at micro-batch {mbs}: needs {mem.total / est.GIB:.1f} GiB, "
               f"{capacity / est.GIB:.1f} GiB usable; the largest part is {largest.replace('_', ' ')} "
               f"({getattr(mem, largest) / est.GIB:.1f} GiB)")
    return {
        "model": spec.key, "display": spec.display, "gpu": gpu.key, "n_gpus": config.n_gpus, "methods": methods_spec(m),
        "methods_label": m.label(), "precision": r.precision,
        "flops": {"per_step": est.model_flops_per_step(spec), "total": est.total_flops(spec),
                  "steps": r.steps, "convention": est.flops_method(spec)},
        "peak_flops_per_gpu": gpu.peak_flops(r.precision, m.tf32),
        "days": {"mfu": mfu, "at_mfu": est.analytic_days(spec, gpu.key, config.n_gpus, mfu, tf32=m.tf32),
                 "lower_bound": est.analytic_days(spec, gpu.key, config.n_gpus, 1.0, tf32=m.tf32),
                 "mfu_is_assumed": True},
        "micro_batch": mbs, "micro_batch_given": config.micro_batch is not None,
        "per_gpu_batch": config.per_gpu_batch, "gas": config.per_gpu_batch // mbs,
        "max_micro_batch": best,
        "memory_gib": mem.gib(), "usable_gib": capacity / est.GIB,
        "fits": fits, "reason": why,
        "alternatives": [] if fits else _fitting_alternatives(config, gpu.memory_gb),
    }


def _text(d: dict) -> str:
    gpu = get_gpu(d["gpu"])
    f, days = d["flops"], d["days"]
    lines = [
        f"{d['display']} on {d['n_gpus']} x {gpu.name}, methods: {d['methods_label']} (--methods {d['methods']})",
        f"Compute:  {f['total']:.3g} FLOPs = {f['steps']:,} steps x {f['per_step']:.3g} FLOPs/step",
        f"          (model FLOPs, fwd + bwd: {f['convention']})",
        f"Peak:     {d['peak_flops_per_gpu'] / 1e12:,.1f} TFLOP/s per GPU ({d['precision']}, dense spec)",
        f"Days:     {days['at_mfu']:,.1f} at {days['mfu']:.0%} MFU (an assumed utilisation, not a measurement; "
        "--mfu to change)",
        f"          {days['lower_bound']:,.1f} at 100% MFU (lower bound: no real run is faster)",
        f"Memory per GPU at micro-batch {d['micro_batch']} (predicted, GiB):",
    ]
    mem = d["memory_gib"]
    lines += [f"  {label:<18} {mem[key]:8.2f}" for key, label in MEMORY_ROWS]
    best = d["max_micro_batch"]
    lines.append(f"Max micro-batch predicted to fit: {best if best is not None else 'none (not even 1)'}"
                 + (f" (per-GPU batch {d['per_gpu_batch']}, GAS {d['per_gpu_batch'] // best})" if best else ""))
    lines.append(f"Feasible: {'yes' if d['fits'] else 'no'}: {d['reason']}")
    if not d["fits"]:
        alts = d["alternatives"]
        shown = ", ".join(f"{a['methods']} (micro-batch {a['max_micro_batch']})" for a in alts[:SHOW_ALTERNATIVES])
        more = f", and {len(alts) - SHOW_ALTERNATIVES} more (--json lists all)" if len(alts) > SHOW_ALTERNATIVES else ""
        lines.append("Predicted to fit instead: " + (shown + more if alts else
                     f"nothing on {d['n_gpus']} GPU(s) of this type; try more GPUs or a larger GPU"))
    lines.append("(An analytic estimate; measured runs are the answer. Memory model: academic_bench/estimate/memory.py.)")
    return "\n".join(lines)


def _cmd_estimate(args: argparse.Namespace) -> None:
    config = _config(args)
    if not 0 < args.mfu <= 1:
        raise ValueError(f"--mfu must be in (0, 1], got {args.mfu}")
    data = estimate_summary(config, args.mfu)
    cli_args.emit(args, data, lambda: _text(data))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="analytic days, predicted memory, max micro-batch and feasibility")
    cli_args.add_setting(p)
    cli_args.add_methods(p)
    p.add_argument("--micro-batch", type=int, default=None,
                   help="micro-batch per GPU (default: the largest predicted to fit)")
    p.add_argument("--mfu", type=float, default=est.DEFAULT_MFU,
                   help=f"assumed model-FLOPs utilisation for the days estimate (default {est.DEFAULT_MFU})")
    p.set_defaults(func=_cmd_estimate)


