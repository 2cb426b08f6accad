"""The range of a predicted answer: the error the study observed for predictions of its kind.

A prediction's kind is what made it (``by``: the transfer model, the work model, the catalog decoders by size),
its method class (``methods.validation_class``), and whether it carries a measurement to a GPU of the same
architecture as the one that measured it. The study's held-out checks observed the error (predicted / measured -
1) of every prediction it could set beside a measurement it was not given (``observed_errors``): each counted
configuration of each setup predicted from the other setups (``transfer_validation.setups_held_out``), and the
decoders outside the catalog estimated before they ran (``work_validation.config_decoders``).

An answer's range is then +- the largest |error| observed for its kind, E: from days / (1 + E) to days / (1 - E),
which holds every measurement whose prediction erred by at most E (``stated_range``). Where fewer than
``MIN_POINTS`` predictions of the class were checked, the errors of its wider group stand for it: the classes
that offload, or those that do not (the host's work is where the study's errors differ most), then every check
of the same model. No check of the study carries between GPU architectures (its setups are all Hopper): such an
answer takes the same-architecture errors of its kind and keeps the model's own span where that is wider, and
says so. With no check of its kind at all, the range is the model's own span, said to be unchecked.

``coverage`` measures how often this holds on the held-out points themselves, each point's range built from the
other points only (leave one out), so that no point is inside its range because it made it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

# A range from the largest of n observed errors holds a further prediction of the same kind with probability
# n / (n + 1) at best (exchangeable errors): 5 is the fewest points for which that exceeds the 80% the study aims
# its ranges to cover.
MIN_POINTS = 5
COVERAGE_TARGET = 0.80
OBSERVED_COLUMNS = ["point", "by", "method_class", "offload", "same_architecture", "predicted_days",
                    "predicted_days_low", "predicted_days_high", "measured_days", "error"]


@dataclass(frozen=True)
class StatedRange:
    """The error an answer's range stands for: ``error`` (E: the range is days / (1 + E) to days / (1 - E)),
    ``None`` where no check of the kind exists and the model's own span is the range; ``keep_own``: the model's
    own span is kept where it is wider (a carry no check has tested); ``words``: what it is, for people."""

    error: float | None
    keep_own: bool
    words: str

    def spread(self, days: float, low: float | None, high: float | None) -> tuple[float | None, float | None]:
        """The range around ``days`` by the observed error (the model's own ``low`` and ``high`` where this keeps
        them, or where no error is known)."""
        if self.error is None:
            return low, high
        lo, hi = days / (1 + self.error), days / (1 - self.error) if self.error < 1 else math.inf
        if self.keep_own:
            lo, hi = min(lo, low if low is not None else lo), max(hi, high if high is not None else hi)
        return lo, hi

    def bounds(self, days: float, low: float | None, high: float | None,
               mfu: float | None = None) -> tuple[float | None, float | None, str]:
        """The range around ``days`` (``spread``), its short end no faster than ``transfer.MFU_CAP`` given the MFU
        ``days`` imply (``held``), as no central value is; and ``words``, saying so where the end was held."""
        lo, hi = self.spread(days, low, high)
        lo, words = held(lo, days, mfu, self.words)
        return lo, hi, words


def held(low: float | None, days: float, mfu: float | None, words: str = "") -> tuple[float | None, str]:
    """A range's short end ``low`` held at the fewest days any answer may claim (``days``, implying ``mfu``, at
    ``transfer.MFU_CAP``), and ``words`` saying so where it was; both as given where the MFU is unknown or the end
    was slower already. The one place the range's end meets the cap."""
    from .transfer import MFU_CAP

    if not mfu or mfu != mfu or low is None:
        return low, words
    floor = days * mfu / MFU_CAP
    if low >= floor:
        return low, words
    clause = f"; its short end held at {MFU_CAP:.0%} MFU, which no real run passes"
    return floor, words if clause in words else words + clause  # said once, however often it is held


def observed_errors(root: str | None = None, setups: pd.DataFrame | None = None,
                    decoders: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every held-out prediction of the study with its kind and error (``OBSERVED_COLUMNS``): the setups'
    counted configurations predicted from the other setups (transfer model; ``setups``, default
    ``setups_held_out(root)``), the decoders outside the catalog whose estimate was kept before they ran
    (``decoders``, default ``config_decoders(root)``: the work model as it answers today, and those estimated by
    size before the work model existed). A decoder whose vocabulary is no multiple of 8
    (``catalog.models.from_config.shape_warnings``) is left out of the work model's errors: the work model began to
    charge an unaligned LM head after such decoders had missed, at a rate swept on their own shapes, so their
    errors under it test no held-out prediction."""
    from ..catalog.models.from_config import shape_warnings
    from .transfer_validation import setups_held_out
    from .work_validation import WORK_MODEL, config_decoders

    s = setups_held_out(root) if setups is None else setups
    s = s[s["predicted_days"].notna()]
    rows = [{"point": f"{r.model} {r.methods} on {r.target_setup} from {r.source_setup}", "by": "transfer model",
             "method_class": r.method_class, "offload": "offload" in r.method_class,
             "same_architecture": bool(r.same_architecture), "predicted_days": r.predicted_days,
             "predicted_days_low": r.predicted_days_low, "predicted_days_high": r.predicted_days_high,
             "measured_days": r.measured_days} for r in s.itertuples()]
    for r in (config_decoders(root) if decoders is None else decoders).itertuples():
        point = {"point": f"{r.decoder} on {r.n_gpus} x {r.gpu}", "method_class": "free-lunch", "offload": False,
                 "same_architecture": True, "measured_days": r.measured_days}
        warned = bool(shape_warnings({"vocab": r.vocab}))
        if r.work_model_held_out and not math.isnan(r.work_model_days) and not warned:
            # The work model as it answers today (its own span is not kept: its checks are enough for a range).
            rows.append({**point, "by": "work model", "predicted_days": r.work_model_days,
                         "predicted_days_low": None, "predicted_days_high": None})
        elif r.estimated_with != WORK_MODEL:
            rows.append({**point, "by": "catalog decoders by size", "predicted_days": r.predicted_days,
                         "predicted_days_low": r.predicted_days_low, "predicted_days_high": r.predicted_days_high})
    out = pd.DataFrame(rows, columns=OBSERVED_COLUMNS[:-1])
    out["error"] = out["predicted_days"].astype(float) / out["measured_days"].astype(float) - 1
    return out


def _arch_words(same: bool) -> str:
    return "to a GPU of the same architecture" if same else "to a GPU of another architecture"


def stated_range(observed: pd.DataFrame, by: str, method_class: str, offload: bool, same_architecture: bool
                 ) -> StatedRange:
    """The range of an answer of this kind from the ``observed`` errors (``observed_errors``; module
    docstring)."""
    mine = observed[observed["by"] == by]
    for arch in ([same_architecture] if same_architecture else [False, True]):
        here = mine[mine["same_architecture"] == arch]
        groups = ((here[here["method_class"] == method_class], f"{method_class} predictions"),
                  (here[here["offload"] == offload], f"predictions of the classes {'with' if offload else 'without'} "
                                                     f"offloading (too few of {method_class})"),
                  (here, f"predictions of every class (too few of {method_class})"))
        for group, what in groups:
            if len(group) >= MIN_POINTS:
                e = float(group["error"].abs().max())
                words = (f"+-{e:.1%}: the largest error the study observed in {len(group)} held-out {what} by the "
                         f"{by}, carried {_arch_words(arch)} as the one measured")
                if arch != same_architecture:
                    return StatedRange(e, True, words + "; no held-out check carries to another architecture, so "
                                                        "the model's own span is kept where it is wider")
                return StatedRange(e, False, words)
    return StatedRange(None, False, f"the model's own span, unchecked: fewer than {MIN_POINTS} held-out checks of "
                                    f"its kind ({len(mine)} of the {by} in all)")


KIND_COLUMNS = ["by", "method_class", "same_architecture", "points", "largest_abs_error"]


def by_kind(observed: pd.DataFrame) -> pd.DataFrame:
    """The held-out predictions per kind (``KIND_COLUMNS``): how many, and the largest |error| among them."""
    if observed.empty:
        return pd.DataFrame(columns=KIND_COLUMNS)
    g = observed.assign(abs_error=observed["error"].abs()).groupby(["by", "method_class", "same_architecture"])
    out = g["abs_error"].agg(points="size", largest_abs_error="max").reset_index()
    return out[KIND_COLUMNS]


def coverage(observed: pd.DataFrame) -> dict[str, float | int]:
    """How many held-out points lie inside the range an answer of their kind gets from the other points
    (leave one out): ``inside``, ``points`` and their ratio ``coverage``."""
    inside = 0
    for i, r in observed.iterrows():
        rng = stated_range(observed.drop(index=i), r["by"], r["method_class"], bool(r["offload"]),
                           bool(r["same_architecture"]))
        lo, hi, _ = rng.bounds(float(r["predicted_days"]), r["predicted_days_low"], r["predicted_days_high"])
        inside += bool(lo is not None and hi is not None and lo <= r["measured_days"] <= hi)
    n = len(observed)
    return {"inside": inside, "points": n, "coverage": inside / n if n else math.nan}


def observed_records(observed: pd.DataFrame) -> list[dict]:
    """``observed`` as plain records, kept beside the answers (``store``)."""
    def plain(v):  # JSON has no NaN, nor numpy's numbers
        v = v.item() if hasattr(v, "item") else v
        return None if isinstance(v, float) and math.isnan(v) else v

    return [{k: plain(v) for k, v in r.items()} for r in observed[OBSERVED_COLUMNS].to_dict("records")]


def from_records(records: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(records, columns=OBSERVED_COLUMNS)
