"""The memory model (``estimate.predict_memory``) against the peak memory the study's transformer decoders
allocated (``torch.cuda.max_memory_allocated``): the catalog's decoders in every setup's rows, every method, and the
decoders outside the catalog measured from their config.json (``<setup>/evidence/decoders/results.jsonl``). Each
is predicted by today's model at the micro-batch that ran, with the weights it ran with; ``share_within`` is the
share of them within ``MEMORY_TOLERANCE``.

FP8 training (beyond the paper: torchao's float8 recipes, compiled) is in the check like every other method: the
model counts what it saves (no 16-bit copy of the blocks' weights, the norms' outputs and the MLP's last
intermediate recomputed in backward; ``estimate.activations``).

The weights a row ran with: its ``ran.weights`` where it records them; before it did, the catalog's models were
built in fp32, and a config.json decoder in the dtype its config states (transformers 5 builds a model in its
config's ``torch_dtype``; fp32 where it states none), which trained it purely in 16 bits until the build was made
fp32 (``models.from_config``).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from .frame import runs_root

MEMORY_TOLERANCE = 0.10  # the memory model's target: within 10% of the measured peak
MEMORY_TARGET = 0.90  # on at least this share of the points
DECODER_RESULTS = "evidence/decoders/results.jsonl"
CHECK_COLUMNS = ["source", "setup", "model", "methods_label", "micro_batch", "weights", "predicted_gb", "measured_gb",
                 "error", "within"]
_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def decoder_key(config: Path, architecture: dict) -> str | None:
    """The key of the decoder ``config`` describes, registered with the settings its estimate.json was made with
    (``architecture``); None where the config is gone or broken."""
    from ..catalog.models.from_config import ConfigError, decoder_spec

    a = architecture
    try:
        return decoder_spec(config, seq_len=a["seq_len"], tokens=a["tokens"], global_batch=a["global_batch"],
                            precision=a["precision"]).spec.key
    except ConfigError:
        return None


def built_weights(row: dict, config: dict | None = None) -> str:
    """The dtype a row's weights were built in (module docstring): ``config`` is a config.json decoder's."""
    recorded = (row.get("ran") or {}).get("weights")
    if recorded:
        return str(recorded)
    if config is None:
        return "float32"
    return str(config.get("dtype") or config.get("torch_dtype") or "float32")


def memory_gb(model: str, gpu: str, n_gpus: int, methods, micro_batch: int, weights: str = "float32") -> float:
    """The memory model's peak allocated memory (GB) of ``model`` at ``micro_batch`` with weights built in
    ``weights`` (``built_weights``)."""
    from ..catalog.config import Config
    from ..estimate import predict_memory

    config = Config(model, gpu, int(n_gpus), methods=methods)
    return predict_memory(config, int(micro_batch), weight_bytes=_BYTES.get(weights, 4)).allocated / 1e9


def _catalog_rows(root: str | Path | None) -> list[dict]:
    """The ok step rows of the catalog's transformer decoders in every setup (``honesty.memory_model_error``)."""
    from ..catalog.models import get_model
    from .frame import runs_frame
    from .honesty import memory_model_error

    mem = memory_model_error(runs_frame(root))
    mem = mem[(mem["outcome"] == "ok") & mem["peak_memory_gb"].notna()]
    decoders = {m for m in mem["model"].unique()
                if get_model(m).task == "causal-lm" and get_model(m).transformer_shape is not None}
    return [{"source": "the study's setups", "setup": r.setup, "model": r.model, "methods_label": r.methods_label,
             "micro_batch": int(r.micro_batch), "weights": "float32",
             "predicted_gb": r.predicted_memory_gb,
             "measured_gb": r.peak_memory_gb} for r in mem[mem["model"].isin(decoders)].itertuples()]


def _config_decoder_rows(root: str | Path | None) -> list[dict]:
    """The measured rows of the decoders outside the catalog, each registered from its estimate.json."""
    from ..catalog.methods import Methods
    from ..results import ResultStore, status_of

    out = []
    for path in sorted(runs_root(root).glob(f"*/{DECODER_RESULTS}")):
        for row in ResultStore(path).rows():
            name = row["config"]["model"].split("@")[0]
            estimate = path.parent / name / "estimate.json"
            peaks = [p for p in row.get("peak_memory_gb") or [] if p is not None]
            if status_of(row) != "measured" or not estimate.exists() or not peaks:
                continue
            key = decoder_key(estimate.with_name("config.json"), json.loads(estimate.read_text())["architecture"])
            if key is None:
                continue
            c = row["config"]
            methods = Methods.from_dict(c["methods"])
            weights = built_weights(row, json.loads(estimate.with_name("config.json").read_text()))
            out.append({"source": "decoders outside the catalog", "setup": row["setup"], "model": name,
                        "methods_label": methods.label(), "micro_batch": row["micro_batch"],
                        "weights": weights, "measured_gb": max(peaks),
                        "predicted_gb": memory_gb(key, c["gpu"], c["n_gpus"], methods, row["micro_batch"], weights)})
    return out


def decoder_memory_check(root: str | Path | None = None) -> pd.DataFrame:
    """Every transformer decoder row the study measured, the memory model's prediction beside the peak it
    allocated (``error`` = predicted / measured - 1; ``within``: |error| <= ``MEMORY_TOLERANCE``)."""
    rows = _catalog_rows(root) + _config_decoder_rows(root)
    out = pd.DataFrame(rows, columns=CHECK_COLUMNS[:-2])
    out["error"] = out["predicted_gb"].astype(float) / out["measured_gb"].astype(float) - 1
    out["within"] = out["error"].abs() <= MEMORY_TOLERANCE
    return out[CHECK_COLUMNS]


def share_within(check: pd.DataFrame) -> float:
    """The share of ``decoder_memory_check``'s points within the tolerance (nan without any)."""
    e = check["error"].dropna()
    return float((e.abs() <= MEMORY_TOLERANCE).mean()) if len(e) else math.nan
