"""Plausibility of a contributed run's rows: a measured row faster than the study's own prediction for its
configuration by more than the prediction's range is named with both figures (``check-run`` warns).

The prediction is the one the study's held-out checks make (``transfer_validation.setups_held_out``): the row's
configuration predicted from the shipped runs of the other setups only (``other_methods.predict_from_others``),
so that the row checked never speaks for itself, with the range the study states for a prediction of its kind
(``ranges.stated_range``: the largest error its held-out checks observed). A row slower than its range is no warning: a slow machine, a
busy node or a worse software stack makes a row slower, while only a timing error or an edited file makes one
faster than every check of the study allows.
"""
from __future__ import annotations

import os

import pandas as pd


def faster_than_predicted(rows: list[dict], setup: str, root: str | os.PathLike | None = None
                          ) -> list[tuple[str, str]]:
    """(config_id, words) for each synchronized measured row of ``rows`` (a run folder named ``setup``) whose days
    are below the low end of the prediction's range, the words naming the measured and predicted days, the range
    and what the prediction rests on."""
    from ..analysis import SETTING, counted, fastest, frame_from_rows, profiles, runs_frame
    from ..catalog.methods import validation_class
    from ..results import rows_to_read
    from ..predict.other_methods import predict_from_others
    from ..predict.ranges import observed_errors, stated_range
    from ..predict.transfer import methods_of_row

    mine = counted.measured_rows(frame_from_rows(rows_to_read(rows)))
    if mine.empty:
        return []
    shipped = counted.results(runs_frame(root))
    others = fastest(shipped[shipped["setup"] != setup], ["setup", *SETTING, "methods_label"])
    others = others.reset_index(drop=True)
    prof = profiles(root)
    rest = prof[prof["setup"] != setup] if len(prof) else prof
    errors, out = observed_errors(root), []
    for _, t in mine.iterrows():
        p, rests_on = predict_from_others(t, others, rest)
        if p is None or p.days is None:
            continue
        m = methods_of_row(t)
        rng = stated_range(errors, "transfer model", validation_class(m, int(t["n_gpus"])), m.offload,
                           rests_on["same_architecture"])
        low, high, _ = rng.bounds(p.days, p.days_low, p.days_high)
        if low is None or not float(t["days"]) < low:
            continue
        out.append((str(t["config_id"]),
                    f"measured {float(t['days']):,.2f} days, faster than the study's prediction for this "
                    f"configuration ({t['model']}, {t['methods_label']}, {int(t['n_gpus'])} x {t['gpu']}) of "
                    f"{p.days:,.2f} days by more than its range ({low:,.2f} to {high:,.2f}, {rng.words}; from "
                    f"{rests_on['source_setup']}'s {rests_on['source_methods']}): a timing error or an edited row "
                    "is likelier than a faster machine; measure it again"))
    return out
