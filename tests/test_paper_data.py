"""The transcribed paper tables: shapes, a sample of cells typed from the paper, and Appendix J's arithmetic.

Cell values below are the paper's published numbers ("$100K or 100 Days", arXiv 2410.23261); each is cited
by table and row so that a reader can check it against the PDF.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from academic_bench.catalog import paper


def _cell(df: pd.DataFrame, model: str, gpu: str, n: int) -> pd.Series:
    rows = df[(df["model"] == model) & (df["gpu"] == gpu) & (df["n_gpus"] == n)]
    assert len(rows) == 1, (model, gpu, n)
    return rows.iloc[0]


@pytest.mark.parametrize("loader", [paper.load_table1, paper.load_table4])
def test_days_tables_cover_every_model_gpu_and_count(loader) -> None:
    df = loader()
    assert len(df) == 9 * 4 * 4 == 144
    assert set(df["model"]) == set(paper.MODEL_KEYS)
    assert set(df["gpu"]) == set(paper.GPU_KEYS)
    assert set(df["n_gpus"]) == set(paper.GPU_COUNTS)
    assert not df.duplicated(["model", "gpu", "n_gpus"]).any()
    assert df["source"].str.len().gt(0).all()


@pytest.mark.parametrize(
    ("model", "gpu", "n", "days"),
    [
        ("pythia-1b", "a100-80gb", 4, 18),      # Table 1, row Pythia 1B, A100 x4 (also Sec. 1: "18 days")
        ("pythia-1b", "rtx3090", 8, 30),        # Table 1, row Pythia 1B, RTX 3090 x8 (Sec. 4.1: 30 days)
        ("pythia-1b", "h100-80gb", 8, 4),       # Table 1, row Pythia 1B, H100 x8
        ("pythia-160m", "rtx3090", 1, 41),      # Table 1, row Pythia 160M, RTX 3090 x1
        ("pythia-2.8b", "rtx3090", 1, 1515),    # Table 1, row Pythia 2.8B, RTX 3090 x1
        ("pythia-6.9b", "rtx3090", 2, 7157),    # Table 1, row Pythia 6.9B, RTX 3090 x2
        ("roberta-large", "a6000", 8, 114),     # Table 1, row RoBERTa, A6000 x8
        ("mamba-2.8b", "a100-80gb", 8, 67),     # Table 1, row Mamba, A100 x8
        ("convnext-xlarge", "h100-80gb", 8, 5),  # Table 1, row ConvNeXt, H100 x8
        ("vit-large", "a6000", 2, 56),          # Table 1, row ViT, A6000 x2
    ],
)
def test_table1_sample_cells(model: str, gpu: str, n: int, days: int) -> None:
    row = _cell(paper.load_table1(), model, gpu, n)
    assert row["days"] == days
    assert row["status"] == "measured"


def test_table1_infeasible_cells_are_nan() -> None:
    df = paper.load_table1()
    infeasible = df[df["status"] == "infeasible"]
    # Table 1, row Pythia 6.9B: the only dashes are the four 1-GPU cells.
    assert sorted(zip(infeasible["model"], infeasible["n_gpus"])) == [("pythia-6.9b", 1)] * 4
    assert infeasible["days"].isna().all()
    # The RTX 3090 cell is printed as a hyphen, the others as an em dash; both are kept as printed.
    assert _cell(df, "pythia-6.9b", "rtx3090", 1)["printed"] == "-"
    assert _cell(df, "pythia-6.9b", "a100-80gb", 1)["printed"] == "—"
    assert df.loc[df["status"] == "measured", "days"].notna().all()


@pytest.mark.parametrize(
    ("model", "gpu", "n", "days"),
    [
        ("pythia-1b", "a100-80gb", 4, 41),      # Table 4, row Pythia 1B, A100 x4 (Sec. 4: "41 days")
        ("pythia-160m", "rtx3090", 1, 125),     # Table 4, row Pythia 160M, RTX 3090 x1
        ("pythia-410m", "rtx3090", 2, 431),     # Table 4, row Pythia 410M, RTX 3090 x2
        ("roberta-large", "rtx3090", 8, 420),   # Table 4, row RoBERTa, RTX 3090 x8
        ("convnext-xlarge", "h100-80gb", 2, 49),  # Table 4, row ConvNeXt, H100 x2
        ("vit-large", "h100-80gb", 1, 93),      # Table 4, row ViT, H100 x1
    ],
)
def test_table4_sample_cells(model: str, gpu: str, n: int, days: int) -> None:
    assert _cell(paper.load_table4(), model, gpu, n)["days"] == days


def test_table4_infeasible_and_unreadable_cells() -> None:
    df = paper.load_table4()
    # Table 4: Pythia 2.8B, 6.9B and Mamba are infeasible everywhere with naive settings; Pythia 1B on RTX 3090 too.
    for model in ("pythia-2.8b", "pythia-6.9b", "mamba-2.8b"):
        rows = df[df["model"] == model]
        assert (rows["status"] == "infeasible").all() and rows["days"].isna().all()
    assert df[(df["model"] == "pythia-1b") & (df["gpu"] == "rtx3090")]["days"].isna().all()
    # The one cell the conversion lost (ConvNeXt, H100 x1) is not called infeasible.
    lost = _cell(df, "convnext-xlarge", "h100-80gb", 1)
    assert lost["status"] == "unreadable" and math.isnan(lost["days"]) and lost["note"]
    # Every garbled cell explains itself.
    garbled = df[(df["status"] != "measured") & (df["printed"] != "—")]
    assert garbled["note"].str.len().gt(0).all()
    # 4 (Pythia 1B on RTX 3090) + 3 x 16 infeasible cells, plus the one unreadable cell.
    assert (df["status"] == "infeasible").sum() == 52
    assert (df["status"] == "measured").sum() == 144 - 52 - 1


def test_optimal_is_never_slower_than_naive() -> None:
    both = paper.load_table1().merge(paper.load_table4(), on=["model", "gpu", "n_gpus"], suffixes=("_opt", "_naive"))
    known = both.dropna(subset=["days_opt", "days_naive"])
    assert (known["days_opt"] <= known["days_naive"]).all()


def test_appendix_j_batch_arithmetic() -> None:
    df = paper.load_appendix_j()
    # Appendix J omits the infeasible 1-GPU Pythia-6.9B settings: 9 x 16 - 4 rows.
    assert len(df) == 140
    assert not df.duplicated(["model", "gpu", "n_gpus"]).any()
    known = df.dropna(subset=["mbs"])
    assert len(known) == 136  # the 4 ViT/H100 rows are missing from the converted text
    product = known["n_gpus"] * known["mbs"] * known["gas"]
    assert (product == known["model"].map(paper.GLOBAL_BATCH)).all()
    assert paper.appendix_j_batch_mismatches(df).empty
    assert (known["batch_check"] == "ok").all()


@pytest.mark.parametrize(
    ("model", "gpu", "n", "sharding", "ckpt", "offload", "mbs", "gas"),
    [
        # Appendix J, Pythia (1B) / A100 / 4 (also the released README's example: zero_1, MBS 16, GAS 16)
        ("pythia-1b", "a100-80gb", 4, "zero1", False, False, 16, 16),
        # Appendix J, Pythia (160M) / RTX 3090 / 1
        ("pythia-160m", "rtx3090", 1, "none", False, False, 8, 128),
        # Appendix J, Pythia (2.8B) / RTX 3090 / 2: printed "Zero (3)"
        ("pythia-2.8b", "rtx3090", 2, "zero3", True, True, 16, 32),
        # Appendix J, Pythia (6.9B) / RTX 3090 / 2: printed "FSDP (3)"
        ("pythia-6.9b", "rtx3090", 2, "fsdp_full_shard", False, True, 1, 512),
        # Appendix J, Pythia (6.9B) / H100 / 2: printed "FSDP (2)"
        ("pythia-6.9b", "h100-80gb", 2, "fsdp_shard_grad_op", True, False, 4, 128),
        # Appendix J, Pythia (6.9B) / H100 / 8 (a single, unmerged row)
        ("pythia-6.9b", "h100-80gb", 8, "zero1", False, False, 4, 32),
        # Appendix J, Mamba / A6000 / 1: printed "Zero (2)" with offloading
        ("mamba-2.8b", "a6000", 1, "zero2", False, True, 2, 64),
    ],
)
def test_appendix_j_sample_rows(model, gpu, n, sharding, ckpt, offload, mbs, gas) -> None:
    row = _cell(paper.load_appendix_j(), model, gpu, n)
    assert (row["sharding"], row["checkpointing"], row["offloading"]) == (sharding, ckpt, offload)
    assert (row["mbs"], row["gas"]) == (mbs, gas)
    assert row["free_lunch"]


def test_appendix_j_respects_the_search_space_rules() -> None:
    df = paper.load_appendix_j().dropna(subset=["sharding", "offloading"])
    # Appendix F: offloading needs sharding; on 1 GPU sharding is only searched together with offloading.
    assert not (df["offloading"] & (df["sharding"] == "none")).any()
    one = df[df["n_gpus"] == 1]
    assert ((one["sharding"] == "none") | one["offloading"]).all()


def test_appendix_j_unresolved_cells_are_explained() -> None:
    df = paper.load_appendix_j()
    unresolved = df[df["sharding"].isna() | df["checkpointing"].isna()]
    assert unresolved["note"].str.len().gt(0).all()
    printed = set(df["printed_sharding"])
    assert {"FSDP (2) Zero (1)", "FSDP (3) Zero (3) Zero (3)"} <= printed


def test_hyperparams_match_appendix_j_batches() -> None:
    hp = paper.load_hyperparams().set_index("model")
    # Table 3: Pythia 1024 x 143K steps, RoBERTa 8192 x 500K, Mamba 128 x 572K, vision 4096 x 312K.
    assert hp.loc["pythia-1b", "batch_size"] == 1024 and hp.loc["pythia-1b", "training_steps"] == 143_000
    assert hp.loc["pythia-1b", "mixed_precision"] == "bf16"
    assert hp.loc["roberta-large", "training_steps_printed"] == "500K"
    assert hp.loc["mamba-2.8b", "optimizer"] == "AdamW"
    assert hp["batch_size"].to_dict() == paper.GLOBAL_BATCH


def test_prices_and_machine_costs() -> None:
    prices = paper.load_prices().set_index("gpu")["price_usd"]
    # Appendix H, Table 5.
    assert prices.to_dict() == {"rtx3090": 1300, "a6000": 4800, "a100-80gb": 19000, "h100-80gb": 30000}
    machines = paper.load_machine_costs().set_index("n_gpus")
    # Table 6 totals (desktops) and Table 7 prices (servers), exactly as printed.
    assert machines["total_usd"].to_dict() == {1: 1020.41, 2: 1456.29, 4: 7482.0, 8: 10673.0}
    assert machines.loc[8, "rounded_in_text_usd"] == 10500  # Sec. 4.1 quotes $10,500
    assert list(machines["machine_type"]) == ["desktop", "desktop", "server", "server"]


def test_desktop_parts_sum_to_printed_total() -> None:
    machines = paper.load_machine_costs()
    for _, row in machines[machines["machine_type"] == "desktop"].iterrows():
        parts = [float(p.split("($")[1].rstrip(")")) for p in row["components"].split("; ")]
        assert round(sum(parts), 2) == row["total_usd"]


def test_flops_and_original_resources() -> None:
    flops = paper.load_flops().set_index("model")["training_flops"]
    assert flops["pythia-1b"] == pytest.approx(1.9e21)  # Figure 9(a), row Pythia (1B)
    assert flops["roberta-large"] == pytest.approx(4.8e21)  # Figure 9(a), row RoBERTa
    assert len(flops) == 9
    orig = paper.load_original_resources().set_index("model")
    assert (orig.loc["pythia-1b", "n_devices"], orig.loc["pythia-1b", "days"]) == (64, 3)  # Figure 6(a)
    assert pd.isna(orig.loc["mamba-2.8b", "n_devices"])  # printed "?"


def test_loader_names_file_and_missing_column(tmp_path, monkeypatch) -> None:
    broken = tmp_path / "paper_table1_optimal_days.csv"
    broken.write_text("model,size\npythia-1b,1B\n")
    monkeypatch.setattr(paper, "_data_path", lambda _name: broken)
    with pytest.raises(ValueError, match=r"paper_table1_optimal_days\.csv: missing column\(s\) gpu, n_gpus"):
        paper.load_table1()


def test_loader_rejects_unknown_gpu_key(tmp_path, monkeypatch) -> None:
    good = paper.read_data_csv("paper_table1_optimal_days.csv")
    good.loc[0, "gpu"] = "a100"
    broken = tmp_path / "t1.csv"
    good.to_csv(broken, index=False)
    monkeypatch.setattr(paper, "_data_path", lambda _name: broken)
    with pytest.raises(ValueError, match=r"column gpu holds unexpected value\(s\) \['a100'\]"):
        paper.load_table1()
