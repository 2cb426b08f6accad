"""Units the whole study shares, in a module without torch (the book's readers import it)."""
from __future__ import annotations

SECONDS_PER_DAY = 86_400


def days_for(steps: int, step_time_s: float) -> float:
    """Wall-clock days of ``steps`` optimizer steps of ``step_time_s`` each: the study's one conversion."""
    return steps * step_time_s / SECONDS_PER_DAY
