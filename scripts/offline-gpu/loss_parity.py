"""Loss parity of a switch beyond the paper against the plain free lunch: a small bf16 decoder trained STEPS
optimizer steps with ``free-lunch`` and with ``free-lunch+SWITCH``, from the same initial weights on the same
batches, and the reference trained a second time to show the run-to-run noise:

    python3 scripts/offline-gpu/loss_parity.py SWITCH [STEPS] [OUT.json]     (default 300 steps, SWITCH.json)

SWITCH is one of bf16w, fused-ce, fp8-tensorwise, fp8-rowwise (or several joined by '+'). The decoder has
Pythia-160M's shape with a bf16 recipe (sequence 512, global batch 32, micro-batch 8: four micro-steps a step, so
accumulation counts). Its data are fresh every step, never repeated, drawn from a fixed random first-order Markov
chain (``markov_chain``: ``CHAIN_TOKENS`` tokens, each followed by one of ``CHAIN_NEXT``, with fixed random
probabilities): a language with structure to learn, so the loss falls from ln(vocabulary) towards the chain's
entropy (written to the output) and a switch that hurts learning shows. (Random tokens cannot be learned, and a few batches cycled are memorised to a loss near zero, where
a relative difference means nothing.)

Tolerance: the switch passes when the mean loss of every 10 consecutive steps (``WINDOW``) is within 2%
(``TOLERANCE``, relative) of the reference's mean over the same steps; one that does not is reported as failing
and never recommended (``analysis.beyond``). Windows, not single steps, because a switch that changes the
rounding moves each step's loss a little either way; a drift that a window shows is the switch's. The output
states the tolerance and the verdict, and the JSON keeps both loss curves, the repeated reference's, every
window's difference and the largest.

``PROBE_DEVICE=cpu`` is a dry run: a two-layer decoder 64 wide, in sequences of 64, for a few steps, with ``kernels``
in place of ``free-lunch`` (compiling takes minutes on a CPU), to check the script end to end. Its verdict is no
evidence: on the CPU the autocast, the kernels and the rounding are not the GPU's. A switch that cannot run on
the device stops with the reason (exit status 2): Liger's fused cross-entropy needs a CUDA GPU.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

from academic_bench.catalog.config import Config
from academic_bench.catalog.hardware import match_name
from academic_bench.catalog.methods import BEYOND_SWITCHES, device_reason, parse_methods
from academic_bench.catalog.models.from_config import decoder_spec
from academic_bench.measure.stepper import Stepper

SHAPE = {"model_type": "gpt_neox", "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
         "intermediate_size": 3072, "vocab_size": 50304, "max_position_embeddings": 2048, "rotary_pct": 0.25,
         "use_parallel_residual": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
SEQ, BATCH, MICRO = 512, 32, 8
CHAIN_TOKENS, CHAIN_NEXT = 4096, 8  # the synthetic language: its alphabet, and how many tokens may follow each
DRY_RUN = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 256,
           "vocab_size": 512}  # on the CPU, in sequences of DRY_RUN_SEQ (bf16 products are slow on a CPU)
DRY_RUN_SEQ, DRY_RUN_STEPS = 64, 4
TOLERANCE = 0.02  # every WINDOW-step mean loss within 2% (relative) of the reference's
WINDOW = 10


def markov_chain(vocab: int, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """A fixed random first-order Markov chain over ``min(CHAIN_TOKENS, vocab)`` tokens, each followed by one of
    ``CHAIN_NEXT`` with fixed random probabilities: (successors, their probabilities), one row per token."""
    g = torch.Generator().manual_seed(seed)
    tokens = min(CHAIN_TOKENS, vocab)
    successors = torch.randint(0, tokens, (tokens, CHAIN_NEXT), generator=g)
    return successors, torch.softmax(2 * torch.randn(tokens, CHAIN_NEXT, generator=g), dim=-1)


def chain_entropy(chain: tuple[torch.Tensor, torch.Tensor]) -> float:
    """The next token's entropy in nats, averaged over the tokens: about what a model that learned the chain
    reaches (the average is uniform, not over the chain's stationary distribution)."""
    probs = chain[1]
    return float(-(probs * probs.log()).sum(-1).mean())


def markov_batches(chain: tuple[torch.Tensor, torch.Tensor], n: int, micro: int, seq: int,
                   seed: int = 2) -> list[dict[str, torch.Tensor]]:
    """``n`` micro-batches of sequences drawn from ``chain``: the same batches for every run of one ``seed``."""
    successors, probs = chain
    g = torch.Generator().manual_seed(seed)
    ids = torch.empty(n * micro, seq, dtype=torch.long)  # every sequence at once: one draw per position
    ids[:, 0] = torch.randint(0, len(successors), (n * micro,), generator=g)
    for t in range(1, seq):
        pick = torch.multinomial(probs[ids[:, t - 1]], 1, generator=g).squeeze(1)
        ids[:, t] = successors[ids[:, t - 1], pick]
    return [{"input_ids": b, "labels": b} for b in ids.split(micro)]


def curve(key: str, methods: str, batches: list[dict[str, torch.Tensor]], device: str, gpu: str) -> list[float]:
    """One training run's loss per optimizer step over ``batches`` (the micro-steps' losses summed, each already
    divided by the accumulation count, so a step's loss is the mean over its global batch)."""
    cfg = Config(key, gpu, 1, methods=parse_methods(methods))
    torch.manual_seed(0)  # the same initial weights in every run
    gas, losses = BATCH // MICRO, []
    stepper = Stepper(cfg, MICRO, gas, device)
    for step in range(len(batches) // gas):
        total = torch.zeros((), device=device)
        for i in range(gas):
            total += stepper.micro_step(batches[step * gas + i], sync=i == gas - 1).float()
        stepper.optimizer_step()
        losses.append(float(total))
    stepper.close()
    return losses


def window_differences(mine: list[float], ref: list[float], window: int = WINDOW) -> list[float]:
    """Relative difference of the mean loss of each ``window`` consecutive steps (the last window may be short)."""
    out = []
    for start in range(0, len(ref), window):
        a, b = mine[start:start + window], ref[start:start + window]
        out.append(abs(sum(a) / len(a) - sum(b) / len(b)) / (sum(b) / len(b)))
    return out


def parity(switch: str, steps: int, device: str) -> dict:
    """Both runs, the reference's repeat and the verdict, as the JSON the script writes."""
    wrong = [s for s in switch.split("+") if s not in BEYOND_SWITCHES]
    if wrong or not switch:
        raise ValueError(f"unknown switch {wrong[0] if wrong else switch!r}; choose among: {', '.join(BEYOND_SWITCHES)}")
    base = "free-lunch" if device == "cuda" else "kernels"  # a dry run does not compile
    methods = (base, f"{base}+{switch}")
    reason = device_reason(parse_methods(methods[1]), device)
    if reason:
        raise ValueError(f"{switch} cannot run on the {device.upper()}: {reason}")
    named = match_name(torch.cuda.get_device_name()) if device == "cuda" else None
    gpu = named.key if named else "h100-80gb"  # the Config needs a catalog GPU; the device is recorded as it is
    folder = Path(tempfile.mkdtemp()) / "pythia-160m-shape-bf16"
    folder.mkdir()
    shape, seq = (SHAPE, SEQ) if device == "cuda" else ({**SHAPE, **DRY_RUN}, DRY_RUN_SEQ)
    (folder / "config.json").write_text(json.dumps(shape))
    key = decoder_spec(folder / "config.json", seq_len=seq, tokens=1e9, global_batch=BATCH).spec.key
    if device == "cuda":
        Config(key, gpu, 1, methods=parse_methods(methods[1])).check()  # the switch applies to this model and GPU
    # the same fresh batches, in the same order, for every run
    chain = markov_chain(shape["vocab_size"])
    batches = markov_batches(chain, steps * (BATCH // MICRO), MICRO, seq)
    curves, seconds = {}, {}
    for name, m in (("reference", methods[0]), ("switch", methods[1]), ("reference_repeat", methods[0])):
        t0 = time.perf_counter()
        curves[name] = curve(key, m, batches, device, gpu)
        seconds[name] = time.perf_counter() - t0
    diffs = window_differences(curves["switch"], curves["reference"])
    noise = window_differences(curves["reference_repeat"], curves["reference"])
    passed = max(diffs) <= TOLERANCE
    return {"switch": switch, "methods": {"reference": methods[0], "switch": methods[1]}, "shape": shape,
            "seq_len": seq, "global_batch": BATCH, "micro_batch": MICRO,
            "data": {"kind": "first-order Markov chain, fresh batches every step", "tokens": min(CHAIN_TOKENS,
                     shape["vocab_size"]), "successors": CHAIN_NEXT, "chain_seed": 1, "batch_seed": 2,
                     "entropy_nats": chain_entropy(chain)},
            "steps": steps, "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
            "dry_run": device != "cuda", "torch": torch.__version__,
            "tolerance": {"relative": TOLERANCE, "window_steps": WINDOW,
                          "rule": f"every {WINDOW}-step mean loss within {TOLERANCE:.0%} (relative) of the "
                                  "reference's mean over the same steps"},
            "losses": curves, "seconds": seconds, "window_differences": diffs,
            "largest_window_difference": max(diffs), "final_window_difference": diffs[-1],
            "noise_window_differences": noise, "largest_noise_difference": max(noise),
            "largest_step_difference": max(abs(a - b) / b for a, b in zip(curves["switch"], curves["reference"])),
            "passed": passed}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    device = os.environ.get("PROBE_DEVICE", "cuda")
    if not argv:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    switch = argv[0]
    steps = int(argv[1]) if len(argv) > 1 else (300 if device == "cuda" else DRY_RUN_STEPS)
    out = Path(argv[2] if len(argv) > 2 else f"{switch}.json")
    try:
        result = parity(switch, steps, device)
    except ValueError as exc:
        print(f"loss_parity: {exc}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    ref, mine = result["losses"]["reference"], result["losses"]["switch"]
    verdict = "PASSED" if result["passed"] else "FAILED"
    print(f"{switch}: {verdict} ({'dry run on the CPU, no evidence; ' if result['dry_run'] else ''}tolerance: "
          f"{result['tolerance']['rule']}). {steps} steps: {result['methods']['reference']} {ref[0]:.4f} -> "
          f"{ref[-1]:.4f}, {result['methods']['switch']} {mine[0]:.4f} -> {mine[-1]:.4f}; largest window difference "
          f"{result['largest_window_difference']:.3%} (the reference against itself: "
          f"{result['largest_noise_difference']:.3%}); wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
