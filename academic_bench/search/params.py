"""The benchmark notebook's parameters: the template's defaults, their checks, the GPU they name, the command line
that reproduces a run, and the parameters an executed run folder ran with.

    resolve_parameters("h100x1", {"models": [...]})   the template's defaults, the setup's and the overrides, checked
    command_for(params)                                the ``academic-bench notebook`` command that runs them
"""
from __future__ import annotations

import ast
import json
import re
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

from ..catalog.env import REPO_ROOT
from ..catalog.hardware import catalog as gpu_catalog, get_gpu
from ..catalog.models import get_model
from ..results import RETRY_CHOICES


TEMPLATE = REPO_ROOT / "notebooks" / "benchmark.ipynb"
NOTEBOOK_FILE = "benchmark.ipynb"
RESULTS_FILE = "results.jsonl"
README_FILE = "README.md"
KERNEL = "python3"
# Longer printed outputs are cut to their head and tail in the executed notebook. Configurations' own output goes
# to their log files, so what is printed is the notebook's plan and the sweeps' summaries.
MAX_STREAM_LINES = 200
# The template's parameters, in the order of its parameters cell (a test keeps the two in step).
PARAMETERS = ("setup", "models", "gpu", "n_gpus", "preset", "exhaustive_models", "unsynced_models",
              "validate_models", "validate_steps", "validate_classes", "time_budget_s", "timeout_s", "retry", "tiny",
              "device", "output_dir")
MODEL_LISTS = ("models", "exhaustive_models", "unsynced_models", "validate_models")
DEVICES = ("cuda", "cpu")
SETUP_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
SETUP_COUNT_RE = re.compile(r"x(\d+)(?=$|[-_.])")  # "h200x2", "h100x1-tiny": the GPU count in the label
ENV_SOFTWARE = ("torch", "transformers", "deepspeed", "flash_attn", "mamba_ssm", "timm", "python")


# --- parameters ---------------------------------------------------------------------------------------------

def template_parameters(template: str | Path = TEMPLATE) -> dict[str, Any]:
    """The defaults of the template's cell tagged ``parameters`` (literal assignments only)."""
    import nbformat

    nb = nbformat.read(str(template), as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{template}: expected exactly one cell tagged 'parameters', found {len(cells)}")
    values: dict[str, Any] = {}
    for node in ast.parse(cells[0].source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


def setup_gpu_count(setup: str) -> int | None:
    """The GPU count a label like 'h200x2' names (None when it names none)."""
    m = SETUP_COUNT_RE.search(setup)
    return int(m.group(1)) if m else None


def _model_keys(value: Any, name: str) -> list[str]:
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of model names, got {value!r}")
    return list(dict.fromkeys(get_model(v.strip()).key for v in value))  # unknown names raise, naming the catalog


def _number(p: dict, name: str, *, minimum: float, integer: bool = False, allow_none: bool = False) -> None:
    v = p[name]
    if v is None and allow_none:
        return
    ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok_type or v < minimum:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{name} must be {kind} >= {minimum:g}{' or None' if allow_none else ''}, got {v!r}")


def check_parameters(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters, checked and normalised; a bad one raises before any work, naming the valid choices."""
    from .plans import SWEEP_PRESETS

    unknown = sorted(set(params) - set(PARAMETERS))
    missing = [k for k in PARAMETERS if k not in params]
    if unknown or missing:
        raise ValueError(f"unknown parameters {unknown} / missing {missing}; the parameters are: "
                         f"{', '.join(PARAMETERS)}")
    p = dict(params)
    setup = p["setup"]
    if not isinstance(setup, str) or not SETUP_RE.match(setup):
        raise ValueError(f"setup {setup!r} is not a usable label: it names the folder notebooks/runs/<setup>, so "
                         "use lowercase letters, digits, '.', '_' or '-' (e.g. h100x1, a6000x2, laptop-cpu)")
    for name in MODEL_LISTS:
        p[name] = _model_keys(p[name], name)
    if not p["models"]:
        raise ValueError("models is empty; name at least one model from the catalog (academic-bench models)")
    presets = [p["preset"]] if isinstance(p["preset"], str) else p["preset"]
    if not isinstance(presets, (list, tuple)) or not presets or any(x not in SWEEP_PRESETS for x in presets):
        raise ValueError(f"preset {p['preset']!r} is not a preset or a list of presets; choose from: "
                         f"{', '.join(SWEEP_PRESETS)}")
    p["preset"] = list(dict.fromkeys(presets))
    planned = set(p["models"]) | set(p["exhaustive_models"]) | set(p["unsynced_models"])
    stray = [m for m in p["validate_models"] if m not in planned]
    if stray:
        raise ValueError(f"validate_models {stray} are not measured by this notebook, so they have no best "
                         f"configuration to validate; choose from: {', '.join(sorted(planned))}")
    _number(p, "n_gpus", minimum=1, integer=True)
    count = setup_gpu_count(setup)
    if count is not None and count != p["n_gpus"]:
        raise ValueError(f"setup {setup!r} names {count} GPU(s) but n_gpus is {p['n_gpus']}; make them agree "
                         "(the label is how readers find this run)")
    if p["gpu"] != "auto" and p["gpu"] not in gpu_catalog():
        raise ValueError(f"unknown GPU {p['gpu']!r}; choose 'auto' (detect) or one of: {', '.join(gpu_catalog())}")
    if p["device"] not in DEVICES:
        raise ValueError(f"device {p['device']!r} is not one of: {', '.join(DEVICES)}")
    if p["device"] == "cpu" and p["gpu"] == "auto":
        raise ValueError("gpu='auto' detects a GPU, but device is 'cpu': name the catalog GPU the configurations "
                         "are for (its memory and peak set the search and the MFU), one of: "
                         f"{', '.join(gpu_catalog())}")
    retry = [p["retry"]] if isinstance(p["retry"], str) else p["retry"]
    if not isinstance(retry, (list, tuple)) or any(o not in RETRY_CHOICES for o in retry):
        raise ValueError(f"retry {p['retry']!r} must be a list of outcomes (or a rule, or 'all'), from: "
                         f"{', '.join(RETRY_CHOICES)}")
    p["retry"] = list(dict.fromkeys(retry))
    _number(p, "time_budget_s", minimum=0, allow_none=True)
    _number(p, "timeout_s", minimum=1)
    _number(p, "validate_steps", minimum=1, integer=True)
    for flag in ("tiny", "validate_classes"):
        if not isinstance(p[flag], bool):
            raise ValueError(f"{flag} must be True or False, got {p[flag]!r}")
    if not isinstance(p["output_dir"], str) or not p["output_dir"]:
        raise ValueError(f"output_dir must be a folder path, got {p['output_dir']!r}")
    return p


def resolve_gpu(gpu: str, device: str) -> str:
    """The catalog key of the GPU the configurations name ('auto': the GPU in hand); a named GPU that is not the
    one in hand stops here (``launch.gpu_in_hand.check_gpu_in_hand``, unless overridden).

    The GPU in hand is read from nvidia-smi, not from torch: a CUDA context in the notebook's process would hold
    memory on GPU 0 for the whole run, memory that rank 0 of every configuration then lacks."""
    from ..launch.gpu_in_hand import check_gpu_in_hand, gpu_in_hand

    if gpu != "auto":
        key = get_gpu(gpu).key
        check_gpu_in_hand(key, device)
        return key
    name, found = gpu_in_hand() if device == "cuda" else (None, None)
    if name is None:
        raise ValueError("gpu='auto' but no CUDA GPU was found (nvidia-smi): run on a GPU machine, or use "
                         f"device='cpu' with gpu set to one of: {', '.join(gpu_catalog())}")
    if found is None:
        raise ValueError(f"the GPU in hand ({name}) is not in the catalog: add a row for it to "
                         "academic_bench/data/gpus.csv (with its spec sources), or pass gpu=<key> of: "
                         f"{', '.join(gpu_catalog())}")
    return found.key


def resolve_parameters(setup: str, overrides: dict[str, Any], template: str | Path = TEMPLATE) -> dict[str, Any]:
    """The template's defaults with ``overrides``; the GPU count defaults to the one the label names."""
    defaults = template_parameters(template)
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise ValueError(f"unknown notebook parameter(s) {', '.join(unknown)}; the template's parameters are: "
                         f"{', '.join(k for k in defaults if k not in ('setup', 'output_dir'))}")
    if "setup" in overrides or "output_dir" in overrides:
        raise ValueError("setup and output_dir are set by the runner: use --setup and --output-root")
    params = {**defaults, **overrides, "setup": setup, "output_dir": "."}
    if "n_gpus" not in overrides and isinstance(setup, str) and setup_gpu_count(setup) is not None:
        params["n_gpus"] = setup_gpu_count(setup)
    check_parameters(params)
    return params


def command_for(params: dict[str, Any], output_root: str | None = None) -> str:
    """The ``academic-bench notebook`` command that runs these parameters again (all of them, explicitly)."""
    def lst(v: Any) -> list[str]:
        return [v] if isinstance(v, str) else list(v)

    parts = ["academic-bench", "notebook", "--setup", params["setup"], "--models", *lst(params["models"]),
             "--gpu", str(params["gpu"]), "--gpus", str(params["n_gpus"]), "--preset", *lst(params["preset"]),
             "--device", params["device"]]
    if params.get("tiny"):
        parts.append("--tiny")
    for key in PARAMETERS:
        if key in ("setup", "models", "gpu", "n_gpus", "preset", "device", "tiny", "output_dir") or key not in params:
            continue
        parts += ["-p", key, json.dumps(params[key])]
    if output_root:
        parts += ["--output-root", output_root]
    return " ".join(shlex.quote(x) for x in parts)


def setup_parameters(setup: str, rows: list[dict], device: str | None = None, **fixed: Any) -> dict[str, Any]:
    """The parameters that make a setup's rows again from the start: every model it has rows for (in the
    template's order), the searches its synced step rows came from, and the models it searched exhaustively,
    timed without synchronising and validated; the template's budget and limits, and ``device``. ``fixed``
    parameters replace those read from the rows (a planned setup's ``gpu`` and ``n_gpus``)."""
    from .plans import SWEEP_PRESETS

    defaults = template_parameters()
    order = {m: i for i, m in enumerate(defaults["models"])}

    def models(pick) -> list[str]:
        return sorted({r["config"]["model"] for r in rows if pick(r)}, key=lambda m: (order.get(m, len(order)), m))

    searches = {r["search"] for r in rows if r["timing"] == "synced" and r["mode"] == "step"}
    configs = Counter((r["config"]["gpu"], r["config"]["n_gpus"]) for r in rows)
    (gpu, n_gpus), _ = configs.most_common(1)[0]
    params = {**defaults, "setup": setup, "models": models(lambda r: True), "gpu": gpu, "n_gpus": n_gpus,
              "preset": [p for p in SWEEP_PRESETS if p in searches and p != "exhaustive"] or ["smart"],
              "exhaustive_models": models(lambda r: r["search"] == "exhaustive"),
              "unsynced_models": models(lambda r: r["timing"] == "unsynced"),
              "validate_models": models(lambda r: r["mode"] == "validate" and r["search"] != "single"),
              "tiny": any(r["config"].get("tiny") for r in rows), "device": device or defaults["device"],
              "output_dir": ".", **fixed}  # output_dir as the runner sets it: the run's folder
    check_parameters(params)
    return params


def notebook_parameters(folder: Path) -> dict | None:
    """The parameters a run folder's executed notebook ran with (papermill's record), or None."""
    path = folder / NOTEBOOK_FILE
    if not path.exists():
        return None
    import nbformat

    meta = nbformat.read(str(path), as_version=4).metadata.get("papermill", {})
    return dict(meta.get("parameters") or {}) or None
