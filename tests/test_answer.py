"""The study's answer (``academic_bench.answer``): one function, one order of sources, and every surface giving
the same days, range, settings and label for the same question."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from academic_bench import cli
from academic_bench.book import explorers
from academic_bench.analysis import MFU_IMPLAUSIBLE
from academic_bench.answer import KINDS, answer, grid
from academic_bench.answer.store import content_key, shipped_is_current
from measured import typed_figures  # noqa: F401  (a fixture)
from test_cost import write_synthetic_runs

ROOT = Path(__file__).resolve().parents[1]
DECODERS = sorted((ROOT / "notebooks/runs/h100x1/evidence/decoders").glob("*/config.json"))[:3]


def run(capsys, *argv: str) -> dict:
    """A command's JSON; it exits 0 with an answer, 1 where the study has none (README)."""
    rc = cli.main([*argv, "--json"])
    d = json.loads(capsys.readouterr().out)
    answered = (d.get("answer") or {}).get("kind", "none") != "none" if argv[0] == "estimate" else True
    assert rc == (0 if answered else 1)
    return d


def same(a: dict, b: dict, keys=("kind", "days", "days_low", "days_high", "mfu", "settings")) -> None:
    assert {k: a[k] for k in keys} == {k: b[k] for k in keys}


# --- the one order of sources ---------------------------------------------------------------------------------

@pytest.mark.usefixtures("typed_figures")  # synthetic rows with typed-in figures
def test_measured_then_predicted_then_the_plausible_paper_then_none(tmp_path):
    root = write_synthetic_runs(tmp_path, [("pythia-1b", "h100-80gb", 1, 50.0, 0.4)])
    here = answer("pythia-1b", "h100-80gb", 1, root)
    assert (here.kind, here.days, here.source_setup) == ("measured", 50.0, "synthetic") and here.rows
    assert here.settings.methods == "free-lunch" and (here.settings.micro_batch, here.settings.gas) == (8, 128)
    there = answer("pythia-1b", "a100-80gb", 4, root)  # carried by the transfer model, never the paper's days
    assert there.kind == "predicted" and there.by == "transfer model" and there.source_setup == "synthetic"
    assert there.days_low <= there.days <= there.days_high and there.mfu <= MFU_IMPLAUSIBLE
    assert there.stated_error and there.settings.export_command.startswith("academic-bench export --best")
    assert there.paper_days is not None and there.paper_mfu > MFU_IMPLAUSIBLE  # beside it, as the paper's
    for a in grid(root):  # a model nothing was measured for: the paper's cell only where it is plausible
        if a.model == "pythia-160m":
            assert a.kind in ("paper", "none")
            assert (a.kind == "paper") == (a.paper_mfu is not None and a.paper_mfu <= MFU_IMPLAUSIBLE)
            if a.kind == "none":
                assert a.days is None and a.settings is None and a.rests_on


def test_no_answer_rests_on_an_assumed_or_impossible_mfu():
    for a in grid():
        assert a.kind in KINDS
        if a.answered:
            assert 0 < a.mfu <= MFU_IMPLAUSIBLE * (1 + 1e-9) and a.days >= a.bound_days * (1 - 1e-9)
            assert a.rental_usd > 0 and a.owned_usd > 0
        if a.kind in ("measured", "predicted"):
            assert a.settings is not None and a.settings.micro_batch and a.settings.gas
        assert a.kind != "measured" or a.rows


def test_the_shipped_answers_are_current():
    """``notebooks/runs/answers.json`` is what the runs beside it give today (``make book`` rewrites it)."""
    from academic_bench.answer.compute import compute_grid

    assert shipped_is_current(), "run `make book` (or academic_bench.answer.store.write_shipped()) and commit"
    kept = json.loads((ROOT / "notebooks/runs/answers.json").read_text())
    assert kept["key"] == content_key()
    fresh = [a.to_dict() for a in compute_grid()]
    assert json.loads(json.dumps(fresh)) == kept["answers"]
    # The work model's calibration and the host's optimizer rates, kept so that a config.json's answer reads no run.
    from academic_bench.answer.store import calibration

    assert json.loads(json.dumps(calibration())) == kept["work_model"]


# --- every surface gives the same answer ---------------------------------------------------------------------

def test_every_surface_gives_the_same_answer_for_every_cell(capsys):
    """``answer``, ``cost --json``, ``estimate --json``, the answer grid of the intro, the explorers' setups and
    ``plan --json`` agree on days, range, MFU, settings and label for every model x GPU x count."""
    frame = explorers.answer_grid_frame().set_index(["model", "gpu", "n_gpus"])
    setups = explorers.explorer_setups()
    setups = setups[setups["kind"] == "answer"].set_index(["model", "gpu", "n_gpus"])
    from academic_bench.answer.published_ranges import every_answer

    planned = {}
    study = {a.gpu for a in grid()}
    # The answers as ``answer()`` gives them (a prediction on a GPU never measured widened by the published check),
    # on the study's GPUs; the catalog's others are asked the same way (``answer``), checked by the grid's tests.
    for a in (a for a in every_answer() if a.gpu in study):
        assert a == answer(a.model, a.gpu, a.n_gpus)
        key = (a.model, a.gpu, a.n_gpus)
        d = a.to_dict()
        g = frame.loc[key]
        assert g["kind"] == explorers.GRID_LABELS[a.kind]
        nan = float("nan")
        assert (g["days"], g["days_low"], g["days_high"], g["mfu"]) == pytest.approx(
            tuple(nan if v is None else v for v in (a.days, a.days_low, a.days_high, a.mfu)), nan_ok=True)
        if a.answered:
            assert setups.loc[key, "days"] == a.days and setups.loc[key, "implied_mfu"] == a.mfu
            c = run(capsys, "cost", "--model", a.model, "--gpu", a.gpu, "--gpus", str(a.n_gpus))
            same(c["answer"], d)
            assert (c["days"], c["implied_mfu"]) == (a.days, a.mfu)
        else:
            assert key not in setups.index
        if a.model not in planned:
            planned[a.model] = run(capsys, "plan", "--model", a.model, "--budget", "1e9")
        for cand in planned[a.model]["candidates"]:
            if (cand["gpu"], cand["n_gpus"]) == (a.gpu, a.n_gpus):
                assert (cand["days"], cand["kind"], cand["implied_mfu"]) == (a.days, a.kind, a.mfu)


@pytest.mark.parametrize("model, gpu, n", [("pythia-1b", "a100-80gb", 4), ("pythia-1b", "h100-80gb", 1),
                                           ("pythia-6.9b", "h200", 2), ("vit-large", "rtx3090", 8)])
def test_estimate_and_export_give_the_answer(capsys, tmp_path, model, gpu, n):
    a = answer(model, gpu, n)
    e = run(capsys, "estimate", "--model", model, "--gpu", gpu, "--gpus", str(n))
    same(e["answer"], a.to_dict())
    assert e["days"] == a.days and e["days_analytic"]["lower_bound"] == pytest.approx(a.bound_days)
    if a.settings is None:
        assert cli.main(["export", "--best", "--model", model, "--gpu", gpu, "--gpus", str(n), "--out",
                         str(tmp_path)]) == 1  # no answer, no settings: exit 1, as estimate and cost
        return
    assert cli.main(["export", "--best", "--model", model, "--gpu", gpu, "--gpus", str(n), "--out",
                     str(tmp_path)]) == 0
    args = json.loads((tmp_path / "training_args.json").read_text())
    recipe = json.loads((tmp_path / "recipe.json").read_text())
    assert (args["per_device_train_batch_size"], args["gradient_accumulation_steps"]) == (
        a.settings.micro_batch, a.settings.gas)
    assert recipe["methods_label"] == a.settings.methods_label
    assert ("measured" in recipe) == (a.kind == "measured")


def test_what_if_mfu_is_labelled_and_never_the_answer(capsys):
    e = run(capsys, "estimate", "--model", "pythia-1b", "--gpu", "a100-80gb", "--gpus", "4", "--mfu", "0.4")
    a = answer("pythia-1b", "a100-80gb", 4)
    assert e["days"] == a.days and e["what_if"]["mfu"] == 0.4
    assert e["what_if"]["days"] == pytest.approx(a.bound_days / 0.4) and "what-if" in e["what_if"]["label"]


@pytest.mark.parametrize("config", DECODERS, ids=[p.parent.name for p in DECODERS])
def test_a_config_decoder_gets_one_answer_with_its_settings(capsys, config):
    from academic_bench.answer.decoder import decoder_answer
    from academic_bench.catalog.models.from_config import decoder_spec

    e = run(capsys, "estimate", "--model", str(config), "--tokens", "3e11", "--seq-len", "2048", "--gpu",
            "a100-80gb", "--gpus", "4")
    key = decoder_spec(config, seq_len=2048, tokens=3e11).spec.key
    a = decoder_answer(key, "a100-80gb", 4)
    same(e["answer"], a.to_dict())
    assert e["days"] == a.days and a.kind in ("predicted", "none")
    if a.answered:
        assert a.by in ("work model", "catalog decoders by size") and a.settings is not None
        assert e["days_range"] == [a.days_low, a.days_high]


def test_the_answer_is_refused_for_bad_input(capsys):
    for argv, words in ((["cost", "--model", "gpt2", "--gpu", "h100-80gb", "--gpus", "1"], ["gpt2", "pythia-1b"]),
                        (["export", "--best", "--results", "x", "--model", "pythia-1b", "--gpu", "h100-80gb",
                          "--gpus", "1", "--out", "o"], ["--best", "--results"])):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words), err
