"""The set-up files agree with each other: pyproject.toml, environment.yml, the Makefile and .ci/run."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _env_pip() -> list[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = [d for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert pip, "environment.yml has no pip section"
    return pip[0]["pip"]


def test_environment_and_make_install_the_one_lock():
    assert _env_pip() == ["-r requirements/lock.txt"]
    make = (ROOT / "Makefile").read_text()
    assert "--require-hashes -r $(LOCK)" in make and "LOCK := requirements/lock.txt" in make


def test_the_lock_is_compiled_from_the_extras_and_the_torch_pair():
    make = (ROOT / "Makefile").read_text()
    extras = re.findall(r"--extra (\w+)", make)
    assert sorted(extras) == ["book", "test"]
    assert set(extras) <= set(_pyproject()["project"]["optional-dependencies"])
    torch_pair = {l for l in (ROOT / "requirements/torch.in").read_text().splitlines() if "==" in l}
    locked = {f"{name}=={version}" for name, version in re.findall(r"^(torch|torchvision)==(\S+)",
                                                                   (ROOT / "requirements/lock.txt").read_text(), re.M)}
    assert torch_pair == locked == {p for p in torch_pair if p.startswith(("torch==", "torchvision=="))}
    assert len(torch_pair) == 2


def test_environment_python_satisfies_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    major, minor = map(int, python.split("=")[1].split(".")[:2])
    required = re.search(r">=(\d+)\.(\d+)", _pyproject()["project"]["requires-python"]).groups()
    assert (major, minor) >= tuple(map(int, required))


def test_extras_name_the_tools_the_readme_promises():
    extras = _pyproject()["project"]["optional-dependencies"]
    names = {k: {re.split(r"[<>=\[ ]", d)[0].lower() for d in v} for k, v in extras.items()}
    assert {"jupyter-book", "altair", "vl-convert-python", "ipywidgets", "papermill", "ipykernel", "pandas"} <= names["book"]
    assert {"deepspeed", "flash-attn", "mamba-ssm", "causal-conv1d", "liger-kernel", "torchao"} <= names["gpu"]
    assert {"pytest", "playwright"} <= names["test"]


def test_ci_runs_the_readme_test_command_and_nothing_else():
    ci = [l for l in (ROOT / ".ci/run").read_text().splitlines() if l.strip() and not l.startswith("#")]
    commands = [l for l in ci if not l.startswith(("set ", "cd "))]
    assert commands == ["make test"]
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make book" in readme


def test_every_command_line_in_the_readme_and_book_parses_with_the_real_parser():
    """Docs match the code: each ``academic-bench ...`` line shown to readers is accepted by the command's parser
    (a renamed option or sub-command fails here, not in a reader's terminal)."""
    import shlex

    from academic_bench.cli import build_parser  # every sub-command, listed in build_parser

    texts = [ROOT / "README.md", *sorted((ROOT / "book").glob("*.md"))]
    lines = []
    for path in texts:
        fenced = False
        for ln in path.read_text().replace("\\\n", " ").splitlines():  # continued shell lines joined
            fenced = fenced != ln.strip().startswith("```")
            if fenced and ln.strip().startswith("academic-bench "):
                lines.append((path.name, ln.split(" #")[0].strip()))
    assert len(lines) >= 6, "the README shows bench, sweep, notebook, export and profile"
    parser = build_parser()
    for where, line in lines:
        try:
            parser.parse_args(shlex.split(line)[1:])
        except SystemExit:
            pytest.fail(f"{where}: {line!r} does not parse")
