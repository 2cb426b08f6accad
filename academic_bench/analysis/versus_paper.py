"""The paper beside ours: its Table 1 (optimal) and Table 4 (naive) in long form with the MFU each cell
implies, and our days per setting next to them.

Paper MFU: ``model FLOPs of the whole recipe / (days x 86400 x GPUs x dense peak)``. The FLOPs follow the
project's convention where it covers the model (``estimate.model_flops_per_step``), and otherwise the paper's
own total (Figure 9(a)); the peak is the dense spec rate of the recipe's precision (fp32 recipes at the TF32 rate
in optimised runs, at the fp32 rate in naive ones).
"""
from __future__ import annotations


import pandas as pd

from ..catalog.units import SECONDS_PER_DAY
from ..catalog.hardware import catalog as gpu_catalog

from .best import best_per_setting, naive_per_setting, optimized_per_setting
from .facts import model_facts
from .frame import MFU_IMPLAUSIBLE, SETTING


# --- the paper beside ours ---------------------------------------------------------------------------------

PAPER_COLUMNS = [*SETTING, "days", "status", "source", "precision", "peak_basis", "peak_flops", "flops_total",
                 "flops_basis", "mfu", "mfu_min", "mfu_fig9", "implausible"]
# Families whose FLOPs are mostly convolutions: PyTorch lets cuDNN use TF32 for them by default, so even a
# naive fp32 run of these gets the TF32 rate (matrix multiplications stay at fp32 unless TF32 is switched on).
CONV_FAMILIES = ("convnext",)


def _peak_basis(precision: str, family: str, optimized: bool) -> str:
    if precision != "fp32":
        return precision
    return "tf32" if optimized or family in CONV_FAMILIES else "fp32"


def paper_cells(table: str = "table1") -> pd.DataFrame:
    """The paper's Table 1 (optimal) or Table 4 (naive) in long form, with the MFU each cell implies.

    ``mfu`` uses our FLOPs convention where it covers the model, else the paper's Figure 9(a) total;
    ``mfu_fig9`` always uses Figure 9(a). The paper prints whole days, so ``mfu_min`` uses days + 0.5: the
    lowest MFU the printed number allows. A cell is ``implausible`` when even ``mfu_min`` exceeds 0.75.
    fp32 recipes are rated at the TF32 peak in optimised runs (the free-lunch methods switch TF32 on) and for
    convolutional models (cuDNN's default), otherwise at the fp32 peak.
    """
    from ..catalog import paper

    loaders = {"table1": (paper.load_table1, True), "table4": (paper.load_table4, False)}
    if table not in loaders:
        raise ValueError(f"unknown paper table {table!r}; choose one of: {', '.join(loaders)}")
    load, optimized = loaders[table]
    df = load().merge(model_facts(), on="model", how="left")
    df["n_gpus"] = df["n_gpus"].astype(int)
    df["peak_basis"] = [_peak_basis(p, f, optimized) for p, f in zip(df["precision"], df["family"])]
    df["peak_flops"] = [gpu_catalog()[g].peak_flops(b) for g, b in zip(df["gpu"], df["peak_basis"])]
    df["flops_total"] = df["flops_ours"].fillna(df["flops_fig9"])
    df["flops_basis"] = df["flops_ours"].notna().map({True: "our convention", False: "paper Figure 9(a)"})
    per_day = SECONDS_PER_DAY * df["n_gpus"] * df["peak_flops"]
    df["mfu"] = df["flops_total"] / (df["days"] * per_day)
    df["mfu_min"] = df["flops_total"] / ((df["days"] + 0.5) * per_day)
    df["mfu_fig9"] = df["flops_fig9"] / (df["days"] * per_day)
    df["implausible"] = df["mfu_min"] > MFU_IMPLAUSIBLE
    return df[PAPER_COLUMNS].reset_index(drop=True)


COMPARISON_COLUMNS = [*SETTING, "setup", "ours_days", "ours_mfu", "ours_methods", "ours_micro_batch",
                      "paper_days", "paper_mfu", "paper_status", "ratio"]


def paper_comparison(df: pd.DataFrame, table: str = "table1") -> pd.DataFrame:
    """Our optimized (or naive, for Table 4) days per setting beside the paper's cell for the same hardware.

    ``ratio`` = our days / the paper's days (above 1: the paper's number is faster than what we measured).
    Settings the paper did not measure (an H200, say) keep NaN in the paper's columns.
    """
    ours = optimized_per_setting(df) if table == "table1" else naive_per_setting(df)
    if ours.empty:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    p = paper_cells(table)[[*SETTING, "days", "mfu", "status"]].rename(
        columns={"days": "paper_days", "mfu": "paper_mfu", "status": "paper_status"})
    o = ours[[*SETTING, "setup", "days", "mfu", "methods_label", "micro_batch"]].rename(
        columns={"days": "ours_days", "mfu": "ours_mfu", "methods_label": "ours_methods",
                 "micro_batch": "ours_micro_batch"})
    o["n_gpus"] = o["n_gpus"].astype(int)
    m = o.merge(p, on=SETTING, how="left")
    m["ratio"] = m["ours_days"] / m["paper_days"]
    return m[COMPARISON_COLUMNS].reset_index(drop=True)


TABLE1_COLUMNS = [*SETTING, "paper_days", "paper_status", "paper_mfu", "paper_implausible", "ours_days",
                  "ours_mfu", "ours_setup", "ours_methods"]


def table1_long(df: pd.DataFrame, table: str = "table1") -> pd.DataFrame:
    """Every cell of the paper's table (Table 1, or Table 4 for naive) and every setting we measured, one row
    each: the paper's days and implied MFU beside our best (or naive) days and MFU where we have them."""
    paper = paper_cells(table).rename(columns={"days": "paper_days", "status": "paper_status", "mfu": "paper_mfu",
                                               "implausible": "paper_implausible"})
    ours = optimized_per_setting(df) if table == "table1" else naive_per_setting(df)
    ours = ours[[*SETTING, "days", "mfu", "setup", "methods_label"]].rename(columns={
        "days": "ours_days", "mfu": "ours_mfu", "setup": "ours_setup", "methods_label": "ours_methods"})
    ours["n_gpus"] = ours["n_gpus"].astype(int)
    m = paper[[*SETTING, "paper_days", "paper_status", "paper_mfu", "paper_implausible"]].merge(
        ours, on=SETTING, how="outer")
    return m[TABLE1_COLUMNS].reset_index(drop=True)


def settings_comparison(df: pd.DataFrame) -> pd.DataFrame:
    """Our best configuration per setting beside the paper's Appendix J setting for the same hardware."""
    from ..catalog import paper

    cols = [*SETTING, "ours_methods", "ours_micro_batch", "ours_gas", "ours_days",
            "paper_free_lunch", "paper_checkpointing", "paper_sharding", "paper_offloading", "paper_mbs", "paper_gas"]
    best = best_per_setting(df)
    if best.empty:
        return pd.DataFrame(columns=cols)
    j = paper.load_appendix_j().rename(columns={
        "free_lunch": "paper_free_lunch", "checkpointing": "paper_checkpointing", "sharding": "paper_sharding",
        "offloading": "paper_offloading", "mbs": "paper_mbs", "gas": "paper_gas"})
    j["n_gpus"] = j["n_gpus"].astype(int)
    o = best.rename(columns={"methods_label": "ours_methods", "micro_batch": "ours_micro_batch",
                             "gas": "ours_gas", "days": "ours_days"})
    o["n_gpus"] = o["n_gpus"].astype(int)
    m = o.merge(j, on=SETTING, how="left")
    return m[cols].reset_index(drop=True)
