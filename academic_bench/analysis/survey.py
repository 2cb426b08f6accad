"""The academic compute survey: its questionnaire, the paper's published aggregates, and a reader's own export.

The paper's raw responses (``survey.csv``) are only in a GitHub release this project cannot reach, so we work
from three things instead:

- the questionnaire of paper Appendix A, Table 2 (``data/survey_questionnaire.json``);
- the aggregates the paper prints in its text (``data/survey_paper_aggregates.csv``, each with its source);
- a 34-column export schema (:data:`SURVEY_COLUMNS`) so that a reader can validate and summarise responses to
  the same questionnaire with :func:`load_survey` and :func:`summarise`.

Multiple-choice answers (areas, uses, the ``*_gen`` columns, gpu_link, node_link) hold the chosen options
joined by :data:`MULTI_SEP` (";"), a character that no option label of the questionnaire contains.
"""

from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

TIERS = ("desktop", "workstation", "data_center")
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)  # the questionnaire's "64+ GPUs" row is the 64 column
NOT_AVAILABLE = "N/A"
AVAILABILITY_LEVELS = ("Hours", "Days", "Weeks", "Months", "Indefinitely")
MULTI_SEP = ";"
RESPONDENT_COLUMNS = ("role", "areas", "uses", "satisfaction", "cloud_budget")
LINK_COLUMNS = ("gpu_link", "node_link")
# Answers to Q16 that mean a direct GPU-to-GPU connection (Figure 8's "inter-GPU connections").
GPU_LINK_CHOICES = ("NVLink", "NVSwitch", "AMD Infinity Fabric")


def availability_column(tier: str, n_gpus: int) -> str:
    """Name of the column holding how long a respondent can use ``n_gpus`` GPUs of ``tier``."""
    return f"{tier}_{n_gpus}gpu"


def tier_columns(tier: str) -> tuple[str, ...]:
    """The 9 columns of one tier: GPU generation(s), largest memory, availability for each GPU count."""
    return (f"{tier}_gen", f"{tier}_mem", *(availability_column(tier, n) for n in GPU_COUNTS))


AVAILABILITY_COLUMNS = tuple(availability_column(t, n) for t in TIERS for n in GPU_COUNTS)
SURVEY_COLUMNS: tuple[str, ...] = (
    *RESPONDENT_COLUMNS,
    *(c for t in TIERS for c in tier_columns(t)),
    *LINK_COLUMNS,
)
assert len(SURVEY_COLUMNS) == 34, len(SURVEY_COLUMNS)

# The catalog GPUs (data/gpus.csv) each generation choice of Q7, Q10 and Q13 names, by tier; a choice whose GPUs the
# catalog does not hold (Pascal, the Titan V, Radeon) maps to none. AMD's Instinct MI is answered only
# where the answer can be checked against a published point (``catalog.hardware``).
GENERATION_GPUS: dict[str, dict[str, tuple[str, ...]]] = {
    "desktop": {
        "Pascal (GTX 1000 series / Titan X Pascal / Titan Xp)": (),
        "Volta (Titan V)": (),
        "Turing (GTX 1600 series / RTX 2000 series / Titan RTX)": ("rtx2080ti", "titan-rtx"),
        "Ampere (RTX 3000 series)": ("rtx3090",),
        "Lovelace (RTX 4000 series)": ("rtx4090",),
        "[AMD] Radeon VII": (),
        "[AMD] Radeon RX 7900 XT / XTX": (),
    },
    "workstation": {
        "Turing (Quadro RTX series)": ("quadro-rtx-6000", "quadro-rtx-8000"),
        "Ampere (RTX A2000 / A4000 / ... / A6000)": ("a6000",),
        "Lovelace (RTX 4000 Ada / 5000 Ada / ... / 6000 Ada)": ("rtx6000-ada",),
        "[AMD] Radeon PRO VII": (),
        "[AMD] Radeon PRO W6800": (),
        "[AMD] Radeon PRO W7800 / W7900": (),
    },
    "data_center": {
        "Pascal (P4 / P40 / P100)": (),
        "Volta (V100)": ("v100-16gb", "v100-32gb"),
        "Turing (T4)": ("t4",),
        "Ampere (A2 / A10 / A30 / A40 / A100)": ("a10", "a40", "a100-40gb", "a100-80gb"),
        "Lovelace (L4 / L40)": ("l4", "l40s"),
        "Hopper (H100 / H200 / GH200)": ("h100-pcie", "h100-80gb", "h100-nvl", "h200"),
        "[AMD] Radeon PRO V620": (),
        "[AMD] Instinct MI": ("mi250x", "mi300x"),
    },
}
# The paper's aggregates that speak of a generation (``load_paper_aggregates`` keys), by tier and choice.
PAPER_GENERATION_SHARES = {("data_center", "Hopper (H100 / H200 / GH200)"): "share_h100_access"}
# The paper's aggregate giving the number of GPUs a typical respondent can use for days, by tier.
PAPER_TYPICAL_COUNT = {"data_center": "typical_data_center_gpus_for_days"}


def memory_gb(choice: str | None) -> float | None:
    """The memory a Q8/Q11/Q14 answer names ('24 GB' -> 24.0); None for 'Not sure', 'None available' or none."""
    text = (choice or "").strip()
    return float(text[:-3]) if text.endswith(" GB") and text[:-3].strip().isdigit() else None


def largest_memory_choice(tier: str) -> float:
    """The largest memory the questionnaire offers for ``tier`` (its top choice stands for that much or more)."""
    question = next(q for q in load_questionnaire()["questions"] if q.get("column") == f"{tier}_mem")
    return max(m for m in map(memory_gb, question["choices"]) if m is not None)


def generation_access(df: pd.DataFrame) -> pd.DataFrame:
    """Per tier and generation choice of a validated export: ``respondents`` who chose it, their ``share`` of all
    respondents, and their reported largest memory of that tier (``memory_gb`` per respondent, a list)."""
    rows = []
    for tier, choices in GENERATION_GPUS.items():
        picked = split_choices(df[f"{tier}_gen"])
        mem = df[f"{tier}_mem"].map(memory_gb)
        for choice in choices:
            who = picked.map(lambda opts, c=choice: c in opts)
            rows.append({"tier": tier, "generation": choice, "respondents": int(who.sum()),
                         "share": float(who.mean()) if len(df) else float("nan"),
                         "memory_gb": [m for m in mem[who] if m is not None]})
    return pd.DataFrame(rows, columns=["tier", "generation", "respondents", "share", "memory_gb"])


def typical_count(df: pd.DataFrame, tier: str, level: str = "Days") -> float | None:
    """The median, over respondents who can use any GPU of ``tier`` for at least ``level``, of the most GPUs they
    can use that long (the paper's 'the typical respondent can use 4 Data Center GPUs for days')."""
    # The availability columns are ordered categoricals (N/A < Hours < Days < ...): compare them as such.
    most = pd.Series(0, index=df.index)
    for n in GPU_COUNTS:
        most = most.where(~(df[availability_column(tier, n)] >= level), n)
    most = most[most > 0]
    return float(most.median()) if len(most) else None


# Ordered so that comparisons such as ">= Days" work on the categorical column.
AVAILABILITY_DTYPE = pd.CategoricalDtype([NOT_AVAILABLE, *AVAILABILITY_LEVELS], ordered=True)
_MAX_REPORTED_ERRORS = 20


# ----------------------------------------------------------------------------------------------- packaged data
def _data_text(name: str) -> str:
    return resources.files("academic_bench").joinpath("data", name).read_text(encoding="utf-8")


def load_questionnaire() -> dict[str, Any]:
    """Appendix A, Table 2 as a dict: ``questions`` lists id, text, type, choices and export column(s)."""
    return json.loads(_data_text("survey_questionnaire.json"))


def load_paper_aggregates() -> pd.DataFrame:
    """Survey numbers printed in the paper's text (key, value, value_high, unit, question, statement, source)."""
    df = pd.read_csv(io.StringIO(_data_text("survey_paper_aggregates.csv")))
    missing = [c for c in ("key", "value", "source") if c not in df.columns]
    if missing:
        raise ValueError(f"survey_paper_aggregates.csv: missing column(s) {', '.join(missing)}")
    return df


# ----------------------------------------------------------------------------------------------- loading
def _strip_comments(text: str) -> tuple[str, int]:
    """Drop leading '#' lines (e.g. a provenance header); return the rest and how many lines were dropped."""
    lines = text.splitlines(keepends=True)
    skipped = 0
    while skipped < len(lines) and lines[skipped].lstrip().startswith("#"):
        skipped += 1
    return "".join(lines[skipped:]), skipped


def _check_columns(columns: list[str], path: Path) -> None:
    missing = [c for c in SURVEY_COLUMNS if c not in columns]
    unknown = [c for c in columns if c not in SURVEY_COLUMNS]
    problems = []
    if missing:
        problems.append(f"missing column(s): {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown column(s): {', '.join(unknown)}")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))


def _bad_cells(df: pd.DataFrame, first_line: int) -> list[str]:
    """Describe every invalid cell as 'row R (line L), column C: value'."""
    allowed = {NOT_AVAILABLE, "", *AVAILABILITY_LEVELS}
    errors: list[str] = []

    def report(i: int, col: str, value: str, why: str) -> None:
        errors.append(f"row {i + 1} (line {first_line + i}), column {col}: {value!r} {why}")

    for col in AVAILABILITY_COLUMNS:
        for i, value in df[col].items():
            if value not in allowed:
                report(i, col, value, f"is not one of {', '.join([NOT_AVAILABLE, *AVAILABILITY_LEVELS])}")
    for i, value in df["satisfaction"].items():
        if value and value not in {"1", "2", "3", "4", "5"}:
            report(i, "satisfaction", value, "is not an integer from 1 to 5")
    budget = pd.to_numeric(df["cloud_budget"].mask(df["cloud_budget"] == ""), errors="coerce")
    for i, value in df["cloud_budget"].items():
        if value and not (budget[i] >= 0):
            report(i, "cloud_budget", value, "is not a non-negative number of USD")
    return errors


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for col in AVAILABILITY_COLUMNS:
        # An empty grid cell and "N/A" both mean no access for that many GPUs.
        out[col] = out[col].replace("", NOT_AVAILABLE).astype(AVAILABILITY_DTYPE)
    out["satisfaction"] = pd.to_numeric(out["satisfaction"].mask(out["satisfaction"] == "")).astype("Int64")
    out["cloud_budget"] = pd.to_numeric(out["cloud_budget"].mask(out["cloud_budget"] == "")).astype("Float64")
    return out


def load_survey(path: str | Path) -> pd.DataFrame:
    """Read and validate a survey export with exactly the 34 :data:`SURVEY_COLUMNS`.

    Raises ``ValueError`` naming missing/unknown columns, or listing bad cells with their row numbers.
    Availability columns come back as an ordered categorical (N/A < Hours < ... < Indefinitely).
    """
    path = Path(path)
    body, skipped = _strip_comments(path.read_text(encoding="utf-8"))
    df = pd.read_csv(io.StringIO(body), dtype=str, keep_default_na=False)
    df.columns = [c.strip() for c in df.columns]
    _check_columns(list(df.columns), path)
    df = df[list(SURVEY_COLUMNS)].apply(lambda s: s.str.strip())
    errors = _bad_cells(df.reset_index(drop=True), first_line=skipped + 2)
    if errors:
        shown = errors[:_MAX_REPORTED_ERRORS]
        more = f"\n... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        raise ValueError(f"{path}: {len(errors)} invalid cell(s):\n" + "\n".join(shown) + more)
    return _typed(df.reset_index(drop=True))


# ----------------------------------------------------------------------------------------------- summaries
def split_choices(series: pd.Series) -> pd.Series:
    """Multiple-choice column as a list of options per respondent (empty list if unanswered)."""
    return series.fillna("").map(lambda s: [c.strip() for c in s.split(MULTI_SEP) if c.strip()])


def _shares(counts: pd.Series, total: int, label: str) -> pd.DataFrame:
    out = counts.rename("count").rename_axis(label).reset_index()
    out["share"] = out["count"] / total if total else float("nan")
    return out


def availability_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per tier and GPU count: respondents at each availability level, their share, and share at least that long.

    Shares are of all respondents (N/A included), so each tier x count sums to 1, as in the paper's Figure 1.
    """
    frames = []
    for tier in TIERS:
        for n in GPU_COUNTS:
            counts = df[availability_column(tier, n)].value_counts().reindex(AVAILABILITY_DTYPE.categories, fill_value=0)
            part = _shares(counts, len(df), "level")
            # "At least Days" = Days + Weeks + Months + Indefinitely; N/A is never "at least" anything.
            part["share_at_least"] = part["share"][::-1].cumsum()[::-1]
            part.loc[part["level"] == NOT_AVAILABLE, "share_at_least"] = float("nan")
            part.insert(0, "n_gpus", n)
            part.insert(0, "tier", tier)
            frames.append(part)
    return pd.concat(frames, ignore_index=True)


def choice_summary(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Share of respondents choosing each option of a (multiple- or single-) choice column."""
    exploded = split_choices(df[column]).explode().dropna()
    return _shares(exploded.value_counts(), len(df), "choice")


def cloud_budget_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Monthly cloud budget in buckets (USD): 0, 1-100, 101-1,000, over 1,000, no answer."""
    budget = df["cloud_budget"].astype("Float64")
    labels = ("0", "1-100", "101-1,000", ">1,000")
    bucket = pd.cut(budget.astype(float), [-0.5, 0.5, 100, 1000, float("inf")], labels=labels)
    bucket = bucket.cat.add_categories("no answer").fillna("no answer")
    counts = bucket.value_counts().reindex([*labels, "no answer"], fill_value=0)
    return _shares(counts, len(df), "bucket")


def _any_choice(df: pd.DataFrame, column: str, test) -> pd.Series:
    return split_choices(df[column]).map(lambda opts: any(test(o) for o in opts))


def headline(df: pd.DataFrame) -> pd.DataFrame:
    """The metrics the paper reports, computed on ``df``; keys match :func:`load_paper_aggregates`."""
    n = len(df)
    roles = df["role"].fillna("")
    metrics = {
        "respondents": n,
        "share_phd_students": (roles == "Ph.D. Student").mean(),
        "share_zero_cloud_budget": (df["cloud_budget"] == 0).fillna(False).mean(),
        "share_satisfaction_le_3": (df["satisfaction"] <= 3).fillna(False).mean(),
        "share_no_multinode": _any_choice(df, "node_link", lambda o: o == "No multi-node support").mean(),
        "share_inter_gpu_link": _any_choice(df, "gpu_link", lambda o: o in GPU_LINK_CHOICES).mean(),
        "share_ethernet": _any_choice(df, "node_link", lambda o: o.startswith("Ethernet")).mean(),
        "share_infiniband": _any_choice(df, "node_link", lambda o: o.startswith("Infiniband")).mean(),
        "share_uses_model_analysis": _any_choice(df, "uses", lambda o: o == "Model Analysis").mean(),
    }
    return pd.DataFrame({"key": list(metrics), "value": [float(v) for v in metrics.values()]})


def summarise(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Tidy summaries of a validated survey (see :func:`load_survey`), one DataFrame per topic."""
    return {
        "headline": headline(df),
        "availability": availability_summary(df),
        "role": choice_summary(df, "role"),
        "uses": choice_summary(df, "uses"),
        "gpu_link": choice_summary(df, "gpu_link"),
        "node_link": choice_summary(df, "node_link"),
        "cloud_budget": cloud_budget_summary(df),
    }


def compare_with_paper(df: pd.DataFrame) -> pd.DataFrame:
    """Side by side: each headline metric of ``df`` and the value the paper printed (where it printed one)."""
    paper = load_paper_aggregates()[["key", "value", "source"]].rename(columns={"value": "paper_value"})
    return headline(df).merge(paper, on="key", how="left")
