"""The study's answer as a value: days, their range, the MFU they imply, the settings to use, the cost, and what
the answer rests on. Every surface (the commands, the book's pages and explorers, ``export --best``) prints this
one type; nothing re-derives it.

Beside it, never in it, ``beyond_paper`` (``BeyondPaper``) says what the switches beyond the paper buy on the same
setting, labelled as such.

The kinds, in the one order of sources (``KINDS``): ``measured`` (a complete search on that setup, its method
class validated), ``predicted`` (a model of the study carries a measured configuration to the setup, with the error
its own held-out checks observed), ``paper`` (the paper's Table 1 cell, only where the MFU it implies is
plausible), ``none`` (with the reason). A days figure at an assumed or 100% MFU is never an answer: the analytic
lower bound travels beside each answer as ``bound_days`` only.

A predicted answer's range is the error the study observed for predictions of its kind (by which model, method
class, same or other GPU architecture: ``ranges``), and ``range_basis`` says so in words.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from ..catalog.methods import BEYOND_PAPER  # the label of every number a switch beyond the paper gives

BEYOND_STATUSES = ("measured", "loss parity failed", "loss parity not checked yet", "not validated yet",
                   "not measured yet")
KINDS = ("measured", "predicted", "paper", "none")
SOURCE_ORDER = ("a complete, validated search on the setup (measured)",
                "a measured configuration carried to the setup by the transfer or work model (predicted)",
                "the paper's Table 1 cell where its implied MFU is plausible (paper)")


@dataclass(frozen=True)
class Settings:
    """How to train to get the answer's days: the methods (``--methods`` text and label), micro-batch per GPU and
    gradient accumulation, and the command that writes them as a training configuration."""

    methods: str
    methods_label: str
    micro_batch: int | None
    gas: int | None
    export_command: str

    def words(self) -> str:
        mb = f", micro-batch {self.micro_batch} x {self.gas} accumulation steps" if self.micro_batch else ""
        return f"{self.methods_label}{mb}"


@dataclass(frozen=True)
class BeyondPaper:
    """What the switches beyond the paper (bf16 weights, a fused cross-entropy, FP8) buy on the answer's setup:
    shown beside the answer, labelled ``label``, never the answer itself. ``status`` (``BEYOND_STATUSES``):
    "measured" (the fastest configuration with such a switch that is validated on the setup and whose switches
    all passed their loss parity: its ``days``, ``mfu`` and ``settings``, and ``saves``, the share of the
    answer's days it saves where the answer is measured on the same setup), else why there is no number to
    recommend: a switch's loss parity failed (never recommended) or is not checked yet, its method class is not
    validated yet, or nothing beyond the paper is measured yet on this setting. ``parity``: each switch's loss
    parity in words; ``rests_on``: the row or the reason."""

    status: str
    days: float | None = None
    mfu: float | None = None
    settings: Settings | None = None
    saves: float | None = None
    parity: str = ""
    rests_on: str = ""
    label: str = BEYOND_PAPER

    def __post_init__(self) -> None:
        for name in ("days", "mfu", "saves"):
            object.__setattr__(self, name, _clean(getattr(self, name)))

    def words(self) -> str:
        """'beyond the paper: D days (MFU M, S fewer days than the answer) with SETTINGS; loss parity: ...', or
        the status and why."""
        if self.status != "measured":
            why = f" ({self.rests_on})" if self.rests_on and self.status != "not measured yet" else ""
            return f"{self.label}: {self.status}{why}"
        said = ([f"MFU {self.mfu:.0%}"] if self.mfu is not None else []) + (
            [] if self.saves is None else
            [f"{abs(self.saves):.0%} {'fewer' if self.saves >= 0 else 'more'} days than the answer"])
        return (f"{self.label}: {self.days:,.1f} days{' (' + ', '.join(said) + ')' if said else ''} with "
                f"{self.settings.words()}; loss parity: {self.parity}")

    @classmethod
    def from_dict(cls, d: dict) -> "BeyondPaper":
        s = d.get("settings")
        return cls(**{**d, "settings": Settings(**s) if s else None})


@dataclass(frozen=True)
class Fitting:
    """Where nothing fits ``asked_n`` x ``asked_gpu``: the smallest setup the memory model fits, ``n_gpus`` x
    ``gpu`` with ``methods`` (``--methods`` text), found among more of the same GPU first, then the other catalog
    GPUs (each with more memory) at ``n_gpus``, the largest count priced; ``gpu`` None where nothing fits that
    many of any catalog GPU."""

    asked_gpu: str
    asked_n: int
    n_gpus: int
    gpu: str | None = None
    methods: str | None = None

    def words(self) -> str:
        """The refusal as the command line prints it, naming GPUs by the keys ``--gpu`` takes."""
        if self.gpu is None:
            return f"nothing fits by the memory model on up to {self.n_gpus} of any catalog GPU"
        asked = (f"{self.asked_n} x {self.asked_gpu}" if self.gpu == self.asked_gpu
                 else f"{self.asked_gpu} up to {self.n_gpus} GPUs")
        return (f"nothing fits {asked} by the memory model; the smallest that would: {self.n_gpus} x {self.gpu} "
                f"({self.methods})")


@dataclass(frozen=True)
class Answer:
    model: str
    gpu: str
    n_gpus: int
    kind: str  # KINDS
    days: float | None
    days_low: float | None
    days_high: float | None
    mfu: float | None  # the MFU the days imply (never above analysis.MFU_IMPLAUSIBLE)
    settings: Settings | None
    rests_on: str  # in words: the row(s), the source setup and model, the paper's cell, or why there is none
    rows: tuple[str, ...] = ()  # measured: the config ids of the row(s)
    source_setup: str | None = None  # predicted: the measured setup it is carried from
    by: str | None = None  # predicted: "transfer model" or "work model"
    stated_error: str | None = None  # predicted: the error the study's own held-out checks observed
    # What days_low..days_high stand for, in words: for a prediction, +- the largest error the study observed for
    # predictions of its kind (``ranges``; ``range_error`` is that error, None where the range is the model's own
    # unchecked span); for a measurement, the spread of its timed repetitions.
    range_basis: str | None = None
    range_error: float | None = None
    paper_cell: str | None = None  # "Table 1, <model>, <n> x <gpu>" where the paper has the cell
    paper_days: float | None = None  # the paper's days for the cell, shown beside every kind
    paper_mfu: float | None = None
    bound_days: float | None = None  # 100% of the dense peak: a lower bound, never an answer
    rental_usd: float | None = None  # on-demand rental for the days (default prices, cost.Assumptions)
    owned_usd: float | None = None  # owning the machine: per experiment share of purchase + energy
    purchase_usd: float | None = None
    extra: dict = field(default_factory=dict)  # decoders from a config.json: architecture facts, tokens
    beyond_paper: BeyondPaper | None = None  # beside the answer, flagged: what the switches beyond the paper buy
    fits_from: Fitting | None = None  # no answer because nothing fits: the smallest setup that would

    def __post_init__(self) -> None:
        # One representation for a missing number (None, never NaN) and plain Python numbers (never numpy's), so
        # that an answer compares equal to its JSON copy.
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in _NUMBERS:
                object.__setattr__(self, f.name, _clean(v))
        object.__setattr__(self, "n_gpus", int(self.n_gpus))

    @property
    def answered(self) -> bool:
        return self.kind != "none" and self.days is not None

    def headline(self) -> str:
        """'28.1 days (predicted, 26.3 to 36.3), MFU 62%': the answer in one phrase."""
        if not self.answered:
            return f"no answer ({self.rests_on})"
        span = (f", {self.days_low:,.1f} to {self.days_high:,.1f}"
                if self.days_low is not None and self.days_high is not None else "")
        mfu = f", MFU {self.mfu:.0%}" if self.mfu is not None else ""
        return f"{self.days:,.1f} days ({self.kind}{span}){mfu}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Answer":
        d = dict(d)
        s = d.get("settings")
        d["settings"] = Settings(**s) if s else None
        d["rows"] = tuple(d.get("rows") or ())
        b = d.get("beyond_paper")
        d["beyond_paper"] = BeyondPaper.from_dict(b) if b else None
        f = d.get("fits_from")
        d["fits_from"] = Fitting(**f) if f else None
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


_NUMBERS = ("days", "days_low", "days_high", "mfu", "range_error", "paper_days", "paper_mfu", "bound_days",
            "rental_usd", "owned_usd", "purchase_usd")


def _clean(v):
    """JSON has no NaN: a missing number is None; numpy's numbers become Python's."""
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v
