"""Catalog commands (``models``, ``gpus``) import neither pandas nor torch; ``export --best`` imports no torch:
each read from ``python -X importtime``'s report of every module the command imported."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _imported(tmp_path: Path, *argv: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "academic_bench", *argv], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("command", ["models", "gpus"])
def test_catalog_commands_import_neither_pandas_nor_torch(tmp_path, command):
    imported = _imported(tmp_path, command)
    assert "academic_bench.cli" in imported  # the report is read
    assert not {"pandas", "torch", "transformers"} & imported


def test_export_best_imports_no_torch(tmp_path):
    imported = _imported(tmp_path, "export", "--best", "--model", "pythia-1b", "--gpu", "h100-80gb", "--gpus", "1",
                         "--out", str(tmp_path / "export"))
    assert (tmp_path / "export" / "training_args.json").is_file()
    assert not {"torch", "transformers"} & imported


def test_the_training_arguments_fields_read_from_source_are_the_dataclass_s():
    import transformers

    from academic_bench.answer.export import training_arguments_fields

    assert training_arguments_fields() == {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
