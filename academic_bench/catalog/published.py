"""Training throughput that others measured and published, as data with provenance (data/published_throughput.csv).

Each row is one single-node training configuration (GPU type and count, model shape, sequence length, batch,
method) with the figure its source reports (tokens per second per GPU, or the time of one optimizer step), the
source's address and the line quoted from it that holds the figure. The study predicts each with the same shape
and settings to check its predictions against measurements it did not make.

Left out by design: whole-run totals (GPU-hours of a finished training run: they hold restarts, evaluation and
idle time, not a step's throughput), hand-written CUDA trainers (they measure kernels the study's PyTorch engine
does not run), and runs on more than one node. Sources so far: llm-foundry's MPT benchmark tables (H100 80GB,
A100 80GB, A100 40GB; FSDP full-shard, with and without activation checkpointing; the rows of 8 GPUs or fewer,
sequences up to 8,192 and models up to 13B), torchtitan's Llama 3.1 8B on 8 x H100 (96 GB at 500 W: not the
catalog's H100; Float8 rows left out) and a nanoGPT iteration log on 8 x A100. Nothing yet for the RTX 3090,
RTX 4090 or RTX A6000.
"""
from __future__ import annotations

import io
from importlib import resources

import pandas as pd

FIGURES = ("tokens_per_s_per_gpu", "step_time_ms")  # what a row's ``value`` may be
COLUMNS = ("gpu", "n_gpus", "model", "shape", "params", "seq_len", "micro_batch", "grad_accum", "global_batch",
           "precision", "method", "framework", "figure", "value", "quote_figure", "source", "url", "quote", "notes")


def load_published_throughput() -> pd.DataFrame:
    """Every published point, with ``tokens_per_s_per_gpu`` filled in for the rows that give a step's time
    (micro-batch x accumulation steps x sequence length per GPU, over the step)."""
    text = resources.files("academic_bench").joinpath("data/published_throughput.csv").read_text()
    df = pd.read_csv(io.StringIO(text), dtype={"quote_figure": str, "quote": str})
    unknown = sorted(set(df["figure"]) - set(FIGURES))
    if unknown:
        raise ValueError(f"data/published_throughput.csv: unknown figure(s) {unknown}; choose one of: "
                         f"{', '.join(FIGURES)}")
    step = df["figure"] == "step_time_ms"
    tokens = df["micro_batch"] * df["grad_accum"] * df["seq_len"]
    df["tokens_per_s_per_gpu"] = df["value"].where(~step, tokens / (df["value"] / 1e3)).astype(float)
    return df
