"""What counts as a result: a synchronized step-mode measurement of a method class validated against sustained
training, on its setup, within the study's tolerance, by the engine revision that made the measurement."""
from __future__ import annotations

import pandas as pd

from ..results.schema import ENGINE_REVISION
from ..results.spread import VALIDATION_TOLERANCE  # noqa: F401  (the study's rule, read here by its readers)
from ..results.spread import within_tolerance  # noqa: F401  (the one rule, read here by every count of validations)
VALIDATION_KEY = ["setup", "validation_class", "engine"]  # what one validation speaks for


def validations(df: pd.DataFrame) -> pd.DataFrame:
    """Every validation against sustained training that a reader may use (set-aside ones never count; missed
    ones do), with ``within``: inside ``VALIDATION_TOLERANCE`` (``within_tolerance``)."""
    v = df[df["sustained_step_s"].notna() & (df["outcome"] == "ok") & (df["timing"] == "synced")
           & ~df["tiny"].astype(bool)] if not df.empty else df
    return v.assign(within=within_tolerance(v["validate_rel_error"]) if not v.empty else pd.Series(dtype=bool))


def latest_validations(df: pd.DataFrame) -> pd.DataFrame:
    """Per setup, method class and engine revision, the latest validation: it speaks for the measurements that
    revision made of the class on the setup, and for no other revision's (a correction of the engine changes
    what a phase times)."""
    v = validations(df)
    if v.empty:
        return v
    # A stable sort: validations of the same second keep the order the store has them in.
    return v.sort_values("started_at", kind="stable").groupby(VALIDATION_KEY).tail(1)


def validation_verdicts(df: pd.DataFrame) -> dict[tuple, bool]:
    """(setup, method class, engine revision) -> whether its latest validation is within the tolerance; a key
    that is missing was never validated."""
    v = latest_validations(df)
    return dict(zip(zip(*(v[k] for k in VALIDATION_KEY)), v["within"].astype(bool))) if not v.empty else {}


def missed_validation(df: pd.DataFrame) -> set[tuple[str, str, int]]:
    """(setup, method class, engine revision) whose latest validation is outside ``VALIDATION_TOLERANCE``: no
    number that revision made of the class on the setup is used (``results``)."""
    return {key for key, within in validation_verdicts(df).items() if not within}


def measured_rows(df: pd.DataFrame, beyond_paper: bool = False) -> pd.DataFrame:
    """Synchronised step-mode measurements with days (set-aside rows are not ``ok``), tiny models left out: the
    replication's, i.e. of the paper's methods; with ``beyond_paper`` those of a switch beyond the paper instead,
    which every table of the replication leaves out (``beyond``)."""
    if df.empty:
        return df.copy()
    keep = (df["timing"] == "synced") & (df["mode"] == "step") & (df["outcome"] == "ok") & df["days"].notna()
    return df[keep & ~df["tiny"].astype(bool) & (df["beyond_paper"].astype(bool) == beyond_paper)].copy()


def validation_state(df: pd.DataFrame) -> pd.Series:
    """Per row of ``df``: "validated" where the engine revision that made it validated its method class on its
    setup within ``VALIDATION_TOLERANCE``, "missed" where that validation missed it, "not validated" where that
    revision has none. The one reader of the rule."""
    verdicts = validation_verdicts(df)
    keys = zip(*(df[k] for k in VALIDATION_KEY)) if not df.empty else []
    states = [{True: "validated", False: "missed"}.get(verdicts.get(key), "not validated") for key in keys]
    return pd.Series(states, index=df.index, dtype=object)


def unvalidated_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Measured rows (the replication's and those beyond it) that count for no reader because the engine revision
    that made them never validated their method class on their setup within ``VALIDATION_TOLERANCE``, made by a
    revision older than the current one: no validation can speak for them any more, so they are measured again
    (``remeasure --retry unvalidated``). The current revision's are left to its validation net."""
    r = pd.concat([measured_rows(df), measured_rows(df, beyond_paper=True)])
    if r.empty:
        return r
    return r[(validation_state(df).loc[r.index] != "validated") & (r["engine"] < ENGINE_REVISION)].copy()


def results(df: pd.DataFrame, beyond_paper: bool = False) -> pd.DataFrame:
    """Rows that count as results: synchronised step-mode measurements (``measured_rows``; the replication's, or
    with ``beyond_paper`` those beside it) whose method class the same engine revision validated on the same setup
    within ``VALIDATION_TOLERANCE`` (``validation_state``)."""
    r = measured_rows(df, beyond_paper)
    if r.empty:
        return r
    return r[validation_state(df).loc[r.index] == "validated"].copy()


def _unvalidated_words(state: str, method_class: str, setup: str, engine) -> str:
    """Why a measured row of ``state`` ("not validated" or "missed") is no result, as a whole clause."""
    if state == "missed":
        return (f"its method class ({method_class}) missed its validation on {setup} at engine revision {engine}, "
                "which made it")
    return f"engine revision {engine}, which made it, has no validation of its method class ({method_class}) on {setup}"


def uncounted(df: pd.DataFrame) -> pd.DataFrame:
    """Measured rows that are no result, with ``why``: set aside by a correction of the engine, or their method
    class not validated (or missed) at the revision that made them. What a page marks where it shows them."""
    if df.empty:
        return df.assign(why=pd.Series(dtype=object))
    state = validation_state(df)
    step = (df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"].astype(bool)
    aside = step & (df["status"] == "set aside")
    unvalidated = step & (df["outcome"] == "ok") & (state != "validated")
    why = pd.Series(None, index=df.index, dtype=object)
    why[aside] = df.loc[aside, "reason"]
    why[unvalidated] = [f"{s}: {_unvalidated_words(s, c, u, e)}" for s, c, u, e in zip(
        state[unvalidated], df.loc[unvalidated, "validation_class"], df.loc[unvalidated, "setup"],
        df.loc[unvalidated, "engine"])]
    return df[aside | unvalidated].assign(why=why[aside | unvalidated])
