"""The machine-to-machine spread of a measurement, read from the shipped rows: how far apart two synchronized
measurements of the same work came out. A difference inside it is a tie, which the cheaper setting wins. A step
that offloads to the host also runs on the machine's processors and memory, which a GPU of the same kind does not
bring along, so its spread is read apart from that of steps on the GPU alone (``step_spreads``), where the narrower
figure is the cautious one: a tie, a skip. The book claims a gain of one setting over another, the two timed on
different machines, only beyond the widest (``Spread.overall``): the kinds' figures come from the same work
measured twice, and other kernels can differ between machines by more (``notebooks/runs/h200x1/evidence/fp8-ab/``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..catalog.config import Config
from .state import engine_revision, status_of
from .trust import duplicates

VALIDATION_TOLERANCE = 0.03  # the study's rule: |extrapolated - sustained| / sustained within 3%


def within_tolerance(rel_error):
    """Whether a timed step's relative error against its sustained steps lies inside ``VALIDATION_TOLERANCE``: the
    one rule every validation is judged by (a number, or a pandas Series of them, element by element)."""
    return abs(rel_error) <= VALIDATION_TOLERANCE


def contradicted(row: dict) -> bool:
    """Whether the row's own sustained check missed its extrapolated step by more than the study's tolerance."""
    error = (row.get("validate") or {}).get("rel_error")
    return error is not None and not within_tolerance(float(error))


def work_id(row: Mapping) -> str:
    """The id of a row's configuration with its micro-batch left open: a size fixed by hand (``--micro-batch``)
    and the same size found by the search time the same work."""
    return Config.from_dict({**row["config"], "micro_batch": None}).id


def repeated_measurements(rows: Iterable[dict]) -> dict[tuple, list[float]]:
    """The step times of each piece of work measured more than once: the same configuration (``work_id``) at the
    same micro-batch, synchronized, on one setup (a kind of GPU and count), by one engine revision, in separate runs
    (other machines of that kind, other days). Rows a correction of the engine set aside, tiny models, failures
    and rows whose own sustained check contradicted them are left out: another revision's timing, or a timing
    that sustained training does not reproduce (ZeRO-3 + offload on one H100, whose validation missed), is not
    how far two machines differ. A row read twice (a sweep's own file is also among the shipped runs) is one
    measurement: it is counted once."""
    return {key: times for key, (times, _) in _repeats(rows).items()}


def _repeats(rows: Iterable[dict]) -> dict[tuple, tuple[list[float], bool]]:
    """``repeated_measurements``, each piece of work with whether its step offloads to the host."""
    rows = list(rows)
    again = duplicates(rows)
    times: dict[tuple, list[float]] = defaultdict(list)
    offloads: dict[tuple, bool] = {}
    for i, r in enumerate(rows):
        if i in again:
            continue
        if (status_of(r) == "measured" and r.get("timing") == "synced" and r.get("step_time_s")
                and not (r.get("config") or {}).get("tiny") and not contradicted(r)):
            key = (r.get("setup"), work_id(r), r.get("micro_batch"), engine_revision(r))
            times[key].append(float(r["step_time_s"]))
            offloads[key] = bool(r["config"].get("methods", {}).get("offload"))
    return {k: (v, offloads[k]) for k, v in times.items() if len(v) > 1}


def machine_spread(rows: Iterable[dict]) -> float:
    """The largest relative difference (slowest / fastest - 1) between measurements of the same work
    (``repeated_measurements``): two step times closer than this cannot be told apart by one measurement
    each. 0.0 when nothing was measured twice (then only an exact tie is one). The widest of ``step_spreads``."""
    return step_spreads(rows).overall


STEP_KINDS = ("on the GPU alone", "offloading to the host")


def step_kind(offload: bool) -> str:
    """The kind of step a spread is read for (``STEP_KINDS``): whether it offloads states to the host."""
    return STEP_KINDS[bool(offload)]


@dataclass(frozen=True, eq=False)
class Spread:
    """The machine-to-machine spread per kind of step (``by_kind``, from ``repeated_measurements``; ``counts``: how
    many pieces of work each read), and ``overall``, the widest: a kind nothing was measured twice of gets it (the
    only figure measured, even where that is the other kind's, the narrower one: there is no other to read)."""
    by_kind: Mapping[str, float] = field(default_factory=dict)
    overall: float = 0.0
    counts: Mapping[str, int] = field(default_factory=dict)

    def kind_of(self, *offloads: bool) -> str:
        """Of the kinds of these steps (each ``offload``), the one whose spread is the widest: either measurement
        may be off by its own kind's, so two steps compare within that one."""
        return max((step_kind(o) for o in offloads), key=lambda kind: self.by_kind.get(kind, self.overall))

    def of(self, *offloads: bool) -> float:
        """The spread that steps of these kinds compare within (``kind_of``); ``overall`` for none."""
        return self.by_kind.get(self.kind_of(*offloads), self.overall) if offloads else self.overall


def as_spread(spread: Spread | float) -> Spread:
    """A ``Spread`` as it is, or one figure for every kind of step."""
    return spread if isinstance(spread, Spread) else Spread(overall=float(spread))


def step_spreads(rows: Iterable[dict]) -> Spread:
    """``machine_spread`` per kind of step (``step_kind`` of each configuration's offload)."""
    ratios: dict[str, list[float]] = defaultdict(list)
    for times, offload in _repeats(rows).values():
        ratios[step_kind(offload)].append(max(times) / min(times) - 1)
    by_kind = {kind: max(r) for kind, r in ratios.items()}
    return Spread(by_kind, max(by_kind.values(), default=0.0), {kind: len(r) for kind, r in ratios.items()})


def faster_beyond_spread(step_s: float, other_s: float, spread: float) -> bool:
    """Whether a step of ``step_s`` beats one of ``other_s`` by more than the spread; inside it, a tie."""
    return step_s * (1 + spread) < other_s
