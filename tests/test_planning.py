"""The planner: days for a decoder of any size, from the study's answers for the catalog decoders on the same
setup (``answer.by_size``), interpolated between the sizes that bracket it, with a range."""
from __future__ import annotations

import math

import pytest

from academic_bench.answer import Answer, grid
from academic_bench.answer import planner
from academic_bench.answer.by_size import mfu_by_size
from academic_bench.estimate import model_flops_per_step
from academic_bench.catalog.hardware import catalog as gpu_catalog
from test_cost import write_synthetic_runs

from measured import typed_figures  # noqa: F401  (a fixture)
from conftest import skip_or_fail

pytestmark = pytest.mark.usefixtures("typed_figures")  # synthetic rows with typed-in figures


def test_decoder_flops_follow_the_project_convention():
    """Per token: 6 x (parameters - input embedding) + 12 x layers x attention width x sequence (DESIGN.md), the
    attention width the hidden size unless given."""
    per_token = planner.decoder_flops_per_token(1e9, 2048, layers=16, hidden=2048, vocab=50_304)
    assert per_token == 6 * (1e9 - 50_304 * 2048) + 12 * 16 * 2048 * 2048
    base, per_position = planner.decoder_flops_terms(1e9, 16, 2048)
    assert base + per_position * 2048 == per_token
    wider = planner.decoder_flops_per_token(1e9, 2048, layers=16, hidden=2048, vocab=50_304, attention_width=4096)
    assert wider - per_token == 12 * 16 * (4096 - 2048) * 2048


def test_catalog_decoders_match_estimate_with_their_own_shape():
    """The arbitrary-decoder formula, given Pythia-1B's parameter count and shape, agrees with estimate's count."""
    from academic_bench.estimate import model_stats
    from academic_bench.catalog.models import get_model

    spec = get_model("pythia-1b")
    st = model_stats("pythia-1b")
    layers, hidden = spec.transformer_shape(False)
    r = spec.recipe
    ours = planner.decoder_flops_per_token(st.params, r.seq_len, layers, hidden, r.vocab_size) * r.seq_len
    assert ours * r.global_batch == pytest.approx(model_flops_per_step("pythia-1b"), rel=1e-6)


def test_shape_heuristic_is_close_to_pythia():
    layers, hidden = planner.decoder_shape(1.0e9)
    assert abs(layers - 16) <= 2 and abs(hidden - 2048) / 2048 < 0.1


def _answer(model: str, gpu: str, n: int, mfu: float, kind: str = "measured", spread: float = 0.0) -> Answer:
    """A made-up answer that only exercises the interpolation (not a measurement)."""
    days = 10.0
    return Answer(model=model, gpu=gpu, n_gpus=n, kind=kind, days=days, days_low=days * (1 - spread),
                  days_high=days * (1 + spread), mfu=mfu, settings=None, rests_on="made up")


def _params(model: str) -> float:
    from academic_bench.catalog.models import get_model

    return float(get_model(model).paper_params)


def test_the_mfu_is_interpolated_between_the_bracketing_sizes_of_the_same_setup():
    answers = [_answer("pythia-410m", "h100-80gb", 2, 0.30), _answer("pythia-1b", "h100-80gb", 2, 0.50),
               _answer("pythia-2.8b", "h100-80gb", 2, 0.20, kind="predicted"),
               _answer("pythia-1b", "h200", 2, 0.90)]  # another setup: never used for h100-80gb
    lo, hi = _params("pythia-410m"), _params("pythia-1b")
    mid = mfu_by_size(answers, "h100-80gb", 2, math.sqrt(lo * hi))
    assert mid.mfu == pytest.approx(0.40) and (mid.low, mid.high) == (0.30, 0.50) and mid.kind == "measured"
    assert mid.points == ("pythia-410m", "pythia-1b") and "between pythia-410m" in mid.basis
    at = mfu_by_size(answers, "h100-80gb", 2, hi)
    assert at.mfu == 0.50 and at.points == ("pythia-1b",)
    above = mfu_by_size(answers, "h100-80gb", 2, 3e10)  # beyond the largest: held, and said so
    assert above.mfu == 0.20 and above.kind == "predicted" and "extrapolated" in above.basis
    assert mfu_by_size(answers, "a6000", 2, 1e9) is None


def test_the_range_comes_from_the_answers_used():
    answers = [_answer("pythia-1b", "h200", 2, 0.40, spread=0.2)]
    s = mfu_by_size(answers, "h200", 2, 2e9)
    assert s.mfu == pytest.approx(0.40)
    assert (s.low, s.high) == (pytest.approx(0.40 / 1.2), pytest.approx(0.40 / 0.8))


def test_plan_uses_the_measured_mfu_of_the_setup(tmp_path):
    root = write_synthetic_runs(tmp_path, [("pythia-410m", "h100-80gb", 2, 10.0, 0.30),
                                           ("pythia-1b", "h100-80gb", 2, 20.0, 0.40)])
    p = planner.plan_decoder(_params("pythia-1b"), 3e12, "h100-80gb", 2, root=root)
    flops = planner.decoder_flops_per_token(_params("pythia-1b"), 2048) * 3e12
    peak = gpu_catalog()["h100-80gb"].peak_flops("bf16")
    assert p.flops == pytest.approx(flops)
    assert p.days == pytest.approx(flops / (2 * peak * 0.40) / 86_400)
    assert p.days_at_peak == pytest.approx(flops / (2 * peak) / 86_400)
    assert p.label == "measured" and p.days_low <= p.days <= p.days_high


def test_a_larger_gpu_never_answers_slower_for_the_same_size():
    """On the shipped runs a 1B decoder on 2 x H200 gets no more days than on 2 x H100 (the planner once took
    2 x H200's MFU from Pythia-160M alone, the only model measured there)."""
    for params in (1e9, 2e9, 5e8):
        h200 = planner.plan_decoder(params, 3e12, "h200", 2)
        h100 = planner.plan_decoder(params, 3e12, "h100-80gb", 2)
        assert h200.days <= h100.days, (params, h200.note, h100.note)


def test_at_a_catalog_size_the_planner_takes_the_answers_mfu():
    for a in grid():
        if a.model == "pythia-1b" and a.answered and a.kind != "paper":
            s = mfu_by_size(grid(), a.gpu, a.n_gpus, _params("pythia-1b"))
            assert s.mfu == pytest.approx(a.mfu)


def test_a_plan_on_answers_held_at_the_mfu_cap_says_its_days_are_a_lower_bound():
    """Answers whose MFU is held at ``transfer.MFU_CAP`` are lower bounds on the days, and so is a plan that takes
    their MFU. One between a held answer and a slower one is not held itself, but the high end of its range is: the
    fast end of its range is a lower bound, and it says so in words of its own, as does the explorer's answer line
    in the browser (its expression run by node, where node is installed). A plan whose range stays below the cap
    says neither."""
    from academic_bench.predict.transfer import MFU_CAP

    answers = [_answer("pythia-410m", "rtx3090", 1, MFU_CAP, kind="predicted"),
               _answer("pythia-1b", "rtx3090", 1, MFU_CAP, kind="predicted"),
               _answer("pythia-2.8b", "rtx3090", 1, MFU_CAP / 2, kind="predicted")]
    held_words = planner.CAPPED_WORDS.format(cap=MFU_CAP)
    fast_words = planner.FAST_END_CAPPED_WORDS.format(cap=MFU_CAP)
    held = planner.plan_decoder(_params("pythia-1b"), 3e12, "rtx3090", 1, answers=answers)
    assert held.capped and held_words in held.note and fast_words not in held.note
    between = planner.plan_decoder(2e9, 3e12, "rtx3090", 1, answers=answers)
    assert between.mfu.mfu < MFU_CAP and planner.at_cap(between.mfu.high)
    assert not between.capped and between.fast_end_capped
    assert fast_words in between.note and held_words not in between.note
    above = planner.plan_decoder(5e9, 3e12, "rtx3090", 1, answers=answers)  # held at 2.8B's MFU, half the cap
    assert not above.capped and not above.fast_end_capped and "lower bound" not in above.note
    said = _node_says(dict(days=1.0, days_low=1.0, days_high=1.0, mfu=between.mfu.mfu, mfu_high=between.mfu.high))
    assert said.endswith(fast_words), said
    said = _node_says(dict(days=1.0, days_low=1.0, days_high=1.0, mfu=above.mfu.mfu, mfu_high=above.mfu.high))
    assert "lower bound" not in said, said


def _node_says(datum: dict) -> str:
    """The planner explorer's answer line for ``datum`` (one setup, chosen), as its expression evaluates in node:
    skips (or fails, under CI) where node is not installed."""
    import json
    import shutil
    import subprocess

    import pandas as pd

    from academic_bench.book import explorers
    from academic_bench.book.explorers.planner import CAP_PARAM

    node = shutil.which("node")
    if node is None:
        skip_or_fail("node is not installed: the browser's answer line is not evaluated")
    mfu = datum["mfu"]
    grid = pd.DataFrame([dict(gpu="rtx3090", n_gpus=1, key="1 x rtx3090", setup="1 x RTX 3090", params_b=1.0,
                              mfu=mfu, mfu_low=mfu, mfu_high=datum.get("mfu_high", mfu), mfu_source="predicted",
                              flops_base=1.0, flops_per_position=1.0, peak_flops=1.0)])
    found: dict[str, list] = {"label": [], "cap": []}

    def walk(node_: object) -> None:
        if isinstance(node_, dict):
            if node_.get("as") == "label" and "calculate" in node_:
                found["label"].append(node_["calculate"])
            if node_.get("name") == CAP_PARAM and "value" in node_:
                found["cap"].append(node_["value"])
            for v in node_.values():
                walk(v)
        elif isinstance(node_, list):
            for v in node_:
                walk(v)

    walk(explorers.plan_chart(grid, setup="1 x rtx3090").to_dict())
    assert found["label"] and found["cap"], found
    datum = dict(dict(sel=0, setup="1 x RTX 3090", mfu_source="predicted"), **datum)
    script = (f"const {CAP_PARAM} = {json.dumps(found['cap'][0])}; const plan_setup = '1 x rtx3090';"
              f"const datum = {json.dumps(datum)};"
              "const format = (v, f) => f === '.0%' ? Math.round(v * 100) + '%' : String(v);"
              f"console.log({found['label'][0]});")
    said = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60)
    assert said.returncode == 0, said.stderr
    return said.stdout.strip()


def test_a_capped_prediction_s_mfu_reads_as_held_though_its_division_rounds_below_the_cap():
    """A prediction held at the cap rates its MFU on its held step (``transfer.min_step_s``), and that division
    can round an ulp below ``MFU_CAP``: the plan that takes it still says its days are a lower bound, and so does
    the explorer's answer line in the browser (its expression run by node, where node is installed)."""
    from academic_bench.catalog.hardware import get_gpu
    from academic_bench.predict.transfer import MFU_CAP, min_step_s

    gpu, peak = get_gpu("rtx3090"), get_gpu("rtx3090").peak_flops("bf16", False)
    rated = (f / (min_step_s(f, gpu, 1, "bf16", False) * peak) for f in (1e18 * (1 + k / 997) for k in range(1000)))
    below = next(m for m in rated if m < MFU_CAP)  # the held step's MFU, as ``transfer.predict`` computes it
    answers = [_answer(m, "rtx3090", 1, below, kind="predicted") for m in ("pythia-410m", "pythia-1b")]
    held = planner.plan_decoder(_params("pythia-1b"), 3e12, "rtx3090", 1, answers=answers)
    words = planner.CAPPED_WORDS.format(cap=MFU_CAP)
    assert held.capped and words in held.note
    said = _node_says(dict(days=1.0, days_low=1.0, days_high=1.0, mfu=below))
    assert said.endswith(words), said


def test_no_answered_decoder_gives_only_the_lower_bound(tmp_path):
    p = planner.plan_decoder(1e9, 3e12, "h200", 4, root=str(tmp_path))
    assert p.days is None and p.mfu is None and "lower bound" in p.note and p.days_at_peak > 0
    table = planner.plan_table(1e9, 3e12, root=str(tmp_path))
    assert len(table) == len(gpu_catalog()) * 4 and table.loc[table["gpu"] == "h200", "days"].isna().all()


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
        planner.plan_decoder(**args)
    assert all(w in str(e.value) for w in words)


def test_plan_explorer_recomputes_when_a_widget_changes(tmp_path):
    from academic_bench.book import explorers

    root = write_synthetic_runs(tmp_path, [("pythia-1b", "a100-80gb", 8, 20.0, 0.40)])
    ex = explorers.plan_explorer(params=1e9, tokens=1e12, gpu="a100-80gb", n_gpus=8, root=root)
    first = ex.result.days
    ex.tokens.value = 2e12
    assert ex.result.days == pytest.approx(2 * first)
    expected = planner.plan_decoder(1e9, 2e12, "a100-80gb", 8, root=root)
    assert ex.result.days == pytest.approx(expected.days)
    assert f"{expected.days:,.1f} days" in ex.output.value
    # Another GPU: Pythia-1B is answered there too (every memory-saving combination is weighed), and the
    # explorer gives what the planner gives.
    ex.gpu.value = "rtx3090"
    again = planner.plan_decoder(1e9, 2e12, "rtx3090", 8, root=root)
    assert ex.result.gpu == "rtx3090" and ex.result.days == pytest.approx(again.days)
    assert ("which is no answer" in ex.output.value) == (again.days is None)


def test_a_naive_only_setting_is_no_point_of_the_planner(tmp_path):
    """A setting measured only with the naive baseline has no optimum yet: it answers nothing, so its low MFU
    cannot pull the planner's answer for other sizes (a 0.4B model once got more days than a 1B one)."""
    from academic_bench.catalog.config import Config
    from academic_bench.catalog.methods import preset
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
    from academic_bench.answer import answer

    assert answer("pythia-410m", "h200", 2, str(tmp_path)).kind != "measured"
    s = mfu_by_size(grid(str(tmp_path)), "h200", 2, _params("pythia-410m"))
    assert s is None or "pythia-410m" not in s.points
