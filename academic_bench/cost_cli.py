"""The ``cost`` and ``plan`` sub-commands: what a run costs, and which setup answers a budget question."""
from __future__ import annotations

import argparse
import math

import pandas as pd

from . import cli_args
from .analysis import MFU_IMPLAUSIBLE
from .hardware import catalog as gpu_catalog
from .cost import (DAYS_SOURCES, DEFAULT_SOURCES, GPU_COUNTS, Assumptions, cheapest_within_deadline, cost_of,
                   days_for, days_table, fastest_within_budget, implausible_paper_cells, implied_mfu, pareto_front,
                   setup_label, setups_frame)


def _assumptions(args: argparse.Namespace) -> Assumptions:
    a = Assumptions().with_overrides(lifespan_years=args.lifespan_years, kwh_price_usd=args.kwh_price, pue=args.pue,
                                     utilisation=args.utilisation)
    gpu_price = getattr(args, "gpu_price", None)
    cloud_price = getattr(args, "cloud_price", None)
    if gpu_price is not None:
        a = a.with_overrides(gpu_price_usd={args.gpu: gpu_price})
    if cloud_price is not None:
        a = a.with_overrides(cloud_usd_per_gpu_hour={args.gpu: cloud_price})
    return a


def _prefer(text: str) -> tuple[str, ...]:
    prefer = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in prefer if s not in DAYS_SOURCES]
    if bad or not prefer:
        raise ValueError(f"--days-from takes a comma list of: {', '.join(DAYS_SOURCES)}; got {text!r}")
    return prefer


def _predicted(prefer: tuple[str, ...], models: list[str], gpus: list[str] | None = None,
               counts: tuple[int, ...] = GPU_COUNTS):
    """The transfer model's days for these settings, when "predicted" is a source asked for."""
    if "predicted" not in prefer:
        return None
    from .transfer_validation import predicted_days

    return predicted_days(models, gpus or list(gpu_catalog()), counts)


def _implausible_cells(model: str, prefer: tuple[str, ...]) -> pd.DataFrame:
    """The paper's cells of ``model`` that are no answer (``cost.implausible_paper_cells``), when the paper is a
    source asked for."""
    cells = implausible_paper_cells()
    return cells[cells["model"] == model] if "paper" in prefer else cells.iloc[:0]


def _paper_left_out(model: str, gpu: str, n_gpus: int, prefer: tuple[str, ...]) -> str:
    """Why the paper's cell gave no days, when it exists but implies an MFU no real run reaches."""
    cells = _implausible_cells(model, prefer)
    cell = cells[(cells["gpu"] == gpu) & (cells["n_gpus"] == n_gpus)]
    if cell.empty:
        return ""
    return (f" (the paper's Table 1 gives {cell['days'].iloc[0]:g} days, an implied MFU of {cell['mfu'].iloc[0]:.0%}: "
            f"above {MFU_IMPLAUSIBLE:.0%} of the peak no real run reaches, so it is no answer)")


def _paper_passed_over(model: str, prefer: tuple[str, ...]) -> list[str]:
    """The paper's cells for ``model`` whose days imply an MFU no real run reaches: never an answer, named."""
    return [f"{setup_label(r.gpu, int(r.n_gpus))} (paper Table 1: {r.days:g} days, implied MFU {r.mfu:.0%})"
            for r in _implausible_cells(model, prefer).itertuples()]


def _usd(x: float) -> str:
    """Dollars for people; amounts beyond any machine's price in powers of ten, not 31 digits."""
    return f"${x:,.0f}" if abs(x) < 1e12 else f"${x:.3g}"


# --- cost -----------------------------------------------------------------------------------------------

def _cmd_cost(args: argparse.Namespace) -> None:
    a = _assumptions(args)
    if args.days is not None:
        days, source = args.days, "given (--days)"
    else:
        prefer = _prefer(args.days_from)
        days, source = days_for(args.model, args.gpu, args.gpus, prefer,
                                predicted=_predicted(prefer, [args.model], [args.gpu], (args.gpus,)))
        if days is None:
            raise ValueError(f"{source}{_paper_left_out(args.model, args.gpu, args.gpus, prefer)}; pass --days")
    c = cost_of(args.gpu, args.gpus, days, a, source, args.model)
    this = pd.DataFrame([{"model": args.model, "gpu": args.gpu, "n_gpus": args.gpus, "days": days,
                          "days_source": source}])
    mfu = float(implied_mfu(this).iloc[0]) if args.days is None else math.nan
    data = {**c.to_dict(), "implied_mfu": None if math.isnan(mfu) else mfu, "sources": DEFAULT_SOURCES}

    def text() -> str:
        s = c.assumptions
        return "\n".join([
            f"{args.model} on {c.n_gpus} x {c.gpu}: {c.days:.1f} days ({c.days_source})"
            + (f", implied MFU {mfu:.0%}" if not math.isnan(mfu) else ""),
            f"  purchase            {_usd(c.purchase_usd):>12}  ({c.n_gpus} x {_usd(s['gpu_price_usd'])} GPUs "
            f"+ {_usd(c.machine_usd)} machine for {s['machine_size']} GPU(s))",
            f"  per experiment      {_usd(c.per_experiment_usd):>12}  (purchase x {c.days:.1f} days / "
            f"{s['lifespan_years']:g} years)",
            f"  energy              {_usd(c.energy_usd):>12}  ({c.energy_kwh:,.0f} kWh: {s['board_power_w']:g} W x "
            f"{c.n_gpus} x {c.days * 24:,.0f} h x {s['utilisation']:g} x PUE {s['pue']:g}; "
            f"${s['kwh_price_usd']:g}/kWh)",
            f"  owned, per run      {_usd(c.owned_per_experiment_usd):>12}  (per experiment + energy)",
            f"  cloud rental        {_usd(c.cloud_usd):>12}  (${s['cloud_usd_per_gpu_hour']:g} per GPU-hour)",
            "Defaults and their sources: `academic-bench cost ... --json` (key 'sources').",
        ])

    cli_args.emit(args, data, text)


# --- plan -----------------------------------------------------------------------------------------------

def _cmd_plan(args: argparse.Namespace) -> None:
    a = Assumptions().with_overrides(lifespan_years=args.lifespan_years, kwh_price_usd=args.kwh_price, pue=args.pue,
                                     utilisation=args.utilisation)
    prefer = _prefer(args.days_from)
    setups = setups_frame(days_table([args.model], counts=GPU_COUNTS, prefer=prefer,
                                     predicted=_predicted(prefer, [args.model])), a)
    if setups.empty:
        raise ValueError(f"no days for {args.model} on any setup from: {args.days_from}")
    have = set(zip(setups["gpu"], setups["n_gpus"]))
    missing = [f"{n} x {g}" for g in gpu_catalog() for n in GPU_COUNTS if (g, n) not in have]
    # A setup whose days imply an MFU above MFU_IMPLAUSIBLE (some of the paper's cells) is no answer: it is named
    # as passed over, with its implied MFU.
    passed_over = _paper_passed_over(args.model, prefer)
    if args.budget is not None:
        question = f"fastest setup for {args.model} within a budget of {_usd(args.budget)} (purchase)"
        ranked = fastest_within_budget(setups, args.budget, plausible_only=True)
    else:
        question = f"cheapest setup (purchase) that trains {args.model} within {args.deadline:g} days"
        ranked = cheapest_within_deadline(setups, args.deadline, plausible_only=True)
    cols = ["setup", "gpu", "n_gpus", "days", "days_source", "purchase_usd", "per_experiment_usd",
            "owned_per_experiment_usd", "cloud_usd"]
    answer = ranked.iloc[0][cols].to_dict() if len(ranked) else None
    front = pareto_front(setups)[cols].to_dict("records")
    data = {"question": question, "answer": answer, "candidates": ranked[cols].to_dict("records"),
            "pareto_front": front, "considered": len(setups), "no_days": missing, "days_from": args.days_from,
            "passed_over": passed_over}

    def text() -> str:
        lines = [question + ":"]
        if answer is None:
            lines.append(f"  none of the {len(setups)} setups qualifies. The cost/days trade-off (Pareto front):")
            rows = front
        else:
            lines.append(f"  {answer['setup']}: {answer['days']:.1f} days ({answer['days_source']}), "
                         f"purchase {_usd(answer['purchase_usd'])}, per run {_usd(answer['per_experiment_usd'])} "
                         f"(+ energy: {_usd(answer['owned_per_experiment_usd'])}), cloud {_usd(answer['cloud_usd'])}")
            lines.append(f"All {len(ranked)} qualifying setups, best first:")
            rows = ranked[cols].to_dict("records")
        table = [{"setup": r["setup"], "days": f"{r['days']:.1f}", "source": r["days_source"],
                  "purchase": _usd(r["purchase_usd"]), "per run": _usd(r["per_experiment_usd"]),
                  "cloud": _usd(r["cloud_usd"])} for r in rows]
        lines.append(cli_args.table(table, ["setup", "days", "source", "purchase", "per run", "cloud"]))
        if passed_over:
            lines.append(f"Passed over (days no real run reaches, above {MFU_IMPLAUSIBLE:.0%} MFU): "
                         f"{', '.join(passed_over)}.")
        if missing:
            lines.append(f"Left out (no days from {args.days_from}): {', '.join(missing)}. "
                         "Add 'analytic' to --days-from to include 100%-of-peak lower bounds.")
        return "\n".join(lines)

    cli_args.emit(args, data, text)


# --- parsers --------------------------------------------------------------------------------------------

def _assumption_args(p: argparse.ArgumentParser, days_from: tuple[str, ...] = DAYS_SOURCES) -> None:
    p.add_argument("--lifespan-years", type=float, default=None, help="hardware lifespan (default 5, paper Sec 4.1)")
    p.add_argument("--kwh-price", type=float, default=None, help="USD per kWh (default 0.1124, EIA)")
    p.add_argument("--pue", type=float, default=None, help="data-centre overhead, >= 1 (default 1.58, Uptime)")
    p.add_argument("--utilisation", type=float, default=None,
                   help="fraction of board power drawn, (0, 1] (default 1: an upper bound)")
    p.add_argument("--days-from", default=",".join(days_from),
                   help=f"where days come from, in order of preference, from {', '.join(DAYS_SOURCES)} "
                        f"(default {','.join(days_from)})")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cost", help="purchase, per-experiment, energy and cloud cost of one training run")
    cli_args.add_setting(p)
    p.add_argument("--days", type=float, default=None,
                   help="training days (default: ours if measured, else predicted from ours, else paper Table 1, "
                        "else analytic)")
    p.add_argument("--gpu-price", type=float, default=None, help="USD per GPU (default: data/gpus.csv)")
    p.add_argument("--cloud-price", type=float, default=None,
                   help="USD per GPU-hour (default: data/cloud_prices.csv)")
    _assumption_args(p)
    p.set_defaults(func=_cmd_cost)

    p = sub.add_parser("plan", help="the fastest setup within a budget, or the cheapest within a deadline")
    cli_args.add_json(p)
    cli_args.add_model(p)
    q = p.add_mutually_exclusive_group(required=True)
    q.add_argument("--budget", type=float, help="USD available to buy a machine")
    q.add_argument("--deadline", type=float, help="days the run may take")
    # Analytic days assume 100% of peak: ranking them beside measured days would favour unmeasured setups.
    _assumption_args(p, days_from=("ours", "predicted", "paper"))
    p.set_defaults(func=_cmd_plan)


