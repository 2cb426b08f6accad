"""The published throughput points (data/published_throughput.csv): every figure traceable to the line it was
quoted from, and enough points per GPU type to check predictions against."""
from __future__ import annotations

import re

import pytest

from academic_bench.catalog.published import COLUMNS, FIGURES, load_published_throughput


@pytest.fixture(scope="module")
def points():
    return load_published_throughput()


def test_every_point_has_a_source_and_a_quote_that_holds_its_figure(points):
    assert list(points.columns[:len(COLUMNS)]) == list(COLUMNS) and len(points) > 0
    for _, r in points.iterrows():
        assert str(r["url"]).startswith("https://") and r["source"] and r["quote"], r.to_dict()
        assert r["figure"] in FIGURES
        assert r["quote_figure"] in r["quote"], (r["quote_figure"], r["quote"])
        number = float(re.sub(r"[^0-9.]", "", r["quote_figure"]))
        number *= 1000 if r["quote_figure"].strip().endswith("k") else 1  # "8.2k" tokens/s
        assert number == pytest.approx(float(r["value"])), r.to_dict()


def test_a_table_rows_settings_are_the_cells_of_its_quoted_row(points):
    """Where the quote is a row of llm-foundry's tables, the GPU count, sequence length and batch are cells of that
    same row."""
    table = points[points["source"].str.startswith("llm-foundry")]
    assert len(table) > 0
    for _, r in table.iterrows():
        cells = [c.strip() for c in r["quote"].strip("|").split("|")]
        for key in ("n_gpus", "seq_len", "micro_batch", "grad_accum", "global_batch"):
            assert str(int(r[key])) in cells, (key, r["quote"])


def test_a_readme_rows_gpus_and_micro_batch_are_the_cells_of_its_quoted_row(points):
    """whyNLP/tinyllama's README rows read '| tinyllama | 8*RTX3090 | 3 | ...': the GPU count and the micro-batch
    (with the accumulation steps where it states them, '16*8') are that row's cells."""
    rows = points[points["source"].str.startswith("whyNLP/tinyllama")]
    assert len(rows) >= 10
    for _, r in rows.iterrows():
        cells = [c.strip() for c in r["quote"].strip("|").split("|")]
        assert cells[1].startswith(f"{int(r['n_gpus'])}*"), r["quote"]
        batch = f"{int(r['micro_batch'])}" + (f"*{int(r['grad_accum'])}" if r["grad_accum"] > 1 else "")
        assert cells[2] == batch, r["quote"]


def test_all_gpus_tokens_become_tokens_per_gpu(points):
    total = points[points["figure"] == "tokens_per_s"]
    assert len(total) > 0
    assert (total["tokens_per_s_per_gpu"] * total["n_gpus"]).tolist() == pytest.approx(total["value"].tolist())


def test_every_model_with_a_config_builds_with_the_published_shape(points):
    """Each published model's shape is a config in data/published_configs/ that builds (on the meta device) with
    the widths its ``shape`` column states."""
    from academic_bench.catalog.models.from_config import decoder_spec
    from academic_bench.catalog.published import CONFIGS, config_path

    from academic_bench.catalog.models.from_config import ConfigError

    assert set(CONFIGS) <= set(points["model"])
    for model in CONFIGS:
        if model == "GPT-OSS-20B":  # transformers builds it with eager attention only: refused, saying so
            with pytest.raises(ConfigError, match="never through PyTorch.s SDPA"):
                decoder_spec(config_path(model), seq_len=2048, tokens=2048 * 8, global_batch=8)
            continue
        facts = decoder_spec(config_path(model), seq_len=2048, tokens=2048 * 8, global_batch=8).facts
        shape = points.loc[points["model"] == model, "shape"].iloc[0]
        assert str(facts["hidden"]) in shape and str(facts["layers"]) in shape, (model, facts, shape)
    assert config_path("a model the file does not hold") is None


def test_single_node_points_for_the_datacenter_gpus(points):
    assert (points["n_gpus"] <= 8).all()
    counts = points.groupby("gpu").size()
    assert counts.get("a100-80gb", 0) >= 3 and counts.get("h100-80gb", 0) >= 3


def test_points_for_the_gpus_labs_own(points):
    counts = points.groupby("gpu").size()
    assert counts.get("rtx3090", 0) >= 3 and counts.get("a6000", 0) >= 3 and counts.get("rtx4090", 0) >= 1


def test_a_step_time_becomes_tokens_per_second_per_gpu(points):
    step = points[points["figure"] == "step_time_ms"].iloc[0]
    tokens = step["micro_batch"] * step["grad_accum"] * step["seq_len"]
    assert step["tokens_per_s_per_gpu"] == pytest.approx(tokens / (step["value"] / 1e3))
    given = points[points["figure"] == "tokens_per_s_per_gpu"]
    assert (given["tokens_per_s_per_gpu"] == given["value"]).all()


def test_a_stated_memory_is_the_cell_of_its_quoted_row(points):
    """``memory_gib`` is read from the quoted line: its ``quote_memory`` cell (a table row's), or the words of the
    quoted sentence, the number in it."""
    stated = points[points["memory_gib"].notna()]
    assert len(stated) > 0
    for _, r in stated.iterrows():
        table = r["quote"].startswith("|")
        cells = [c.strip() for c in r["quote"].strip("|").split("|")]
        assert r["quote_memory"] in cells if table else r["quote_memory"] in r["quote"], r.to_dict()
        assert float(re.sub(r"[^0-9.]", "", r["quote_memory"])) == pytest.approx(float(r["memory_gib"]))
    assert points.loc[points["memory_gib"].isna(), "quote_memory"].isna().all()


def test_a_figure_of_forward_and_backward_alone_is_per_gpu_and_says_the_optimizer_is_left_out(points):
    """NeMo AutoModel's blog benchmark timed forward, loss and backward alone, the optimizer step apart: its
    figure is tokens per second per GPU, marked so that the prediction leaves its optimizer step out too."""
    apart = points[points["figure"] == "tokens_per_s_per_gpu_fwd_bwd"]
    assert len(apart) >= 2 and apart["optimizer_excluded"].all()
    assert (apart["tokens_per_s_per_gpu"] == apart["value"]).all()
    assert not points.loc[points["figure"] != "tokens_per_s_per_gpu_fwd_bwd", "optimizer_excluded"].any()


def test_sequences_of_varying_length_are_shown_never_predicted(points):
    """A figure of sequences padded only to their batch's longest (``samples_per_s_varying_length``) states no
    sequence's length: it keeps its sequences per GPU, has no tokens per second, and is not predicted (the study
    would charge each sequence the table's full length) but says why."""
    from academic_bench.predict.published_family import LENGTH_VARIES_WHY, predict_family_point

    varying = points[points["figure"] == "samples_per_s_varying_length"]
    assert len(varying) > 0 and varying["length_varies"].all() and not points["length_varies"].all()
    assert varying["tokens_per_s_per_gpu"].isna().all()
    assert (varying["samples_per_s_per_gpu"] * varying["n_gpus"]).tolist() == pytest.approx(varying["value"].tolist())
    row = varying.iloc[0]
    out = predict_family_point(row, {"ratio": float("nan"), "why_not": ""})
    assert out["why_not"] == LENGTH_VARIES_WHY and out["ratio"] != out["ratio"]  # NaN: no prediction
    fixed = points[(points["figure"] == "samples_per_s") & (points["family"] == "encoder")]
    assert fixed["tokens_per_s_per_gpu"].notna().all()
