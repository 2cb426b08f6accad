"""The planner explorer: days for a decoder of any size on every setup, from the study's answers for the catalog
decoders on that setup (``answer.by_size``)."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from ...answer import grid
from ...answer.by_size import mfu_by_size
from ...answer.planner import (CAP_ROUNDING, CAPPED_WORDS, FAST_END_CAPPED_WORDS, capped_words,
                                decoder_flops_terms, peak_flops, plan_decoder)
from ...cost import GPU_COUNTS
from ...catalog.units import SECONDS_PER_DAY
from ...predict.transfer import MFU_CAP
from ..charts.narrow import NARROW_COLUMN, with_narrow
from ..charts.tables import count
from .common import answer_text, select_param, selected_answer, setup_options, slider_param, wrapped_answer


# --- (3) planner: days for a decoder of any size, from the MFU we measured ----------------------------------

PLAN_PARAMS_B = np.round(np.arange(0.1, 10.0001, 0.1), 1)  # the slider's values, in billions of parameters
CAP_PARAM = "plan_mfu_cap"  # the page's copy of ``transfer.MFU_CAP``
ROWS_PARAM = "plan_rows_gpus"  # on a phone: the GPU count whose setups are the chart's rows


def plan_grid(root: str | None = None, params_b: np.ndarray = PLAN_PARAMS_B) -> pd.DataFrame:
    """Per setup and model size on the slider: MFU (estimate, low, high, source) and the FLOPs terms.

    The browser multiplies these out for the chosen tokens and sequence length (``answer.planner.plan_decoder``
    does the same in Python). ``mfu_source`` says whether the points are measured or predicted on the setup.
    """
    from ...answer.store import other_gpus
    from ...catalog.hardware import every_gpu

    # The catalog decoders' kept answers on every catalog GPU, as ``answer.planner.plan_decoder`` reads them; a
    # setup with no catalog decoder answered (a GPU that refuses the decoders' bf16 recipe, another vendor's) has
    # no row.
    answers = (*grid(root), *other_gpus(root))
    rows = []
    for g, spec in every_gpu().items():
        if not spec.supports_bf16:  # the planned decoder trains in bf16, which a GPU before Ampere refuses
            continue
        for n in GPU_COUNTS:
            for pb in params_b:
                est = mfu_by_size(answers, g, n, pb * 1e9)
                if est is None:
                    break
                base, per_pos = decoder_flops_terms(pb * 1e9)
                rows.append({"gpu": g, "n_gpus": n, "key": f"{n} x {g}", "setup": _setup_name(g, n),
                             "params_b": float(pb), "mfu": est.mfu, "mfu_low": est.low, "mfu_high": est.high,
                             "mfu_source": est.kind, "flops_base": base, "flops_per_position": per_pos,
                             "peak_flops": peak_flops(g, "bf16")})
    df = pd.DataFrame(rows)
    # Six significant digits keep the page small and move the days by less than a millionth.
    for col in ("mfu", "mfu_low", "mfu_high"):
        df[col] = df[col].map(lambda v: float(f"{v:.6g}"))
    return df


def plan_chart(grid: pd.DataFrame | None = None, params_b: float = 1.0, tokens_b: float = 3000,
               seq_len: int = 2048, setup: str = "8 x h100-80gb") -> alt.VConcatChart:
    """Days (with the MFU range) for a custom decoder on every setup with an MFU, from sliders. On a phone: a
    narrower plot, the answer on several lines, and the rows of one GPU count at a time, picked in a menu (every
    setup, one under the other, made the chart several screens tall)."""
    df = plan_grid() if grid is None else grid
    return with_narrow(*(_plan(df, params_b, tokens_b, seq_len, setup, narrow) for narrow in (False, True)))


def _plan(df: pd.DataFrame, params_b: float, tokens_b: float, seq_len: int, setup: str,
          narrow: bool) -> alt.VConcatChart:
    width = NARROW_COLUMN - 140 if narrow else 520
    options, _ = setup_options(df)
    counts = sorted({int(n) for n in df["n_gpus"]})
    count_of_setup = int(setup.split(" x ")[0]) if setup in options else counts[-1]
    # The menu's labels as the rows name them: a select is as wide as its longest label, and a phone's column is not.
    labels = [_setup_name(key.split(" x ")[1], int(key.split(" x ")[0])) for key in options]
    params = [slider_param("plan_params_b", params_b, float(PLAN_PARAMS_B[0]), float(PLAN_PARAMS_B[-1]), 0.1,
                      "Parameters (billions) "),
              slider_param("plan_tokens_b", tokens_b, 10, 15_000, 10, "Training tokens (billions) "),
              select_param("plan_seq", [512, 1024, 2048, 4096, 8192], seq_len, "Sequence length "),
              select_param("plan_setup", options, setup if setup in options else options[0], "Setup ", labels),
              # The package's cap travels with the page: an MFU at it makes the days a lower bound (``at_cap``).
              alt.param(name=CAP_PARAM, value=MFU_CAP)]
    if narrow:  # a phone's rows: the setups of one GPU count, the count of the setup the answer line starts on
        params.append(select_param(ROWS_PARAM, counts, count_of_setup, "Chart rows ",
                                   [f"setups of {count(n, 'GPU')}" for n in counts]))
    calc = dict(
        at_peak=f"(datum.flops_base + datum.flops_per_position * plan_seq) * plan_tokens_b * 1e9 "
                f"/ (datum.n_gpus * datum.peak_flops) / {SECONDS_PER_DAY}",
        days="datum.at_peak / datum.mfu", days_low="datum.at_peak / datum.mfu_high",
        days_high="datum.at_peak / datum.mfu_low",
    )
    base = _plan_rows(df)
    for k, v in calc.items():
        base = base.transform_calculate(**{k: v})
    if narrow:
        base = base.transform_filter(f"datum.n_gpus == toNumber({ROWS_PARAM})")
    y = alt.Y("setup:N", title=None, sort=alt.EncodingSortField("days", order="descending"))
    # One colour per source whichever rows are shown (a phone's count may have no measured setup).
    color = alt.Color("mfu_source:N", title="MFU from", scale=alt.Scale(domain=sorted(set(df["mfu_source"]))))
    bars = base.mark_rule(strokeWidth=3).encode(
        y=y, x=alt.X("days_low:Q", title="training days (log scale; bar = range from the nearest MFUs)",
                     scale=alt.Scale(type="log")), x2="days_high:Q", color=color)
    dots = base.mark_circle(size=80).encode(
        y=y, x="days:Q", color=color,
        tooltip=["setup:N", alt.Tooltip("days:Q", format=",.1f"), alt.Tooltip("days_low:Q", format=",.1f"),
                 alt.Tooltip("days_high:Q", format=",.1f"), alt.Tooltip("mfu:Q", format=".0%"), "mfu_source:N"])
    answer = _plan_rows(df, answer_text(df.iloc[:0], width, narrow))
    answer = selected_answer(
        answer, calc, "plan_setup",
        "datum.sel == 0 ? datum.setup + ': ' + format(datum.days, ',.1f') + ' days (' + "
        "format(datum.days_low, ',.1f') + '-' + format(datum.days_high, ',.1f') + '), MFU ' + "
        "format(datum.mfu, '.0%') + ' (' + datum.mfu_source + ')' + "
        + _capped_words("datum.mfu", "datum.mfu_high") + " : "
        "'No answered decoder on ' + plan_setup")
    plot = alt.layer(bars, dots).properties(width=width, height=alt.Step(16))
    return alt.vconcat(wrapped_answer(answer) if narrow else answer, plot).add_params(*params).properties(title=alt.Title(
        "How long would a decoder of this size take?",
        subtitle=["MFU: the study's answers for the Pythia decoders on the same setup (measured, or predicted from",
                  "a measurement), interpolated between the sizes that bracket it; held at the nearest size outside."]
        + (["Rows: the setups of the GPU count picked below."] if narrow else [])))


def _capped_words(mfu: str, mfu_high: str) -> str:
    """A vega expression: ``answer.planner.capped_words`` in the browser. ``CAPPED_WORDS`` where the MFU ``mfu`` is
    at the cap, else ``FAST_END_CAPPED_WORDS`` where the range's high MFU ``mfu_high`` is, else nothing (the same
    test as ``answer.planner.at_cap``, on the cap the page carries)."""
    def words(template: str) -> str:
        before, after = template.replace("'", "\\'").split("{cap:.0%}")
        return f"'{before}' + format({CAP_PARAM}, '.0%') + '{after}'"

    def held(value: str) -> str:
        return f"{value} >= {CAP_PARAM} - {CAP_ROUNDING!r}"

    return (f"({held(mfu)} ? {words(CAPPED_WORDS)} : "
            f"{held(mfu_high)} ? {words(FAST_END_CAPPED_WORDS)} : '')")


def _plan_rows(grid: pd.DataFrame, chart: alt.Chart | None = None) -> alt.Chart:
    """The grid's rows for the chosen size, as three small tables joined in the browser (a smaller page)."""
    main = grid[["key", "params_b", "mfu", "mfu_low", "mfu_high", "mfu_source"]]
    setups = grid[["key", "setup", "n_gpus", "peak_flops"]].drop_duplicates("key")
    sizes = grid[["params_b", "flops_base", "flops_per_position"]].drop_duplicates("params_b")
    # Every size on every catalog GPU is more rows than Altair's default limit for a frame (5,000); the values are
    # inlined as they are, the same JSON the limit would have let through for fewer GPUs.
    main = alt.InlineData(values=main.to_dict("records"))
    chart = alt.Chart(main) if chart is None else chart.properties(data=main)
    return chart.transform_filter("abs(datum.params_b - plan_params_b) < 0.05").transform_lookup(
        lookup="key", from_=alt.LookupData(setups, "key", ["setup", "n_gpus", "peak_flops"])
    ).transform_lookup(
        lookup="params_b", from_=alt.LookupData(sizes, "params_b", ["flops_base", "flops_per_position"]))


def _setup_name(gpu: str, n_gpus: int) -> str:
    """'8 x RTX PRO 6000': short enough that every catalog GPU's row fits a phone's column."""
    from .answer_grid import short_label

    return f"{int(n_gpus)} x {short_label(gpu)}"


def plan_answer(params_b: float, tokens_b: float, seq_len: int, setup: str, root: str | None = None) -> str:
    """The planner chart's answer line, from ``answer.planner.plan_decoder`` (the browser tests compare the two)."""
    n, gpu = setup.split(" x ")
    p = plan_decoder(params_b * 1e9, tokens_b * 1e9, gpu, int(n), seq_len, root=root)
    if p.mfu is None:
        return f"No answered decoder on {setup}"
    return (f"{_setup_name(gpu, int(n))}: {p.days:,.1f} days ({p.days_low:,.1f}-{p.days_high:,.1f}), "
            f"MFU {p.mfu.mfu:.0%} ({p.mfu.kind})" + capped_words(p.capped, p.fast_end_capped))
