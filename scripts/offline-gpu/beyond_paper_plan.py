"""The BENCH list (scripts/offline-gpu/job.sh, part ``bench``) that measures the switches beyond the paper on one GPU
of a setup, and validates each method class they make:

    python3 scripts/offline-gpu/beyond_paper_plan.py SETUP GPU        e.g. h100x1 h100-80gb

Measured: Pythia-160M, -1B, -2.8B and -6.9B and one config.json decoder with a large vocabulary (Llama-3.2-1B: its
config states Pythia-1B's hidden size, 2048, and a vocabulary of 128,256 against Pythia's 50,304, so the fused
cross-entropy has more logits to save at the same width), each with every switch that applies
to it on the GPU alone (``config.beyond_paper_space``), Pythia-1B (the study's first target) with the sets that
combine them, and Pythia-6.9B (hidden size 4096, where FP8 is said to start paying) with the fused cross-entropy
beside each FP8 recipe. Each entry's micro-batch is searched, as the study's rows are. Then each method class those
entries make (``methods.validation_class``) is validated once on the setup (``--validate 3``), on the first of the
Pythia models above where it applies (the cheapest): its validation speaks for every model's rows of that class on
the setup, the decoder's included.

Every entry passes the bench command's own checks before it is printed; each switch that does not apply to a model
is printed below the list with the reason, as a comment. The output is the plan kept in
notebooks/runs/h100x1/evidence/beyond-paper.md (tests/test_beyond_paper_plan.py keeps the two in step).
"""
from __future__ import annotations

import sys
from pathlib import Path

from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import BEYOND_SWITCHES, FREE_LUNCH, parse_methods, validation_class
from academic_bench.catalog.models.from_config import decoder_spec
from academic_bench.results import ResultStore

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("pythia-160m", "pythia-1b", "pythia-2.8b", "pythia-6.9b")
DECODER = "notebooks/runs/h100x1/evidence/decoders/llama-3.2-1b/config.json"
DECODER_ARGS = "--tokens 3e11 --seq-len 2048"  # the settings its free-lunch row and estimate were made with
SETS = {"pythia-1b": ("bf16w+fused-ce", "bf16w+fused-ce+fp8-tensorwise", "bf16w+fused-ce+fp8-rowwise"),
        "pythia-6.9b": ("fused-ce+fp8-tensorwise", "fused-ce+fp8-rowwise")}


def decoder_key() -> str:
    seq = int(DECODER_ARGS.split("--seq-len ")[1])
    tokens = float(DECODER_ARGS.split("--tokens ")[1].split()[0])
    return decoder_spec(ROOT / DECODER, seq_len=seq, tokens=tokens).spec.key


def decoder_baseline_measured(setup: str) -> bool:
    """Whether the setup's decoders file has the decoder's free-lunch row measured (its paper counterpart)."""
    path = ROOT / "notebooks" / "runs" / setup / "evidence" / "decoders" / "results.jsonl"
    key = decoder_key()
    return path.exists() and any(r["config"]["model"] == key and r["outcome"] == "ok" and r["mode"] == "step"
                                 and r["config"]["methods"] == FREE_LUNCH.to_dict() for r in ResultStore(path).rows())


def plan(setup: str, gpu: str) -> tuple[list[str], list[str]]:
    """(the BENCH entries, in order: measurements, then one validation per method class; the switches left out,
    each with the reason)."""
    entries, left_out, classes = [], [], {}
    out_decoders = f"--out notebooks/runs/{setup}/evidence/decoders/results.jsonl"
    for model in (*MODELS, "decoder"):
        key = decoder_key() if model == "decoder" else model
        name = f"--model {DECODER} {DECODER_ARGS} {out_decoders}" if model == "decoder" else f"--model {model}"
        wanted = ["free-lunch"] if model == "decoder" and not decoder_baseline_measured(setup) else []
        wanted += [f"free-lunch+{s}" for s in (*BEYOND_SWITCHES, *SETS.get(model, ()))]
        for spec in wanted:
            config = Config(key, gpu, 1, methods=parse_methods(spec))
            reason = config.methods_reason()
            if reason:
                left_out.append(f"{model} {spec}: {reason}")
                continue
            config.check()
            entries.append(f"{name} --methods {spec}")
            if config.methods.beyond_paper:
                classes.setdefault(validation_class(config.methods, 1), spec)
    # each class validated on the cheapest model it applies to: its validation speaks for the class on the setup
    validations = [f"--model {next(m for m in MODELS if not Config(m, gpu, 1, methods=parse_methods(spec)).methods_reason())}"
                   f" --methods {spec} --validate 3" for spec in classes.values()]
    return entries + validations, left_out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    entries, left_out = plan(*argv)
    print(f'BENCH="{"; ".join(entries)}"')
    for line in left_out:
        print(f"# not measured: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
