"""The ``export`` sub-command: the training configuration (accelerate, DeepSpeed/FSDP, TrainingArguments) of the
study's answer for a setting (``--best``, ``academic_bench.answer``) or of the best row in a results file."""
from __future__ import annotations

import argparse
from pathlib import Path

from . import args as cli_args
from ..catalog.config import Config
from ..catalog.methods import parse_methods


def _export_answer(args: argparse.Namespace) -> dict[str, Path]:
    """The study's answer's settings (``academic_bench.answer``) as a training configuration: the measured row
    where the answer is measured, else the predicted settings, with what they rest on in recipe.json."""
    from ..analysis import runs_root
    from ..answer.export import export_row, export_settings
    from ..results import ResultStore, status_of

    a = cli_args.study_answer(args.model, args.gpu, args.gpus, cli_args.config_decoder(args))
    if a.settings is None:
        raise cli_args.NoAnswer(f"no settings to export for {args.model} on {args.gpus} x {args.gpu}: the answer "
                                f"is {a.headline()}", a.to_dict())
    if a.kind == "measured":
        results = runs_root() / a.source_setup / "results.jsonl"
        rows = [r for r in ResultStore(results).rows() if r["config_id"] in a.rows and status_of(r) == "measured"
                and r["timing"] == "synced"]
        return export_row(rows[-1], args.out, results=str(results))
    config = Config(a.model, a.gpu, a.n_gpus, methods=parse_methods(a.settings.methods),
                    micro_batch=a.settings.micro_batch)
    answered = {"kind": a.kind, "days": a.days, "days_range": [a.days_low, a.days_high], "mfu": a.mfu,
                "rests_on": a.rests_on, "stated_error": a.stated_error}
    return export_settings(config, {"micro_batch": a.settings.micro_batch, "gas": a.settings.gas, "ran": {}},
                           {"answer": answered}, args.out)


def _cmd_export(args: argparse.Namespace) -> None:
    from ..answer.export import export_best

    if args.best == bool(args.results):
        raise ValueError("give --best (the study's answer for the setting) or --results FILE (the best row in "
                         "that results file), not both")
    cli_args.check_out(args.out, folder=True)
    if args.best:
        written = _export_answer(args)
    else:
        if not Path(args.results).exists():
            raise ValueError(f"no results at {args.results}: give a results.jsonl file or a folder of runs")
        written = export_best(args.results, args.model, args.gpu, args.gpus, args.out, tiny=args.tiny)
    import json

    data = {name: str(path) for name, path in written.items()}
    run = json.loads(written["recipe.json"].read_text())["run"]  # tiny: the workshop run, never a GPU's name
    cli_args.emit(args, data, lambda: f"the settings of {run}; wrote:\n" + "\n".join(f"  {p}" for p in data.values()))


# --- parsers --------------------------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="training configs (accelerate, DeepSpeed/FSDP, arguments) of the study's "
                                      "answer (--best) or of the best result in a results file")
    cli_args.add_json(p)
    p.add_argument("--best", action="store_true",
                   help="the settings of the study's answer for the setting (academic-bench cost shows them)")
    p.add_argument("--results", default=None, help="a results.jsonl file or a folder of runs")
    cli_args.add_model_or_config(p)
    cli_args.add_gpu(p)
    cli_args.add_gpus(p)
    cli_args.add_config_args(p)
    p.add_argument("--tiny", action="store_true", help="export a tiny-model result")
    p.add_argument("--out", required=True, help="folder for the exported files")
    p.set_defaults(func=_cmd_export, accepts_config=True)
