"""What every chart of the book shares: colours and markers, the catalog's model order, an empty chart."""
from __future__ import annotations

import altair as alt
import pandas as pd

SOURCE_COLORS = alt.Scale(domain=["paper", "predicted", "ours"], range=["#9e9e9e", "#9ecae1", "#1f77b4"])

# One marker and one colour per GPU on every page of the book, by display label (``analysis.gpu_label``), in the
# catalog's order (oldest and smallest first).
_GPU_SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "wedge", "stroke"]
_GPU_COLORS = ["#8c564b", "#e377c2", "#2ca02c", "#1f77b4", "#9467bd", "#ff7f0e", "#17becf", "#bcbd22"]


def gpu_names() -> list[str]:
    """The catalog's GPUs as display labels, in catalog order."""
    from ...analysis import gpu_label
    from ...catalog.hardware import catalog

    return [gpu_label(g) for g in catalog()]


def gpu_shape(field: str = "gpu", title: str | None = "GPU", **kw) -> alt.Shape:
    """The shape channel for a column of GPU display labels: the same marker for a GPU on every chart."""
    names = gpu_names()
    return alt.Shape(f"{field}:N", title=title, sort=names,
                     scale=alt.Scale(domain=names, range=_GPU_SHAPES[:len(names)]), **kw)


def gpu_color(field: str = "gpu", title: str | None = "GPU", **kw) -> alt.Color:
    """The colour channel for a column of GPU display labels: the same colour for a GPU on every chart."""
    names = gpu_names()
    return alt.Color(f"{field}:N", title=title, sort=names,
                     scale=alt.Scale(domain=names, range=_GPU_COLORS[:len(names)]), **kw)


def model_order(values) -> list:
    """The distinct models in ``values`` (keys or display labels) in catalog order, for a chart's ``sort=``:
    each family by size (Pythia-160M, -410M, -1B, -2.8B, -6.9B), never alphabetical."""
    from ...catalog.models import model_rank

    return sorted(dict.fromkeys(v for v in values if isinstance(v, str)), key=model_rank)


def by_model(df: pd.DataFrame, col: str = "model", within: tuple[str, ...] = ()) -> pd.DataFrame:
    """``df``'s rows with the models in ``col`` (keys or display labels) in catalog order; rows of one model keep
    their order. ``within`` names columns to group by first (sorted by their own values)."""
    from ...catalog.models import model_rank

    if df.empty:
        return df
    ranked = df.assign(_model_rank=df[col].map(model_rank))
    return ranked.sort_values([*within, "_model_rank"], kind="stable").drop(columns="_model_rank")


def model_list(models) -> str:
    """Models (keys, or one comma-separated string of keys) as their display labels in catalog order, joined."""
    from ...analysis import model_label

    if isinstance(models, str):
        models = [m.strip() for m in models.split(",") if m.strip()]
    return ", ".join(model_label(m) for m in model_order(models))


def empty_chart(message: str) -> alt.Chart:
    """A small chart that says why there is nothing to draw (so a page never shows a blank box)."""
    return alt.Chart(pd.DataFrame({"text": [message]})).mark_text(size=14, color="#555").encode(
        text="text:N").properties(width=520, height=60)


