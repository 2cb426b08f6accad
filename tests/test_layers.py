"""The package's layers (ARCHITECTURE.md): imports point one way and form no cycle.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``) and are checked with import-linter, the tool
made for it. import-linter cannot itself require that every module sits in a layer when the layers have no
common container, so the second test does: a new module must be placed before it can import anything.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("import-linter is not installed (it is in the 'test' extra: make install)")
        pytest.skip("import-linter is not installed")
    return exe


def test_imports_follow_the_layers_and_form_no_cycle():
    out = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "2 kept, 0 broken" in out.stdout


def test_every_module_of_the_package_has_a_layer():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [layers] = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    placed = {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}
    package = ROOT / "academic_bench"
    modules = {f"academic_bench.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {f"academic_bench.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert modules - placed == set(), "give each new module a layer in pyproject.toml and ARCHITECTURE.md"
    assert placed - modules == set(), "a layer names a module that no longer exists"


def test_the_books_readers_load_without_torch():
    """The report, charts and explorers read files: importing them must not wait for torch (seconds on a laptop)."""
    code = ("import sys\nimport academic_bench.analysis, academic_bench.answers, academic_bench.charts, "
            "academic_bench.cost, academic_bench.explorers, academic_bench.planning, academic_bench.units\n"
            "print(sorted(m for m in ('torch', 'transformers', 'deepspeed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"loaded on import: {out.stdout.strip()}"
