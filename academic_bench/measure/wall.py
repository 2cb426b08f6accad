"""Where a configuration's wall time went: the worker's phases, timed at their boundaries with
``time.perf_counter()``, and the launcher's view around them, summed into the row's ``wall_breakdown``.

The phases, in the order a configuration meets them:
  launcher    the launcher's own work around its launches: recording the environment, writing the request,
              reading the result
  start       the launcher starting the worker's process (torchrun's agent included) up to the worker's entry
              point: the interpreter's start and the libraries' imports
  setup       reading the request and joining the process group
  build       building the model with its methods (every model built: a trial's, the timed one's)
  trials      the micro-batch search's trial steps (a fresh model compiles in its first one)
  warmup      the untimed repetitions before the timed ones (compile and warm-up where the model is fresh)
  timed       the timed repetitions
  validation  the sustained steps that check the extrapolation
  teardown    the worker's result written, up to the launcher seeing its processes end
  other       the rest of the row's ``duration_s``: the worker's work between its phases, and the whole of a
              launch whose worker wrote no result (a crash, a time limit)
A configuration launched more than once (a search, then its timing in fresh processes) adds up its launches.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

# The end of the note a row's ``ran.notes`` carried when its warm-up block counted as a repetition
# (``timing.time_phases``), before the engine booked that block's seconds as ``timed`` (``recount``;
# ``analysis.launches.spent_of`` reads those rows so); the engine's note now says the block is booked so.
WARMUP_COUNTED = "it counts as a repetition"
WARMUP_BOOKED = f"{WARMUP_COUNTED}, booked as timed work"
PHASES = ("launcher", "start", "setup", "build", "trials", "warmup", "timed", "validation", "teardown", "other")
WORKER_PHASES = ("setup", "build", "trials", "warmup", "timed", "validation")


class PhaseClock:
    """Seconds per phase in this process. A phase entered inside another pauses it (a model built inside a trial
    counts as ``build``, not twice), so the phases never overlap."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(WORKER_PHASES, 0.0)
        self._open: list[list] = []  # [phase, since] of the phases entered, innermost last

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        now = time.perf_counter()
        if self._open:
            outer = self._open[-1]
            self.seconds[outer[0]] += now - outer[1]
        self._open.append([name, now])
        try:
            yield
        finally:
            end = time.perf_counter()
            self.seconds[name] = self.seconds.get(name, 0.0) + end - self._open.pop()[1]
            if self._open:
                self._open[-1][1] = end

    def recount(self, seconds: float, was: str, now: str) -> None:
        """Count ``seconds`` already spent in phase ``was`` as ``now`` instead: a warm-up repetition that the timing
        kept as a timed one (``measure.timing.time_phases``) was timed work."""
        moved = min(seconds, self.seconds.get(was, 0.0))
        self.seconds[was] -= moved
        self.seconds[now] = self.seconds.get(now, 0.0) + moved


# The worker's one clock: the phases are entered deep in the search, the stepper and the timing, and one process
# measures one configuration (``measure.worker.main`` starts it afresh).
CLOCK = PhaseClock()


def phase(name: str):
    """``with phase("build"): ...``: time a block as one of ``WORKER_PHASES`` on the worker's clock."""
    return CLOCK.phase(name)


def recount(seconds: float, was: str, now: str) -> None:
    """``PhaseClock.recount`` on the worker's clock."""
    CLOCK.recount(seconds, was, now)


def restart() -> None:
    global CLOCK
    CLOCK = PhaseClock()


def worker_record(entered: float) -> dict:
    """What the worker writes with its result (``time.time()`` seconds for the moments the launcher compares with its
    own): when its entry point ran, when the result is written, and its phases."""
    return {"entered": entered, **CLOCK.seconds, "written_at": time.time()}


def add_launch(spent: dict[str, float], record: dict | None, launched_at: float, ended_at: float) -> None:
    """Add one launch to ``spent``: the launcher started it at ``launched_at`` and saw it end at ``ended_at``
    (``time.time()``); ``record`` is the worker's (``worker_record``), None when it wrote no result, so that the
    launch's time stays in ``other``. ``spent["launched"]`` sums the launches' spans, the rest of the row's
    duration being the launcher's own (``breakdown``). Moments from two processes on one host are compared on one clock; a
    difference below zero (clock steps) counts as none."""
    spent["launched"] = spent.get("launched", 0.0) + ended_at - launched_at
    if not record:
        return
    parts = {"start": record["entered"] - launched_at,
             **{p: record.get(p, 0.0) for p in WORKER_PHASES}, "teardown": ended_at - record["written_at"]}
    for name, seconds in parts.items():
        spent[name] = spent.get(name, 0.0) + max(0.0, float(seconds))


def breakdown(spent: dict[str, float], duration_s: float) -> dict[str, float]:
    """The row's ``wall_breakdown``: every phase of ``PHASES`` in seconds, ``other`` the rest of ``duration_s``."""
    launcher = max(0.0, duration_s - spent.get("launched", 0.0))
    named = {p: round(launcher if p == "launcher" else spent.get(p, 0.0), 3) for p in PHASES if p != "other"}
    return {**named, "other": round(duration_s - sum(named.values()), 3)}
