"""Provenance: every data file the book reads, what it holds, how many rows, and the command that made it."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..catalog.env import REPO_ROOT

from .frame import runs_root


# --- provenance ---------------------------------------------------------------------------------------------

PROVENANCE_COLUMNS = ["file", "what", "rows", "produced_by"]
# How each kind of repository file the book reads came to be (no command: written or transcribed by hand).
_DATA_ORIGINS = (
    ("academic_bench/data/survey_example.csv", "written by hand: invented respondents (one a row), not the paper's "
     "survey responses (its first line says so), the example the survey pipeline reads; "
     "tests/fixtures/survey_example.csv is the same file"),
    ("academic_bench/data/paper_", "transcribed by hand from the paper, cell by cell; each row names its table, "
     "row and column (`source`); loaded and checked by `academic_bench.catalog.paper` and tests/test_paper_data.py"),
    ("academic_bench/data/survey_", "transcribed by hand from the paper's Section 2, Figure 8 and Appendix A "
     "(`source` column / field); loaded by `academic_bench.analysis.survey`"),
    ("academic_bench/data/gpus.csv", "written by hand from vendor datasheets (`spec_source`) and the paper's "
     "Appendix H prices (`price_source`); PCIe peer access (`pcie_p2p`) with its source; `in_study` no marks the "
     "GPUs known only to the published-throughput check"),
    ("academic_bench/data/cloud_prices.csv", "collected by hand from public on-demand price lists "
     "(`source_url`, `as_of`, `transcribed_in`)"),
    ("academic_bench/data/purchase_prices.csv", "collected by hand from public pages: purchase prices of a card or "
     "a whole machine dated 2025 or later, each with its page (`source_url`), date and the quoted line; read by "
     "`academic_bench.cost.prices` beside the paper's 2024 quotes, which it never replaces"),
    ("academic_bench/data/published_throughput.csv", "collected by hand from public benchmark tables, model cards "
     "and issues: each row with its source and the quoted line that holds its figure; loaded and checked by "
     "`academic_bench.catalog.published` and tests/test_published.py; what it leaves out, and why, is in that "
     "module's docstring"),
    ("academic_bench/data/matmul_rates.csv", "transcribed from one public table of torch.matmul rates "
     "(zzc0721/torch-performance-test-data, database.md at a pinned commit, or the issue a run of its script "
     "posted): each row of a catalog GPU with the line that holds its figure; read by "
     "`academic_bench.catalog.matmul_rates` for the transfer model's matrix products between architectures; "
     "tests/test_transfer.py checks each row"),
    ("academic_bench/data/model_facts.json", "computed: every catalog model's parameter counts, counted FLOPs and "
     "saved activations from a meta-device build (`academic_bench.estimate.kept.write_shipped`, run by `make book`; "
     "tests/test_estimate.py checks it equals a fresh computation)"),
    ("academic_bench/data/published_configs/", "written by hand: the Hugging Face config of each published model's "
     "shape, from the `shape` column of published_throughput.csv (llm-foundry's MPT as a GPT-2 of the same "
     "widths; `academic_bench.catalog.published.CONFIGS`)"),
    ("notebooks/runs/answers.json", "the study's answer per catalog model, GPU and count, computed from the runs "
     "beside it (`academic_bench.answer.store.write_shipped`, run by `make book`; tests/test_answer.py checks it "
     "is current)"),
    ("tests/fixtures/survey_example.csv", "written by hand: invented respondents for the survey pipeline's "
     "tests, the same file as academic_bench/data/survey_example.csv (not survey data)"),
    ("book/references.bib", "written by hand"),
    ("notebooks/workshop/timing.json", "`python scripts/workshop_timing.py`: the workshop's laptop path timed end to "
     "end, with the date, the commit and the machine it ran on"),
    ("notebooks/runs/planned-setups.csv", "written by hand: the study's hardware setups, and why one has not run "
     "(read by `results.load_planned`)"),
)


def _rows_in(path: Path) -> int | None:
    """Data rows of a CSV (quoted newlines allowed, leading '#' comment lines skipped) or JSON-lines file."""
    import csv

    if path.suffix not in (".csv", ".jsonl"):
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    if path.suffix == ".jsonl":
        return sum(1 for ln in lines if ln.strip())
    return max(sum(1 for r in csv.reader(lines) if r) - 1, 0)


# What each file of a run folder is, and what wrote it when not the folder's notebook (None: the notebook).
_RUN_FILES = {
    "benchmark.ipynb": ("executed benchmark notebook", None),
    "results.jsonl": ("benchmark results", None),
    "results.skipped.jsonl": ("configurations a smart search skipped, with why", None),
    "profiles.jsonl": ("step profiles (torch.profiler, by kind of work)",
                       "`academic-bench profile --methods best` per model (the setup's `evidence/README.md` names the "
                       "calls)"),
}


# Evidence files inside a run folder that the answers and the book read, and the command that wrote each.
_EVIDENCE_FILES = {
    "evidence/gemm/gemm.jsonl": ("bf16 matrix-product rate by shape (the work model's rate by size)",
                                 "`scripts/offline-gpu/gemm_sweep.py` (`job.sh` with `PARTS=gemm`)"),
    "evidence/gemm/gemm-output-layer.jsonl": ("output layers at unaligned vocabularies beside their padded twins (the "
                                              "work model's charge for an unaligned LM head)",
                                              "`scripts/offline-gpu/gemm_sweep.py ... output-layer` (`job.sh` with "
                                              "`PARTS=gemm GEMM=output-layer`)"),
    "evidence/gemm/gemm-memory.jsonl": ("memory-bound kernels' times (the transfer model's memory ratio between "
                                        "two swept GPUs)", "`scripts/offline-gpu/gemm_sweep.py ... memory` (`job.sh` "
                                        "with `PARTS=gemm GEMM=memory`)"),
    "evidence/decoders/results.jsonl": ("decoders outside the catalog, measured from their config.json",
                                        "`academic-bench bench --model PATH/config.json` (the commands are in "
                                        "`evidence/decoders/README.md`)"),
    "evidence/decoders/profiles.jsonl": ("kernel profiles of decoders outside the catalog",
                                         "`academic-bench profile --model PATH/config.json` (the setup's "
                                         "`evidence/README.md` names the calls)"),
    "evidence/vision16/results.jsonl": ("ViT-L/16 and ConvNeXt-XL in 16 bits, beside their fp32 recipe (the published "
                                        "check's vision points)", "`academic-bench bench --model vit-large "
                                        "--precision bf16` (the calls are in `evidence/vision16/plan.sh`)"),
}


def provenance(root: str | Path | None = None) -> pd.DataFrame:
    """Every repository file the book reads: what it is, how many rows, and what produced it."""
    from ..search.params import command_for, notebook_parameters
    from ..results import PLANNED_FILE

    rows = []
    files = sorted((REPO_ROOT / "academic_bench" / "data").rglob("*")) + [
        REPO_ROOT / "tests" / "fixtures" / "survey_example.csv", REPO_ROOT / "book" / "references.bib",
        runs_root(root) / PLANNED_FILE, runs_root(root) / "answers.json",
        REPO_ROOT / "notebooks" / "workshop" / "timing.json"]
    for path in files:
        if not path.is_file():
            continue
        rel = str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)
        origin = next((o for prefix, o in _DATA_ORIGINS if rel.startswith(prefix)), "not described yet")
        rows.append({"file": rel, "what": "data" if "data" in path.parts else "book input", "rows": _rows_in(path),
                     "produced_by": origin})
    for folder in sorted(p for p in runs_root(root).glob("*") if p.is_dir()):
        params = notebook_parameters(folder)
        cmd = (f"`{command_for(params)}` (papermill parameters saved in the notebook)"
               if params and {"setup", "models"} <= set(params) else "no executed notebook with parameters beside it")
        if (folder / "evidence" / "README.md").exists():  # a results file grows over many runs: name them all
            cmd = f"the runs listed in `{folder.name}/evidence/README.md`; the last: {cmd}"
        for path in sorted(folder.glob("*")):
            if path.suffix in (".jsonl", ".ipynb"):
                what, by = _RUN_FILES.get(path.name, ("benchmark results", None))
                rows.append({"file": str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path),
                             "what": what, "rows": _rows_in(path), "produced_by": by or cmd})
        for rel, (what, by) in _EVIDENCE_FILES.items():  # evidence the answers read besides the run's own files
            path = folder / rel
            if path.is_file():
                rows.append({"file": str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path),
                             "what": what, "rows": _rows_in(path), "produced_by": by})
    df = pd.DataFrame(rows, columns=PROVENANCE_COLUMNS)
    df["rows"] = df["rows"].astype("Int64")
    return df
