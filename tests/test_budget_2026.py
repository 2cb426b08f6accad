"""What a budget buys today (answer.budget, cost.prices) and the survey beside the answer (answer.survey_days):
the invariants a reader relies on, computed from the kept answers and the price files, never typed in."""
from __future__ import annotations

import csv
from importlib import resources

import pandas as pd
import pytest

from academic_bench.analysis import survey
from academic_bench.answer import answer
from academic_bench.answer.budget import budget_table, format_budget_table, today_setups
from academic_bench.answer.survey_days import survey_days
from academic_bench.catalog.hardware import every_gpu
from academic_bench.cost import TODAY_FROM, dated_prices, today_card_prices, today_purchase


def _rows(name: str) -> list[dict]:
    text = resources.files("academic_bench").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def test_the_papers_2024_quotes_stay_beside_todays_prices():
    prices = dated_prices()
    for q in _rows("paper_appendix_h_prices.csv"):  # every quote of the paper's Table 5, as printed
        kept = prices[(prices["gpu"] == q["gpu"]) & (prices["date"] == q["date"])]
        assert list(kept["usd"]) == [float(q["price_usd"])], q["gpu"]
    today = today_card_prices()
    assert today, "no price of today"
    for gpu, r in today.items():
        assert str(r["date"]) >= TODAY_FROM and r["source"], gpu
        newer = prices[(prices["gpu"] == gpu) & (prices["what"] == "card") & (prices["date"] > r["date"])]
        assert newer.empty, f"{gpu}: a newer price than the one taken"
    for r in _rows("purchase_prices.csv"):  # each price names its page, its date and the line it quotes
        assert r["gpu"] in every_gpu() and r["source_url"].startswith("https://") and r["quoted"] and r["date"]


def test_a_machine_at_todays_prices_is_its_cards_and_the_papers_chassis_or_a_whole_machine_quote():
    chassis = {int(r["n_gpus"]): float(r["total_usd"]) for r in _rows("paper_machine_costs.csv")}
    whole = {(r["gpu"], int(r["n_gpus"])): float(r["usd"]) for r in _rows("purchase_prices.csv")
             if r["what"] == "machine"}
    for gpu, card in today_card_prices().items():
        for n in (1, 2, 4, 8):
            want = whole.get((gpu, n), n * float(card["usd"]) + chassis[n])
            assert today_purchase(gpu, n).usd == pytest.approx(want)
    assert today_purchase("a6000", 4) is None, "a GPU with only a 2024 quote has no price of today"


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return budget_table()


def test_the_budget_table_picks_within_each_limit_the_fastest_or_cheapest_of_the_candidates(table):
    setups = today_setups()
    assert set(table["model"]) == set(setups["model"])
    for r in table.itertuples():
        mine = setups[setups["model"] == r.model]
        if r.question == "fastest within":
            fits = mine[mine["purchase_usd"] <= r.limit]
            if fits.empty:
                assert not isinstance(r.setup, str) and r.why
                continue
            assert r.purchase_usd <= r.limit and r.days == fits["days"].min()
        else:
            fits = mine[mine["days"] <= r.limit]
            if fits.empty:
                assert not isinstance(r.setup, str) and r.why
                continue
            assert r.days <= r.limit and r.purchase_usd == fits["purchase_usd"].min()
        assert r.kind in ("measured", "predicted", "paper") and r.label and r.price_basis
        assert r.days_low <= r.days <= r.days_high
        a = answer(r.model, r.gpu, r.n_gpus)  # the one answer, not a number of its own
        assert (a.kind, a.days) == (r.kind, r.days)


def test_the_printed_table_names_every_model_and_question(table):
    text = format_budget_table(table)
    for q in ("fastest within $10K", "fastest within $250K", "cheapest within 30 days", "cheapest within 100 days"):
        assert text.count(q) == table["model"].nunique()


def _setup(n_gpus: int, name: str, kind: str, days: float, low: float, high: float, usd: float) -> dict:
    """One Pythia-1B setup of a small table, as ``today_setups`` gives them."""
    return {"model": "pythia-1b", "gpu": "g", "n_gpus": n_gpus, "setup": f"{n_gpus} x {name}", "kind": kind,
            "label": kind[0], "days": days, "days_low": low, "days_high": high, "purchase_usd": usd,
            "price_basis": "b", "rests_on": ""}


def test_ties_and_empty_answers_on_a_small_table():
    s = pd.DataFrame([_setup(1, "cheap", "predicted", 50.0, 40.0, 60.0, 5_000.0),
                      _setup(2, "dear", "measured", 50.0, 49.0, 51.0, 9_000.0)])
    t = budget_table(["pythia-1b"], budgets=(10_000, 1_000), deadlines=(50, 10), setups=s).set_index("limit")
    assert t.loc[10_000.0, "setup"] == "1 x cheap", "equal days: the cheaper"
    assert t.loc[50.0, "setup"] == "1 x cheap"
    assert pd.isna(t.loc[1_000.0, "setup"]) and "$5,000" in t.loc[1_000.0, "why"]
    assert pd.isna(t.loc[10.0, "setup"]) and "50.0 days" in t.loc[10.0, "why"]


def test_a_machine_that_trains_longer_than_the_gpus_life_says_so_on_a_small_table():
    s = pd.DataFrame([_setup(1, "slow", "predicted", 800.0, 700.0, 900.0, 5_000.0),
                      _setup(8, "fast", "measured", 20.0, 19.0, 21.0, 90_000.0)])
    t = budget_table(["pythia-1b"], budgets=(10_000, 100_000), deadlines=(), setups=s,
                     lifespan_years=2).set_index("limit")
    # Kept as the answer (the fastest the money buys), and said to outlast a 2-year life: 800 days are 2.2 years.
    assert t.loc[10_000.0, "setup"] == "1 x slow"
    assert t.loc[10_000.0, "past_life"] == "2.2 years, longer than the GPUs' assumed 2-year life"
    assert t.loc[100_000.0, "past_life"] == ""
    assert "1 x slow" in format_budget_table(t.reset_index()) and "assumed 2-year life" in format_budget_table(
        t.reset_index())


def test_the_budget_table_and_explorer_say_where_a_run_outlasts_the_cost_models_lifespan(table, shown):
    from academic_bench.book.explorers import budget_answer
    from academic_bench.cost import DAYS_PER_YEAR, Assumptions

    life = Assumptions().lifespan_years
    for r in table.itertuples():
        over = isinstance(r.setup, str) and r.days > life * DAYS_PER_YEAR
        assert bool(r.past_life) == over, (r.model, r.question, r.limit)
        if over:
            years = f"{r.days / DAYS_PER_YEAR:,.1f} years"
            assert r.past_life == f"{years}, longer than the GPUs' assumed {life:g}-year life"
        if r.question == "fastest within":
            said = budget_answer(shown, r.model, "today", "answer", r.limit)
            assert said.endswith(f"; {r.past_life}") == over, said


# --- the budget explorer: the same machines, today's prices by default, the paper's quotes beside them ------------

@pytest.fixture(scope="module")
def shown() -> pd.DataFrame:
    from academic_bench.book.explorers import budget_setups

    return budget_setups()


def test_the_budget_explorer_shows_every_machine_of_todays_prices_with_its_label_and_range(shown):
    today = shown[(shown["prices"] == "today") & (shown["days_from"] == "answer")]
    setups = today_setups()
    assert len(today) == len(setups) and today["setup"].nunique() == setups["setup"].nunique()
    keys = ["days", "days_low", "days_high", "purchase_usd", "label", "price_basis"]
    assert today[keys].reset_index(drop=True).equals(setups[keys].reset_index(drop=True))
    priced = set(today_card_prices()) & {g for g in setups["gpu"]}
    assert len(priced) == setups["gpu"].nunique() > 5, "every GPU with a price of today, not the paper's five"
    # A GPU the paper never priced, never measured by the study: shown, and said to be predicted, with its range.
    mine = today[today["setup"].str.contains("RTX 4090")]
    assert len(mine) and (mine["basis"] == "predicted").all() and mine["label"].str.startswith("predicted").all()
    for r in mine.itertuples():
        assert r.days_low <= r.days <= r.days_high and f"{r.days_low:,.1f}-{r.days_high:,.1f}" in r.about


def test_the_papers_2024_quotes_stay_selectable_at_the_papers_arithmetic(shown):
    quotes = {r["gpu"]: float(r["price_usd"]) for r in _rows("paper_appendix_h_prices.csv")}
    chassis = {int(r["n_gpus"]): float(r["total_usd"]) for r in _rows("paper_machine_costs.csv")}
    from academic_bench.book.explorers.answer_grid import short_label

    paper = shown[shown["prices"] == "paper"]
    names = {short_label(g): g for g in quotes}
    # Every GPU the paper priced, and only those (the H200, priced only since, is not among them).
    assert {s.split(" x ")[1] for s in paper["setup"]} == set(names)
    for r in paper.itertuples():
        gpu = names[r.setup.split(" x ")[1]]
        assert r.purchase_usd == pytest.approx(r.n_gpus * quotes[gpu] + chassis[r.n_gpus]) and "2024" in r.price_basis


def test_the_explorers_answers_at_todays_prices_are_the_budget_tables(shown, table):
    from academic_bench.book.explorers import budget_answer, deadline_answer

    for r in table.itertuples():
        if r.question == "fastest within":
            said = budget_answer(shown, r.model, "today", "answer", r.limit)
        else:
            said = deadline_answer(shown, r.model, "today", "answer", r.limit)
        if isinstance(r.setup, str):
            mine = shown[(shown["model"] == r.model) & (shown["prices"] == "today") & (shown["days_from"] == "answer")
                         & (shown["days"] == r.days) & (shown["purchase_usd"] == r.purchase_usd)]
            assert f": {mine['setup'].iloc[0]}, " in said and f"{r.days:,.1f} days ({mine['about'].iloc[0]})" in said
        else:
            assert said.startswith("Nothing"), said


def test_at_the_papers_quotes_and_days_the_explorer_passes_over_the_papers_implausible_pick(shown):
    from academic_bench import cost
    from academic_bench.book.explorers import budget_answer

    ex = cost.paper_worked_examples()  # Section 4.1: "$40k ... 8 RTX 3090 GPUs", days implying an impossible MFU
    said = budget_answer(shown, "pythia-1b", "paper", "paper", ex["budget_usd"])
    picked = ex["fastest_plausible_within_budget"]
    assert f"{picked['days']:,.1f} days" in said and f"${picked['purchase_usd']:,.0f}" in said
    claimed = ex["fastest_within_budget"]
    mine = shown[(shown["model"] == "pythia-1b") & (shown["prices"] == "paper") & (shown["days_from"] == "paper")
                 & (shown["days"] == claimed["days"])]
    assert claimed["implausible"] and mine["implausible"].all() and len(mine) == 1


def test_the_budget_chart_binds_its_controls_and_tooltips_the_label_range_and_price(shown):
    from academic_bench.book.explorers import PRICE_KINDS, budget_chart

    spec = budget_chart(shown).to_dict()
    binds = {}

    def walk(v):
        if isinstance(v, dict):
            if "bind" in v and "name" in v:
                binds[v["name"]] = v["bind"]
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(spec)
    assert binds["budget_prices"]["options"] == list(PRICE_KINDS) and binds["budget_prices"]["options"][0] == "today"
    assert {"budget_usd", "budget_deadline", "budget_days_from", "budget_model"} <= set(binds)
    from academic_bench.answer.budget import BUDGETS_USD, DEADLINES_DAYS

    assert binds["budget_usd"]["max"] >= max(BUDGETS_USD) and binds["budget_deadline"]["max"] >= max(DEADLINES_DAYS)
    tips = str(spec)
    for field in ("'about'", "'label'", "'price_basis'"):
        assert field in tips


# --- the survey beside the answer ---------------------------------------------------------------------------

def test_every_generation_choice_of_the_questionnaire_names_catalog_gpus_or_none():
    questions = {q.get("column"): q for q in survey.load_questionnaire()["questions"]}
    for tier, choices in survey.GENERATION_GPUS.items():
        offered = [c for c in questions[f"{tier}_gen"]["choices"] if c not in ("Not sure", "None available",
                                                                               "[Other]")]
        assert list(choices) == offered, tier
        for gpus in choices.values():
            assert set(gpus) <= set(every_gpu())


def test_the_papers_aggregates_meet_the_answer():
    d = survey_days("pythia-1b")
    agg = survey.load_paper_aggregates().set_index("key")["value"]
    hopper = d[d["generation"].str.startswith("Hopper")]
    assert (hopper["share"] == agg["share_h100_access"]).all()
    dc = d[(d["tier"] == "data_center") & d["gpu"].notna()]
    assert set(dc.loc[dc["typical"].astype(bool), "n_gpus"]) == {agg["typical_data_center_gpus_for_days"]}
    assert (d.loc[d["gpu"].isna(), "kind"] == "no catalog GPU").all()
    for r in d[d["gpu"].notna()].itertuples():
        try:
            a = answer("pythia-1b", r.gpu, int(r.n_gpus))
        except ValueError as exc:
            assert r.kind == "refused" and r.label == str(exc)
            continue
        assert r.kind == a.kind and (r.days == a.days or (pd.isna(r.days) and a.days is None))


def test_the_survey_table_says_which_answers_are_held_at_the_mfu_cap(monkeypatch):
    """A predicted answer held at the cap is a lower bound, and so is the fast end of a range that reaches the cap:
    the table must say so (a range that starts at its days reads as a mistake without it). A measured answer at
    the same MFU is what ran, and is never marked."""
    from types import SimpleNamespace

    from academic_bench.answer import survey_days as sd
    from academic_bench.predict.transfer import MFU_CAP

    def answer(kind, mfu, days, low, high):
        return SimpleNamespace(kind=kind, mfu=mfu, days=days, days_low=low, days_high=high, answered=True,
                               by="transfer model", rests_on="")

    given = {("rtx3090", 1): answer("predicted", MFU_CAP, 100.0, 100.0, 120.0),
             ("rtx3090", 2): answer("predicted", MFU_CAP * 0.8, 125.0, 100.0, 150.0),
             ("rtx3090", 4): answer("predicted", MFU_CAP * 0.8, 125.0, 110.0, 150.0),
             ("rtx3090", 8): answer("measured", MFU_CAP, 100.0, 100.0, 101.0)}
    monkeypatch.setattr(sd, "_lookup", lambda model, root: (given, {}))
    d = sd.survey_days("pythia-1b").dropna(subset=["gpu"])
    flags = d[d["gpu"] == "rtx3090"].set_index("n_gpus")[["capped", "fast_end_capped"]]
    assert flags.loc[1].tolist() == [True, True]
    assert flags.loc[2].tolist() == [False, True]
    assert flags.loc[4].tolist() == [False, False] and flags.loc[8].tolist() == [False, False]
    assert not d[d["gpu"] != "rtx3090"][["capped", "fast_end_capped"]].any().any()


def test_a_readers_export_meets_the_answer():
    path = resources.files("academic_bench") / "data" / "survey_example.csv"
    df = survey.load_survey(path)
    d = survey_days("vit-large", survey=df)
    raw = [r for r in csv.DictReader(line for line in path.read_text().splitlines() if not line.startswith("#"))]
    for (tier, gen), part in d.groupby(["tier", "generation"]):
        chose = [r for r in raw if gen in r[f"{tier}_gen"].split(";")]
        assert (part["respondents"] == len(chose)).all()
        assert (part["share"] == len(chose) / len(raw)).all()
        for r in part[part["gpu"].notna()].itertuples():
            mem = every_gpu()[r.gpu].memory_gb
            top = survey.largest_memory_choice(tier)
            held = [x for x in (survey.memory_gb(c[f"{tier}_mem"]) for c in chose) if x is not None
                    and (x >= mem or (x >= top and mem > top))]
            assert r.with_memory == len(held)
    assert d["source"].str.startswith("your export").all()
