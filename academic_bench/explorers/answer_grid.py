"""The answer grid: every model of the study on every catalog GPU and count, with the days, what they rest on and
what renting the GPUs for them costs. Each cell is labelled: measured (a complete search on that setup), predicted
(the transfer model from our measurements, with a range), the paper's (only where its implied MFU is plausible), or
none. The paper's Table 1 cell stays beside every answer, with its implied MFU. A model menu filters the grid in the
browser (an Altair parameter), so it needs no kernel."""
from __future__ import annotations

import math

import altair as alt
import pandas as pd

from ..analysis import MFU_IMPLAUSIBLE, gpu_label, model_label
from ..charts import gpu_names, model_order
from ..cost import cloud_cost
from ..planning import answer_table
from .common import DEFAULT_MODEL, select_param

GRID_LABELS = {"measured": "measured", "predicted": "predicted", "paper": "the paper's", None: "no answer"}
GRID_COLORS = alt.Scale(domain=list(GRID_LABELS.values()), range=["#1f77b4", "#9ecae1", "#bdbdbd", "#ffffff"])
GRID_COLUMNS = ["model", "model_label", "gpu", "gpu_label", "n_gpus", "kind", "days", "days_low", "days_high", "mfu",
                "basis", "cloud_usd", "paper_days", "paper_mfu", "paper_note", "cell"]


def answer_grid_frame(root: str | None = None) -> pd.DataFrame:
    """``planning.answer_table`` with display names, the cloud cost of each answer's days (``cost.cloud_cost``) and
    the paper's cell in words (flagged above ``MFU_IMPLAUSIBLE``)."""
    t = answer_table(root=root)

    def rent(r) -> float:
        try:
            return cloud_cost(r.gpu, int(r.n_gpus), float(r.days)) if pd.notna(r.days) else math.nan
        except ValueError:  # no price listed for the GPU
            return math.nan

    def paper_note(days, mfu) -> str:
        if pd.isna(days):
            return "not measured by the paper"
        flag = f", above {MFU_IMPLAUSIBLE:.0%}: no real run reaches it" if mfu > MFU_IMPLAUSIBLE else ""
        return f"{days:,.0f} days (implied MFU {mfu:.0%}{flag})"

    out = t.assign(model_label=t["model"].map(model_label), gpu_label=t["gpu"].map(gpu_label),
                   kind=t["label"].map(lambda x: GRID_LABELS.get(x if isinstance(x, str) else None)),
                   cloud_usd=[rent(r) for r in t.itertuples()],
                   paper_note=[paper_note(d, m) for d, m in zip(t["paper_days"], t["paper_mfu"])],
                   cell=[f"{d:,.0f}" if pd.notna(d) else "–" for d in t["days"]])
    return out[GRID_COLUMNS].reset_index(drop=True)


def answer_grid_chart(frame: pd.DataFrame, model: str = DEFAULT_MODEL) -> alt.Chart:
    """Days per GPU (rows) and count (columns) for the model the menu picks; colour says what the days rest on."""
    models = model_order(frame["model"].unique())
    pick = select_param("grid_model", models, model if model in models else models[0], "Model ",
                        [model_label(m) for m in models])
    gpus = [gpu_label(g) for g in gpu_names() if g in set(frame["gpu"])]
    base = alt.Chart(frame).transform_filter("datum.model == grid_model").encode(
        x=alt.X("n_gpus:O", title="GPUs", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("gpu_label:N", title=None, sort=gpus))
    tooltip = [alt.Tooltip("model_label:N", title="model"), alt.Tooltip("gpu_label:N", title="GPU"),
               alt.Tooltip("n_gpus:O", title="GPUs"), alt.Tooltip("kind:N", title="answer"),
               alt.Tooltip("days:Q", format=",.1f", title="days"),
               alt.Tooltip("days_low:Q", format=",.1f", title="range from"),
               alt.Tooltip("days_high:Q", format=",.1f", title="range to"),
               alt.Tooltip("mfu:Q", format=".0%", title="MFU"), alt.Tooltip("basis:N", title="rests on"),
               alt.Tooltip("cloud_usd:Q", format="$,.0f", title="cloud rental"),
               alt.Tooltip("paper_note:N", title="the paper's Table 1")]
    cells = base.mark_rect(stroke="#777", strokeWidth=0.5).encode(
        color=alt.Color("kind:N", scale=GRID_COLORS, title="days",
                        legend=alt.Legend(orient="bottom", direction="horizontal")),
        tooltip=tooltip)
    text = base.mark_text(fontSize=12).encode(text="cell:N", tooltip=tooltip)
    return (cells + text).add_params(pick).properties(width=240, height=alt.Step(30),
                                                      title="Days to pre-train, by GPU and count")
