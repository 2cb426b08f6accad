"""The one answer on every catalog GPU: every memory-saving combination weighed (sharding where plain data
parallelism fits no micro-batch), and a prediction on a GPU the study never measured widened by the published check
at its distance, labelled so, its central value untouched."""
from __future__ import annotations

from dataclasses import replace

import pytest

from academic_bench.answer import answer
from academic_bench.answer.published_ranges import widen
from academic_bench.answer.types import Answer
from academic_bench.catalog.config import Config
from academic_bench.catalog.hardware import get_gpu
from academic_bench.catalog.methods import FREE_LUNCH, parse_methods
from academic_bench.estimate import max_micro_batch
from academic_bench.predict.transfer import MFU_CAP


@pytest.mark.parametrize("n", [2, 4, 8])
def test_sharding_answers_where_plain_data_parallelism_fits_no_micro_batch(n):
    """Pythia-6.9B's states do not fit an H200 with plain data parallelism by the memory model; the answer then
    takes a combination that fits, not "no micro-batch fits"."""
    gpu = get_gpu("h200")
    assert max_micro_batch(Config("pythia-6.9b", "h200", n, methods=FREE_LUNCH), gpu.memory_gb) is None
    a = answer("pythia-6.9b", "h200", n)
    assert a.answered and a.days is not None and a.settings is not None
    m = parse_methods(a.settings.methods)
    assert m.sharding != "none" or m.offload
    assert max_micro_batch(Config("pythia-6.9b", "h200", n, methods=m), gpu.memory_gb) is not None


def _predicted(gpu: str, source_setup: str, mfu: float = 0.3) -> Answer:
    return Answer(kind="predicted", days=100.0, days_low=90.0, days_high=110.0, mfu=mfu, settings=None,
                  rests_on="scaled from the source", model="pythia-1b", gpu=gpu, n_gpus=8, paper_days=None,
                  paper_mfu=None, paper_cell=None, bound_days=50.0, range_basis="the study's own checks",
                  source_setup=source_setup, by="transfer model")


def test_a_prediction_on_a_gpu_never_measured_is_widened_by_its_distance_and_says_so():
    # Hopper to Ampere is one generation (Ada and Hopper both follow Ampere: published_family.GENERATION_STEP)
    records = [{"distance": "one generation", "points": 7, "median": 1.0, "low": 0.5, "high": 2.0,
                "generations": "ampere"}]
    w = widen(_predicted("a100-40gb", "h100x1"), records)
    assert w.days == 100.0  # the transfer model's central value
    assert (w.days_low, w.days_high) == (pytest.approx(50.0), pytest.approx(200.0))
    assert "never measured on this GPU" in w.rests_on and "7 published points" in w.rests_on
    assert "1 x H100" in w.rests_on
    # A span the study's own checks already hold is kept, never narrowed.
    narrow = [{**records[0], "low": 0.95, "high": 1.05}]
    w = widen(_predicted("a100-40gb", "h100x1"), narrow)
    assert (w.days_low, w.days_high) == (90.0, 110.0)


def test_a_widened_range_never_claims_an_mfu_no_real_run_passes():
    records = [{"distance": "one generation", "points": 7, "median": 1.0, "low": 0.5, "high": 2.0,
                "generations": "ampere"}]
    w = widen(_predicted("a100-40gb", "h100x1", mfu=0.5), records)  # days / 2 would imply an MFU of 1.0
    assert w.days_low == pytest.approx(100.0 * 0.5 / MFU_CAP) and w.days_high == pytest.approx(200.0)
    assert f"held at {MFU_CAP:.0%} MFU" in w.range_basis
    again = widen(replace(w, rests_on="scaled from the source"), records)  # held once more: said once
    assert again.range_basis.count(f"held at {MFU_CAP:.0%} MFU") == 1


def test_a_distance_no_published_point_reaches_is_said_and_a_measured_gpu_is_left_alone():
    w = widen(_predicted("a100-40gb", "h100x1"), [])
    assert "no published point checks" in w.rests_on and (w.days_low, w.days_high) == (90.0, 110.0)
    same = _predicted("h200", "h100x1")  # the study measured the H200: its own checks hold
    assert widen(same, [{"distance": "same architecture", "points": 3, "median": 1, "low": 0.5, "high": 2,
                         "generations": "hopper"}]) == same


def test_cost_prices_every_catalog_gpu_it_can_and_says_which_price_is_missing(capsys):
    from academic_bench import cli

    assert cli.main(["cost", "--model", "pythia-1b", "--gpu", "rtx4090", "--gpus", "8"]) == 0
    assert "no price" not in capsys.readouterr().out
    assert cli.main(["cost", "--model", "pythia-1b", "--gpu", "a100-40gb", "--gpus", "8"]) == 0
    out = capsys.readouterr().out
    assert "no purchase price of the a100-40gb" in out and "--gpu-price" in out


@pytest.mark.parametrize("command", [["cost"], ["export", "--best", "--out", "unused"]])
def test_cost_and_export_refuse_as_estimate_does(command, capsys):
    from academic_bench import cli

    for gpu, said in (("v100-32gb", "--precision fp16"), ("mi300x", "AMD GPU")):
        argv = [*command[:1], "--model", "pythia-1b", "--gpu", gpu, "--gpus", "8", *command[1:]]
        assert cli.main(argv) == 2
        assert said in capsys.readouterr().err


def test_the_smallest_setup_named_where_nothing_fits_does_fit():
    """Where nothing fits, the answer names the smallest setup that would; the memory model fits it."""
    from academic_bench.answer.compute import smallest_fitting

    fits = smallest_fitting("pythia-6.9b", "l4", 1)
    assert fits.n_gpus > 1 and fits.gpu is not None
    assert max_micro_batch(Config("pythia-6.9b", fits.gpu, fits.n_gpus, methods=parse_methods(fits.methods)),
                           get_gpu(fits.gpu).memory_gb) is not None
    assert f"the smallest that would: {fits.n_gpus} x {fits.gpu} ({fits.methods})" in fits.words()


def test_a_refusal_keeps_the_setup_that_would_fit_through_json():
    """A page or a script reads the smallest fitting setup of a refused answer as data, also from answers.json."""
    import json

    from academic_bench.answer.types import Answer, Fitting

    fits = Fitting("l4", 1, 2, "l4", "free-lunch+zero3")
    a = Answer(model="pythia-6.9b", gpu="l4", n_gpus=1, kind="none", days=None, days_low=None, days_high=None,
               mfu=None, settings=None, rests_on=fits.words(), fits_from=fits)
    back = Answer.from_dict(json.loads(json.dumps(a.to_dict())))
    assert back == a and back.fits_from.methods == "free-lunch+zero3"
    assert "nothing fits 1 x l4 by the memory model; the smallest that would: 2 x l4" in fits.words()
