"""The ``estimate`` sub-command: analytic days, predicted memory per GPU, max micro-batch and feasibility.

    academic-bench estimate --model pythia-1b --gpu h100-80gb --gpus 8 --methods free-lunch+zero3 [--json]
    academic-bench estimate --model PATH/config.json --tokens 3e11 --seq-len 2048 --gpu h100-80gb --gpus 4

A catalog model trains its recipe, at an assumed MFU (``--mfu``). A Hugging Face decoder's config.json
(``models.from_config``: built with transformers on the meta device, never downloaded) trains ``--tokens`` tokens
in sequences of ``--seq-len``; its FLOPs, memory and micro-batch come from the same code as the catalog's, and
its days come with a range (``decoder_mfu``): JSON ``days`` (a number) and ``days_range`` ([low, high]), the
analytic detail under ``days_analytic``.
"""
from __future__ import annotations

import argparse
from dataclasses import replace

from . import cli_args
from . import estimate as est
from .config import Config
from .hardware import get_gpu
from .methods import FREE_LUNCH, InvalidCombinationError, Methods, exclusion_reason, parse_methods, search_space
from .models.from_config import DEFAULT_GLOBAL_BATCH, DTYPES, ConfigError, decoder_spec

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


def estimate_summary(config: Config, mfu: float = est.DEFAULT_MFU, host_memory_gib: float | None = None) -> dict:
    """Everything the command prints, as one dict (also the ``--json`` output). Offloading must also fit the
    machine's host memory (``estimate.host_memory_verdict``: ``host_memory_gib``, else the paper's machine)."""
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
    host = est.host_memory_verdict(config, host_memory_gib)
    if host is not None:
        why += f"; {host['reason']}" if host["fits"] is not False or not fits else ""
        if fits and host["fits"] is False:
            fits, why = False, f"does not fit the host: {host['reason']}"
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
        "fits": fits, "reason": why, "host_memory": host,
        "alternatives": [] if fits else _fitting_alternatives(config, gpu.memory_gb),
    }


def _days_lines(d: dict) -> list[str]:
    if "days_range" not in d:  # a catalog model: its recipe at an assumed MFU
        days = d["days"]
        return [f"Days:     {days['at_mfu']:,.1f} at {days['mfu']:.0%} MFU (an assumed utilisation, not a "
                "measurement; --mfu to change)",
                f"          {days['lower_bound']:,.1f} at 100% MFU (lower bound: no real run is faster)"]
    m, (low, high) = d["mfu"], d["days_range"]
    return [f"Days:     {d['days']:,.1f} (range {low:,.1f} to {high:,.1f}) at {m['value']:.0%} MFU "
            f"(range {m['low']:.0%} to {m['high']:.0%})",
            f"          MFU from {m['source']}: {m['basis']}",
            f"          {d['days_analytic']['lower_bound']:,.1f} at 100% MFU (lower bound: no real run is faster)"]


def _text(d: dict) -> str:
    gpu = get_gpu(d["gpu"])
    f = d["flops"]
    lines = []
    if "architecture" in d:
        a = d["architecture"]
        lines.append(f"{d['config_file']}: {a['model_type']}, {d['params'] / 1e6:,.1f}M parameters, {a['layers']} "
                     f"layers x {a['hidden']} hidden, {a['heads']} heads ({a['kv_heads']} key-value), {a['mlp']} MLP "
                     f"of {a['intermediate']}, vocabulary {a['vocab']:,}, embeddings "
                     f"{'tied' if a['tied_embeddings'] else 'untied'}; {a['tokens']:.3g} tokens = {a['steps']:,} "
                     f"steps x {a['global_batch']} x {a['seq_len']}")
        if a["positions_extended_to"]:
            lines.append(f"          (positions extended from the config's {a['max_positions']} to {a['seq_len']})")
    lines += [
        f"{d['display']} on {d['n_gpus']} x {gpu.name}, methods: {d['methods_label']} (--methods {d['methods']})",
        f"Compute:  {f['total']:.3g} FLOPs = {f['steps']:,} steps x {f['per_step']:.3g} FLOPs/step",
        f"          (model FLOPs, fwd + bwd: {f['convention']})",
        f"Peak:     {d['peak_flops_per_gpu'] / 1e12:,.1f} TFLOP/s per GPU ({d['precision']}, dense spec)",
        *_days_lines(d),
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


def decoder_mfu(gpu: str, n_gpus: int, params: float) -> dict:
    """The MFU a config.json decoder's days rest on, with its range: what the planner uses for comparable
    decoders (``planning.mfu_points``, ``interpolate_mfu``: the Pythia decoders' MFU on this setup, linear in
    log(parameters) between the nearest sizes), with points above ``MFU_IMPLAUSIBLE`` (paper-implied timings that
    did not synchronise) left out. ``low``/``high`` are the lowest and highest MFU of the sizes it rests on,
    widened by each point's spread of timed repetitions: the days' range is the spread of the measurements
    behind it, not a bound. Where the setup has no plausible point, every setup's measured decoders stand in,
    and the range widens to all of them (another GPU or count transfers with that uncertainty). With no
    measured decoder at all, ``DEFAULT_MFU`` is assumed, and said."""
    from .analysis import MFU_IMPLAUSIBLE
    from .planning import interpolate_mfu, measured_mfu, mfu_points

    pts = mfu_points(gpu, n_gpus)
    plausible = pts[pts["mfu"] <= MFU_IMPLAUSIBLE]
    left_out = len(pts) - len(plausible)
    note = f"; {left_out} paper-implied point(s) above {MFU_IMPLAUSIBLE:.0%} left out" if left_out else ""
    if not plausible.empty:
        e = interpolate_mfu(plausible, params)
        return {"value": e.mfu, "low": e.low, "high": e.high, "source": e.source, "basis": e.basis + note}
    every = measured_mfu()
    every = every[every["mfu"] <= MFU_IMPLAUSIBLE]
    if every.empty:
        return {"value": est.DEFAULT_MFU, "low": est.DEFAULT_MFU, "high": est.DEFAULT_MFU,
                "source": "assumed", "basis": f"no measured decoder to rest on: an assumed MFU{note}"}
    e = interpolate_mfu(every, params)
    return {"value": e.mfu, "low": min(e.low, float(every["mfu_low"].min())),
            "high": max(e.high, float(every["mfu_high"].max())), "source": e.source,
            "basis": f"no plausible point for {n_gpus} x {gpu}: every measured setup's decoders, "
                     f"range over all of them; {e.basis}{note}"}


CONFIG_ONLY = ("tokens", "seq_len", "global_batch", "precision")


def config_estimate(args: argparse.Namespace) -> dict:
    """``estimate_summary`` for the decoder a config.json describes, with days as a number and a range."""
    missing = [f"--{k.replace('_', '-')}" for k in ("tokens", "seq_len") if getattr(args, k) is None]
    if missing:
        raise ConfigError(f"a config.json needs {' and '.join(missing)}: the tokens to train on and the sequence "
                          "length")
    decoder = decoder_spec(args.model, seq_len=args.seq_len, tokens=args.tokens,
                           global_batch=DEFAULT_GLOBAL_BATCH if args.global_batch is None else args.global_batch,
                           precision=args.precision)
    config = _config(argparse.Namespace(**{**vars(args), "model": decoder.spec.key}))
    params = est.model_stats(decoder.spec).params
    work = None if args.mfu is not None or config.methods != FREE_LUNCH else decoder_work_mfu(config)
    mfu = ({"value": args.mfu, "low": args.mfu, "high": args.mfu, "source": "given", "basis": "--mfu"}
           if args.mfu is not None else work or decoder_mfu(config.gpu, config.n_gpus, params))
    data = estimate_summary(config, mfu["value"], args.host_memory)
    analytic = data.pop("days")
    at_peak = analytic["lower_bound"]
    analytic["mfu_is_assumed"] = mfu["source"] in ("given", "assumed")
    return {"config_file": decoder.path, "architecture": decoder.facts, "params": params, **data,
            "days": at_peak / mfu["value"], "days_range": [at_peak / mfu["high"], at_peak / mfu["low"]],
            "mfu": mfu, "days_analytic": analytic}


def decoder_work_mfu(config: Config) -> dict | None:
    """The MFU of the work model's step (``decoder_work.predict_decoder``: the decoder's work by kind, at the
    rates of the catalog decoders' profiles), with the range of its step; None where no profile calibrates it or
    no micro-batch fits (``decoder_mfu`` answers then)."""
    from .analysis import profiles
    from .decoder_work import predict_decoder

    p = predict_decoder(config.model, config.gpu, config.n_gpus, profiles())
    if p is None or p.step_time_s is None:
        return None
    return {"value": p.mfu, "low": p.mfu * p.step_time_s / p.step_high_s,
            "high": p.mfu * p.step_time_s / p.step_low_s, "source": f"work model ({p.source_setup} profiles)",
            "basis": p.basis.removeprefix("work model: "), "step_time_s": p.step_time_s,
            "micro_batch": p.micro_batch}


def _cmd_estimate(args: argparse.Namespace) -> None:
    if args.mfu is not None and not 0 < args.mfu <= 1:
        raise ValueError(f"--mfu must be in (0, 1], got {args.mfu}")
    if cli_args.is_config_path(args.model):
        data = config_estimate(args)
    else:
        given = [f"--{k.replace('_', '-')}" for k in CONFIG_ONLY if getattr(args, k) is not None]
        if given:
            raise ValueError(f"{', '.join(given)} apply to a config.json; {args.model} trains its catalog recipe")
        data = estimate_summary(_config(args), est.DEFAULT_MFU if args.mfu is None else args.mfu, args.host_memory)
    cli_args.emit(args, data, lambda: _text(data))


def register(sub: argparse._SubParsersAction) -> None:
    from .models import CATALOG

    p = sub.add_parser("estimate", help="analytic days, predicted memory, max micro-batch and feasibility")
    cli_args.add_json(p)
    p.add_argument("--model", required=True, type=cli_args.model_or_config,
                   help=f"one of: {', '.join(CATALOG)}; or a Hugging Face decoder's PATH/config.json")
    cli_args.add_gpu(p)
    cli_args.add_gpus(p)
    cli_args.add_methods(p)
    p.add_argument("--micro-batch", type=int, default=None,
                   help="micro-batch per GPU (default: the largest predicted to fit)")
    p.add_argument("--mfu", type=float, default=None,
                   help=f"model-FLOPs utilisation for the days (default: {est.DEFAULT_MFU}, assumed, for a catalog "
                        "model; the measured decoders' for a config.json)")
    p.add_argument("--host-memory", type=cli_args.positive("--host-memory"), default=None, metavar="GIB",
                   help="host memory of the machine in GiB, for offloading (default: the paper's machine for the "
                        "GPU count, Appendix H: 64 GiB for 1 GPU, 128 for 2, 256 for 4, 512 for 8)")
    g = p.add_argument_group("a config.json decoder")
    g.add_argument("--tokens", type=cli_args.positive("--tokens"), default=None, help="training tokens (e.g. 3e11)")
    g.add_argument("--seq-len", type=int, default=None, help="tokens per sequence")
    g.add_argument("--global-batch", type=int, default=None,
                   help=f"sequences per optimizer step (default {DEFAULT_GLOBAL_BATCH}, the catalog decoders')")
    g.add_argument("--precision", choices=sorted(set(DTYPES.values())), default=None,
                   help="training precision (default: the config's dtype, else bf16)")
    p.set_defaults(func=_cmd_estimate, accepts_config=True)


