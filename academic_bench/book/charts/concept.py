"""Illustrations that explain a concept and are not measurements: each says so in its title.

``clock_illustration``: why a wall clock read without waiting for the GPU under-counts a training step. The host
(CPU) queues kernels quickly and moves on; the GPU runs them one after another, long after. A clock stopped when
the host has queued the last kernel sees the queueing time; one stopped after ``torch.cuda.synchronize()`` sees
the GPU's execution.
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from .narrow import with_narrow

ILLUSTRATION = "illustration, not a measurement"
HOST, DEVICE = "CPU: queues the kernels", "GPU: runs them"


def clock_illustration_frame(kernels: int = 5, queue_ms: float = 0.2, run_ms: float = 1.5,
                             launch_lag_ms: float = 0.1) -> pd.DataFrame:
    """Made-up intervals (milliseconds) of one step: each kernel queued by the host, then run by the GPU.

    The durations are arbitrary round numbers chosen to show the shape of the problem; nothing here was timed.
    Columns: lane, kernel, start_ms, end_ms.
    """
    rows, gpu_free = [], 0.0
    for k in range(kernels):
        q0 = k * queue_ms
        rows.append({"lane": HOST, "kernel": f"launch {k + 1}", "start_ms": q0, "end_ms": q0 + queue_ms * 0.8})
        g0 = max(gpu_free, q0 + launch_lag_ms)
        gpu_free = g0 + run_ms
        rows.append({"lane": DEVICE, "kernel": f"kernel {k + 1}", "start_ms": g0, "end_ms": gpu_free})
    return pd.DataFrame(rows)


def clock_stops(frame: pd.DataFrame) -> pd.DataFrame:
    """Where each clock stops on ``frame``: when the host has queued the last kernel, and when the GPU is done."""
    host_done = float(frame.loc[frame["lane"] == HOST, "end_ms"].max())
    gpu_done = float(frame.loc[frame["lane"] == DEVICE, "end_ms"].max())
    return pd.DataFrame({"t_ms": [host_done, gpu_done],
                         "clock": ["unsynchronised clock stops", "synchronised clock stops"],
                         "color": ["#d62728", "#2ca02c"]})


def clock_illustration(frame: pd.DataFrame | None = None) -> alt.LayerChart:
    """The host's queueing and the GPU's execution of one step on a time line, with where each clock stops (on a
    phone, the two clocks' labels on lines of their own)."""
    frame = clock_illustration_frame() if frame is None else frame
    return with_narrow(_clock(frame, False), _clock(frame, True))


def _clock(frame: pd.DataFrame, narrow: bool) -> alt.LayerChart:
    stops = clock_stops(frame)
    bars = alt.Chart(frame).mark_bar(height=18, cornerRadius=2).encode(
        x=alt.X("start_ms:Q", title="time within one training step (arbitrary units)"),
        x2="end_ms:Q",
        y=alt.Y("lane:N", title=None, sort=[HOST, DEVICE]),
        color=alt.Color("lane:N", legend=None, scale=alt.Scale(domain=[HOST, DEVICE],
                                                               range=["#9ecae9", "#4c78a8"])),
        tooltip=["lane", "kernel"])
    rules = alt.Chart(stops).mark_rule(strokeWidth=2, strokeDash=[5, 3]).encode(
        x="t_ms:Q", color=alt.Color("color:N", scale=None))

    def label(row: int, align: str, dx: int) -> alt.Chart:
        return alt.Chart(stops.iloc[[row]]).mark_text(align=align, dx=dx, fontSize=11, baseline="top").encode(
            x="t_ms:Q", y=alt.value(2 + 14 * row if narrow else 2), text="clock:N",
            color=alt.Color("color:N", scale=None))

    return alt.layer(bars, rules, label(0, "left", 4), label(1, "right", -4)).properties(
        width=230 if narrow else 420, height=130 if narrow else 110,
        title=alt.Title("Why a clock read without waiting under-counts",
                        subtitle=f"{ILLUSTRATION.capitalize()}: made-up durations, to show the shape of the problem"))
