"""The GPU catalog (specs, power, prices; data/gpus.csv) and detection of the GPU in hand.

``catalog()`` is the study's GPUs (``in_study``: the paper's four and the H200), the ones every command, answer
and page covers. data/gpus.csv also holds GPUs known to the transfer model only (``in_study`` no: the RTX 4090 and
the A100 40GB), so that training throughput others published on them can be predicted and checked
(``answer.published_check``); ``get_gpu`` resolves every row.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")


@dataclass(frozen=True)
class GPU:
    key: str
    name: str
    memory_gb: float
    architecture: str
    compute_capability: float
    peak_tflops: dict[str, float]  # dense spec peak per precision
    board_power_w: float
    price_usd: float | None
    price_source: str
    spec_source: str
    match: str = ""  # substring of the driver's device name that identifies this GPU
    # What the transfer model scales by (``transfer``), each with its datasheet source in data/gpus.csv.
    memory_bandwidth_gbps: float | None = None  # HBM/GDDR bandwidth, GB/s
    nvlink_gbps: float | None = None  # NVLink, GB/s as the datasheet states it (both directions together)
    nvlink_scope: str = ""  # "all": every GPU of the machine (NVSwitch); "pairs": a bridge joins two cards only
    pcie_gbps: float | None = None  # host link, GB/s per direction
    pcie_p2p: bool = True  # GPUs of this type read and write each other's memory over PCIe (GeForce cards: no)
    in_study: bool = True  # one of the study's GPUs (``catalog``), not only known to the transfer model

    def link_gbps(self, n_gpus: int) -> float | None:
        """GB/s per direction between the GPUs of an ``n_gpus`` machine of this type: NVLink where it joins them
        all (a bridge joins only a pair, so from three GPUs on the ring also crosses PCIe), else PCIe."""
        if self.nvlink_gbps and (self.nvlink_scope == "all" or n_gpus <= 2):
            return self.nvlink_gbps / 2  # datasheets quote both directions together
        return self.pcie_gbps

    @property
    def supports_tf32(self) -> bool:
        """TF32 tensor cores arrived with Ampere (compute capability 8.0)."""
        return self.compute_capability >= 8.0

    @property
    def supports_bf16(self) -> bool:
        return self.compute_capability >= 8.0

    @property
    def supports_fp8(self) -> bool:
        """FP8 tensor cores with the row-wise scaled products torchao's float8 recipes use arrived with Hopper
        (compute capability 9.0)."""
        return self.compute_capability >= 9.0

    def peak_flops(self, precision: str, tf32: bool = False) -> float:
        """Dense peak FLOP/s for a training precision (fp32 runs at the tf32 rate when TF32 is on)."""
        if precision == "fp32" and tf32 and self.supports_tf32:
            precision = "tf32"
        return self.peak_tflops[precision] * 1e12


class UnknownGPUError(KeyError):
    def __str__(self) -> str:
        return self.args[0]


@lru_cache(maxsize=1)
def _every_gpu() -> dict[str, GPU]:
    text = resources.files("academic_bench").joinpath("data/gpus.csv").read_text()
    return {row["key"]: _row_to_gpu(row) for row in csv.DictReader(text.splitlines())}


@lru_cache(maxsize=1)
def catalog() -> dict[str, GPU]:
    """The study's GPUs, by key (module docstring)."""
    return {k: g for k, g in _every_gpu().items() if g.in_study}


def _row_to_gpu(row: dict[str, str]) -> GPU:
    return GPU(
        key=row["key"], name=row["name"], memory_gb=float(row["memory_gb"]),
        architecture=row["architecture"], compute_capability=float(row["compute_capability"]),
        peak_tflops={p: float(row[f"{p}_tflops"]) for p in PRECISIONS},
        board_power_w=float(row["board_power_w"]),
        price_usd=float(row["price_usd"]) if row["price_usd"] else None,
        price_source=row["price_source"], spec_source=row["spec_source"], match=row["match"],
        memory_bandwidth_gbps=_number(row.get("memory_bandwidth_gbps")), nvlink_gbps=_number(row.get("nvlink_gbps")),
        nvlink_scope=row.get("nvlink_scope") or "", pcie_gbps=_number(row.get("pcie_gbps")),
        pcie_p2p=_yes(row.get("pcie_p2p")), in_study=_yes(row.get("in_study")),
    )


def _yes(text: str | None) -> bool:
    """A yes/no cell; an empty one is yes (the column's default)."""
    return not text or text.strip().lower() == "yes"


def _number(text: str | None) -> float | None:
    return float(text) if text else None


def gpu_names() -> list[str]:
    return list(catalog())


def get_gpu(key: str) -> GPU:
    """The entry for ``key`` (any row of data/gpus.csv); an unknown key names the study's GPUs."""
    try:
        return _every_gpu()[key.lower()]
    except KeyError:
        raise UnknownGPUError(f"unknown GPU {key!r}; choose one of: {', '.join(catalog())}") from None


def match_name(device_name: str) -> GPU | None:
    """The catalog entry whose ``match`` text appears in a driver-reported device name."""
    low = device_name.lower()
    for gpu in catalog().values():
        if gpu.match and gpu.match in low:
            if gpu.key == "a100-80gb" and "40gb" in low:
                return None  # a different card: 40 GB of memory
            return gpu
    return None


# A run folder's name says which GPU made it: "<gpu>x<count>" (h100x1, a6000x2; ``cli.args.default_setup``), the
# GPU as the first part of its catalog key. "tiny" or "cpu" as a part of the label marks a workshop run's folder
# (cpu-tiny, h100x1-tiny), which names no GPU.
_SETUP_GPU = re.compile(r"^(.+?)x\d+(?=$|[-_.])")
WORKSHOP_WORDS = ("tiny", "cpu")


def setup_gpus(setup: str) -> tuple[str, ...]:
    """The catalog GPUs a setup label names ('h100x1' -> ('h100-80gb',); 'a100x4' -> both A100s), or () for a
    label that names none or marks a workshop run: its folder holds evidence of those GPUs only."""
    setup = str(setup).lower()
    found = _SETUP_GPU.match(setup)
    if found is None or any(w in re.split(r"[-_.]", setup) for w in WORKSHOP_WORDS):
        return ()
    return tuple(k for k in _every_gpu() if k.split("-")[0] == found.group(1))
