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
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in out.stdout


def test_every_module_of_the_package_has_a_layer():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [layers] = [c["layers"] for c in config["contracts"] if c["id"] == "layers"]
    placed = {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}
    package = ROOT / "academic_bench"
    modules = {f"academic_bench.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    modules |= {f"academic_bench.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert modules - placed == set(), "give each new module a layer in pyproject.toml and ARCHITECTURE.md"
    assert placed - modules == set(), "a layer names a module that no longer exists"


def test_the_books_readers_load_without_torch():
    """The report, charts and explorers read files: importing them must not wait for torch (seconds on a laptop)."""
    code = ("import sys\nimport academic_bench.analysis, academic_bench.predict.measured, academic_bench.book.charts, "
            "academic_bench.cost, academic_bench.book.explorers, academic_bench.answer, academic_bench.answer.planner, academic_bench.catalog.units\n"
            "print(sorted(m for m in ('torch', 'transformers', 'deepspeed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"loaded on import: {out.stdout.strip()}"


def _private_imports(path: Path, root: Path = ROOT) -> list[str]:
    """``from <a module of the package> import _name`` in one file (a private name used outside its module)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("academic_bench")):
            found += [f"{path.relative_to(root)}:{node.lineno}: {a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_private_name_is_imported_from_another_module_of_the_package():
    """A name with a leading underscore belongs to its module: another module (or a book page) that needs it
    needs a public one."""
    files = [*(ROOT / "academic_bench").rglob("*.py"), *(ROOT / "book").glob("*.md")]
    found = [hit for f in files if f.suffix == ".py" for hit in _private_imports(f)]
    found += [f"{f.relative_to(ROOT)}: imports a private name" for f in files if f.suffix == ".md"
              and any(line.lstrip().startswith(("from academic_bench", "import academic_bench"))
                      and " _" in line.split("import", 1)[-1] for line in f.read_text().splitlines())]
    assert not found, "\n".join(found)


def test_the_private_import_check_sees_one(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text("from .results import _hidden, public\nfrom academic_bench.cost import _lookup\nfrom os import _exit\n")
    assert _private_imports(bad, tmp_path) == ["probe.py:1: _hidden", "probe.py:2: _lookup"]
