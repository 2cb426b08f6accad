"""Evidence that cannot be overwritten: a folder named for a GPU (notebooks/runs/h100x1/) takes that GPU's runs
only, an executed notebook is never replaced, and every command that writes rows refuses a tiny or CPU run there
before any work (exit 2). Every folder is a copy in ``tmp_path``; the shipped runs are only read.

papermill is replaced by a stand-in that writes what an executed notebook and its rows would be, so that no kernel
starts: what is tested is what the runner does around it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from academic_bench.analysis.run_check import check_run
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import NAIVE
from academic_bench.cli import main
from academic_bench.results import ResultStore, make_row
from academic_bench.search.params import NOTEBOOK_FILE, RESULTS_FILE

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "notebooks" / "runs" / "h100x1"
# the table's first row, as a user typed it
FIRST_ROW = ["notebook", "--setup", "h100x1", "--gpu", "h100-80gb", "--tiny", "--device", "cpu",
             "--models", "pythia-160m", "--preset", "naive"]


def _exit(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


@pytest.fixture
def runs_copy(tmp_path) -> Path:
    """A copy of the shipped H100 run folder's executed notebook and results (the evidence the row overwrote)."""
    folder = tmp_path / "runs" / "h100x1"
    folder.mkdir(parents=True)
    for name in (NOTEBOOK_FILE, RESULTS_FILE):
        shutil.copy2(SHIPPED / name, folder / name)
    return folder


@pytest.fixture
def fake_papermill(monkeypatch):
    """papermill.execute_notebook as a stand-in: writes an executed notebook at its output path and appends a tiny
    CPU row to results.jsonl in its working folder, as the template's run would; records each call."""
    import papermill

    calls = []

    def execute(template, output, parameters, cwd, **kwargs):
        calls.append(output)
        nbformat.write(new_notebook(cells=[new_code_cell("x = 1", execution_count=1)]), output)
        config = Config("pythia-160m", parameters["gpu"], 1, methods=NAIVE, tiny=parameters["tiny"])
        ResultStore(Path(cwd) / RESULTS_FILE).append(make_row(
            config, setup=parameters["setup"], outcome="ok", micro_batch=4, gas=2, step_time_s=0.5,
            env={"device": parameters["device"]}))

    monkeypatch.setattr(papermill, "execute_notebook", execute)
    return calls


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_first_row_a_tiny_cpu_notebook_into_the_h100_folder_is_refused(runs_copy, fake_papermill, capsys):
    """``notebook --setup h100x1 --gpu h100-80gb --tiny --device cpu ...`` overwrote the executed H100 notebook and
    appended a tiny CPU row to the H100 results: now it stops before papermill starts, naming why."""
    before = _bytes(runs_copy)
    assert _exit([*FIRST_ROW, "--output-root", str(runs_copy.parent)]) == 2
    err = capsys.readouterr().err
    assert "names the GPU h100-80gb" in err and "a tiny model" in err and "cpu-tiny" in err
    assert fake_papermill == [] and _bytes(runs_copy) == before
    # under --json the refusal is JSON
    assert _exit([*FIRST_ROW, "--output-root", str(runs_copy.parent), "--json"]) == 2
    assert "names the GPU h100-80gb" in json.loads(capsys.readouterr().out)["error"]
    # a full-size model on the CPU is refused the same way
    cpu = [a for a in FIRST_ROW if a != "--tiny"]
    assert _exit([*cpu, "--output-root", str(runs_copy.parent)]) == 2
    assert "a run on the CPU" in capsys.readouterr().err and _bytes(runs_copy) == before


def test_check_run_rejects_the_row_the_first_row_appended(runs_copy):
    """The folder as the table's first row left it (a tiny CPU row appended to the H100 rows): check-run said "ok
    (0 errors)"; now the appended row is an error naming the field."""
    config = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, tiny=True)
    ResultStore(runs_copy / RESULTS_FILE).append(make_row(
        config, setup="h100x1", outcome="ok", micro_batch=4, gas=2, step_time_s=0.5, env={"device": "cpu"}))
    lines = (runs_copy / RESULTS_FILE).read_text().splitlines()
    errors = [p for p in check_run(runs_copy).errors if "names the GPU h100-80gb" in p.what]
    assert [p.where.split(" ")[0] for p in errors] == [f"{RESULTS_FILE}:{len(lines)}"]
    assert errors[0].what.startswith("config.tiny:")


def test_a_second_run_of_a_setup_keeps_its_notebook_beside_the_first(tmp_path, fake_papermill, capsys):
    """The first executed notebook is evidence: a second run (a resume, or more models) appends its rows and saves
    its own notebook as benchmark-2.ipynb, then benchmark-3.ipynb."""
    root = tmp_path / "runs"
    argv = ["notebook", "--setup", "cpu-tiny", "--gpu", "h100-80gb", "--tiny", "--device", "cpu",
            "--models", "pythia-160m", "--preset", "naive", "--quiet", "--output-root", str(root)]
    assert _exit(argv) == 0
    folder = root / "cpu-tiny"
    first = (folder / NOTEBOOK_FILE).read_bytes()
    assert _exit(argv) == 0 and _exit(argv) == 0
    assert (folder / NOTEBOOK_FILE).read_bytes() == first
    assert sorted(p.name for p in folder.glob("*.ipynb")) == ["benchmark-2.ipynb", "benchmark-3.ipynb",
                                                              NOTEBOOK_FILE]
    assert len(ResultStore(folder / RESULTS_FILE).rows()) == 3, "every run's rows appended"


def test_the_second_runs_notebook_is_the_one_the_command_names(tmp_path, fake_papermill, capsys):
    root = tmp_path / "runs"
    argv = ["notebook", "--setup", "cpu-tiny", "--gpu", "h100-80gb", "--tiny", "--device", "cpu",
            "--models", "pythia-160m", "--preset", "naive", "--quiet", "--output-root", str(root), "--json"]
    assert _exit(argv) == 0 and _exit(argv) == 0
    outs = [json.loads(chunk) for chunk in capsys.readouterr().out.replace("}\n{", "}\x00{").split("\x00")]
    assert [Path(o["notebook"]).name for o in outs] == [NOTEBOOK_FILE, "benchmark-2.ipynb"]


@pytest.mark.parametrize("argv", [
    ["bench", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "naive", "--tiny",
     "--device", "cpu", "--micro-batch", "2"],
    ["sweep", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--preset", "naive", "--tiny",
     "--device", "cpu"],
    ["remeasure", "--retry", "ok", "--device", "cpu"],
])
def test_commands_that_write_rows_refuse_a_cpu_run_into_a_gpu_folder(runs_copy, capsys, argv):
    """bench, sweep and remeasure: a tiny or CPU run whose rows would land in the H100's folder stops before any
    process starts (exit 2), the folder untouched."""
    before = _bytes(runs_copy)
    assert _exit([*argv, "--out", str(runs_copy / RESULTS_FILE)]) == 2
    assert "names the GPU h100-80gb" in capsys.readouterr().err
    assert _bytes(runs_copy) == before


def test_a_run_labelled_for_a_gpu_is_refused_wherever_it_is_written(tmp_path, capsys):
    out = tmp_path / "mine" / RESULTS_FILE
    assert _exit(["bench", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--methods", "naive",
                  "--tiny", "--device", "cpu", "--micro-batch", "2", "--setup", "h200x1", "--out", str(out)]) == 2
    assert "--setup 'h200x1' names the GPU h200" in capsys.readouterr().err and not out.exists()


def test_which_labels_name_a_gpu():
    from academic_bench.catalog.hardware import setup_gpus
    from academic_bench.results import setup_refusal

    assert setup_gpus("h100x1") == ("h100-80gb",) and setup_gpus("h200x2") == ("h200",)
    assert setup_gpus("a100x4") == ("a100-80gb",) and setup_gpus("a100-40gbx4") == ("a100-40gb",)
    assert setup_gpus("h100-pciex1") == ("h100-pcie",) and setup_gpus("rtx4090x2") == ("rtx4090",)
    for workshop in ("cpu-tiny", "h100x1-tiny", "h100x1-cpu", "laptop-cpu", "mine"):
        assert setup_gpus(workshop) == ()
    assert setup_refusal("h100x1", "h100-80gb", False, "cuda") is None
    assert "a run of h200" in setup_refusal("h100x1", "h200", False, "cuda")
    assert setup_refusal("cpu-tiny", "h100-80gb", True, "cpu") is None
