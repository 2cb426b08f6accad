"""What counts as a result: synchronized step-mode measurements of a method class whose latest validation against
sustained training, if any, is within the study's tolerance."""
from __future__ import annotations

import pandas as pd

VALIDATION_TOLERANCE = 0.03  # the study's rule: |extrapolated - sustained| / sustained within 3%


def latest_validations(df: pd.DataFrame) -> pd.DataFrame:
    """Per setup and method class, the latest validation (set-aside rows never count): it speaks for the engine
    that made the setup's results."""
    v = df[df["sustained_step_s"].notna() & (df["outcome"] == "ok") & (df["timing"] == "synced")
           & ~df["tiny"].astype(bool)] if not df.empty else df
    if v.empty:
        return v.assign(within=pd.Series(dtype=bool))
    v = v.assign(within=v["validate_rel_error"].abs() <= VALIDATION_TOLERANCE)
    # A stable sort: validations of the same second keep the order the store has them in.
    return v.sort_values("started_at", kind="stable").groupby(["setup", "validation_class"]).tail(1)


def missed_validation(df: pd.DataFrame) -> set[tuple[str, str]]:
    """(setup, method class) pairs whose latest validation is outside ``VALIDATION_TOLERANCE``: the study uses
    no number of theirs (``results``) until the method is fixed and validated again."""
    v = latest_validations(df)
    return set(zip(v.loc[~v["within"].astype(bool), "setup"], v.loc[~v["within"].astype(bool), "validation_class"]))


def measured_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Synchronised step-mode measurements with days (set-aside rows are not ``ok``), tiny models left out."""
    if df.empty:
        return df.copy()
    keep = (df["timing"] == "synced") & (df["mode"] == "step") & (df["outcome"] == "ok") & df["days"].notna()
    return df[keep & ~df["tiny"].astype(bool)].copy()


def results(df: pd.DataFrame) -> pd.DataFrame:
    """Rows that count as results: synchronised step-mode measurements (``measured_rows``) of a method class whose
    latest validation on the setup, if any, is within ``VALIDATION_TOLERANCE`` (``missed_validation``)."""
    r = measured_rows(df)
    missed = missed_validation(df)
    if r.empty or not missed:
        return r
    return r[[key not in missed for key in zip(r["setup"], r["validation_class"])]].copy()
