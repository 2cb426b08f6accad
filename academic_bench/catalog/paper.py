"""The published numbers of "$100K or 100 Days" (Khandelwal et al., 2024), as data with provenance.

Each CSV under ``academic_bench/data/paper_*.csv`` was transcribed cell by cell from the paper text
(/work/shared/paper/100k-or-100-days.md, converted from the PDF). Every row carries a ``source`` column that
names the table/figure, row and column it came from; cells the conversion garbled carry a ``note`` saying how
they were read. These are the paper's facts, used with attribution; our own measurements live elsewhere.

Things a reader should know before using them:

- Tables 1 and 4 (``load_table1``, ``load_table4``): ``days`` is NaN where ``status`` is ``infeasible`` (the
  paper prints a dash) or ``unreadable`` (one Table 4 cell lost by the conversion: ConvNeXt on 1 H100).
- Appendix J (``load_appendix_j``): the PDF merges the cells of up to four rows, and the conversion dropped
  dashes and check marks from those merged cells. ``inferred_fields`` lists, per row, the fields decided from
  context rather than read one-to-one; ``note`` gives the reasoning. Where the text cannot decide, the value is
  missing (NA). The four ViT/H100 rows are absent from the converted text and are all NA.
- Figure 9(b) (GPU throughputs) and Figure 6(b) (GPU-days chart) are images whose values are not in the text,
  so there is no loader for them.
"""

from __future__ import annotations

import re

from importlib import resources
from typing import TYPE_CHECKING, Iterable

import pandas as pd

if TYPE_CHECKING:  # importlib.resources.abc is 3.11+; only the annotation needs it
    from importlib.resources.abc import Traversable

DATA_PACKAGE = "academic_bench"
GPU_KEYS = ("rtx3090", "a6000", "a100-80gb", "h100-80gb")
GPU_COUNTS = (1, 2, 4, 8)
MODEL_KEYS = (
    "pythia-160m", "pythia-410m", "pythia-1b", "pythia-2.8b", "pythia-6.9b",
    "roberta-large", "mamba-2.8b", "convnext-xlarge", "vit-large",
)
# Global batch (sequences or images per optimizer step) from Table 3; Appendix J's n_gpus*mbs*gas must match.
GLOBAL_BATCH = {
    "pythia-160m": 1024, "pythia-410m": 1024, "pythia-1b": 1024, "pythia-2.8b": 1024, "pythia-6.9b": 1024,
    "roberta-large": 8192, "mamba-2.8b": 128, "convnext-xlarge": 4096, "vit-large": 4096,
}
SHARDING_VALUES = ("none", "zero1", "zero2", "zero3", "fsdp_shard_grad_op", "fsdp_full_shard")
DAYS_STATUS = ("measured", "infeasible", "unreadable")

_DAYS_COLUMNS = ("model", "size", "gpu", "n_gpus", "days", "printed", "status", "note", "source")
_COLUMNS: dict[str, tuple[str, ...]] = {
    "paper_table1_optimal_days.csv": _DAYS_COLUMNS,
    "paper_table4_naive_days.csv": _DAYS_COLUMNS,
    "paper_appendix_j_settings.csv": (
        "model", "gpu", "n_gpus", "free_lunch", "checkpointing", "sharding", "offloading", "mbs", "gas",
        "batch_check", "printed_free_lunch", "printed_checkpointing", "printed_sharding", "printed_offloading",
        "inferred_fields", "note", "source",
    ),
    "paper_table3_hyperparams.csv": (
        "model", "params", "seq_len_vocab", "image_size_classes", "batch_size", "training_steps_printed",
        "training_steps", "mixed_precision", "optimizer", "note", "source",
    ),
    "paper_appendix_h_prices.csv": ("gpu", "price_usd", "printed", "quote_source", "date", "source"),
    "paper_machine_costs.csv": (
        "n_gpus", "machine_type", "total_usd", "printed", "rounded_in_text_usd", "components", "quote_source",
        "date", "note", "source",
    ),
    "paper_figure9_flops.csv": ("model", "training_flops", "printed", "note", "source"),
    "paper_figure6a_original_resources.csv": (
        "model", "size", "n_devices", "device", "days", "printed_n_devices", "printed_days", "note", "source",
    ),
}


def _data_path(name: str) -> Traversable:
    return resources.files(DATA_PACKAGE).joinpath("data", name)


def read_data_csv(name: str, required: Iterable[str] | None = None) -> pd.DataFrame:
    """Read ``academic_bench/data/<name>`` as text columns and check that ``required`` columns are present."""
    with _data_path(name).open("r", encoding="utf-8") as fh:
        # Read everything as text first: "printed" columns must keep cells such as "—" or " " exactly.
        df = pd.read_csv(fh, dtype=str, keep_default_na=False)
    required = tuple(required if required is not None else _COLUMNS.get(name, ()))
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {', '.join(missing)}")
    return df


def _numeric(df: pd.DataFrame, columns: Iterable[str], dtype: str = "Float64") -> pd.DataFrame:
    # Empty strings are the CSVs' only spelling of "no value"; everything else must parse.
    for col in columns:
        df[col] = pd.to_numeric(df[col].mask(df[col] == ""), errors="raise").astype(dtype)
    return df


def _boolean(df: pd.DataFrame, columns: Iterable[str], name: str) -> pd.DataFrame:
    mapping = {"true": True, "false": False, "": pd.NA}
    for col in columns:
        bad = sorted(set(df[col]) - set(mapping))
        if bad:
            raise ValueError(f"{name}: column {col} holds non-boolean value(s) {bad}")
        df[col] = df[col].map(mapping).astype("boolean")
    return df


def _check_values(df: pd.DataFrame, column: str, allowed: Iterable[str], name: str) -> None:
    bad = sorted(set(df[column]) - set(allowed))
    if bad:
        raise ValueError(f"{name}: column {column} holds unexpected value(s) {bad}")


def _read_checked(name: str, **allowed: Iterable[str]) -> pd.DataFrame:
    """A data file whose key columns hold only known values (e.g. model=MODEL_KEYS)."""
    df = read_data_csv(name)
    for column, values in allowed.items():
        _check_values(df, column, values, name)
    return df


def _load_days(name: str) -> pd.DataFrame:
    df = _read_checked(name, model=MODEL_KEYS, gpu=GPU_KEYS, status=DAYS_STATUS)
    df = _numeric(df, ["n_gpus"], "Int64")
    df = _numeric(df, ["days"], "float64")
    measured = df["status"] == "measured"
    if df.loc[measured, "days"].isna().any() or df.loc[~measured, "days"].notna().any():
        raise ValueError(f"{name}: days must be filled exactly where status is 'measured'")
    return df


def load_table1() -> pd.DataFrame:
    """Table 1: days to train with the optimal settings; one row per model x GPU type x GPU count (144)."""
    return _load_days("paper_table1_optimal_days.csv")


def load_table4() -> pd.DataFrame:
    """Appendix G, Table 4: days to train with naive settings; same layout as :func:`load_table1`."""
    return _load_days("paper_table4_naive_days.csv")


def load_appendix_j() -> pd.DataFrame:
    """Appendix J: the optimal setting per model x GPU x count (booleans nullable, NA where unresolved)."""
    name = "paper_appendix_j_settings.csv"
    df = _read_checked(name, model=MODEL_KEYS, gpu=GPU_KEYS, sharding=(*SHARDING_VALUES, ""))
    df = _boolean(df, ["free_lunch", "checkpointing", "offloading"], name)
    df = _numeric(df, ["n_gpus", "mbs", "gas"], "Int64")
    df["sharding"] = df["sharding"].mask(df["sharding"] == "")
    return df


def load_hyperparams() -> pd.DataFrame:
    """Appendix C, Table 3: the replication recipe (printed cells kept as text, batch and steps as numbers)."""
    return _numeric(_read_checked("paper_table3_hyperparams.csv", model=MODEL_KEYS), ["batch_size", "training_steps"], "Int64")


def load_prices() -> pd.DataFrame:
    """Appendix H, Table 5: price per GPU in USD, quoted 2024-09-21."""
    return _numeric(_read_checked("paper_appendix_h_prices.csv", gpu=GPU_KEYS), ["price_usd"], "float64")


def load_machine_costs() -> pd.DataFrame:
    """Appendix H, Tables 6-7: cost of the machine (without GPUs) that hosts 1, 2, 4 or 8 GPUs."""
    df = _numeric(read_data_csv("paper_machine_costs.csv"), ["n_gpus"], "Int64")
    return _numeric(df, ["total_usd", "rounded_in_text_usd"], "float64")


_HOST_MEMORY = re.compile(r"Memory: (?:(\d+) x (\d+) ?GB|[^;]*?(\d+) GB)")


def typical_host_memory(n_gpus: int) -> tuple[float, str] | None:
    """(GB of host memory, where it is from) of the machine the paper priced for ``n_gpus`` GPUs (Appendix H,
    Tables 6-7: 64 and 128 GB desktops, 256 and 512 GB servers; the smallest that holds them), the study's machine
    around every GPU; None above the largest (8 GPUs)."""
    machines = load_machine_costs().sort_values("n_gpus")
    for m in machines[machines["n_gpus"] >= n_gpus].itertuples():
        found = _HOST_MEMORY.search(m.components)
        if found is None:
            raise ValueError(f"paper_machine_costs.csv: no memory in the {m.n_gpus}-GPU machine's components")
        count, size, total = found.groups()
        gb = float(total) if total else float(count) * float(size)
        return gb, f"the paper's {m.n_gpus}-GPU {m.machine_type} ({m.source}: {found.group(0)})"
    return None


def load_flops() -> pd.DataFrame:
    """Appendix E, Figure 9(a): total training FLOPs per model as the paper prints them."""
    return _numeric(_read_checked("paper_figure9_flops.csv", model=MODEL_KEYS), ["training_flops"], "float64")


def load_original_resources() -> pd.DataFrame:
    """Figure 6(a): devices and days the original authors used (NA where the paper prints '?')."""
    return _numeric(_read_checked("paper_figure6a_original_resources.csv", model=MODEL_KEYS), ["n_devices", "days"], "Int64")


def appendix_j_batch_mismatches(settings: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows whose n_gpus * mbs * gas differs from the model's global batch (rows without values are skipped)."""
    df = load_appendix_j() if settings is None else settings
    known = df.dropna(subset=["mbs", "gas"])
    product = known["n_gpus"] * known["mbs"] * known["gas"]
    return known[product != known["model"].map(GLOBAL_BATCH)]
