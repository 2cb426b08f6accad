"""The papermill runner of the benchmark notebook (``academic-bench notebook``): executes
notebooks/benchmark.ipynb into ``notebooks/runs/<setup>/benchmark.ipynb`` (results.jsonl beside it), then tidies the
executed copy kept as evidence. What the notebook runs is ``search.notebook.run_benchmark``; its parameters are in
``search.params``.

    run_notebook("h100x1", {"models": [...]})
"""
from __future__ import annotations

import logging
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..catalog.env import REPO_ROOT
from ..results import DEFAULT_RUNS, setup_refusal
from .params import KERNEL, MAX_STREAM_LINES, NOTEBOOK_FILE, TEMPLATE, command_for, resolve_gpu, resolve_parameters

log = logging.getLogger(__name__)

class NotebookFailed(RuntimeError):
    """A cell of the executed notebook raised; the notebook with the error is kept as evidence."""


def _collapse_carriage_returns(text: str) -> str:
    """Keep what a terminal would show: the text after the last carriage return of each line (progress bars)."""
    out = []
    for line in text.split("\n"):
        segments = [s for s in line.split("\r") if s]
        out.append(segments[-1] if segments else "")
    return "\n".join(out)


def _portable(path: str) -> str:
    """A path papermill recorded, relative to the repository when inside it (no machine's folders saved)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return Path(path).name


def tidy_notebook(path: str | Path, max_lines: int = MAX_STREAM_LINES, setup: str | None = None) -> int:
    """Shrink the executed notebook: merge consecutive stream outputs, collapse progress-bar redraws, cut any
    longer than ``max_lines`` to its head and tail, and make papermill's recorded paths relative. With ``setup``,
    the title names it (the book lists one page per setup). Returns how many lines were cut."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    heading = next((c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("# ")), None)
    if setup and heading is not None:
        first, _, rest = heading.source.partition("\n")
        heading.source = f"{first.split(':')[0]}: {setup}\n{rest}"
    meta = nb.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if meta.get(key):
            meta[key] = _portable(meta[key])
    dropped = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        merged: list = []
        for o in cell.get("outputs", []):
            if o.output_type == "stream" and merged and merged[-1].output_type == "stream" \
                    and merged[-1].name == o.name:
                merged[-1].text += o.text
            else:
                merged.append(o)
        for o in merged:
            if o.output_type != "stream":
                continue
            lines = _collapse_carriage_returns(o.text).split("\n")
            if len(lines) > max_lines:
                head, tail = max_lines // 2, max_lines - max_lines // 2 - 1
                cut = len(lines) - head - tail
                dropped += cut
                lines = lines[:head] + [f"[... {cut} lines cut by academic-bench notebook; each configuration's "
                                        "full log is in logs/ beside results.jsonl ...]"] + lines[-tail:]
            o.text = "\n".join(lines)
        # a closed progress bar leaves a bare newline behind
        cell.outputs = [o for o in merged if o.output_type != "stream" or o.text.strip()]
    nbformat.write(nb, str(path))
    return dropped


@contextmanager
def _package_importable() -> Iterator[None]:
    """Let the kernel import this package from a source checkout that is not pip-installed (a GPU machine's copy
    of the tree): the kernel starts in the run's folder, so it gets the checkout on PYTHONPATH (as the
    measurement workers do, ``launch.child_env``)."""
    import os

    saved = os.environ.get("PYTHONPATH")
    if (REPO_ROOT / "pyproject.toml").exists():
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), saved) if p)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def next_notebook(folder: Path) -> Path:
    """Where a run of the notebook in ``folder`` is saved: ``benchmark.ipynb``, or beside an executed one the first
    free ``benchmark-2.ipynb``, ``benchmark-3.ipynb``...: an executed notebook is evidence, never overwritten (a
    second run appends its rows to results.jsonl and keeps its own record)."""
    stem, suffix = Path(NOTEBOOK_FILE).stem, Path(NOTEBOOK_FILE).suffix
    path, n = folder / NOTEBOOK_FILE, 1
    while path.exists():
        n += 1
        path = folder / f"{stem}-{n}{suffix}"
    return path


def run_notebook(setup: str, overrides: dict[str, Any] | None = None, *, output_root: str | Path = DEFAULT_RUNS,
                 template: str | Path = TEMPLATE, max_stream_lines: int = MAX_STREAM_LINES,
                 echo: bool = True) -> Path:
    """Execute the template with papermill into ``<output_root>/<setup>/benchmark.ipynb`` (results.jsonl beside
    it; beside an earlier run's notebook, ``next_notebook``). A setup named for a GPU takes no tiny, CPU or other
    GPU's run (``results.setup_refusal``, a ValueError before papermill starts). A failing cell still leaves the
    executed notebook, with the error, and raises ``NotebookFailed``."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    template = Path(template)
    if not template.exists():
        raise ValueError(f"no notebook template at {template}")
    params = resolve_parameters(setup, dict(overrides or {}), template)
    gpu = resolve_gpu(params["gpu"], params["device"])  # another GPU in hand than the one named stops here
    refused = setup_refusal(setup, gpu, params["tiny"], params["device"])  # a GPU's folder takes its runs only
    if refused:
        raise ValueError(f"--setup {refused}")
    out_dir = Path(output_root) / setup
    nb_path = next_notebook(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if echo:
        log.info("executing %s into %s\n  %s", template, nb_path, command_for(params))
    failure: PapermillExecutionError | None = None
    try:
        # The kernel runs in the run's folder: output_dir "." puts results.jsonl beside the notebook, and no
        # absolute path of this machine ends up in the saved notebook.
        with _package_importable():
            papermill.execute_notebook(str(template), str(nb_path), parameters=params, kernel_name=KERNEL,
                                       cwd=str(out_dir), progress_bar=False, stdout_file=sys.stdout if echo else None,
                                       stderr_file=sys.stderr if echo else None)
    except PapermillExecutionError as exc:
        failure = exc
    finally:
        if nb_path.exists():
            tidy_notebook(nb_path, max_stream_lines, setup)
    if failure is not None:
        raise NotebookFailed(f"cell {failure.exec_count} raised {failure.ename}: {failure.evalue}\n"
                             f"the executed notebook, with the error, is kept at {nb_path}")
    return nb_path


__all__ = ["NotebookFailed", "next_notebook", "run_notebook", "tidy_notebook"]
