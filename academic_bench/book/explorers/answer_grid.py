"""The answer grid: every model of the study on every GPU of data/gpus.csv and count, grouped by generation, with the study's answer
(``academic_bench.answer``): the days, the settings, what they rest on and what renting the GPUs for them costs. Each cell is labelled: measured (a complete search on that setup), predicted
(the transfer model from our measurements, with a range), the paper's (only where its implied MFU is plausible), or
none. The paper's Table 1 cell stays beside every answer, with its implied MFU. A model menu filters the grid in the
browser (an Altair parameter), so it needs no kernel. The GPUs stand in one panel per generation (Volta to
Blackwell), one column per count, so that the grid stays under 300 px wide, readable on a 390 px phone."""
from __future__ import annotations


import altair as alt
import pandas as pd

from ...analysis import MFU_IMPLAUSIBLE, gpu_label, model_label
from ...answer import answers_frame
from ..charts import model_order
from .common import DEFAULT_MODEL, select_param

GRID_LABELS = {"measured": "measured", "predicted": "predicted", "paper": "the paper's", "none": "no answer",
               "refused": "refused"}  # refused: the GPU cannot run the recipe (AMD; bf16 before Ampere)
GRID_COLORS = alt.Scale(domain=list(GRID_LABELS.values()),
                        range=["#1f77b4", "#9ecae1", "#bdbdbd", "#ffffff", "#f0f0f0"])
GRID_COLUMNS = ["model", "model_label", "gpu", "gpu_label", "generation", "n_gpus", "kind", "days", "days_low", "days_high", "mfu",
                "basis", "settings", "cloud_usd", "paper_days", "paper_mfu", "paper_note", "cell", "days_text",
                "range_text", "mfu_text", "cloud_text", "beyond_paper"]
NO_ANSWER = "none"  # what a tooltip says for a figure a cell without an answer does not have


def generation_label(gpu: str) -> str:
    """A GPU's generation for people ('ampere' -> 'Ampere', AMD's 'cdna3' -> 'AMD CDNA3'; data/gpus.csv's
    ``architecture``)."""
    from ...catalog.hardware import get_gpu

    g = get_gpu(gpu)
    return g.architecture.capitalize() if g.vendor == "nvidia" else f"{g.vendor.upper()} {g.architecture.upper()}"


def short_label(gpu: str) -> str:
    """A GPU's display name short enough for a phone's grid: without the generation, which the panel's header
    says ('RTX PRO 6000 Blackwell Workstation Edition' -> 'RTX PRO 6000'), or what a bracket adds."""
    words = gpu_label(gpu).split(" (")[0].split()
    drop = {generation_label(gpu), "Generation", "Workstation", "Edition"}
    return " ".join(w for w in words if w not in drop)


def answer_grid_frame(root: str | None = None) -> pd.DataFrame:
    """The answers on every GPU of data/gpus.csv (``answer.published_ranges.every_answer``: the study's GPUs and the
    others, a prediction on a GPU never measured widened by the published check at its distance; the cells a GPU
    refuses, AMD's and bf16 before Ampere, as ``refused`` with the reason: ``store.refused``) with display names, the generation, the settings in
    words and the paper's cell in words (flagged above ``MFU_IMPLAUSIBLE``)."""
    from ...answer.published_ranges import every_answer
    from ...answer.store import refused

    t = answers_frame(every_answer(root))
    no = pd.DataFrame(list(refused(root)), columns=["model", "gpu", "n_gpus", "reason"])
    t = pd.concat([t, no.assign(kind="refused", rests_on=no["reason"]).drop(columns="reason")], ignore_index=True)

    def settings(r) -> str:
        if not isinstance(r.methods_label, str):
            return "none"
        return r.methods_label + (f", micro-batch {int(r.micro_batch)} x {int(r.gas)}"
                                  if pd.notna(r.micro_batch) else "")

    def paper_note(days, mfu) -> str:
        if pd.isna(days):
            return "not measured by the paper"
        flag = f", above {MFU_IMPLAUSIBLE:.0%}: no real run reaches it" if mfu > MFU_IMPLAUSIBLE else ""
        return f"{days:,.0f} days (implied MFU {mfu:.0%}{flag})"

    out = t.assign(model_label=t["model"].map(model_label), gpu_label=t["gpu"].map(short_label),
                   generation=t["gpu"].map(generation_label),
                   kind=t["kind"].map(GRID_LABELS), basis=t["rests_on"], settings=[settings(r) for r in t.itertuples()],
                   cloud_usd=t["rental_usd"].astype(float),
                   paper_note=[paper_note(d, m) for d, m in zip(t["paper_days"], t["paper_mfu"])],
                   cell=[f"{d:,.0f}" if pd.notna(d) else "×" if k == "refused" else "–"
                         for d, k in zip(t["days"], t["kind"])],
                   # The tooltip's figures as words, so that a cell without an answer says so instead of "null".
                   days_text=[f"{d:,.1f}" if pd.notna(d) else NO_ANSWER for d in t["days"]],
                   range_text=[f"{lo:,.1f} to {hi:,.1f}" if pd.notna(lo) and pd.notna(hi) else NO_ANSWER
                               for lo, hi in zip(t["days_low"], t["days_high"])],
                   mfu_text=[f"{m:.0%}" if pd.notna(m) else NO_ANSWER for m in t["mfu"]],
                   cloud_text=[f"${c:,.0f}" if pd.notna(c) else NO_ANSWER for c in t["rental_usd"].astype(float)],
                   beyond_paper=t["beyond_paper_words"].fillna("not measured yet"))
    return out[GRID_COLUMNS].reset_index(drop=True)


def answer_grid_chart(frame: pd.DataFrame, model: str = DEFAULT_MODEL) -> alt.Chart:
    """Days per GPU (rows) and count (columns) for the model the menu picks; colour says what the days rest on."""
    models = model_order(frame["model"].unique())
    pick = select_param("grid_model", models, model if model in models else models[0], "Model ",
                        [model_label(m) for m in models])
    from ...catalog.hardware import every_gpu
    from ...predict.published_family import GENERATIONS

    # GPUs in data/gpus.csv's order within their generation, generations oldest first.
    present = set(frame["gpu"])
    gpus = [short_label(g) for g in every_gpu() if g in present]
    nvidia = [g.capitalize() for g in GENERATIONS]  # oldest first, then the other vendors' (refused)
    generations = sorted(set(frame["generation"]), key=lambda g: (nvidia.index(g) if g in nvidia else len(nvidia), g))
    base = alt.Chart().transform_filter("datum.model == grid_model").encode(
        x=alt.X("n_gpus:O", title="GPUs", axis=alt.Axis(labelAngle=0, orient="top")),
        y=alt.Y("gpu_label:N", title=None, sort=gpus))
    tooltip = [alt.Tooltip("model_label:N", title="model"), alt.Tooltip("gpu_label:N", title="GPU"),
               alt.Tooltip("n_gpus:O", title="GPUs"), alt.Tooltip("kind:N", title="answer"),
               alt.Tooltip("days_text:N", title="days"), alt.Tooltip("range_text:N", title="range"),
               alt.Tooltip("mfu_text:N", title="MFU"), alt.Tooltip("settings:N", title="settings"),
               alt.Tooltip("basis:N", title="rests on"), alt.Tooltip("cloud_text:N", title="cloud rental"),
               alt.Tooltip("paper_note:N", title="the paper's Table 1"),
               alt.Tooltip("beyond_paper:N", title="beside it, beyond the paper")]
    cells = base.mark_rect(stroke="#777", strokeWidth=0.5).encode(
        color=alt.Color("kind:N", scale=GRID_COLORS, title="days",
                        legend=alt.Legend(orient="bottom", direction="horizontal", columns=3)),
        tooltip=tooltip)
    text = base.mark_text(fontSize=12).encode(text="cell:N", tooltip=tooltip)
    layer = alt.layer(cells, text).properties(width=160, height=alt.Step(22))
    return alt.layer(layer, data=frame).facet(
        row=alt.Row("generation:N", sort=generations, title=None,
                    header=alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start", labelFontWeight="bold")),
    ).resolve_scale(y="independent").add_params(pick).properties(
        title="Days to pre-train")
