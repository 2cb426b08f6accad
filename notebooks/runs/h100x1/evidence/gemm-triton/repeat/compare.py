"""The second H100 sweep (this folder) over the first (..): per kernel, seconds here over seconds there.
Run from the repository root: python notebooks/runs/h100x1/evidence/gemm-triton/repeat/compare.py"""
import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
KEY = ("op", "m", "n", "k", "dtype", "product")


def load(path: Path) -> dict:
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {tuple(r.get(k) for k in KEY): r["seconds"] for r in rows}


for name in ("gemm.jsonl", "gemm-output-layer.jsonl", "gemm-memory.jsonl"):
    first, second = load(HERE.parent / name), load(HERE / name)
    r = sorted(second[k] / first[k] for k in first if k in second)
    print(f"{name}: {len(r)} kernels in both; ratio median {statistics.median(r):.4f}, "
          f"5th-95th percentile {r[len(r) // 20]:.3f}-{r[-len(r) // 20 - 1]:.3f}, min {r[0]:.3f}, max {r[-1]:.3f}")
