"""The locked environment (academic_bench.catalog.lock): what is installed is what the lock says, the lock covers
every dependency pyproject.toml names, and the derived data name the lock they were computed with."""
from __future__ import annotations

import json
import re
import tomllib

from academic_bench.catalog import lock
from academic_bench.catalog.env import REPO_ROOT


def test_the_installed_versions_are_the_locked_ones():
    found = lock.differences()
    assert not found, "installed packages differ from requirements/lock.txt (run `make install`):\n" + "\n".join(found)


def test_differences_name_the_package_and_both_versions(tmp_path):
    fake = tmp_path / "lock.txt"
    fake.write_text("torch==0.0.1 \\\n    --hash=sha256:00\nnot-a-package-here==1.0\n")
    found = lock.differences(fake)
    assert any(f.startswith("torch: locked at 0.0.1, installed ") for f in found)
    assert "not-a-package-here: locked at 1.0, not installed" in found


def test_the_lock_pins_every_dependency_that_pyproject_names_for_the_two_commands():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["book"] + project["optional-dependencies"]["test"]
    names = {lock.normalise(re.split(r"[<>=\[ ;]", d)[0]) for d in wanted}
    missing = names - set(lock.pins())
    assert not missing, f"pyproject.toml names packages the lock does not pin (run `make lock`): {sorted(missing)}"
    assert all("--hash=sha256:" in block for block in re.split(r"\n(?=\S)", lock.LOCK.read_text())
               if re.match(r"[A-Za-z0-9]", block)), "every pin carries its hashes"


def test_the_shipped_derived_data_name_the_lock_they_were_computed_with():
    for path in (REPO_ROOT / "academic_bench/data/model_facts.json", REPO_ROOT / "notebooks/runs/answers.json"):
        recorded = json.loads(path.read_text())["computed_with"]
        assert recorded["lock"] == lock.digest(), (
            f"{path.name} was computed with another lock ({recorded['lock']}); `make lock` computes it again")


def test_the_gpu_wheels_are_locked_with_their_hashes():
    pins = lock.pins(lock.GPU_LOCK)
    assert {"papermill", "liger-kernel", "torchao", "pandas"} <= set(pins)
    assert "torch" not in pins, "the GPU machines run their image's torch"
    script = (REPO_ROOT / "scripts/offline-gpu/make_wheels.sh").read_text()
    assert "--require-hashes -r $LOCK" in script
