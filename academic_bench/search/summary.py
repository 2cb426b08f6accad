"""What a sweep did: as it goes (``Progress``, a bar), and at its end, typed (``SweepSummary``, what
``sweep.run_sweep`` returns; ``--json`` prints it as a dict with the same keys), with its text for people."""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..catalog.config import Config
from ..catalog.methods import Methods
from ..results import fastest_row

__all__ = ["Progress", "SweepSummary", "best_per_model", "format_duration", "format_summary"]


def format_duration(s: float) -> str:
    s = max(0, int(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


@dataclass
class Progress:
    """tqdm bar: the configuration running, the last outcome, and the time left."""

    total: int
    enabled: bool
    budget_s: float | None

    def __post_init__(self) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, unit="config", disable=not self.enabled, dynamic_ncols=True)
        self.t0 = time.monotonic()

    def start(self, c: Config) -> None:
        self.bar.set_description(f"{c.model} {c.methods.label()}")

    def done(self, c: Config, outcome: str) -> None:
        self.bar.update(1)
        left = ""
        if self.budget_s is not None:
            left = f", budget left {format_duration(self.budget_s - (time.monotonic() - self.t0))}"
        self.bar.set_postfix_str(f"last: {c.model} {c.methods.label()}: {outcome}{left}")

    def close(self) -> None:
        self.bar.close()


@dataclass
class SweepSummary:
    """One sweep: what it planned (``planned``; ``resumed``: those whose row stands, not measured again), what ran
    (``ran``, ``outcomes`` by outcome), what the smart search skipped (``skipped``, one entry each with its reason,
    ``skip_reasons`` by rule, ``skipped_file`` where they are recorded, None for other searches; ``memory_model``:
    whether its memory model was available), what the time budget never started (``not_run`` ids; ``not_run_rows``:
    the 'not run' rows written for them), rows the store could not take (``written_elsewhere``: where they went),
    and, over the latest row of each planned configuration, ``outcomes_all`` by state and ``best``, each model's
    fastest measured row (synchronized timing only)."""

    setup: str
    device: str | None
    search: str
    timing: str
    mode: str
    results: str
    skipped_file: str | None
    planned: int
    resumed: int
    memory_model: bool | None = None
    ran: int = 0
    outcomes: Counter = field(default_factory=Counter)
    skipped: list[dict] = field(default_factory=list)
    skip_reasons: Counter = field(default_factory=Counter)
    not_run: list[str] = field(default_factory=list)
    not_run_rows: int | None = None  # None: no 'not run' rows asked for, or another node writes them
    written_elsewhere: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    outcomes_all: dict[str, int] = field(default_factory=dict)
    best: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As ``--json`` prints it."""
        d = asdict(self)
        d["outcomes"], d["skip_reasons"] = dict(self.outcomes), dict(self.skip_reasons)
        return d

    def text(self) -> str:
        """For people: what ran, what it gave, what was skipped and why, the best per model."""
        lines = [f"{self.planned} planned, {self.resumed} already in {self.results}, {self.ran} ran "
                 f"({', '.join(f'{k}: {v}' for k, v in self.outcomes.items()) or 'none'}) in "
                 f"{format_duration(self.elapsed_s)}"]
        if self.skipped_file is not None:
            lines.append(f"smart: skipped {len(self.skipped)} ("
                         + (", ".join(f"{k}: {v}" for k, v in self.skip_reasons.items()) or "none") + ")"
                         + ("" if self.memory_model else "; the memory model was not available"))
            lines += [f"  {k['label']}: {k['reason']}" for k in self.skipped]
        if self.not_run:
            lines.append(f"{len(self.not_run)} not run: the time budget was spent (re-run to continue)")
        if self.written_elsewhere:
            lines.append(f"{len(self.written_elsewhere)} row(s) could not be appended to {self.results} and are "
                         "kept in: " + ", ".join(self.written_elsewhere))
        for model, b in self.best.items():
            # a tiny variant's days are the tiny recipe's, no answer for the full model: only its step is shown
            days = f", {b['days']:.3g} days" if not b.get("tiny") else ""
            lines.append(f"best for {b.get('name', model)}: {b['label']} at micro-batch {b['micro_batch']} x "
                         f"{b['gas']} accumulation, {b['step_time_s']:.4g} s/step{days}")
        if not self.outcomes_all.get("ok"):
            lines.append("no configuration was measured")
        return "\n".join(lines)


def format_summary(s: SweepSummary) -> str:
    """``SweepSummary.text``, for ``map`` over several."""
    return s.text()


def best_per_model(rows: list[dict], device: str | None = None) -> dict[str, dict]:
    """Each model's fastest measured row (``results.fastest_row``), summarized."""
    by_model: dict[str, list[dict]] = {}
    for r in rows:
        by_model.setdefault(r["config"]["model"], []).append(r)
    best = {model: fastest_row(mine) for model, mine in by_model.items()}
    return {model: {"config_id": r["config_id"], "label": Methods.from_dict(r["config"]["methods"]).label(),
                    "name": Config.from_dict(r["config"]).name(device), "tiny": bool(r["config"].get("tiny")),
                    "micro_batch": r["micro_batch"], "gas": r["gas"], "step_time_s": r["step_time_s"],
                    "days": r["days"]}
            for model, r in best.items() if r is not None}
