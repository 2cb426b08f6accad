"""What a pre-training run costs: buying the machine, running it, or renting the GPUs instead.

The model is the paper's Section 4.1 made explicit and overridable:

- **purchase** = GPUs x GPU price + the machine that holds them (paper Appendix H: GPU quotes in Table 5, desktops
  for 1-2 GPUs in Table 6, servers for 4-8 GPUs in Table 7);
- **per experiment** = purchase x days / (lifespan in days): the hardware's cost spread evenly over its life, one
  experiment being one training run (the paper assumes a five-year life);
- **energy** = board power x GPUs x hours x utilisation x PUE x price per kWh (the paper leaves energy out);
- **cloud** = price per GPU-hour x GPU-hours (data/cloud_prices.csv: on-demand list prices with source and date);
- **owned per experiment** (total cost of ownership of one run) = per experiment + energy.

Days come from this project's measurements where we have them, else the paper's Table 1, else the analytic
estimate (100% of peak, an optimistic bound), and every answer says which.
"""
from __future__ import annotations

import csv
import math
import numbers
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Iterable, Mapping

import pandas as pd

from .hardware import catalog as gpu_catalog

DAYS_PER_YEAR = 365.0
GPU_COUNTS = (1, 2, 4, 8)  # the machines the paper priced (Appendix H)
DAYS_SOURCES = ("ours", "paper", "analytic")

# Defaults a reader can override; each is stated with where it comes from.
DEFAULT_SOURCES = {
    "lifespan_years": "paper Section 4.1 ('conservatively assuming a five-year hardware lifespan')",
    "kwh_price_usd": "EIA Electricity Monthly Update, data for April 2024 (released 2024-06-26): median state "
                     "average revenue, all sectors, 11.24 cents/kWh (eia.gov/electricity/monthly/update/end-use.php)",
    "pue": "Uptime Institute, 'Large data centers are mostly more efficient, analysis confirms' (2023-11-23): "
           "industry average PUE 1.58 in 2023",
    "utilisation": "assumption: the GPUs draw their full board power for the whole run (an upper bound; "
                   "lower it if you measured the draw)",
    "gpu_price_usd": "data/gpus.csv price_usd (paper Appendix H Table 5 for RTX 3090, A6000, A100, H100)",
    "machine_cost_usd": "paper Appendix H, Tables 6 (desktops, 1-2 GPUs) and 7 (servers, 4-8 GPUs)",
    "cloud_usd_per_gpu_hour": "data/cloud_prices.csv (rows marked default; on-demand, with URL and date)",
}


# --- assumptions -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Assumptions:
    """Every number the cost model assumes. Leave a price mapping as None to use the default table."""

    lifespan_years: float = 5.0
    kwh_price_usd: float = 0.1124
    pue: float = 1.58
    utilisation: float = 1.0
    gpu_price_usd: Mapping[str, float] | None = None
    machine_cost_usd: Mapping[int, float] | None = None
    cloud_usd_per_gpu_hour: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        _non_negative("price per kWh", self.kwh_price_usd)
        if not self.lifespan_years > 0:
            raise ValueError(f"the hardware lifespan must be more than 0 years, got {self.lifespan_years}")
        if not self.pue >= 1:
            raise ValueError(f"PUE (facility power / IT power) must be at least 1, got {self.pue}")
        if not 0 < self.utilisation <= 1:
            raise ValueError(f"utilisation must be in (0, 1], got {self.utilisation}")
        for label, table in (("GPU price", self.gpu_price_usd), ("machine cost", self.machine_cost_usd),
                             ("cloud price per GPU-hour", self.cloud_usd_per_gpu_hour)):
            for key, value in (table or {}).items():
                _non_negative(f"{label} for {key}", value)

    def gpu_price(self, gpu: str) -> float:
        table = {**default_gpu_prices(), **(self.gpu_price_usd or {})}
        return _lookup(table, gpu_key(gpu), "GPU price")

    def cloud_price(self, gpu: str) -> float:
        table = {**default_cloud_prices(), **(self.cloud_usd_per_gpu_hour or {})}
        return _lookup(table, gpu_key(gpu), "cloud price per GPU-hour")

    def machine_costs(self) -> dict[int, float]:
        return {**default_machine_costs(), **(self.machine_cost_usd or {})}

    def machine_size(self, n_gpus: int) -> int:
        return machine_size(n_gpus, sizes=tuple(sorted(self.machine_costs())))

    def machine_cost(self, n_gpus: int) -> float:
        return self.machine_costs()[self.machine_size(n_gpus)]

    def with_overrides(self, **kwargs) -> "Assumptions":
        """A copy with the given fields replaced (None values are ignored)."""
        return replace(self, **{k: v for k, v in kwargs.items() if v is not None})


def _non_negative(label: str, value: float) -> None:
    if value is None or not math.isfinite(value) or value < 0:
        raise ValueError(f"{label} must be a non-negative number, got {value!r}")


def _lookup(table: Mapping[str, float], key: str, label: str) -> float:
    if key not in table or table[key] is None:
        raise ValueError(f"no {label} for GPU {key!r}; known: {', '.join(sorted(table))} "
                         f"(pass one in Assumptions)")
    return float(table[key])


# --- names -------------------------------------------------------------------------------------------------

def gpu_key(gpu: str) -> str:
    """A catalog GPU key, or a ValueError naming the valid ones."""
    key = str(gpu).lower()
    if key not in gpu_catalog():
        raise ValueError(f"unknown GPU {gpu!r}; choose one of: {', '.join(gpu_catalog())}")
    return key


def model_key(model: str) -> str:
    """A catalog model key, or a ValueError naming the valid ones."""
    from .models import CATALOG

    key = str(model).lower()
    if key not in CATALOG:
        raise ValueError(f"unknown model {model!r}; choose one of: {', '.join(CATALOG)}")
    return key


def check_gpus(n_gpus: int) -> int:
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, numbers.Integral) or n_gpus < 1:
        raise ValueError(f"the GPU count must be a whole number of at least 1, got {n_gpus!r}")
    return int(n_gpus)


def machine_size(n_gpus: int, sizes: tuple[int, ...] = GPU_COUNTS) -> int:
    """The smallest priced machine that holds ``n_gpus`` (3 GPUs need the 4-GPU server)."""
    check_gpus(n_gpus)
    for size in sizes:
        if n_gpus <= size:
            return size
    raise ValueError(f"no machine is priced for {n_gpus} GPUs; choose at most {max(sizes)} "
                     f"(machines hold {', '.join(map(str, sizes))})")


# --- default tables ----------------------------------------------------------------------------------------

def default_gpu_prices() -> dict[str, float]:
    """USD per GPU from the GPU catalog (data/gpus.csv, each with its source)."""
    return {k: g.price_usd for k, g in gpu_catalog().items() if g.price_usd is not None}


@lru_cache(maxsize=1)
def default_machine_costs() -> dict[int, float]:
    """USD for a machine holding 1, 2, 4 or 8 GPUs (paper Appendix H Tables 6-7, via paper.load_machine_costs)."""
    from .paper import load_machine_costs

    df = load_machine_costs()
    return {int(n): float(c) for n, c in zip(df["n_gpus"], df["total_usd"])}


@lru_cache(maxsize=1)
def cloud_price_table() -> pd.DataFrame:
    """Every row of data/cloud_prices.csv (provider, product, URL, date)."""
    text = resources.files("academic_bench").joinpath("data/cloud_prices.csv").read_text()
    rows = list(csv.DictReader(text.splitlines()))
    df = pd.DataFrame(rows)
    df["usd_per_gpu_hour"] = df["usd_per_gpu_hour"].astype(float)
    df["default"] = df["default"].str.lower().eq("true")
    return df


def default_cloud_prices() -> dict[str, float]:
    df = cloud_price_table()
    return dict(zip(df.loc[df["default"], "gpu"], df.loc[df["default"], "usd_per_gpu_hour"]))


# --- the arithmetic ----------------------------------------------------------------------------------------

def purchase_cost(gpu: str, n_gpus: int, assumptions: Assumptions | None = None) -> float:
    """USD to buy ``n_gpus`` GPUs and the machine that holds them."""
    a = assumptions or Assumptions()
    return check_gpus(n_gpus) * a.gpu_price(gpu) + a.machine_cost(n_gpus)


def per_experiment_cost(purchase_usd: float, days: float, lifespan_years: float = 5.0) -> float:
    """The purchase spread over the hardware's life: the share one run of ``days`` uses."""
    _non_negative("purchase cost", purchase_usd)
    _non_negative("training days", days)
    if not lifespan_years > 0:
        raise ValueError(f"the hardware lifespan must be more than 0 years, got {lifespan_years}")
    return purchase_usd * days / (lifespan_years * DAYS_PER_YEAR)


def energy_kwh(gpu: str, n_gpus: int, days: float, assumptions: Assumptions | None = None) -> float:
    """kWh drawn from the grid: board power x GPUs x hours x utilisation x PUE."""
    a = assumptions or Assumptions()
    _non_negative("training days", days)
    power_w = gpu_catalog()[gpu_key(gpu)].board_power_w
    return power_w / 1000 * check_gpus(n_gpus) * days * 24 * a.utilisation * a.pue


def energy_cost(gpu: str, n_gpus: int, days: float, assumptions: Assumptions | None = None) -> float:
    a = assumptions or Assumptions()
    return energy_kwh(gpu, n_gpus, days, a) * a.kwh_price_usd


def cloud_cost(gpu: str, n_gpus: int, days: float, assumptions: Assumptions | None = None) -> float:
    """Renting the same GPUs on demand for the whole run."""
    a = assumptions or Assumptions()
    _non_negative("training days", days)
    return a.cloud_price(gpu) * check_gpus(n_gpus) * days * 24


@dataclass(frozen=True)
class Cost:
    """One setup's costs for one training run of ``days``."""

    gpu: str
    n_gpus: int
    days: float
    days_source: str
    gpus_usd: float
    machine_usd: float
    purchase_usd: float
    per_experiment_usd: float
    energy_kwh: float
    energy_usd: float
    owned_per_experiment_usd: float  # per experiment + energy: what one run costs on hardware you own
    cloud_usd: float
    assumptions: dict = field(default_factory=dict)
    model: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def cost_of(gpu: str, n_gpus: int, days: float, assumptions: Assumptions | None = None,
            days_source: str = "given", model: str | None = None) -> Cost:
    """All the costs of one run of ``days`` on ``n_gpus`` x ``gpu``."""
    a = assumptions or Assumptions()
    key = gpu_key(gpu)
    check_gpus(n_gpus)
    _non_negative("training days", days)
    gpus_usd = n_gpus * a.gpu_price(key)
    machine_usd = a.machine_cost(n_gpus)
    purchase = gpus_usd + machine_usd
    per_exp = per_experiment_cost(purchase, days, a.lifespan_years)
    kwh = energy_kwh(key, n_gpus, days, a)
    return Cost(
        gpu=key, n_gpus=n_gpus, days=days, days_source=days_source, gpus_usd=gpus_usd, machine_usd=machine_usd,
        purchase_usd=purchase, per_experiment_usd=per_exp, energy_kwh=kwh, energy_usd=kwh * a.kwh_price_usd,
        owned_per_experiment_usd=per_exp + kwh * a.kwh_price_usd, cloud_usd=cloud_cost(key, n_gpus, days, a),
        assumptions=_assumption_summary(a, key, n_gpus), model=model,
    )


def _assumption_summary(a: Assumptions, gpu: str, n_gpus: int) -> dict:
    return {"lifespan_years": a.lifespan_years, "kwh_price_usd": a.kwh_price_usd, "pue": a.pue,
            "utilisation": a.utilisation, "gpu_price_usd": a.gpu_price(gpu), "machine_cost_usd": a.machine_cost(n_gpus),
            "machine_size": a.machine_size(n_gpus),
            "cloud_usd_per_gpu_hour": a.cloud_price(gpu),
            "board_power_w": gpu_catalog()[gpu].board_power_w}


# --- days: ours, the paper's, or analytic --------------------------------------------------------------------

DAYS_COLUMNS = ["model", "gpu", "n_gpus", "days", "days_source"]


def paper_days() -> pd.DataFrame:
    """The paper's Table 1 (optimal settings, days); infeasible settings are dropped."""
    from .paper import load_table1

    df = load_table1()
    df = df[df["days"].notna()].copy()
    df["days_source"] = "paper Table 1"
    return df[DAYS_COLUMNS].reset_index(drop=True)


def measured_days(root: str | None = None) -> pd.DataFrame:
    """Our fastest measured setting per (model, GPU, count); empty with the right columns when none exist."""
    from .analysis import best_per_setting, runs_frame

    best = best_per_setting(runs_frame(root))
    if best.empty:
        return pd.DataFrame(columns=DAYS_COLUMNS)
    df = best[best["days"].notna()].copy()
    df["days_source"] = "ours (" + df["setup"].astype(str) + ")"
    df["n_gpus"] = df["n_gpus"].astype(int)
    return df[DAYS_COLUMNS].reset_index(drop=True)




def days_table(models: Iterable[str] | None = None, gpus: Iterable[str] | None = None,
               counts: Iterable[int] = GPU_COUNTS, prefer: tuple[str, ...] = DAYS_SOURCES,
               root: str | None = None) -> pd.DataFrame:
    """One row per (model, GPU, count) with the first source in ``prefer`` that has days for it."""
    from .models import CATALOG

    models = [model_key(m) for m in (models or CATALOG)]
    gpus = [gpu_key(g) for g in (gpus or gpu_catalog())]
    for source in prefer:
        if source not in DAYS_SOURCES:
            raise ValueError(f"unknown days source {source!r}; choose from: {', '.join(DAYS_SOURCES)}")
    tables = {"ours": measured_days(root) if "ours" in prefer else None,
              "paper": paper_days() if "paper" in prefer else None}
    index = {s: {(r.model, r.gpu, int(r.n_gpus)): (float(r.days), r.days_source) for r in t.itertuples()}
             for s, t in tables.items() if t is not None}
    rows = []
    for m in models:
        for g in gpus:
            for n in counts:
                found = _first_days((m, g, int(n)), prefer, index)
                if found:
                    rows.append({"model": m, "gpu": g, "n_gpus": int(n), "days": found[0], "days_source": found[1]})
    return pd.DataFrame(rows, columns=DAYS_COLUMNS)


def _first_days(key: tuple[str, str, int], prefer: tuple[str, ...], index: dict) -> tuple[float, str] | None:
    for source in prefer:
        if source == "analytic":
            # The paper's Section 3.1 method: 100% of the dense peak, a lower bound, never a forecast.
            from .estimate import analytic_days

            return analytic_days(*key, mfu=1.0), "analytic (100% of peak: a lower bound)"
        elif key in index.get(source, {}):
            return index[source][key]
    return None


def days_for(model: str, gpu: str, n_gpus: int, prefer: tuple[str, ...] = DAYS_SOURCES,
             root: str | None = None) -> tuple[float | None, str]:
    """(days, where they come from) for one setup; (None, reason) when no source has them."""
    df = days_table([model], [gpu], [check_gpus(n_gpus)], prefer, root)
    if df.empty:
        return None, f"no days for {model} on {n_gpus} x {gpu} from: {', '.join(prefer)}"
    return float(df["days"].iloc[0]), str(df["days_source"].iloc[0])


def setup_label(gpu: str, n_gpus: int) -> str:
    """'4 x H100 80GB SXM': how tables and charts name a setup."""
    from .analysis import gpu_label

    return f"{int(n_gpus)} x {gpu_label(gpu)}"


# --- setups, budget questions, Pareto fronts -------------------------------------------------------------

def setups_frame(days: pd.DataFrame, assumptions: Assumptions | None = None) -> pd.DataFrame:
    """``days`` (model, gpu, n_gpus, days, days_source) with every cost column added."""
    a = assumptions or Assumptions()
    rows = [cost_of(r.gpu, int(r.n_gpus), float(r.days), a, r.days_source, r.model).to_dict()
            for r in days.itertuples()]
    cols = [f for f in Cost.__dataclass_fields__ if f != "assumptions"]
    df = pd.DataFrame(rows, columns=[*cols, "assumptions"]).drop(columns="assumptions")
    if not df.empty:
        df["setup"] = [setup_label(g, n) for g, n in zip(df["gpu"], df["n_gpus"])]
    return df


def fastest_within_budget(setups: pd.DataFrame, budget_usd: float, cost: str = "purchase_usd") -> pd.DataFrame:
    """Setups whose ``cost`` fits the budget, fastest first (ties: cheaper first)."""
    _non_negative("budget", budget_usd)
    fits = setups[setups[cost] <= budget_usd]
    return fits.sort_values(["days", cost, "n_gpus"]).reset_index(drop=True)


def cheapest_within_deadline(setups: pd.DataFrame, deadline_days: float,
                             cost: str = "purchase_usd") -> pd.DataFrame:
    """Setups that finish within the deadline, cheapest first (ties: faster first)."""
    _non_negative("deadline (days)", deadline_days)
    ok = setups[setups["days"] <= deadline_days]
    return ok.sort_values([cost, "days", "n_gpus"]).reset_index(drop=True)


def pareto_front(setups: pd.DataFrame, cost: str = "purchase_usd") -> pd.DataFrame:
    """Setups no other setup beats on both ``cost`` and days, cheapest first."""
    ordered = setups.sort_values([cost, "days"]).reset_index(drop=True)
    keep, best_days = [], math.inf
    for i, days in enumerate(ordered["days"]):
        if days < best_days:
            keep.append(i)
            best_days = days
    return ordered.loc[keep].reset_index(drop=True)


# --- the paper's worked examples (Section 4.1) ---------------------------------------------------------------

def paper_assumptions() -> Assumptions:
    """The paper's own prices (Appendix H Table 5 via paper.load_prices) and five-year lifespan."""
    from .paper import load_prices

    df = load_prices()
    prices = dict(zip(df["gpu"], df["price_usd"].astype(float)))
    return Assumptions(gpu_price_usd=prices, lifespan_years=5.0)


def paper_worked_examples(model: str = "pythia-1b", budget_usd: float = 40_000,
                          days: pd.DataFrame | None = None) -> dict:
    """Section 4.1's examples, recomputed from a days table (the paper's Table 1 unless given)."""
    a = paper_assumptions()
    table = paper_days() if days is None else days
    setups = setups_frame(table[table["model"] == model], a)
    if setups.empty:
        return {"model": model, "budget_usd": budget_usd, "fastest_within_budget": None, "a100x8": None,
                "h100x4": None, "fastest_overall": None}

    def pick(gpu: str, n: int) -> dict | None:
        row = setups[(setups["gpu"] == gpu) & (setups["n_gpus"] == n)]
        return row.iloc[0].to_dict() if len(row) else None

    within = fastest_within_budget(setups, budget_usd)
    return {
        "model": model, "budget_usd": budget_usd,
        "fastest_within_budget": within.iloc[0].to_dict() if len(within) else None,
        "a100x8": pick("a100-80gb", 8), "h100x4": pick("h100-80gb", 4),
        "fastest_overall": setups.sort_values(["days", "purchase_usd"]).iloc[0].to_dict(),
    }
