"""What the work model (``decoder_work``) reads besides the catalog decoders' kernel profiles, each from a file a
command produced:

- **the matrix-product rate by size** (``GemmCurve``): a linear layer's three training products (forward, input
  gradient, weight gradient) timed on a GPU by ``scripts/offline-gpu/gemm_sweep.py``
  (``<setup>/evidence/gemm/gemm.jsonl``), as a function of one product's FLOPs. Products of a few GFLOPs run far
  below the peak (too few output tiles for the GPU's SMs; a sweep timed back to back from Python also counted its
  own launches, and leaves those shapes out: ``results.gemm.launch_timed``), and the rate levels off
  from a few tens of GFLOPs: a decoder's small matrices (hidden 512, grouped key-value projections, short
  micro-batches) take longer per FLOP than Pythia's, whose profiles the rates come from; and an output layer
  whose vocabulary is no multiple of 8 runs on slower kernels (``GemmCurve.unaligned``, from the output-layer
  sweep beside the curve's);
- **the measured optimum** (``measured_optima``): the micro-batch of each catalog decoder's fastest measured
  free-lunch step on a setup. A profile taken at a smaller micro-batch than that (the profiler's buffers did not
  fit beside the optimum) has more idle and memory-bound time per unit of work than the configuration the work
  model predicts, so its rates would make every prediction too slow; it calibrates nothing;
- **attention's per-token part** (``attention_offset``): a fused attention kernel's time is not all in proportion
  to its FLOPs (layers x width x sequence x tokens): reading and writing the queries, keys, values, outputs and
  their gradients, and the diagonal blocks of the causal mask, grow with the tokens alone. Profiles of one
  decoder shape at two sequence lengths on one setup separate the two: the time per token goes as
  ``sequence + offset``, with the offset in tokens of sequence;
- **the GPU's streaming bandwidth** (``bandwidth``): bytes per second of the large element-wise kernels in the
  sweep of memory-bound kernels (``results.gemm.streaming_bandwidth``), at which the work model charges the
  passes over every weight that each micro-step makes (``work_units.weight_passes_s``).

``PLAIN`` is none of these (one rate whatever a product's size, all of attention in proportion to its FLOPs, every
profile used): the work model as it was before them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import pandas as pd

from ..catalog.hardware import get_gpu
from ..catalog.methods import FREE_LUNCH
from ..results.gemm import (GEMM_FILE, LAUNCH_BOUND, OUTPUT_LAYER_FILE, GemmCurve, curve_for,  # noqa: F401
                            gemm_curve, unaligned_slowness)  # (re-exported)
from ..results.gemm import gemm_curves as sweep_curves

DECODER_PROFILES = "evidence/decoders/profiles.jsonl"


@dataclass(frozen=True)
class Evidence:
    """The work model's evidence besides the profiles (module docstring)."""

    gemm: Mapping[str, GemmCurve] = field(default_factory=dict)  # by catalog GPU key
    optima: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (setup, model) -> measured micro-batch
    attention_offset: float = 0.0  # tokens of sequence
    # switch -> what it changes in the step (``switch_work.fit_switches``), fitted after the calibration points
    switches: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    bandwidth: Mapping[str, float] = field(default_factory=dict)  # catalog GPU key -> streaming bytes/s

    def bandwidth_for(self, gpu: str) -> float:
        """``gpu``'s streaming bandwidth from its sweep, else its datasheet's (which no kernel reaches: the
        passes over the weights come out shorter than they run)."""
        if gpu in self.bandwidth:
            return float(self.bandwidth[gpu])
        sheet = get_gpu(gpu).memory_bandwidth_gbps
        if sheet is None:
            raise ValueError(f"{gpu!r} has neither a sweep of memory-bound kernels nor a datasheet bandwidth")
        return float(sheet) * 1e9

    def curve_for(self, gpu: str) -> GemmCurve | None:
        """The sweep of ``gpu`` itself, else of a GPU of the same architecture (H200 has H100's chip: the same SMs
        and peak), else None (one rate whatever the size)."""
        return curve_for(self.gemm, gpu)


PLAIN = Evidence()


def gemm_curves(root: str | Path | None = None) -> dict[str, GemmCurve]:
    """Every setup's GEMM sweep under the runs ``root`` (``results.gemm.gemm_curves``)."""
    from ..analysis import runs_root

    return sweep_curves(runs_root(root))


def measured_optima(runs: pd.DataFrame) -> dict[tuple[str, str], int]:
    """(setup, model) -> the micro-batch of the fastest synchronised free-lunch step measured on one GPU."""
    from ..analysis import measured_rows

    r = measured_rows(runs) if not runs.empty else runs
    if r.empty:
        return {}
    r = r[(r["methods_label"] == FREE_LUNCH.label()) & (r["n_gpus"] == 1)]
    best = r.sort_values(["step_time_s", "config_id"]).groupby(["setup", "model"]).head(1)
    return {(s, m): int(b) for s, m, b in zip(best["setup"], best["model"], best["micro_batch"])}


def offset_from(pairs: list[tuple[float, float, float, float]]) -> float:
    """The attention offset (tokens of sequence) from profiles of one shape at two sequence lengths: each pair is
    (sequence 1, attention seconds per token at it, sequence 2, seconds per token at it); seconds per token go as
    ``sequence + offset``. The median over pairs; 0 without any (all of attention in proportion to its FLOPs)."""
    import statistics

    found = []
    for s1, u1, s2, u2 in pairs:
        ratio = u1 / u2
        if s1 != s2 and ratio != 1:
            found.append(max(0.0, (s1 - ratio * s2) / (ratio - 1)))
    return float(statistics.median(found)) if found else 0.0


def decoder_profiles(root: str | Path | None = None) -> tuple[pd.DataFrame, dict[str, str], dict[str, dict]]:
    """The profiles of decoders outside the catalog (``<setup>/evidence/decoders/profiles.jsonl``, the latest of each
    configuration, ``analysis.profiles``' columns), the registered key of each profile's model (from the
    config.json and the settings its estimate.json was made with), and each model's estimate architecture, with
    its config (``config``) and the dtype its profiled weights were built in (``weights``)."""
    import json

    from ..analysis import latest_profiles, profile_frame, runs_root
    from ..analysis.memory_check import built_weights, decoder_key
    from ..results import read_lines

    frames, keys, shapes = [], {}, {}
    for path in sorted(runs_root(root).glob(f"*/{DECODER_PROFILES}")):
        # One profile per configuration, whatever its micro-batch: ``by_kind`` sets one step beside each.
        entries = latest_profiles((p for _, p in read_lines(path)), by=("config_id",))
        frames.append(profile_frame(entries))
        for model in {p["config"]["model"] for p in entries}:
            estimate = path.parent / model.split("@")[0] / "estimate.json"
            if not estimate.exists():
                continue
            a = json.loads(estimate.read_text())["architecture"]
            key = decoder_key(estimate.with_name("config.json"), a)
            if key is None:
                continue
            keys[model] = key
            config = json.loads(estimate.with_name("config.json").read_text())
            entry = next(p for p in entries if p["config"]["model"] == model)
            shapes[model] = {**a, "config": config, "weights": built_weights(entry, config)}
    frame = pd.concat(frames) if frames else profile_frame([])
    return frame, keys, shapes


def attention_offset(frame: pd.DataFrame, shapes: Mapping[str, dict]) -> float:
    """``offset_from`` the profiled decoders (``decoder_profiles``) that share a config.json and a setup at two
    sequence lengths, free-lunch on one GPU."""
    p = frame[(frame["kind"] == "attention") & (frame["methods_label"] == FREE_LUNCH.label())
              & (frame["n_gpus"] == 1) & frame["model"].isin(list(shapes))]
    per = []
    for (setup, model), g in p.groupby(["setup", "model"]):
        first = g.iloc[0]
        seq = int(shapes[model]["seq_len"])
        tokens = int(first["micro_batch"]) * int(first["gas"]) * seq
        per.append((setup, repr(sorted(shapes[model]["config"].items())), seq, float(g["seconds"].sum()) / tokens))
    pairs = [(s1, u1, s2, u2) for i, (a, c, s1, u1) in enumerate(per) for (b, d, s2, u2) in per[i + 1:]
             if (a, c) == (b, d) and s1 != s2]
    return offset_from(pairs)


@lru_cache(maxsize=8)
def runs_evidence(root: str | None = None) -> Evidence:
    """The work model's evidence from the runs under ``root`` (default the shipped runs)."""
    from ..analysis import runs_frame

    frame, _, shapes = decoder_profiles(root)
    return Evidence(gemm=gemm_curves(root), optima=measured_optima(runs_frame(root)),
                    attention_offset=attention_offset(frame, shapes), bandwidth=streaming_bandwidths(root))


def streaming_bandwidths(root: str | Path | None = None) -> dict[str, float]:
    """Catalog GPU key -> the streaming bandwidth of its sweep of memory-bound kernels under the runs ``root``."""
    from ..analysis import runs_root
    from ..results.gemm import memory_sweeps, streaming_bandwidth

    found = {gpu: streaming_bandwidth(lines) for gpu, lines in memory_sweeps(runs_root(root)).items()}
    return {gpu: b for gpu, b in found.items() if b is not None}


def evidence_record(e: Evidence) -> dict:
    """``e`` as plain JSON (kept with the answers' calibration, ``store.calibration``), every digit kept."""
    return {"gemm": {k: {"gpu": c.gpu, "flops": list(c.flops), "rates": list(c.rates), "source": c.source,
                         "unaligned": float(c.unaligned)} for k, c in sorted(e.gemm.items())},
            "optima": [[s, m, int(b)] for (s, m), b in sorted(e.optima.items())],
            "attention_offset": float(e.attention_offset),
            "switches": {k: dict(v) for k, v in sorted(e.switches.items())},
            "bandwidth": {k: float(v) for k, v in sorted(e.bandwidth.items())}}


def evidence_of(record: Mapping | None) -> Evidence:
    """The ``Evidence`` an ``evidence_record`` kept (``PLAIN`` where none was)."""
    if not record:
        return PLAIN
    return Evidence(gemm={k: GemmCurve(c["gpu"], tuple(c["flops"]), tuple(c["rates"]), c["source"],
                                       float(c.get("unaligned", 1.0))) for k, c in record["gemm"].items()},
                    optima={(s, m): int(b) for s, m, b in record["optima"]},
                    attention_offset=float(record["attention_offset"]),
                    switches={k: dict(v) for k, v in record.get("switches", {}).items()},
                    bandwidth={k: float(v) for k, v in record.get("bandwidth", {}).items()})
