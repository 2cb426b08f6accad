"""The ``cost`` and ``plan`` sub-commands: what a run costs, and which setup answers a budget question."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING


from . import args as cli_args
from ..answer import Answer

if TYPE_CHECKING:
    from ..cost import Assumptions


def _assumptions(args: argparse.Namespace) -> "Assumptions":
    from ..cost import Assumptions  # the cost model reads pandas: loaded when a command costs, not on start

    a = Assumptions().with_overrides(lifespan_years=args.lifespan_years, kwh_price_usd=args.kwh_price, pue=args.pue,
                                     utilisation=args.utilisation)
    gpu_price = getattr(args, "gpu_price", None)
    cloud_price = getattr(args, "cloud_price", None)
    if gpu_price is not None:
        a = a.with_overrides(gpu_price_usd={args.gpu: gpu_price})
    if cloud_price is not None:
        a = a.with_overrides(cloud_usd_per_gpu_hour={args.gpu: cloud_price})
    return a


def _usd(x: float | None) -> str:
    """Dollars for people; amounts beyond any machine's price in powers of ten, not 31 digits; a cost without a
    listed price says so (``cost.cost_of`` leaves it None)."""
    if x is None or x != x:
        return "no price"
    return f"${x:,.0f}" if abs(x) < 1e12 else f"${x:.3g}"


# --- cost -----------------------------------------------------------------------------------------------

def _cmd_cost(args: argparse.Namespace) -> None:
    from ..cost import DEFAULT_SOURCES, cost_of

    a = _assumptions(args)
    ans = cli_args.study_answer(args.model, args.gpu, args.gpus, cli_args.config_decoder(args))
    if args.days is not None:
        days, source = args.days, "given (--days): your what-if"
    elif ans.answered:
        days, source = ans.days, ans.kind
    else:
        raise cli_args.NoAnswer(f"no answer for {args.model} on {args.gpus} x {args.gpu}: {ans.rests_on}; pass "
                                "--days for a what-if", ans.to_dict())
    c = cost_of(args.gpu, args.gpus, days, a, source, args.model)
    mfu = ans.mfu if args.days is None else None
    data = {**c.to_dict(), "implied_mfu": mfu, "answer": ans.to_dict(), "sources": DEFAULT_SOURCES}

    def text() -> str:
        s = c.assumptions
        head = (cli_args.answer_lines(ans, f"{args.model} on {c.n_gpus} x {c.gpu}") if args.days is None else
                [f"{args.model} on {c.n_gpus} x {c.gpu}: {c.days:,.1f} days ({c.days_source})",
                 f"  the study's answer: {ans.headline()}"])
        return "\n".join([
            *head,
            f"  purchase            {_usd(c.purchase_usd):>12}  "
            + (f"({c.n_gpus} x {_usd(s['gpu_price_usd'])} GPUs + {_usd(c.machine_usd)} machine for "
               f"{s['machine_size']} GPU(s))" if c.purchase_usd is not None else ""),
            f"  per experiment      {_usd(c.per_experiment_usd):>12}  (purchase x {c.days:.1f} days / "
            f"{s['lifespan_years']:g} years)",
            f"  energy              {_usd(c.energy_usd):>12}  ({c.energy_kwh:,.0f} kWh: {s['board_power_w']:g} W x "
            f"{c.n_gpus} x {c.days * 24:,.0f} h x {s['utilisation']:g} x PUE {s['pue']:g}; "
            f"${s['kwh_price_usd']:g}/kWh)",
            f"  owned, per run      {_usd(c.owned_per_experiment_usd):>12}  (per experiment + energy)",
            f"  cloud rental        {_usd(c.cloud_usd):>12}  "
            + (f"(${s['cloud_usd_per_gpu_hour']:g} per GPU-hour)" if s["cloud_usd_per_gpu_hour"] is not None else ""),
            *([f"  (no purchase price of the {c.gpu} in data/gpus.csv or data/purchase_prices.csv: pass "
               "--gpu-price USD)"] if c.purchase_usd is None else []),
            *([f"  (no cloud price of the {c.gpu} in data/cloud_prices.csv: pass --cloud-price USD)"]
              if c.cloud_usd is None else []),
            "Defaults and their sources: `academic-bench cost ... --json` (key 'sources').",
        ])

    cli_args.emit(args, data, text)


# --- plan -----------------------------------------------------------------------------------------------

def _cmd_plan(args: argparse.Namespace) -> None:
    from ..answer.published_ranges import every_answer
    from ..answer.setups import answer_setups
    from ..cost import cheapest_within_deadline, fastest_within_budget, pareto_front

    a = _assumptions(args)
    answers = _decoder_answers(args)
    if answers is None:  # a catalog model: every catalog GPU's answers, as ``answer()`` gives them
        every = [u for u in every_answer() if u.model == args.model]
        setups = answer_setups([args.model], a, answers=every)
    else:
        every = answers
        setups = answer_setups(None, a, answers=answers)
    missing = [f"{u.n_gpus} x {u.gpu} ({u.rests_on})" for u in every if not u.answered]
    unpriced = sorted(set(setups.loc[setups["purchase_usd"].isna(), "gpu"])) if len(setups) else []
    setups = setups[setups["purchase_usd"].notna()] if len(setups) else setups  # a budget needs a purchase price
    if setups.empty:
        raise cli_args.NoAnswer(f"no answer for {args.model} on any setup: {'; '.join(missing)}")
    if args.budget is not None:
        question = f"fastest setup for {args.model} within a budget of {_usd(args.budget)} (purchase)"
        ranked = fastest_within_budget(setups, args.budget, plausible_only=True)
    else:
        question = f"cheapest setup (purchase) that trains {args.model} within {args.deadline:g} days"
        ranked = cheapest_within_deadline(setups, args.deadline, plausible_only=True)
    cols = ["setup", "gpu", "n_gpus", "days", "days_low", "days_high", "kind", "days_source", "implied_mfu",
            "methods_label", "micro_batch", "gas", "purchase_usd", "per_experiment_usd", "owned_per_experiment_usd",
            "cloud_usd"]
    top = ranked.iloc[0] if len(ranked) else None
    chosen = None
    if top is not None:
        cell = (top["gpu"], int(top["n_gpus"]))
        chosen = (cli_args.study_answer(args.model, *cell) if answers is None else
                  next(c for c in answers if (c.gpu, c.n_gpus) == cell))
    front = pareto_front(setups)[cols].to_dict("records")
    data = {"question": question, "answer": chosen.to_dict() if chosen else None,
            "costs": top[cols].to_dict() if top is not None else None, "candidates": ranked[cols].to_dict("records"),
            "pareto_front": front, "considered": len(setups), "no_answer": missing, "unpriced": unpriced}

    def text() -> str:
        lines = [question + ":"]
        if chosen is None:
            lines.append(f"  none of the {len(setups)} answered setups qualifies. The cost/days trade-off "
                         "(Pareto front):")
            rows = front
        else:
            lines += cli_args.answer_lines(chosen, f"{chosen.model} on {chosen.n_gpus} x {chosen.gpu}")
            lines.append(f"  purchase {_usd(top['purchase_usd'])}, per run {_usd(top['per_experiment_usd'])} "
                         f"(+ energy: {_usd(top['owned_per_experiment_usd'])}), cloud {_usd(top['cloud_usd'])}")
            lines.append(f"All {len(ranked)} qualifying setups, best first:")
            rows = ranked[cols].to_dict("records")
        table = [{"setup": r["setup"], "days": f"{r['days']:.1f}", "answer": r["days_source"],
                  "settings": r["methods_label"] if isinstance(r["methods_label"], str) else "-", "purchase": _usd(r["purchase_usd"]),
                  "per run": _usd(r["per_experiment_usd"]), "cloud": _usd(r["cloud_usd"])} for r in rows]
        lines.append(cli_args.table(table, ["setup", "days", "answer", "settings", "purchase", "per run", "cloud"]))
        if missing:
            lines.append(f"No answer: {'; '.join(missing)}.")
        if unpriced:
            lines.append(f"Answered but not ranked (no purchase price listed): {', '.join(unpriced)}; "
                         "`cost --gpu-price` prices one.")
        return "\n".join(lines)

    cli_args.emit(args, data, text)


def _decoder_answers(args: argparse.Namespace) -> list[Answer] | None:
    """A decoder from its config.json (or the ``name@digest`` a command printed) answered on every setup the
    catalog models are answered on, each GPU's precision chosen by its rule as ``estimate`` chooses it; None for a
    catalog model."""
    if not (cli_args.is_config_path(args.model) or cli_args.is_decoder_key(args.model)):
        return None
    from ..answer import grid

    answers = []
    for gpu, n in dict.fromkeys((g.gpu, g.n_gpus) for g in grid()):
        asked = argparse.Namespace(**vars(args))
        answers.append(cli_args.study_answer(asked.model, gpu, n, cli_args.config_decoder(asked, gpu)))
    return answers


# --- parsers --------------------------------------------------------------------------------------------

def _assumption_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lifespan-years", type=float, default=None, help="hardware lifespan (default 5, paper Sec 4.1)")
    p.add_argument("--kwh-price", type=float, default=None, help="USD per kWh (default 0.1124, EIA)")
    p.add_argument("--pue", type=float, default=None, help="data-centre overhead, >= 1 (default 1.58, Uptime)")
    p.add_argument("--utilisation", type=float, default=None,
                   help="fraction of board power drawn, (0, 1] (default 1: an upper bound)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cost", help="purchase, per-experiment, energy and cloud cost of one training run")
    cli_args.add_json(p)
    cli_args.add_model_or_config(p)
    cli_args.add_gpu(p)
    cli_args.add_gpus(p)
    cli_args.add_config_args(p)
    p.add_argument("--days", type=float, default=None,
                   help="training days, your what-if (default: the study's answer: measured, else predicted "
                        "from a measurement, else the paper's Table 1 where plausible)")
    p.add_argument("--gpu-price", type=float, default=None, help="USD per GPU (default: data/gpus.csv)")
    p.add_argument("--cloud-price", type=float, default=None,
                   help="USD per GPU-hour (default: data/cloud_prices.csv)")
    _assumption_args(p)
    p.set_defaults(func=_cmd_cost, accepts_config=True)

    p = sub.add_parser("plan", help="the fastest setup within a budget, or the cheapest within a deadline")
    cli_args.add_json(p)
    cli_args.add_model_or_config(p)
    cli_args.add_config_args(p)
    q = p.add_mutually_exclusive_group(required=True)
    q.add_argument("--budget", type=float, help="USD available to buy a machine")
    q.add_argument("--deadline", type=float, help="days the run may take")
    _assumption_args(p)
    p.set_defaults(func=_cmd_plan, accepts_config=True)


