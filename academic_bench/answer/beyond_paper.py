"""What the switches beyond the paper buy on a catalog model's setting, beside the study's answer (``BeyondPaper``).

Read from the runs by ``analysis.beyond``: a number is offered only where a configuration with such a switch was
measured on a setup of those GPUs, its method class validated there within 3%, and every switch it uses passed
its loss parity against the free lunch. Nothing is predicted: a setting nothing beyond the paper was measured on
says "not measured yet".
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import pandas as pd

from ..catalog.methods import parse_methods
from .types import Answer, BeyondPaper


@lru_cache(maxsize=8)
def beyond_gains(root: str | None = None) -> pd.DataFrame:
    """``analysis.beyond.gains`` of the setups' rows and loss-parity checks (cached per runs folder, as
    ``transfer_validation.measured`` is)."""
    from ..analysis import runs_frame
    from ..analysis.beyond import gains, parity_frame

    return gains(runs_frame(root), parity_frame(root))


def beyond_paper_of(answer: Answer, g: pd.DataFrame, settings_of) -> BeyondPaper:
    """``answer``'s setting beyond the paper, from ``g`` (``beyond_gains``). ``settings_of(methods, micro_batch,
    gas)`` makes the settings of the answer's model, GPU and count."""
    mine = g[(g["model"] == answer.model) & (g["gpu"] == answer.gpu) & (g["n_gpus"] == answer.n_gpus)] \
        if not g.empty else g
    mine = mine.sort_values(["days", "config_id"], kind="stable")  # two setups of the same GPUs: the faster first
    if mine.empty:
        return BeyondPaper(status="not measured yet")
    validated = mine[mine["validation"] == "validated"]
    if validated.empty:
        r = mine.iloc[0]
        return BeyondPaper(status="not validated yet", parity=r["parity_words"],
                           rests_on=f"{r['methods_label']} on {r['setup']}, row {r['config_id']}: its method class is "
                                    f"{r['validation']} on {r['setup']}")
    ok = validated[validated["parity"] == "passed"]
    if ok.empty:
        r = validated.iloc[0]  # the fastest validated one, and why it is not offered
        status = "loss parity failed" if (validated["parity"] == "failed").all() else "loss parity not checked yet"
        return BeyondPaper(status=status, parity=r["parity_words"],
                           rests_on=f"{r['methods_label']} on {r['setup']}, row {r['config_id']}")
    r = ok.iloc[0]
    saves = (1 - r["days"] / answer.days if answer.kind == "measured" and answer.source_setup == r["setup"]
             and answer.days else None)
    # No export command: ``export --best`` writes the replication's settings, not a switch beyond the paper.
    settings = replace(settings_of(parse_methods(r["methods"]), r["micro_batch"], r["gas"]), export_command="")
    return BeyondPaper(status="measured", days=float(r["days"]), mfu=float(r["mfu"]), settings=settings, saves=saves,
                       parity=r["parity_words"],
                       rests_on=f"measured on {r['setup']} ({r['methods_label']}), row {r['config_id']}, against "
                                f"{r['paper_methods_label']} on the same setup")

