"""The ``estimate`` sub-command: the study's answer (days, range, settings, what it rests on) beside the
configuration's FLOPs, predicted memory per GPU, max micro-batch and feasibility.

    academic-bench estimate --model pythia-1b --gpu h100-80gb --gpus 8 --methods free-lunch+zero3 [--json]
    academic-bench estimate --model PATH/config.json --tokens 3e11 --seq-len 2048 --gpu h100-80gb --gpus 4

A catalog model trains its recipe; a Hugging Face decoder's config.json (``models.from_config``: built with
transformers on the meta device, never downloaded) trains ``--tokens`` tokens in sequences of ``--seq-len``, and so
does an encoder's (BERT, RoBERTa, ModernBERT: ``models.encoder_config``, answered from RoBERTa-large's evidence,
``answer.encoder``). The
days are the study's answer (``academic_bench.answer``): JSON ``answer`` (the whole answer), ``days`` (a number or
null), ``days_range`` ([low, high]), ``days_analytic.lower_bound`` (100% of peak, never an answer). ``--mfu`` adds a
what-if (``what_if``), labelled as the user's assumption.
"""
from __future__ import annotations

import argparse
from dataclasses import replace

from . import args as cli_args
from ..answer import Answer
from ..catalog.config import Config, precision_words, training_precision
from ..catalog.hardware import get_gpu
from ..catalog.methods import (InvalidCombinationError, exclusion_reason, methods_spec, parse_methods,
                      search_space)
from ..catalog.models import at_precision, get_model
from ..catalog.models.from_config import DEFAULT_GLOBAL_BATCH, ConfigError, decoder_spec, stored_dtype

MEMORY_ROWS = [("weights", "weights"), ("gradients", "gradients"), ("optimizer_states", "optimizer states"),
               ("activations", "activations"), ("buffers", "comm. buckets"), ("overhead", "overhead"),
               ("total", "total"), ("cpu", "offloaded to CPU")]
SHOW_ALTERNATIVES = 4
DAYS_PER_YEAR = 365.25


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
    est = _est()
    base = replace(config.methods, checkpointing=False, sharding="none", offload=False)
    out = []
    for m in search_space(config.n_gpus, base)[0]:
        mbs = est.max_micro_batch(replace(config, methods=m, micro_batch=None), gpu_gb)
        if mbs is not None and m != config.methods:
            out.append({"methods": methods_spec(m), "max_micro_batch": mbs})
    return out


def _est():
    """The estimate package (its meta-device models load torch): imported when an estimate is made, so that the
    commands that only read answers start fast."""
    from .. import estimate

    return estimate


def estimate_summary(config: Config, host_memory_gib: float | None = None) -> dict:
    """The configuration's FLOPs, predicted memory, micro-batch and feasibility, as one dict (with the answer's
    fields, the ``--json`` output). Offloading must also fit the machine's host memory
    (``estimate.host_memory_verdict``: ``host_memory_gib``, else the paper's machine)."""
    est = _est()
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
        "micro_batch": mbs, "micro_batch_given": config.micro_batch is not None,
        "per_gpu_batch": config.per_gpu_batch, "gas": config.per_gpu_batch // mbs,
        "max_micro_batch": best,
        "memory_gib": mem.gib(), "usable_gib": capacity / est.GIB,
        "fits": fits, "reason": why, "host_memory": host,
        "alternatives": [] if fits else _fitting_alternatives(config, gpu.memory_gb),
    }


def _days_lines(d: dict) -> list[str]:
    """The study's answer (``cli.args.answer_lines``, as ``cost`` and ``plan`` print it) and the user's what-if."""
    trained = f", {d['precision_chosen']}" if d.get("precision_chosen") else ""
    lines = cli_args.answer_lines(Answer.from_dict(d["answer"]), f"{d['display']} on {d['n_gpus']} x "
                                  f"{get_gpu(d['gpu']).name}{trained}, the study's answer")
    if "what_if" in d:
        w = d["what_if"]
        lines.append(f"What-if:  {w['days']:,.1f} days at your --mfu {w['mfu']:.0%} (an assumption, not an answer)")
    return lines


def _text(d: dict) -> str:
    f = d["flops"]
    lines = []
    if "architecture" in d:
        a = d["architecture"]
        kind = "an encoder trained as a masked language model, " if a.get("encoder") else ""
        lines.append(f"{d['config_file']}: {a['model_type']}, {kind}{d['params'] / 1e6:,.1f}M parameters, {a['layers']} "
                     f"layers x {a['hidden']} hidden, {a['heads']} heads ({a['kv_heads']} key-value), {a['mlp']} MLP "
                     f"of {a['intermediate']}, vocabulary {a['vocab']:,}, embeddings "
                     f"{'tied' if a['tied_embeddings'] else 'untied'}; {a['tokens']:.3g} tokens = {a['steps']:,} "
                     f"steps x {a['global_batch']} x {a['seq_len']}")
        if a.get("moe"):
            m = a["moe"]
            lines.append(f"          a mixture of experts: {m['experts']} routed experts of {m['expert_width']:,} in "
                         f"{m['moe_layers']} layers, {m['per_token']} per token"
                         + (f", shared experts of {m['shared_width']:,}" if m["shared_width"] else "")
                         + f"; {d['active_params'] / 1e6:,.1f}M parameters work for each token, every expert's "
                         "weights, gradients and optimizer states are in memory")
        if a["positions_extended_to"]:
            lines.append(f"          (positions extended from the config's {a['max_positions']} to {a['seq_len']})")
        lines += [f"Warning:  {w}" for w in d.get("warnings", [])]
    lines += [
        *_days_lines(d),
        f"Your configuration, --methods {d['methods']} ({d['methods_label']}):",
        f"Compute:  {f['total']:.3g} FLOPs = {f['steps']:,} steps x {f['per_step']:.3g} FLOPs/step",
        f"          (model FLOPs, fwd + bwd: {f['convention']})",
        f"Peak:     {d['peak_flops_per_gpu'] / 1e12:,.1f} TFLOP/s per GPU ({d['precision']}, dense spec)",
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
    lines.append("(Memory and micro-batch are the memory model's predictions: academic_bench/estimate/memory.py.)")
    return "\n".join(lines)


CONFIG_ONLY = ("tokens", "seq_len", "global_batch", "precision")


def _answer_fields(ans: Answer, mfu: float | None) -> dict:
    """The study's answer (``academic_bench.answer``) as the estimate prints it, and a what-if at ``mfu``."""
    data = {"answer": ans.to_dict(), "days": ans.days,
            "days_range": [ans.days_low, ans.days_high] if ans.days_low is not None else None,
            "days_analytic": {"lower_bound": ans.bound_days}}
    if mfu is not None:
        data["what_if"] = {"mfu": mfu, "days": ans.bound_days / mfu, "label": "your --mfu: a what-if, not an answer"}
    return data


def config_estimate(args: argparse.Namespace) -> dict:
    """``estimate_summary`` for the decoder or encoder a config.json describes, with the study's answer for it."""
    from ..answer.decoder import decoder_answer
    from ..answer.encoder import encoder_answer
    from ..catalog.models.encoder_config import encoder_spec, is_encoder
    from ..catalog.models.from_config import shape_warnings

    missing = [f"--{k.replace('_', '-')}" for k in ("tokens", "seq_len") if getattr(args, k) is None]
    if missing:
        raise ConfigError(f"a config.json needs {' and '.join(missing)}: the tokens to train on and the sequence "
                          "length")
    precision = training_precision(args.gpu, args.precision)
    encoder = is_encoder(args.model)
    if encoder:  # a masked language model: answered from RoBERTa-large's evidence (``answer.encoder``)
        decoder = encoder_spec(args.model, seq_len=args.seq_len, tokens=args.tokens, global_batch=args.global_batch,
                               precision=precision)
    else:
        decoder = decoder_spec(args.model, seq_len=args.seq_len, tokens=args.tokens, precision=precision,
                               global_batch=DEFAULT_GLOBAL_BATCH if args.global_batch is None else args.global_batch)
    config = _config(argparse.Namespace(**{**vars(args), "model": decoder.spec.key}))
    params = _est().model_stats(decoder.spec).params
    moe = decoder.spec.moe
    active = params - (1.0 - moe.active_share) * moe.expert_params if moe else params
    if encoder:
        ans = encoder_answer(decoder.spec.key, config.gpu, config.n_gpus, facts=decoder.facts, methods=config.methods)
    else:
        ans = decoder_answer(decoder.spec.key, config.gpu, config.n_gpus, facts=decoder.facts, methods=config.methods)
    # The unaligned-vocabulary warning speaks of the work model's charge, which answers decoders only.
    warnings = [] if encoder else shape_warnings(decoder.facts)
    from ..cost import Assumptions

    lifespan = Assumptions().lifespan_years  # the cost model's, the paper's Section 4.1
    if ans.days is not None and ans.days > lifespan * DAYS_PER_YEAR:  # an absurd budget is flagged, not planned
        warnings.append(f"{ans.days:,.3g} days outlast the hardware they run on ({lifespan:g} years, the paper's "
                        f"lifespan): no machine trains {args.tokens:.3g} tokens; ask for fewer --tokens or more GPUs")
    return {"config_file": decoder.path, "architecture": decoder.facts, "params": params, "active_params": active,
            "precision_chosen": precision_words(args.gpu, args.precision, stored_dtype(args.model)),
            "warnings": warnings,
            **estimate_summary(config, args.host_memory), **_answer_fields(ans, args.mfu)}


def _cmd_estimate(args: argparse.Namespace) -> int:
    from ..answer import answer

    if args.mfu is not None and not 0 < args.mfu <= 1:
        raise ValueError(f"--mfu must be in (0, 1], got {args.mfu}")
    if cli_args.is_config_path(args.model):
        data = config_estimate(args)
    else:
        given = [f"--{k.replace('_', '-')}" for k in CONFIG_ONLY if getattr(args, k) is not None and k != "precision"]
        if given:
            raise ValueError(f"{', '.join(given)} {cli_args.applies(given)} to a config.json; {args.model} trains "
                             "its catalog recipe")
        config = _config(argparse.Namespace(**{**vars(args), "model": at_precision(args.model, args.precision)}))
        ans = answer(config.model, config.gpu, config.n_gpus)
        data = {**estimate_summary(config, args.host_memory), **_answer_fields(ans, args.mfu)}
        if config.model != args.model:  # another precision than the recipe's, asked for
            data["precision_chosen"] = (f"in {config.recipe.precision} (--precision; the recipe's is "
                                        f"{get_model(args.model).recipe.precision})")
    cli_args.emit(args, data, lambda: _text(data))
    # the estimate is printed either way; a question without an answer exits as cost, plan and export do
    return 0 if Answer.from_dict(data["answer"]).answered else cli_args.EXIT_NO_ANSWER


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("estimate", help="analytic days, predicted memory, max micro-batch and feasibility")
    cli_args.add_configuration(p)
    p.add_argument("--micro-batch", type=int, default=None,
                   help="micro-batch per GPU (default: the largest predicted to fit)")
    p.add_argument("--mfu", type=float, default=None,
                   help="a what-if: the days at this model-FLOPs utilisation, printed beside the study's answer "
                        "(never instead of it)")
    p.add_argument("--host-memory", type=cli_args.positive("--host-memory"), default=None, metavar="GIB",
                   help="host memory of the machine in GiB, for offloading (default: the paper's machine for the "
                        "GPU count, Appendix H: 64 GiB for 1 GPU, 128 for 2, 256 for 4, 512 for 8)")
    cli_args.add_config_args(p)
    p.set_defaults(func=_cmd_estimate, accepts_config=True, accepts_variant=True)


