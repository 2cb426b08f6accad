"""A decoder of any size on a setup: the MFU of the study's answers for the catalog decoders on that setup,
interpolated in log(parameters) between the two answered sizes that bracket it.

Only decoders answered on the *same* GPU and count are used (measured there, or predicted there by the transfer
model), so a setup never borrows another setup's MFU, and a larger GPU never answers slower than a smaller one
for the same size because its points came from a different model. Outside the answered sizes the MFU is held at
the nearest size, and the basis says that it extrapolates and from which size. The range is the lowest and
highest MFU of the points used, widened by each point's own range.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .types import Answer

DECODER_FAMILIES = ("pythia",)


@dataclass(frozen=True)
class SizeMFU:
    mfu: float
    low: float
    high: float
    kind: str  # "measured" where every point used is measured, else "predicted"
    basis: str  # which sizes, how
    points: tuple[str, ...]  # the catalog decoders used


def decoder_points(answers: tuple[Answer, ...] | list[Answer], gpu: str, n_gpus: int) -> list[tuple[float, Answer]]:
    """(parameters, answer) of the catalog decoders answered on ``n_gpus`` x ``gpu`` (measured or predicted),
    smallest first."""
    from ..catalog.models import CATALOG

    out = []
    for a in answers:
        spec = CATALOG.get(a.model)
        if (a.gpu, a.n_gpus) == (gpu, n_gpus) and spec is not None and spec.family in DECODER_FAMILIES \
                and a.kind in ("measured", "predicted") and a.mfu:
            out.append((float(spec.paper_params), a))
    return sorted(out, key=lambda p: p[0])


def _fmt(params: float) -> str:
    return f"{params / 1e9:.3g}B" if params >= 1e9 else f"{params / 1e6:.3g}M"


def mfu_range(a: Answer) -> tuple[float, float]:
    """The MFU range an answer's days range implies (MFU scales as 1 / days)."""
    lo = a.mfu * a.days / a.days_high if a.days_high else a.mfu
    hi = a.mfu * a.days / a.days_low if a.days_low else a.mfu
    return lo, hi


def mfu_by_size(answers, gpu: str, n_gpus: int, params: float) -> SizeMFU | None:
    """The MFU for a decoder of ``params`` parameters on ``n_gpus`` x ``gpu``; None where no catalog decoder is
    answered there."""
    pts = decoder_points(answers, gpu, n_gpus)
    if not pts:
        return None
    x = math.log(params)
    xs = [math.log(p) for p, _ in pts]
    exact = [i for i, v in enumerate(xs) if abs(v - x) < 1e-9]
    if exact:
        used, mfu = [exact[0]], pts[exact[0]][1].mfu
        basis = f"the answer for {pts[exact[0]][1].model} ({_fmt(pts[exact[0]][0])}) on this setup"
    elif x < xs[0] or x > xs[-1]:
        i = 0 if x < xs[0] else len(xs) - 1
        used, mfu = [i], pts[i][1].mfu
        side = "below the smallest" if x < xs[0] else "above the largest"
        basis = (f"extrapolated: {side} decoder answered on this setup, held at {pts[i][1].model} "
                 f"({_fmt(pts[i][0])})")
    else:
        j = next(k for k, v in enumerate(xs) if v > x)
        i = j - 1
        t = (x - xs[i]) / (xs[j] - xs[i])
        used, mfu = [i, j], pts[i][1].mfu + t * (pts[j][1].mfu - pts[i][1].mfu)
        basis = (f"between {pts[i][1].model} ({_fmt(pts[i][0])}) and {pts[j][1].model} ({_fmt(pts[j][0])}) on this "
                 "setup, linear in log parameters")
    near = [pts[k][1] for k in used]
    ranges = [mfu_range(a) for a in near]
    kind = "measured" if all(a.kind == "measured" for a in near) else "predicted"
    return SizeMFU(mfu=float(mfu), low=min(min(r[0] for r in ranges), mfu), high=max(max(r[1] for r in ranges), mfu),
                   kind=kind, basis=basis, points=tuple(a.model for a in near))
