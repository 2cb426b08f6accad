"""``academic-bench cost`` and ``academic-bench plan``: answers, JSON, and exit 2 with a clear message."""
from __future__ import annotations

import json

import pytest

from academic_bench import cli, cost


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cost_from_the_paper_days(capsys):
    rc, out, _ = run(capsys, "cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "4", "--days-from",
                     "paper", "--json")
    assert rc == 0
    data = json.loads(out)
    assert (data["days"], data["days_source"]) == cost.days_for("pythia-1b", "h100-80gb", 4, ("paper",))
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
    assert data["days_source"] == "given (--days)"
    assert data["per_experiment_usd"] == pytest.approx(expected.per_experiment_usd)
    assert data["energy_usd"] == pytest.approx(expected.energy_usd)
    assert data["cloud_usd"] == pytest.approx(2.5 * 4 * 240)


def test_cost_text_names_its_sources(capsys):
    rc, out, _ = run(capsys, "cost", "--model", "pythia-1b", "--gpu", "h200", "--gpus", "2",
                     "--days-from", "paper,analytic")
    assert rc == 0
    assert "analytic (100% of peak: a lower bound)" in out  # the paper did not measure the H200
    for word in ("purchase", "per experiment", "energy", "cloud rental"):
        assert word in out


def test_plan_passes_over_the_papers_example_whose_days_no_real_run_reaches(capsys):
    """The paper's answer to this question (8 x RTX 3090, 30 days) implies an MFU above 0.75 of the GPUs' peak: no
    answer uses it, and the plan names it as passed over, with its implied MFU."""
    from academic_bench.analysis import MFU_IMPLAUSIBLE, paper_cells

    rc, out, _ = run(capsys, "plan", "--model", "pythia-1b", "--budget", "40000", "--days-from", "paper", "--json")
    assert rc == 0
    data = json.loads(out)
    cells = paper_cells("table1").set_index(["model", "gpu", "n_gpus"])["mfu"]
    assert cells[("pythia-1b", "rtx3090", 8)] > MFU_IMPLAUSIBLE
    assert (data["answer"]["gpu"], data["answer"]["n_gpus"]) != ("rtx3090", 8)
    assert all(cells[("pythia-1b", c["gpu"], c["n_gpus"])] <= MFU_IMPLAUSIBLE for c in data["candidates"])
    assert any(p.startswith("8 x RTX 3090 (paper Table 1: 30 days, implied MFU") for p in data["passed_over"])
    assert all(c["purchase_usd"] <= 40_000 for c in data["candidates"])
    assert "1 x h200" in data["no_days"]


def test_cost_answers_an_unmeasured_setup_with_a_prediction_and_never_with_the_papers_impossible_days(capsys):
    """Pythia-1B on 4 x A100: the default answer is the transfer model's prediction from our measurements; the
    paper's cell implies an MFU no real run reaches, so asked for the paper's days alone the command names that
    cell and its implied MFU, and stops (exit 2) rather than price it."""
    from academic_bench.analysis import MFU_IMPLAUSIBLE, paper_cells

    rc, out, _ = run(capsys, "cost", "--model", "pythia-1b", "--gpu", "a100-80gb", "--gpus", "4", "--json")
    data = json.loads(out)
    assert rc == 0 and data["days_source"].startswith("predicted from ")
    # The MFU the predicted days imply, as for measured and paper days: the prediction's own MFU.
    from academic_bench.transfer_validation import predict_setting

    assert data["implied_mfu"] == pytest.approx(predict_setting("pythia-1b", "a100-80gb", 4).mfu)
    assert data["implied_mfu"] <= MFU_IMPLAUSIBLE
    cells = paper_cells("table1").set_index(["model", "gpu", "n_gpus"])["mfu"]
    assert cells[("pythia-1b", "a100-80gb", 4)] > MFU_IMPLAUSIBLE
    rc, out, err = run(capsys, "cost", "--model", "pythia-1b", "--gpu", "a100-80gb", "--gpus", "4", "--days-from",
                       "paper")
    assert rc == 2 and out == "" and "implied MFU" in err and "no answer" in err and "--days" in err


def test_plan_deadline_and_text(capsys):
    rc, out, _ = run(capsys, "plan", "--model", "pythia-1b", "--deadline", "10", "--days-from", "paper")
    assert rc == 0
    assert out.startswith("cheapest setup (purchase) that trains pythia-1b within 10 days:")
    assert "4 x H100 80GB SXM" in out.splitlines()[1]  # paper Sec 4.1: cheaper than 8 x A100 at 8-9 days


def test_plan_with_nothing_that_fits_shows_the_trade_off(capsys):
    rc, out, _ = run(capsys, "plan", "--model", "pythia-1b", "--budget", "100", "--days-from", "paper")
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
    (["cost", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1", "--days-from", "guess"],
     ["--days-from", "ours, predicted, paper, analytic"]),
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
