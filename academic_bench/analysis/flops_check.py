"""The study's model FLOPs beside the library's count, and the measured rows a change of the count moves.

``flops_check``: FLOPs per token of one forward and backward, by the study's dense convention
(``estimate.dense_flops_terms``: attention over heads x head size) beside torch's ``FlopCounterMode`` on the model
built on the meta device (``estimate.counted_flops``), for every catalog transformer the convention counts and every
decoder config.json the runs keep as evidence (``<setup>/evidence/decoders/<name>/config.json``, at the sequence
its estimate.json was made with). ``by_hidden`` is the same convention with attention counted over the hidden
size, as the study counted before heads x head size; it differs where a config states a head size of its own.

``moved_rows``: the measured rows whose stored model FLOPs are not today's count: the MFU they stored beside the
MFU today's count gives (``results.recounted``, what every reader takes).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .frame import runs_root
from .memory_check import DECODER_RESULTS, decoder_key

CHECK_COLUMNS = ["model", "source", "seq_len", "hidden", "attention_width", "by_hidden", "ours", "library",
                 "difference", "moved"]
MOVED_COLUMNS = ["setup", "on", "model", "methods_label", "stored_flops", "flops", "stored_mfu", "mfu", "change"]


def _evidence(root: str | Path | None) -> list[tuple[str, str]]:
    """(registered key, folder) of every decoder config.json kept as evidence, registered with the settings of the
    estimate.json beside it."""
    out = []
    for estimate in sorted(runs_root(root).glob("*/evidence/decoders/*/estimate.json")):
        key = decoder_key(estimate.with_name("config.json"), json.loads(estimate.read_text())["architecture"])
        if key is not None:
            out.append((key, str(estimate.parent.relative_to(runs_root(root)))))
    return out


def flops_check(root: str | Path | None = None, moved_only: bool = False) -> pd.DataFrame:
    """Per model: FLOPs per token by the study (``ours``), by the study counting attention over the hidden size
    (``by_hidden``), by FlopCounterMode (``library``); ``difference`` = ours / library - 1, ``moved`` = ours /
    by_hidden - 1 (module docstring). ``moved_only``: only the models whose count moved (counting with the library
    builds each model on the meta device, seconds each)."""
    from ..catalog.models import CATALOG, get_model
    from ..estimate import counted_flops, dense_flops_terms, flops_per_sample, model_stats

    models = [(k, "catalog") for k, s in CATALOG.items() if s.transformer_shape is not None] + _evidence(root)
    rows = []
    for key, source in models:
        spec = get_model(key)
        seq = spec.recipe.seq_len
        layers, hidden = spec.transformer_shape(False)
        st = model_stats(key)
        base, per_position = dense_flops_terms(st.params - st.input_embedding + st.tied_output, layers, hidden)
        ours, by_hidden = flops_per_sample(key) / seq, float(base + per_position * seq)
        if moved_only and ours == by_hidden:
            continue
        rows.append({"model": key.split("@")[0], "source": source, "seq_len": seq, "hidden": hidden,
                     "attention_width": st.attention_width, "by_hidden": by_hidden, "ours": ours,
                     "library": counted_flops(key) / seq})
    out = pd.DataFrame(rows, columns=CHECK_COLUMNS)
    out["difference"] = out["ours"] / out["library"] - 1
    out["moved"] = out["ours"] / out["by_hidden"] - 1
    return out


def moved_rows(root: str | Path | None = None) -> pd.DataFrame:
    """Every measured row, of the setups and of the decoders kept as evidence, whose stored model FLOPs per step
    are not today's count: its stored MFU and the MFU today's count gives (``change`` = mfu / stored_mfu - 1)."""
    from ..catalog.methods import Methods
    from ..results import ResultStore, load_runs, recounted, status_of
    from .facts import setup_label

    _evidence(root)  # the decoders registered, so that their rows can be counted
    rows = list(load_runs(runs_root(root)))
    rows += [r for path in sorted(runs_root(root).glob(f"*/{DECODER_RESULTS}")) for r in ResultStore(path).rows()]
    out = []
    for row in rows:
        again = recounted(row) if status_of(row) == "measured" else {}
        if not again or again["model_flops_per_step"] == row["model_flops_per_step"]:
            continue
        out.append({"setup": row["setup"], "on": setup_label(row["config"]["gpu"], row["config"]["n_gpus"]),
                    "model": row["config"]["model"].split("@")[0],
                    "methods_label": Methods.from_dict(row["config"]["methods"]).label(),
                    "stored_flops": float(row["model_flops_per_step"]),
                    "flops": float(again["model_flops_per_step"]), "stored_mfu": float(row["mfu"]),
                    "mfu": float(again["mfu"])})
    frame = pd.DataFrame(out, columns=MOVED_COLUMNS)
    frame["change"] = frame["mfu"] / frame["stored_mfu"] - 1
    return frame
