"""What the study's phases say of offloading's per-micro-step copies: the evidence for
``method_costs.COPIES_EXPOSED``, the methods whose copies the transfer model carries by accumulation steps."""
from __future__ import annotations

import pandas as pd

from ..catalog.methods import Methods
from .method_costs import micro_step_copy_s

EXCESS_COLUMNS = ["setup", "model", "micro_batch", "sharding", "excess_s", "copies_s", "ratio", "base_range_s"]
# The decoders the rule rests on: on smaller ones a fixed cost per micro-step weighs as much as the copies.
RULE_MIN_PARAMS = 1e9


def micro_step_excess(root: str | None = None, min_params: float = 0.0) -> pd.DataFrame:
    """Every counted one-GPU offloaded row without checkpointing beside the ZeRO-1 + offload row of the same setup,
    model and micro-batch (ZeRO-1 copies nothing in its micro-steps): ``excess_s``, how much longer its
    accumulating micro-step is, and ``copies_s``, what ``method_costs.micro_step_copy_s`` charges one micro-step
    (the bytes over the host link at its datasheet rate); ``ratio`` is the first over the second. Near 1 the
    copies are exposed and go with the accumulation steps. Models below ``min_params`` parameters are left out.
    The ZeRO-1 micro-step is the median of every measurement of it at that micro-batch by the row's engine revision:
    the excess is a few percent of a micro-step, within the machine-to-machine spread of one measurement, so one
    measurement of the base is not enough (Pythia-1B's ZeRO-1 + offload on one H200 measured on three days spans
    as much as the copies of shard-grad-op). ``base_range_s`` is how far those measurements of the base lie apart:
    an excess cannot be known closer than that."""
    from ..analysis import METHOD_COLUMNS, counted, frame_from_rows, runs_root
    from ..catalog.hardware import get_gpu
    from ..catalog.models import get_model
    from ..estimate import BYTES, model_stats
    from ..results import load_runs, rows_to_read

    shipped = load_runs(runs_root(root))  # read once: the latest rows (runs_frame's) and every measurement
    rows = counted.results(frame_from_rows(rows_to_read(shipped), checked=True))
    if rows.empty:
        return pd.DataFrame(columns=EXCESS_COLUMNS)
    every = frame_from_rows(shipped)
    every = every[(every["status"] == "measured") & (every["timing"] == "synced") & (every["mode"] == "step")
                  & every["accumulate_median_s"].notna()]
    rows = rows[(rows["n_gpus"] == 1) & rows["offload"].astype(bool) & ~rows["checkpointing"].astype(bool)
                & rows["accumulate_median_s"].notna()]
    # Paired only with rows of the same switches besides the sharding and offload that tell them apart.
    same = ["setup", "model", "micro_batch", *(c for c in METHOD_COLUMNS if c not in ("sharding", "offload"))]
    out = []
    for (setup, model, mb, *_), g in rows.groupby(same, dropna=False):
        params = float(model_stats(model).params)
        if (g["sharding"] != "zero1").all() or params < min_params:
            continue
        zero1 = g[g["sharding"] == "zero1"].iloc[0]
        bases = every[(every["setup"] == setup) & (every["config_id"] == zero1["config_id"])
                      & (every["micro_batch"] == mb)]
        width = BYTES[get_model(model).recipe.precision]
        for _, r in g[g["sharding"] != "zero1"].iterrows():
            same_engine = bases.loc[bases["engine"] == r["engine"], "accumulate_median_s"]
            if same_engine.empty:
                continue
            gas = int(r["gas"])
            copies = micro_step_copy_s(Methods(sharding=r["sharding"], offload=True), 1, get_gpu(r["gpu"]), params,
                                       width, gas) / gas
            excess = float(r["accumulate_median_s"]) - float(same_engine.median())
            out.append({"setup": setup, "model": model, "micro_batch": int(mb), "sharding": r["sharding"],
                        "excess_s": excess, "copies_s": copies, "ratio": excess / copies if copies else None,
                        "base_range_s": float(same_engine.max() - same_engine.min())})
    return pd.DataFrame(out, columns=EXCESS_COLUMNS)
