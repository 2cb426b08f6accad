"""What the explorers share: the setups table the browser computes on, the bound controls, the answer line."""
from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from ...analysis import gpu_label
from ..charts import count
from ...cost import (DEFAULT_SOURCES, DEFAULT_WORDS, Assumptions, cloud_price_table, default_machine_costs,
                     default_words, paper_days, plausibility, setup_label, setups_frame)
from ...catalog.hardware import catalog as gpu_catalog, every_gpu

# The study's answer first (the default), the paper's Table 1 beside it for comparison.
SOURCE_KINDS = {"answer": "the study's answer", "paper": "the paper's Table 1"}
DEFAULT_MODEL = "pythia-1b"


# --- data tables for the charts ----------------------------------------------------------------------------

def explorer_setups(root: str | None = None, assumptions: Assumptions | None = None) -> pd.DataFrame:
    """Every setup with days, the study's answers (``answer.answer_setups``) and the paper's Table 1, with what
    the browser needs.

    Columns: model, gpu, n_gpus, setup, days, days_source, kind ("answer"/"paper", ``SOURCE_KINDS``),
    gpu_quote_usd, machine_usd, board_power_w, cloud_quote_usd, utilisation, purchase_usd, implied_mfu and
    implausible (the days imply an MFU above ``analysis.MFU_IMPLAUSIBLE``: the explorers never recommend such a
    setup; only the paper's cells can be).
    """
    from ...answer.published_ranges import every_answer
    from ...answer.setups import answer_setups

    a = assumptions or Assumptions()
    parts = []
    # Every catalog GPU's answers; the explorers price a setup in the browser, so a GPU without a listed purchase
    # or cloud price (``cost_of`` leaves its costs None) stays out of them, and ``cost`` names the price to pass.
    answers = answer_setups(assumptions=a, root=root, answers=every_answer(root))
    answers = answers[answers["purchase_usd"].notna() & answers["cloud_usd"].notna()]
    for kind, df in (("answer", answers), ("paper", setups_frame(paper_days(), a))):
        if not df.empty:
            df = df.assign(kind=kind)
            parts.append(df)
    df = pd.concat(parts, ignore_index=True)
    df["gpu_quote_usd"] = df["gpu"].map(a.gpu_price)
    df["cloud_quote_usd"] = df["gpu"].map(a.cloud_price)
    df["board_power_w"] = df["gpu"].map(lambda g: every_gpu()[g].board_power_w)
    df["utilisation"] = a.utilisation
    df = plausibility(df)
    df["implausible"] = df["implausible"].astype(bool)
    cols = ["model", "gpu", "n_gpus", "setup", "days", "days_source", "kind", "gpu_quote_usd", "machine_usd",
            "board_power_w", "cloud_quote_usd", "utilisation", "purchase_usd", "implied_mfu", "implausible"]
    return df[cols]


def select_param(name: str, options: list, value: Any, label: str, labels: list[str] | None = None) -> alt.Parameter:
    return alt.param(name=name, value=value,
                     bind=alt.binding_select(options=options, labels=labels or [str(o) for o in options],
                                             name=label))


def slider_param(name: str, value: float, lo: float, hi: float, step: float, label: str) -> alt.Parameter:
    return alt.param(name=name, value=value, bind=alt.binding_range(min=lo, max=hi, step=step, name=label))


def answer_text(data: pd.DataFrame | alt.Chart, width: int, narrow: bool = False) -> alt.Chart:
    """A one-line text chart; its ``label`` field is computed by the transforms the caller adds. Narrow (a phone):
    the line is wrapped onto up to four lines (``wrapped_answer`` after the caller's transforms)."""
    if narrow:
        return alt.Chart(data).mark_text(align="left", baseline="top", fontSize=13, fontWeight="bold",
                                         lineHeight=16, color="#222").encode(
            x=alt.value(0), y=alt.value(2), text="label:N").properties(
            width=width, height=ANSWER_LINES * 16 + 4, view=alt.ViewBackground(stroke=None))
    return alt.Chart(data).mark_text(align="left", baseline="middle", fontSize=13, fontWeight="bold",
                                     color="#222").encode(x=alt.value(0), y=alt.value(10), text="label:N"
                                                          ).properties(width=width, height=22,
                                                                       view=alt.ViewBackground(stroke=None))


ANSWER_LINES = 4
NARROW_ANSWER_CHARS = 38  # characters of a 13 px bold line on a phone


def wrapped_answer(answer: alt.Chart) -> alt.Chart:
    """The answer line of a narrow chart broken onto lines at spaces (vega draws a list of strings as lines)."""
    from ..charts.narrow import wrap_expression

    return answer.transform_calculate(label=wrap_expression("datum.label", NARROW_ANSWER_CHARS))


def selected_answer(answer: alt.Chart, calc: dict[str, str], param: str, label: str) -> alt.Chart:
    """Apply the explorer's calculations, keep the row of the setup picked in ``param`` (the fastest row
    stands in when that setup has none, so the label can say so) and compute its ``label``."""
    for k, v in calc.items():
        answer = answer.transform_calculate(**{k: v})
    return answer.transform_calculate(sel=f"datum.key == {param} ? 0 : 1").transform_window(
        rank="row_number()", sort=[alt.SortField("sel"), alt.SortField("days")]
    ).transform_filter("datum.rank == 1").transform_calculate(label=label)


def assumptions_table() -> pd.DataFrame:
    """The cost model's defaults with their sources (for the book)."""
    a = Assumptions()
    said = default_words(a)  # the words and values Cost-benefit's table gives them too
    rows = [(DEFAULT_WORDS[k], said[k], DEFAULT_SOURCES[k]) for k in ("lifespan_years", "kwh_price_usd", "pue",
                                                                      "utilisation")]
    rows += [(f"{g.name}", f"${g.price_usd:,.0f} per GPU, {g.board_power_w:g} W", g.price_source)
             for g in gpu_catalog().values() if g.price_usd is not None]
    rows += [(f"machine for {count(n, 'GPU')}", f"${usd:,.2f}", DEFAULT_SOURCES["machine_cost_usd"])
             for n, usd in sorted(default_machine_costs().items())]
    return pd.DataFrame(rows, columns=["assumption", "default", "source"])


def cloud_prices_table() -> pd.DataFrame:
    """data/cloud_prices.csv as shown in the book."""
    df = cloud_price_table()
    df = df.assign(gpu=df["gpu"].map(gpu_label))
    return df[["gpu", "usd_per_gpu_hour", "default", "provider", "product", "source_url", "as_of", "transcribed_in"]]


def setup_options(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The setups of ``df`` for a menu: their keys ("4 x h100-80gb", the values) and display labels."""
    keys = sorted({(g, int(n)) for g, n in zip(df["gpu"], df["n_gpus"])},
                  key=lambda k: (list(every_gpu()).index(k[0]), k[1]))  # data/gpus.csv's order
    return [f"{n} x {g}" for g, n in keys], [setup_label(g, n) for g, n in keys]
