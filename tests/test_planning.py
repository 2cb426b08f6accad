"""The planner: days for a decoder of any size from measured (or paper-implied) MFU, with a range."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from academic_bench import planning
from academic_bench.estimate import model_flops_per_step
from academic_bench.hardware import catalog as gpu_catalog
from test_cost import write_synthetic_runs


def test_decoder_flops_follow_the_project_convention():
    """Per token: 6 x (parameters - input embedding) + 12 x layers x hidden x sequence (DESIGN.md)."""
    per_token = planning.decoder_flops_per_token(1e9, 2048, layers=16, hidden=2048, vocab=50_304)
    assert per_token == 6 * (1e9 - 50_304 * 2048) + 12 * 16 * 2048 * 2048
    base, per_position = planning.decoder_flops_terms(1e9, 16, 2048)
    assert base + per_position * 2048 == per_token


def test_catalog_decoders_match_estimate_with_their_own_shape():
    """The arbitrary-decoder formula, given Pythia-1B's parameter count and shape, agrees with estimate's count."""
    from academic_bench.estimate import model_stats
    from academic_bench.models import get_model

    spec = get_model("pythia-1b")
    st = model_stats("pythia-1b")
    layers, hidden = spec.transformer_shape(False)
    r = spec.recipe
    ours = planning.decoder_flops_per_token(st.params, r.seq_len, layers, hidden, r.vocab_size) * r.seq_len
    assert ours * r.global_batch == pytest.approx(model_flops_per_step("pythia-1b"), rel=1e-6)


def test_shape_heuristic_is_close_to_pythia():
    layers, hidden = planning.decoder_shape(1.0e9)
    assert abs(layers - 16) <= 2 and abs(hidden - 2048) / 2048 < 0.1


def _pts(*pairs: tuple[float, float], source: str = "ours (x)") -> pd.DataFrame:
    return pd.DataFrame({"params": [p for p, _ in pairs], "mfu": [m for _, m in pairs], "source": source})


def test_interpolation_is_linear_in_log_parameters_with_a_range():
    pts = _pts((1e8, 0.30), (1e9, 0.50), (1e10, 0.20))
    mid = planning.interpolate_mfu(pts, math.sqrt(1e8 * 1e9))
    assert mid.mfu == pytest.approx(0.40) and (mid.low, mid.high) == (0.30, 0.50)
    at = planning.interpolate_mfu(pts, 1e9)  # at a measured size: the range spans its neighbours
    assert at.mfu == 0.50 and (at.low, at.high) == (0.20, 0.50)
    below = planning.interpolate_mfu(pts, 1e7)  # held flat beyond the ends
    assert below.mfu == 0.30 and (below.low, below.high) == (0.30, 0.50) and "below" in below.basis
    one = planning.interpolate_mfu(_pts((1e9, 0.45)), 3e9)
    assert (one.mfu, one.low, one.high) == (0.45, 0.45, 0.45)


def test_implausible_mfu_is_flagged():
    est = planning.interpolate_mfu(_pts((1e9, 0.9), (2e9, 0.5)), 1.5e9)
    assert est.implausible


def test_plan_uses_our_mfu_when_we_measured_the_setup(tmp_path):
    root = write_synthetic_runs(tmp_path, [("pythia-410m", "h100-80gb", 2, 10.0, 0.30),
                                           ("pythia-1b", "h100-80gb", 2, 20.0, 0.40)])
    p = planning.plan_decoder(1e9, 3e12, "h100-80gb", 2, root=root)
    flops = planning.decoder_flops_per_token(1e9, 2048) * 3e12
    peak = gpu_catalog()["h100-80gb"].peak_flops("bf16")
    assert p.flops == pytest.approx(flops)
    assert p.days == pytest.approx(flops / (2 * peak * 0.40) / 86_400)
    assert p.days_at_peak == pytest.approx(flops / (2 * peak) / 86_400)
    assert p.days_low <= p.days <= p.days_high and p.days_high == pytest.approx(p.days_at_peak / 0.30)
    assert p.mfu.source == "ours (synthetic)" and "paper" not in p.note


def test_one_measured_size_takes_its_range_from_the_timing_spread(tmp_path):
    root = write_synthetic_runs(tmp_path, [("pythia-1b", "h200", 2, 20.0, 0.40)], spread=(0.8, 1.25))
    p = planning.plan_decoder(2e9, 1e12, "h200", 2, root=root)
    assert p.mfu.mfu == pytest.approx(0.40)
    assert (p.mfu.low, p.mfu.high) == (pytest.approx(0.40 / 1.25), pytest.approx(0.40 / 0.8))
    assert p.days_low < p.days < p.days_high


def test_plan_falls_back_to_the_paper_implied_mfu_and_says_so(tmp_path):
    """OLMo-1B's budget: a 1B decoder on 3 trillion tokens, on a setup nothing was measured for (no runs at all,
    so nothing to predict from either). The paper's Pythia-1B cell implies an MFU above 75%: left out, the
    answer rests on its plausible neighbours and is labelled the paper's."""
    p = planning.plan_decoder(1e9, 3e12, "a100-80gb", 8, root=str(tmp_path))
    assert p.mfu.source == "paper-implied (Table 1)" and p.label == "paper"
    assert "did not synchronise" in p.note and p.days > p.days_at_peak
    implied = planning.paper_implied_mfu()
    cells = implied[(implied["gpu"] == "a100-80gb") & (implied["n_gpus"] == 8)].set_index("model")["mfu"]
    assert cells["pythia-1b"] > planning.MFU_IMPLAUSIBLE  # the paper's own cell: never the answer
    assert p.mfu.mfu <= planning.MFU_IMPLAUSIBLE and p.mfu.high <= planning.MFU_IMPLAUSIBLE
    assert min(cells["pythia-410m"], cells["pythia-2.8b"]) <= p.mfu.mfu <= max(cells["pythia-410m"],
                                                                                cells["pythia-2.8b"])


def test_plan_prefers_the_transfer_prediction_over_the_paper():
    """On a setup the study did not measure, the shipped runs give a predicted MFU (with the setup it rests on),
    not the paper's implied one; no answer's MFU exceeds 75%."""
    p = planning.plan_decoder(1e9, 3e12, "a100-80gb", 4)
    assert p.label == "predicted" and p.mfu.source.startswith("predicted") and "from h" in p.mfu.source
    assert p.mfu.high <= planning.MFU_IMPLAUSIBLE and p.days_low <= p.days <= p.days_high
    a = planning.model_answer("pythia-1b", "a100-80gb", 4)
    assert a.label == "predicted" and a.mfu <= planning.MFU_IMPLAUSIBLE and a.days_low <= a.days <= a.days_high
    assert a.paper_mfu > planning.MFU_IMPLAUSIBLE  # the paper's cell stays visible, as the paper's
    assert planning.model_answer("pythia-1b", "h100-80gb", 1).label == "measured"


def test_an_implausible_paper_cell_is_never_an_answer(tmp_path):
    """With nothing measured, Pythia-1B on 2 x RTX 3090 (the paper's days imply an MFU of 140%) has no answer."""
    a = planning.model_answer("pythia-1b", "rtx3090", 2, root=str(tmp_path))
    assert a.label is None and a.days is None and a.paper_mfu > 1 and "not an answer" in a.basis
    table = planning.answer_table(["pythia-1b"], root=str(tmp_path))
    assert (table["mfu"].dropna() <= planning.MFU_IMPLAUSIBLE).all()
    assert set(table["label"].dropna()) <= {"paper"}


def test_no_mfu_gives_only_the_lower_bound(tmp_path):
    p = planning.plan_decoder(1e9, 3e12, "h200", 4, root=str(tmp_path))
    assert p.days is None and p.mfu is None and "lower bound" in p.note and p.days_at_peak > 0
    table = planning.plan_table(1e9, 3e12, root=str(tmp_path))
    assert len(table) == len(gpu_catalog()) * 4 and table.loc[table["gpu"] == "h200", "days"].isna().all()


def test_paper_implied_mfu_covers_the_decoders_only():
    df = planning.paper_implied_mfu()
    assert set(df["model"]) == {"pythia-160m", "pythia-410m", "pythia-1b", "pythia-2.8b", "pythia-6.9b"}
    assert (df["mfu"] > 0).all()


@pytest.mark.parametrize("kwargs, words", [
    (dict(params=0), ["parameter count", "0"]),
    (dict(tokens=-1), ["training tokens", "-1"]),
    (dict(seq_len=0), ["sequence length", "0"]),
    (dict(gpu="tpu"), ["unknown GPU 'tpu'", "h100-80gb"]),
    (dict(n_gpus=0), ["at least 1", "0"]),
])
def test_bad_plans_name_the_bad_value(kwargs, words):
    args = dict(params=1e9, tokens=1e12, gpu="h100-80gb", n_gpus=1) | kwargs
    with pytest.raises(ValueError) as e:
        planning.plan_decoder(**args)
    assert all(w in str(e.value) for w in words)


def test_plan_explorer_recomputes_when_a_widget_changes(tmp_path):
    from academic_bench import explorers

    ex = explorers.plan_explorer(params=1e9, tokens=1e12, gpu="a100-80gb", n_gpus=8, root=str(tmp_path))
    first = ex.result.days
    ex.tokens.value = 2e12
    assert ex.result.days == pytest.approx(2 * first)
    expected = planning.plan_decoder(1e9, 2e12, "a100-80gb", 8, root=str(tmp_path))
    assert ex.result.days == pytest.approx(expected.days)
    assert f"{expected.days:,.1f} days" in ex.output.value
    ex.gpu.value = "h200"  # no MFU for it: the explorer says so instead of guessing
    assert ex.result.days is None and "lower bound" in ex.output.value


def test_a_naive_only_setting_is_no_point_of_the_planner(tmp_path):
    """A setting measured only with the naive baseline has no optimum yet (``answers`` calls it "naive only"): its
    low MFU must not pull the planner's answer for other sizes (a 0.4B model once got more days than a 1B one)."""
    from academic_bench.config import Config
    from academic_bench.methods import preset
    from academic_bench.results import ResultStore, make_row

    store = ResultStore(tmp_path / "two" / "results.jsonl")
    for model, methods, search, mfu in (("pythia-160m", "free-lunch", "single", 0.35),
                                        ("pythia-410m", "naive", "naive", 0.08)):
        cfg = Config(model, "h200", 2, methods=preset(methods))
        row = make_row(cfg, setup="two", outcome="ok", search=search, step_time_s=1.0, micro_batch=8,
                       gas=64, days=10.0, gpu_days=20.0, mfu=mfu)
        store.append(row)
        store.append({**row, "mode": "validate",  # a result: its class validated by the same engine revision
                      "validate": {"steps": 3, "sustained_step_s": 1.0, "predicted_step_s": 1.0, "rel_error": 0.0}})
    points = planning.measured_mfu(str(tmp_path))
    assert points["model"].tolist() == ["pythia-160m"]
