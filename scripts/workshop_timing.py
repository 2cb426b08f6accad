"""Time the workshop's laptop path end to end and write the record the workshop page reads.

    .venv/bin/python scripts/workshop_timing.py            # writes notebooks/workshop/timing.json

It runs, on this machine's CPU and in a scratch folder, the steps the workshop page gives (after `make install`,
which is not timed: it depends on the network): the benchmark notebook with the tiny Pythia on the CPU, then the
page's exercises as a notebook. Each step's wall time, the command, the date, the commit of the tree and what the
machine is (CPU, cores, memory, load when it started) go into the record, and nothing else: the page quotes them.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "notebooks" / "workshop" / "timing.json"
BIN = Path(sys.executable).parent


def steps(scratch: Path) -> list[tuple[str, list[str]]]:
    """(what, command) of each step, as the workshop page gives them (the scratch folder for outputs)."""
    return [
        ("the benchmark notebook: tiny Pythia-160M, naive, on the CPU, with its validation",
         [str(BIN / "academic-bench"), "notebook", "--setup", "laptop-cpu", "--models", "pythia-160m", "--preset",
          "naive", "--tiny", "--device", "cpu", "--gpu", "a6000", "-p", "time_budget_s", "600", "--quiet",
          "--output-root", str(scratch / "runs")]),
        ("the workshop page as a notebook",
         [str(BIN / "mystnb-to-jupyter"), "book/workshop.md", str(scratch / "workshop.ipynb")]),
        ("its exercises run (solutions included)",
         [str(BIN / "papermill"), "--no-progress-bar", str(scratch / "workshop.ipynb"),
          str(scratch / "workshop-run.ipynb")]),
    ]


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() \
        else platform.processor()
    mem = None
    if Path("/proc/meminfo").exists():
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem = round(kb / 2**20, 1)
    import torch

    return {"cpu": cpu, "logical_cores": os.cpu_count(), "memory_gib": mem, "os": platform.platform(),
            "python": platform.python_version(), "torch": torch.__version__,
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from academic_bench.catalog.env import git_commit

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    record = {"what": "the workshop's laptop path, timed end to end on a CPU (make install not included)",
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": git_commit(ROOT),
              "command": "python scripts/workshop_timing.py", "machine": machine(), "steps": []}
    with tempfile.TemporaryDirectory() as tmp:
        for what, cmd in steps(Path(tmp)):
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
            seconds = time.perf_counter() - start
            shown = " ".join(Path(c).name if c.startswith(str(BIN)) else c.replace(tmp, "<scratch>") for c in cmd)
            record["steps"].append({"what": what, "command": shown, "seconds": round(seconds, 1),
                                    "exit_status": proc.returncode})
            if proc.returncode != 0:
                print(f"{shown}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}", file=sys.stderr)
                return 1
    record["total_seconds"] = round(sum(s["seconds"] for s in record["steps"]), 1)
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps(record, indent=2) + "\n")
    print(f"{RECORD.relative_to(ROOT)}: {record['total_seconds']:.0f} s in total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
