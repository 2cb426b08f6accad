"""``academic-bench cost`` and ``academic-bench plan``: answers, JSON, and exit 2 with a clear message."""
from __future__ import annotations

import json

import pytest

from academic_bench import cli, cost


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cost_prices_the_studys_answer(capsys):
    from academic_bench.answer import answer

    rc, out, _ = run(capsys, "cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "4", "--json")
    assert rc == 0
    data = json.loads(out)
    a = answer("pythia-1b", "h100-80gb", 4)
    assert (data["days"], data["days_source"], data["implied_mfu"]) == (a.days, a.kind, a.mfu)
    assert data["answer"]["settings"] == a.to_dict()["settings"]
    expected = cost.cost_of("h100-80gb", 4, data["days"])
    for key in ("purchase_usd", "per_experiment_usd", "energy_usd", "cloud_usd", "owned_per_experiment_usd"):
        assert data[key] == pytest.approx(getattr(expected, key))
    assert "kwh_price_usd" in data["sources"]


def test_cost_with_given_days_and_overrides(capsys):
    rc, out, _ = run(capsys, "cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "4", "--days", "10",
                     "--lifespan-years", "3", "--kwh-price", "0.2", "--pue", "1.2", "--gpu-price", "25000",
                     "--cloud-price", "2.5", "--json")
    assert rc == 0
    data = json.loads(out)
    a = cost.Assumptions(lifespan_years=3, kwh_price_usd=0.2, pue=1.2, gpu_price_usd={"h100-80gb": 25_000},
                         cloud_usd_per_gpu_hour={"h100-80gb": 2.5})
    expected = cost.cost_of("h100-80gb", 4, 10.0, a)
    assert data["days_source"] == "given (--days): your what-if" and data["implied_mfu"] is None
    assert data["per_experiment_usd"] == pytest.approx(expected.per_experiment_usd)
    assert data["energy_usd"] == pytest.approx(expected.energy_usd)
    assert data["cloud_usd"] == pytest.approx(2.5 * 4 * 240)


def test_cost_text_names_the_settings_and_what_they_rest_on(capsys):
    from academic_bench.answer import answer

    rc, out, _ = run(capsys, "cost", "--model", "pythia-1b", "--gpu", "a100-80gb", "--gpus", "4")
    a = answer("pythia-1b", "a100-80gb", 4)
    assert rc == 0 and out.startswith(f"pythia-1b on 4 x a100-80gb: {a.headline()}")
    assert a.settings.words() in out and a.settings.export_command in out and a.rests_on in out
    for word in ("purchase", "per experiment", "energy", "cloud rental", "lower bound"):
        assert word in out


def test_plan_never_recommends_the_papers_days_that_no_real_run_reaches(capsys):
    """The paper's answer to this question (8 x RTX 3090, 30 days) implies an MFU above 0.75 of the GPUs' peak:
    no answer uses it, and every candidate is one of the study's answers."""
    from academic_bench.analysis import MFU_IMPLAUSIBLE
    from academic_bench.answer import answer

    rc, out, _ = run(capsys, "plan", "--model", "pythia-1b", "--budget", "40000", "--json")
    assert rc == 0
    data = json.loads(out)
    for c in data["candidates"]:
        a = answer("pythia-1b", c["gpu"], c["n_gpus"])
        assert (c["days"], c["kind"]) == (a.days, a.kind) and c["implied_mfu"] <= MFU_IMPLAUSIBLE
        assert c["purchase_usd"] <= 40_000
    top = data["answer"]
    from academic_bench.answer import Answer

    assert Answer.from_dict(top) == answer("pythia-1b", top["gpu"], top["n_gpus"])


def test_plan_deadline_and_text(capsys):
    rc, out, _ = run(capsys, "plan", "--model", "pythia-1b", "--deadline", "60")
    assert rc == 0
    assert out.startswith("cheapest setup (purchase) that trains pythia-1b within 60 days:")
    assert "settings" in out.splitlines()[2]


def test_plan_with_nothing_that_fits_shows_the_trade_off(capsys):
    rc, out, _ = run(capsys, "plan", "--model", "pythia-1b", "--budget", "100")
    assert rc == 0 and "none of the" in out and "Pareto" in out


@pytest.mark.parametrize("argv, words", [
    (["cost", "--model", "pythia-1b", "--gpu", "a100", "--gpus", "8"], ["unknown GPU 'a100'", "a100-80gb"]),
    (["cost", "--model", "gpt2", "--gpu", "h100-80gb", "--gpus", "1"], ["unknown model 'gpt2'", "pythia-1b"]),
    (["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "0"], ["at least 1", "0"]),
    (["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "16"], ["16 GPUs", "at most 8"]),
    (["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--kwh-price", "-1"],
     ["price per kWh", "-1"]),
    (["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--gpu-price", "-3"], ["GPU price", "-3"]),
    (["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--pue", "0.5"], ["PUE", "0.5"]),
    (["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--days", "-2"], ["training days", "-2"]),
    (["plan", "--model", "pythia-1b", "--budget", "-5"], ["budget", "-5"]),
    (["plan", "--model", "nope", "--deadline", "5"], ["unknown model 'nope'"]),
])
def test_bad_input_exits_2_with_a_message(capsys, argv, words):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    assert all(w in err for w in words), err


def test_plan_needs_a_budget_or_a_deadline(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["plan", "--model", "pythia-1b"])
    assert e.value.code == 2
    assert "--budget" in capsys.readouterr().err
