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

from ..catalog.hardware import every_gpu, get_gpu

DAYS_PER_YEAR = 365.0
GPU_COUNTS = (1, 2, 4, 8)  # the machines the paper priced (Appendix H)

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

# The same assumptions as a reader reads them: the book's tables and prose name them so, never by the field names
# above (those are for ``Assumptions`` and the commands).
DEFAULT_WORDS = {
    "lifespan_years": "hardware lifespan",
    "kwh_price_usd": "electricity price",
    "pue": "data-centre overhead (PUE)",
    "utilisation": "share of board power drawn",
    "gpu_price_usd": "GPU prices",
    "machine_cost_usd": "the desktop or server that holds the GPUs",
    "cloud_usd_per_gpu_hour": "cloud prices per GPU-hour",
}


def kwh_price_words(usd: float) -> str:
    """A price of electricity as the book prints it, at its source's precision: '$0.1124 per kWh'."""
    return f"${usd:g} per kWh"


def default_words(a: "Assumptions | None" = None) -> dict[str, str]:
    """Each assumption's value in words (``Assumptions()`` unless given), by ``DEFAULT_WORDS``' names: '5 years',
    '$0.1124 per kWh'; the price tables say whose price each is."""
    a = a or Assumptions()
    return {"lifespan_years": f"{a.lifespan_years:g} years", "kwh_price_usd": kwh_price_words(a.kwh_price_usd),
            "pue": f"{a.pue:g}", "utilisation": f"{a.utilisation:g}", "gpu_price_usd": "one per GPU",
            "machine_cost_usd": "one per machine size (" + ", ".join(str(n) for n in GPU_COUNTS) + " GPUs)",
            "cloud_usd_per_gpu_hour": "one per GPU"}


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
        check_non_negative("price per kWh", self.kwh_price_usd)
        if not self.lifespan_years > 0:
            raise ValueError(f"the hardware lifespan must be more than 0 years, got {self.lifespan_years}")
        if not self.pue >= 1:
            raise ValueError(f"PUE (facility power / IT power) must be at least 1, got {self.pue}")
        if not 0 < self.utilisation <= 1:
            raise ValueError(f"utilisation must be in (0, 1], got {self.utilisation}")
        for label, table in (("GPU price", self.gpu_price_usd), ("machine cost", self.machine_cost_usd),
                             ("cloud price per GPU-hour", self.cloud_usd_per_gpu_hour)):
            for key, value in (table or {}).items():
                check_non_negative(f"{label} for {key}", value)

    def gpu_price(self, gpu: str) -> float:
        table = {**default_gpu_prices(), **(self.gpu_price_usd or {})}
        return lookup_price(table, gpu_key(gpu), "GPU price")

    def cloud_price(self, gpu: str) -> float:
        table = {**default_cloud_prices(), **(self.cloud_usd_per_gpu_hour or {})}
        return lookup_price(table, gpu_key(gpu), "cloud price per GPU-hour")

    def machine_costs(self) -> dict[int, float]:
        return {**default_machine_costs(), **(self.machine_cost_usd or {})}

    def machine_size(self, n_gpus: int) -> int:
        return machine_size(n_gpus, sizes=tuple(sorted(self.machine_costs())))

    def machine_cost(self, n_gpus: int) -> float:
        return self.machine_costs()[self.machine_size(n_gpus)]

    def with_overrides(self, **kwargs) -> "Assumptions":
        """A copy with the given fields replaced (None values are ignored)."""
        return replace(self, **{k: v for k, v in kwargs.items() if v is not None})


def check_non_negative(label: str, value: float) -> None:
    if value is None or not math.isfinite(value) or value < 0:
        raise ValueError(f"{label} must be a non-negative number, got {value!r}")


def lookup_price(table: Mapping[str, float], key: str, label: str) -> float:
    if key not in table or table[key] is None:
        raise ValueError(f"no {label} for GPU {key!r}; known: {', '.join(sorted(table))} "
                         f"(pass one in Assumptions)")
    return float(table[key])


# --- names -------------------------------------------------------------------------------------------------

def gpu_key(gpu: str) -> str:
    """The key of any catalog GPU (data/gpus.csv) or of one read from a GPU file, or a ValueError naming the valid
    ones."""
    from ..catalog.hardware import UnknownGPUError

    try:
        return get_gpu(str(gpu)).key
    except UnknownGPUError as exc:
        raise ValueError(str(exc)) from None


def model_key(model: str) -> str:
    """A catalog model key, or a ValueError naming the valid ones."""
    from ..catalog.models import CATALOG

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
    """USD per GPU from the GPU catalog (data/gpus.csv, each with its source and date); a GPU it prices not, at its
    newest dated card price in data/purchase_prices.csv (``prices``), so that every GPU with a published price
    is costed."""
    return {**newest_card_prices(), **{k: g.price_usd for k, g in every_gpu().items() if g.price_usd is not None}}


@lru_cache(maxsize=1)
def newest_card_prices() -> dict[str, float]:
    """USD per card, the newest dated row of data/purchase_prices.csv per GPU (``what`` = card)."""
    text = resources.files("academic_bench").joinpath("data/purchase_prices.csv").read_text(encoding="utf-8")
    rows = sorted((r for r in csv.DictReader(text.splitlines()) if r["what"] == "card"), key=lambda r: r["date"])
    return {r["gpu"]: float(r["usd"]) for r in rows}


def _price_or_none(price, gpu: str) -> float | None:
    """A price lookup of the assumptions, None where no price is listed (the cost says so, not the whole run)."""
    try:
        return price(gpu)
    except ValueError:
        return None


@lru_cache(maxsize=1)
def default_machine_costs() -> dict[int, float]:
    """USD for a machine holding 1, 2, 4 or 8 GPUs (paper Appendix H Tables 6-7, via paper.load_machine_costs)."""
    from ..catalog.paper import load_machine_costs

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
    check_non_negative("purchase cost", purchase_usd)
    check_non_negative("training days", days)
    if not lifespan_years > 0:
        raise ValueError(f"the hardware lifespan must be more than 0 years, got {lifespan_years}")
    return purchase_usd * days / (lifespan_years * DAYS_PER_YEAR)


# What a reader is told where a run would take longer than the life the purchase is spread over: the answer stays
# (it is the fastest the money buys), but a run that outlasts the GPUs is no plan to buy them for.
LIFE_WORDS = "the GPUs' assumed {life:g}-year life"
PAST_LIFE = "longer than " + LIFE_WORDS


def past_life(days: float, lifespan_years: float | None = None) -> str:
    """'' for a run within the hardware's life (``Assumptions.lifespan_years`` unless given), else how long it
    is in years and that it outlasts the GPUs: '19.6 years, longer than the GPUs' assumed 5-year life'."""
    life = Assumptions().lifespan_years if lifespan_years is None else lifespan_years
    if not days > life * DAYS_PER_YEAR:
        return ""
    return f"{days / DAYS_PER_YEAR:,.1f} years, " + PAST_LIFE.format(life=life)


def energy_kwh(gpu: str, n_gpus: int, days: float, assumptions: Assumptions | None = None) -> float:
    """kWh drawn from the grid: board power x GPUs x hours x utilisation x PUE."""
    a = assumptions or Assumptions()
    check_non_negative("training days", days)
    power_w = get_gpu(gpu_key(gpu)).board_power_w
    return power_w / 1000 * check_gpus(n_gpus) * days * 24 * a.utilisation * a.pue


def energy_cost(gpu: str, n_gpus: int, days: float, assumptions: Assumptions | None = None) -> float:
    a = assumptions or Assumptions()
    return energy_kwh(gpu, n_gpus, days, a) * a.kwh_price_usd


def cloud_cost(gpu: str, n_gpus: int, days: float, assumptions: Assumptions | None = None) -> float:
    """Renting the same GPUs on demand for the whole run."""
    a = assumptions or Assumptions()
    check_non_negative("training days", days)
    return a.cloud_price(gpu) * check_gpus(n_gpus) * days * 24


@dataclass(frozen=True)
class Cost:
    """One setup's costs for one training run of ``days``."""

    gpu: str
    n_gpus: int
    days: float
    days_source: str
    gpus_usd: float | None  # None: no purchase price listed for the GPU (pass one in Assumptions)
    machine_usd: float
    purchase_usd: float | None
    per_experiment_usd: float | None
    energy_kwh: float
    energy_usd: float
    owned_per_experiment_usd: float | None  # per experiment + energy: what one run costs on hardware you own
    cloud_usd: float | None  # None: no cloud price listed for the GPU
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
    check_non_negative("training days", days)
    # A GPU with no published purchase or cloud price is still costed where it can be: its energy always, the
    # purchase and rental where a price is listed (None, and said so, where none is).
    price, hourly = _price_or_none(a.gpu_price, key), _price_or_none(a.cloud_price, key)
    gpus_usd = None if price is None else n_gpus * price
    machine_usd = a.machine_cost(n_gpus)
    purchase = None if gpus_usd is None else gpus_usd + machine_usd
    per_exp = None if purchase is None else per_experiment_cost(purchase, days, a.lifespan_years)
    kwh = energy_kwh(key, n_gpus, days, a)
    return Cost(
        gpu=key, n_gpus=n_gpus, days=days, days_source=days_source, gpus_usd=gpus_usd, machine_usd=machine_usd,
        purchase_usd=purchase, per_experiment_usd=per_exp, energy_kwh=kwh, energy_usd=kwh * a.kwh_price_usd,
        owned_per_experiment_usd=None if per_exp is None else per_exp + kwh * a.kwh_price_usd,
        cloud_usd=None if hourly is None else hourly * n_gpus * days * 24,
        assumptions=_assumption_summary(a, key, n_gpus), model=model,
    )


def _assumption_summary(a: Assumptions, gpu: str, n_gpus: int) -> dict:
    return {"lifespan_years": a.lifespan_years, "kwh_price_usd": a.kwh_price_usd, "pue": a.pue,
            "utilisation": a.utilisation, "gpu_price_usd": _price_or_none(a.gpu_price, gpu),
            "machine_cost_usd": a.machine_cost(n_gpus), "machine_size": a.machine_size(n_gpus),
            "cloud_usd_per_gpu_hour": _price_or_none(a.cloud_price, gpu),
            "board_power_w": get_gpu(gpu).board_power_w}
