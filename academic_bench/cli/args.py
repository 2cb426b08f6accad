"""The command line's shared pieces: output (JSON for scripts or text for people) and the arguments that
name a setting. Used by ``cli`` and by each module that adds sub-commands (``*_cli``)."""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..catalog.config import training_precision
from ..catalog.hardware import every_gpu, is_gpu_file
from ..catalog.methods import Methods, device_reason
from ..catalog.models import CATALOG, SIXTEEN_BIT, at_precision, is_variant, precisions
from ..catalog.models.from_config import DEFAULT_GLOBAL_BATCH, DTYPES
from ..results import jsonl_problem, setup_refusal

if TYPE_CHECKING:
    from ..answer import Answer
    from ..catalog.models.from_config import ConfigDecoder

EXIT_FAILED = 1  # the work ran and produced no result (every configuration failed), or a notebook's cell raised
# A valid question the study has no answer to (nothing measured, predicted or plausibly published fits it): the
# reason is printed (under --json the answer too) and estimate, cost, plan and export exit with this status, so that
# a script tells it from bad input (2) and from an answer (0).
EXIT_NO_ANSWER = EXIT_FAILED
EXIT_USAGE = 2  # bad input: a message naming the valid choices, before any work
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM: one line, every finished row kept

# "...; choose one of: a, b", "(choose from 'a', 'b')", "one of: a, b": where a message names the valid choices
_CHOICES = re.compile(r"(?:choose one of|choose from|one of)\s*:?\s*(.+?)\)?$")


class NoAnswer(Exception):
    """The study has no answer to a valid question; ``answer`` is the answer's dict (its kind ``none`` and why)."""

    def __init__(self, message: str, answer: dict | None = None) -> None:
        super().__init__(message)
        self.answer = answer


def choices_in(message: str) -> list[str]:
    """The valid choices an error message names (the list after "choose one of:"), or []."""
    found = None
    for line in message.splitlines():
        found = _CHOICES.search(line) or found
    if not found:
        return []
    items = [i.strip().strip("'\"[]").removeprefix("or ").strip() for i in found.group(1).split(",")]
    return [i for i in items if i]


def error_json(message: str, choices: list[str] | None = None) -> str:
    """A refusal for scripts (``--json``): ``{"error": ..., "choices": [...]}``."""
    return json.dumps({"error": message, "choices": choices_in(message) if choices is None else choices}, indent=2)


def write_problem(path: str | Path, folder: bool = False) -> str | None:
    """Why nothing can be written at ``path`` (a file, or with ``folder`` a folder for files), found by trying:
    the missing folders are made and a file is created in the last, then all of it is removed again, so that the
    file system is left as it was. Permission bits say too little (root "may" write in /proc, where nothing can
    be created)."""
    path = Path(path)
    target = path if folder else path.parent
    missing, above = [], target
    while not above.exists() and above != above.parent:
        missing.append(above)
        above = above.parent
    if not above.is_dir():
        return f"{path} is under {above}, which is a file, not a folder"
    made: list[Path] = []
    try:
        for d in reversed(missing):
            d.mkdir()
            made.append(d)
        fd, probe = tempfile.mkstemp(dir=target, prefix=".academic-bench-probe-")
        os.close(fd)
        os.unlink(probe)
        if not folder and path.exists():
            open(path, "ab").close()  # appending nothing changes nothing, and fails where writing would
    except OSError as exc:
        return f"cannot write {path}: " + (f"{exc.filename}: " if exc.filename else "") + f"{exc.strerror or exc}"
    finally:
        for d in reversed(made):
            with contextlib.suppress(OSError):
                d.rmdir()
    return None


def check_out(path: str | Path, folder: bool = False, flag: str = "--out") -> Path:
    """An output checked before any work: a JSON-lines file that can take rows (``jsonl_problem``), or with
    ``folder`` a folder that can be written (not a file, not under a file), each tried (``write_problem``)."""
    path = Path(path)
    if not folder:
        problem = jsonl_problem(path)
    elif path.exists() and not path.is_dir():
        problem = f"{path} is a file; name a folder for the exported files"
    else:
        problem = None
    problem = problem or write_problem(path, folder)
    if problem:
        raise ValueError(f"{flag}: {problem}")
    return path


def check_setup_folder(out: str | Path, setup: str, gpu: str | None, tiny: bool, device: str | None) -> None:
    """A run's label and the folder of its ``--out``, checked before anything is measured: a folder named for a GPU
    (notebooks/runs/h100x1/) takes that GPU's runs only, no tiny model, no CPU run (``results.setup_refusal``)."""
    folder = Path(out).absolute().parent.name
    for flag, label in dict.fromkeys((("--setup", setup), ("--out", folder))):
        why = setup_refusal(label, gpu, tiny, device)
        if why:
            raise ValueError(f"{flag} {why}")


def plain(value: Any) -> Any:
    """``value`` as strict JSON takes it: numpy's numbers as Python's, NaN and infinities (pandas' missing cells) as
    null, which every JSON reader parses (``JSON.parse`` refuses ``NaN``)."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict, str, bytes)) and \
            getattr(value, "ndim", None) == 0:
        value = value.item()  # a numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def json_text(data: Any) -> str:
    """The JSON every command prints under --json: strict (``plain``), indented."""
    return json.dumps(plain(data), indent=2, default=str, allow_nan=False)


def emit(args: argparse.Namespace, data: Any, text: Callable[[], str]) -> None:
    """Print JSON for scripts (--json) or text for people."""
    print(json_text(data) if args.json else text())


def answer_lines(a: "Answer", head: str) -> list[str]:
    """The study's answer as every command prints it (``estimate``, ``cost``, ``plan``): ``head``, the days and
    their range; the settings, the ``--methods`` that name them and the command that writes them; what the answer
    rests on and the error its kind showed in the study's held-out checks; the paper's days where the answer is
    not the paper's; the lower bound at 100% of the dense peak."""
    lines = [f"{head}: {a.headline()}"]
    if a.settings:
        lines.append(f"  settings      {a.settings.words()} (--methods {a.settings.methods})")
        if a.settings.export_command:
            lines.append(f"  write them    {a.settings.export_command}")
    lines.append(f"  rests on      {a.rests_on}")
    if a.stated_error:
        lines.append(f"  checked       {a.stated_error}")
    if a.range_basis:
        lines.append(f"  range         {a.range_basis}")
    if a.beyond_paper is not None:  # beside the answer, never in it, and flagged
        lines.append(f"  beside it     {a.beyond_paper.words()}")
        if a.beyond_paper.settings:
            lines.append(f"                (--methods {a.beyond_paper.settings.methods}; {a.beyond_paper.rests_on})")
    if a.paper_days is not None and a.kind != "paper":
        lines.append(f"  the paper     {a.paper_days:g} days in its Table 1 (implied MFU {a.paper_mfu:.0%}; "
                     "timed without synchronising the GPU)")
    if a.bound_days is not None:
        lines.append(f"  lower bound   {a.bound_days:,.1f} days at 100% of the dense peak (no real run is faster)")
    return lines


def table(rows: list[dict], cols: list[str]) -> str:
    """A plain text table; a missing value (None: a rate the GPU does not have, a price nobody published) is '-'."""
    def cell(v: object) -> str:
        return "-" if v is None else str(v)

    widths = {c: max(len(c), *(len(cell(r.get(c, ""))) for r in rows)) if rows else len(c) for c in cols}
    line = lambda r: "  ".join(cell(r.get(c, "")).ljust(widths[c]) for c in cols)  # noqa: E731
    return "\n".join([line({c: c for c in cols}), line({c: "-" * widths[c] for c in cols}), *map(line, rows)])


def add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def add_model(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--model", required=required, type=str.lower, help=f"one of: {', '.join(CATALOG)}")


def is_config_path(name: str) -> bool:
    """A ``--model`` that names a Hugging Face config.json file rather than a catalog model."""
    return str(name).lower().endswith(".json")


def model_or_config(text: str) -> str:
    """``--model``'s type where a config.json is accepted: catalog names fold to lower case, paths do not."""
    return text if is_config_path(text) else text.lower()


def gpu_name(text: str) -> str:
    """A ``--gpu`` value: a catalog key (any case), or the path of a GPU file as given."""
    return text if is_gpu_file(text) else text.lower()


def add_gpu(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--gpu", required=required, type=gpu_name,
                   help=f"one of: {', '.join(every_gpu())}; or a YAML file describing yours (same fields)")


def add_gpus(p: argparse.ArgumentParser, default: int | None = None) -> None:
    p.add_argument("--gpus", type=int, default=default, required=default is None, help="GPU count (>= 1)")


def add_setting(p: argparse.ArgumentParser) -> None:
    """--json, --model, --gpu and --gpus: the arguments that name one setting."""
    add_json(p)
    add_model(p)
    add_gpu(p)
    add_gpus(p)


def add_methods(p: argparse.ArgumentParser, default: str = "free-lunch", note: str = "") -> None:
    p.add_argument("--methods", default=default,
                   help="a preset (naive, free-lunch) joined by '+' with switches, e.g. "
                        f"free-lunch+ckpt+zero3+offload (default: {default}){note}")


def check_model_path(name: str, config_ok: bool) -> None:
    """A folder given as ``--model`` (where a config.json is accepted) says which file to pass."""
    from pathlib import Path

    if config_ok and Path(name).is_dir():
        hint = Path(name) / "config.json"
        raise ValueError(f"--model {name} is a folder: pass its config.json ({hint}"
                         + (")" if hint.is_file() else ", which it does not hold)"))


# argparse reads a value starting with '-' as an option unless it looks like a plain negative number, so
# "--tokens -3e11" stopped with "expected one argument"; read scientific notation as a number too, so that the
# value's own check says what is wrong with it.
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def read_negative_numbers(p: argparse.ArgumentParser) -> None:
    """Let ``p`` take a negative number in any notation as an option's value (then refused by its type)."""
    p._negative_number_matcher = NEGATIVE_NUMBER  # argparse's own hook for what counts as a negative number


def positive(name: str) -> Callable[[str], float]:
    """An argparse type: a finite number above 0 (``name`` for the message)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be a finite number above 0, got {text}")
        return value

    return parse


# --- a run's setup and model, for the commands that measure -------------------------------------------------

def default_setup(gpu: str, gpus: int, tiny: bool, device: str | None = None) -> str:
    """A hardware label like 'h100x1' (the folder name under notebooks/runs); a tiny model's 'h100x1-tiny' and a run
    on the CPU's 'h100x1-cpu' name no GPU (``catalog.hardware.setup_gpus``): they are no GPU's evidence."""
    from ..catalog.hardware import setup_prefix

    return f"{setup_prefix(gpu)}x{gpus}" + ("-tiny" if tiny else "-cpu" if device == "cpu" else "")


def add_configuration(p: argparse.ArgumentParser, methods_note: str = "") -> None:
    """The arguments that name one configuration (``--json``, ``--model`` or a config.json, ``--gpu``, ``--gpus``,
    ``--methods``), as ``bench``, ``estimate`` and ``profile`` take them."""
    add_json(p)
    add_model_or_config(p)
    add_gpu(p)
    add_gpus(p)
    add_methods(p, note=methods_note)


def add_model_or_config(p: argparse.ArgumentParser) -> None:
    """--model: a catalog model or a decoder's config.json (with ``add_config_args``)."""
    p.add_argument("--model", required=True, type=model_or_config,
                   help=f"one of: {', '.join(CATALOG)}; or a decoder's PATH/config.json (with --tokens and --seq-len)")


def add_config_args(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """--tokens, --seq-len, --global-batch and --precision: what a decoder from its config.json trains on, the same
    for every command that takes one (estimate, bench, profile), so that each names the same configuration."""
    g = p.add_argument_group("a decoder from its config.json")
    g.add_argument("--tokens", type=positive("--tokens"), default=None,
                   help="training tokens (e.g. 3e11): the days' steps")
    g.add_argument("--seq-len", type=int, default=None, help="tokens per sequence")
    g.add_argument("--global-batch", type=int, default=None,
                   help=f"sequences per optimizer step (default {DEFAULT_GLOBAL_BATCH}, the catalog decoders'; an "
                        "encoder's: RoBERTa-large's 8192)")
    g.add_argument("--precision", choices=PRECISIONS, default=None,
                   help="training precision (default: bf16 where the GPU has it, else fp16; a config's "
                        "torch_dtype is how its weights are stored, not how it trains); a catalog model trains its "
                        "recipe's, and one whose recipe is fp32 "
                        f"({', '.join(k for k in CATALOG if len(precisions(k)) > 1)}) takes "
                        f"{' or '.join(SIXTEEN_BIT)} too, as configurations of their own")
    return g


def model_key(args: argparse.Namespace) -> str:
    """The catalog model (in ``--precision`` where given: ``models.at_precision``), or the key of the decoder a
    config.json describes (registered for this run and, through the request, for its workers)."""
    from ..catalog.models.from_config import ConfigError, decoder_spec

    given = [o for o, v in (("--tokens", args.tokens), ("--seq-len", args.seq_len),
                            ("--global-batch", args.global_batch)) if v is not None]
    if not is_config_path(args.model):
        if given:
            raise ValueError(f"{', '.join(given)} only {applies(given)} to a decoder's config.json, not to "
                             f"{args.model}")
        return at_precision(args.model, args.precision)
    if args.tiny:
        raise ConfigError("--tiny applies to the catalog's models; a config.json describes one model at full size")
    if args.tokens is None or args.seq_len is None:
        raise ConfigError("a config.json needs --tokens and --seq-len: the tokens to train on and the sequence "
                          "length, which set the steps and the batch's shape")
    return decoder_spec(args.model, seq_len=args.seq_len, tokens=args.tokens,
                        global_batch=DEFAULT_GLOBAL_BATCH if args.global_batch is None else args.global_batch,
                        precision=training_precision(args.gpu, args.precision)).spec.key


CONFIG_OPTIONS = ("tokens", "seq_len", "global_batch", "precision")


def applies(given: list[str]) -> str:
    """The verb for the options a refusal names: one option applies, two apply."""
    return "applies" if len(given) == 1 else "apply"


# The commands that measure or estimate a catalog model in a precision not its recipe's (``--precision``, or its key
# ``<model>@<precision>`` named outright: ``models.at_precision``); each sets ``accepts_variant`` on its parser.
PRECISION_COMMANDS = ("bench", "sweep", "profile", "estimate")
PRECISIONS = sorted(set(DTYPES.values()))


def is_decoder_key(name: str) -> bool:
    """A ``--model`` that names a decoder read from a config.json by the key a command printed (``name@digest``),
    not a catalog model in another precision (``vit-large@bf16``: ``models.at_precision``)."""
    return "@" in str(name) and not is_variant(name)


def config_decoder(args: argparse.Namespace, gpu: str | None = None) -> "ConfigDecoder | None":
    """The decoder ``--model`` names where it is a config.json (with ``add_config_args``: trained in the precision
    the rule chooses for ``gpu``, default ``--gpu``) or a ``name@digest`` a command printed; None for a catalog
    model. The commands that answer (``cost``, ``plan``, ``space``, ``export --best``) take all three, as
    ``estimate`` does; ``args.model`` becomes the decoder's key."""
    from ..catalog.models.from_config import ConfigError, decoder_spec, recall

    given = [f"--{k.replace('_', '-')}" for k in CONFIG_OPTIONS if getattr(args, k, None) is not None]
    if is_config_path(args.model):
        if args.tokens is None or args.seq_len is None:
            raise ConfigError("a config.json needs --tokens and --seq-len: the tokens to train on and the sequence "
                              "length")
        gpu = gpu or getattr(args, "gpu", None)
        decoder = decoder_spec(args.model, seq_len=args.seq_len, tokens=args.tokens,
                               global_batch=DEFAULT_GLOBAL_BATCH if args.global_batch is None else args.global_batch,
                               precision=args.precision if gpu is None else training_precision(gpu, args.precision))
    elif is_decoder_key(args.model):
        if given:
            raise ValueError(f"{', '.join(given)} {applies(given)} to a config.json; {args.model} names one read "
                             "with its settings")
        from ..catalog.models import get_model

        get_model(args.model)  # an unknown key names the choices
        decoder = recall(args.model)
    else:
        if given:
            other = (f" ({', '.join(PRECISION_COMMANDS)} take --precision for it)"
                     if args.model in CATALOG and len(precisions(args.model)) > 1 else "")
            raise ValueError(f"{', '.join(given)} {applies(given)} to a config.json; {args.model} trains its "
                             f"catalog recipe{other}")
        return None
    args.model = decoder.spec.key
    return decoder


def study_answer(model: str, gpu: str, n_gpus: int, decoder: "ConfigDecoder | None" = None) -> "Answer":
    """The study's answer for a catalog model (``answer.answer``) or a decoder from its config.json
    (``answer.decoder.decoder_answer``, the answer ``estimate`` prints for it)."""
    if decoder is None:
        from ..answer import answer

        return answer(model, gpu, n_gpus)
    from ..answer.decoder import decoder_answer

    return decoder_answer(decoder.spec.key, gpu, n_gpus, facts=decoder.facts)


def check_device(methods: Methods, device: str | None) -> None:
    """A method that cannot run on the device stops here (``methods.device_reason``); a SLURM job's device is its
    node's GPU."""
    reason = device_reason(methods, device) if device else None
    if reason:
        raise ValueError(f"{methods.label()} cannot run here: {reason}")
