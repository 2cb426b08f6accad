"""The GPU catalog (specs, links, power, prices; data/gpus.csv), a GPU a user describes in a file, and detection of
the GPU in hand.

``catalog()`` is the study's GPUs (``in_study``: the paper's four and the H200), the ones it measured and every page
covers. ``every_gpu()`` is every row of data/gpus.csv: the survey's generations from Volta to Blackwell and AMD's
Instinct, each with its datasheet sources; ``get_gpu`` resolves any of them, and a GPU a user described in a YAML
file (``load_gpu_file``, the same fields) once it has been read. A cell the sources did not give is empty, never
guessed: a precision with no dense rate is one the GPU lacks (``GPU.peak_tflops`` leaves it out), and PCIe peer
access nobody published is unknown (``GPU.pcie_p2p`` None).
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
# NVIDIA's generations in order (the transfer model's distance between two GPUs counts the steps; Pascal only for a
# GPU a user describes), and AMD's.
GENERATIONS = ("pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
AMD_ARCHITECTURES = ("cdna2", "cdna3")
ARCHITECTURES = GENERATIONS + AMD_ARCHITECTURES
VENDORS = ("nvidia", "amd")
NVLINK_SCOPES = ("", "all", "pairs")
# Compute capability from which each capability holds (the rules in ``methods.hardware_reason`` cite the sources).
BF16_FROM = 8.0  # bf16 and TF32 tensor cores: Ampere
FLASH_ATTENTION_FROM = 8.0  # FlashAttention-2: "Ampere, Ada, or Hopper GPUs" (Dao-AILab/flash-attention README)
FP8_FROM = 8.9  # FP8 tensor cores: Ada (torch._scaled_mm: "FP8 is only supported on H100+, SM 8.9 and MI300+")
TRITON_FROM = 7.0  # torch.compile's Triton backend: "Triton only supports devices of CUDA Capability >= 7.0"


@dataclass(frozen=True)
class GPU:
    key: str
    name: str
    memory_gb: float
    architecture: str
    compute_capability: float | None  # None for a GPU outside CUDA (AMD)
    peak_tflops: dict[str, float]  # dense spec peak per precision the GPU has (PRECISIONS; a missing one it lacks)
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
    # GPUs of this type read and write each other's memory over PCIe (GeForce cards: no; None: no source says)
    pcie_p2p: bool | None = True
    in_study: bool = True  # one of the study's GPUs (``catalog``), not only known to the transfer model
    fp8_tflops: float | None = None  # dense FP8 tensor peak (with FP32 accumulate), where the GPU has FP8
    pcie_gen: int | None = None
    vendor: str = "nvidia"
    price_date: str = ""  # when the purchase price was quoted (price_source says where)
    sources: dict[str, str] = field(default_factory=dict, compare=False)  # the other *_source cells, by field

    def link_gbps(self, n_gpus: int) -> float | None:
        """GB/s per direction between the GPUs of an ``n_gpus`` machine of this type: NVLink where it joins them
        all (a bridge joins only a pair, so from three GPUs on the ring also crosses PCIe), else PCIe."""
        if self.nvlink_gbps and (self.nvlink_scope == "all" or n_gpus <= 2):
            return self.nvlink_gbps / 2  # datasheets quote both directions together
        return self.pcie_gbps

    def _cc_at_least(self, cc: float) -> bool:
        return self.vendor == "nvidia" and self.compute_capability is not None and self.compute_capability >= cc

    @property
    def supports_tf32(self) -> bool:
        """TF32 tensor cores arrived with Ampere (compute capability 8.0)."""
        return self._cc_at_least(BF16_FROM)

    @property
    def supports_bf16(self) -> bool:
        """bf16 tensor cores arrived with Ampere; before it (Volta, Turing) tensor cores take fp16 only."""
        return self._cc_at_least(BF16_FROM) or (self.vendor != "nvidia" and "bf16" in self.peak_tflops)

    @property
    def supports_fp8(self) -> bool:
        """FP8 tensor cores (torch._scaled_mm's float8 products, which torchao's recipes use): Ada, Hopper,
        Blackwell (compute capability 8.9 and up) where the datasheet gives an FP8 rate."""
        return self._cc_at_least(FP8_FROM) and self.fp8_tflops is not None

    @property
    def supports_flash_attention(self) -> bool:
        """FlashAttention-2 runs from Ampere on; before it attention takes SDPA's memory-efficient kernel."""
        return self._cc_at_least(FLASH_ATTENTION_FROM)

    @property
    def supports_triton(self) -> bool:
        """torch.compile's Triton backend (and Liger's Triton kernels) from compute capability 7.0."""
        return self._cc_at_least(TRITON_FROM)

    @property
    def generation(self) -> str:
        """The architecture's display name, e.g. 'Ada' or 'CDNA 3'."""
        return {"cdna2": "CDNA 2", "cdna3": "CDNA 3"}.get(self.architecture, self.architecture.capitalize())

    def peak_flops(self, precision: str, tf32: bool = False) -> float:
        """Dense peak FLOP/s for a training precision (fp32 runs at the tf32 rate when TF32 is on)."""
        if precision == "fp32" and tf32 and self.supports_tf32:
            precision = "tf32"
        if precision not in self.peak_tflops:
            raise ValueError(f"the {self.name} has no {precision} tensor rate (its datasheet gives none): "
                             f"it trains in {', '.join(self.peak_tflops)}")
        return self.peak_tflops[precision] * 1e12


class UnknownGPUError(KeyError):
    def __str__(self) -> str:
        return self.args[0]


class GPUFileError(ValueError):
    """A GPU file that cannot be read, or a field missing or bad in it: the message names the file and field."""


@lru_cache(maxsize=1)
def _csv_gpus() -> dict[str, GPU]:
    text = resources.files("academic_bench").joinpath("data/gpus.csv").read_text()
    return {row["key"]: _row_to_gpu(row) for row in csv.DictReader(text.splitlines())}


_DESCRIBED: dict[str, GPU] = {}  # GPUs read from a user's file in this process (``load_gpu_file``)


def every_gpu() -> dict[str, GPU]:
    """Every GPU of data/gpus.csv, by key, in the file's order."""
    return dict(_csv_gpus())


@lru_cache(maxsize=1)
def catalog() -> dict[str, GPU]:
    """The study's GPUs, by key (module docstring)."""
    return {k: g for k, g in _csv_gpus().items() if g.in_study}


def _row_to_gpu(row: dict[str, str]) -> GPU:
    return GPU(
        key=row["key"], name=row["name"], memory_gb=float(row["memory_gb"]),
        architecture=row["architecture"], compute_capability=_number(row.get("compute_capability")),
        peak_tflops={p: float(row[f"{p}_tflops"]) for p in PRECISIONS if row.get(f"{p}_tflops")},
        board_power_w=float(row["board_power_w"]),
        price_usd=float(row["price_usd"]) if row["price_usd"] else None,
        price_source=row["price_source"], spec_source=row["spec_source"], match=row["match"],
        memory_bandwidth_gbps=_number(row.get("memory_bandwidth_gbps")), nvlink_gbps=_number(row.get("nvlink_gbps")),
        nvlink_scope=row.get("nvlink_scope") or "", pcie_gbps=_number(row.get("pcie_gbps")),
        pcie_p2p=_yes_no(row.get("pcie_p2p")), in_study=_yes(row.get("in_study")),
        fp8_tflops=_number(row.get("fp8_tflops")), pcie_gen=int(row["pcie_gen"]) if row.get("pcie_gen") else None,
        vendor=row.get("vendor") or "nvidia", price_date=row.get("price_date") or "",
        sources={k[:-len("_source")]: v for k, v in row.items() if k.endswith("_source") and v},
    )


def _yes(text: str | None) -> bool:
    """A yes/no cell; an empty one is yes (the column's default)."""
    return not text or text.strip().lower() == "yes"


def _yes_no(text: str | None) -> bool | None:
    """A yes/no cell whose empty value means that no source says (None)."""
    return None if not text else text.strip().lower() == "yes"


def _number(text: str | None) -> float | None:
    return float(text) if text else None


def gpu_names() -> list[str]:
    return list(catalog())


def is_gpu_file(name: str) -> bool:
    """Whether ``--gpu`` names a file describing a GPU rather than a catalog key."""
    return str(name).lower().endswith((".yaml", ".yml"))


def get_gpu(key: str) -> GPU:
    """The entry for ``key`` (any row of data/gpus.csv, or a GPU read from a file, whose path may be given);
    an unknown key names every catalog GPU."""
    if is_gpu_file(key):
        return load_gpu_file(key)
    k = str(key).lower()
    found = _csv_gpus().get(k) or _DESCRIBED.get(k)
    if found is None:
        raise UnknownGPUError(f"unknown GPU {key!r}; choose one of: {', '.join(_csv_gpus())}, "
                              "or describe yours in a YAML file (--gpu my-gpu.yaml)")
    return found


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
# GPU by its ``setup_prefix``. "tiny" or "cpu" as a part of the label marks a workshop run's folder (cpu-tiny,
# h100x1-tiny), which names no GPU.
_SETUP_GPU = re.compile(r"^(.+?)x\d+(?=$|[-_.])")
WORKSHOP_WORDS = ("tiny", "cpu")


def setup_prefix(key: str) -> str:
    """The GPU's part of a setup label: a study GPU's key up to its first '-' (h100-80gb -> 'h100', as the shipped
    folders name them), and any other GPU's whole key where a study GPU already holds that short name
    (h100-pcie -> 'h100-pcie', a100-40gb -> 'a100-40gb'): each kind of board keeps a folder of its own."""
    short = key.split("-")[0]
    gpus = _csv_gpus()
    taken = any(k.split("-")[0] == short and g.in_study for k, g in gpus.items() if k != key)
    return key if taken and not (key in gpus and gpus[key].in_study) else short


def setup_gpus(setup: str) -> tuple[str, ...]:
    """The catalog GPUs a setup label names ('h100x1' -> ('h100-80gb',); 'h100-pciex1' -> ('h100-pcie',)), or ()
    for a label that names none or marks a workshop run: its folder holds evidence of those GPUs only."""
    setup = str(setup).lower()
    found = _SETUP_GPU.match(setup)
    if found is None or any(w in re.split(r"[-_.]", setup) for w in WORKSHOP_WORDS):
        return ()
    return tuple(k for k in _csv_gpus() if setup_prefix(k) == found.group(1))


# --- a GPU described in a file ---------------------------------------------------------------------------------

# field: (what it is, an example), for the error that names a missing or bad field
GPU_FILE_FIELDS: dict[str, tuple[str, str]] = {
    "key": ("a short name for the GPU, letters, digits and '-'", "my-gpu"),
    "name": ("the GPU's full name", "NVIDIA RTX A5000"),
    "memory_gb": ("GB of GPU memory", "24"),
    "architecture": (f"one of: {', '.join(ARCHITECTURES)}", "ampere"),
    "compute_capability": ("CUDA compute capability (NVIDIA)", "8.6"),
    "fp32_tflops": ("dense FP32 TFLOP/s (no tensor cores)", "27.8"),
    "board_power_w": ("board power in W", "230"),
    "memory_bandwidth_gbps": ("memory bandwidth in GB/s", "768"),
    "pcie_gbps": ("host link in GB/s per direction (PCIe 4.0 x16: 32)", "32"),
}
GPU_FILE_OPTIONAL = ("tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "nvlink_gbps", "nvlink_scope",
                     "pcie_p2p", "pcie_gen", "price_usd", "price_date", "vendor", "source")


def load_gpu_file(path: str) -> GPU:
    """The GPU a YAML file describes, with the fields of data/gpus.csv (``GPU_FILE_FIELDS`` required, the tensor
    rates the GPU has and its links optional), registered so that ``get_gpu(its key)`` finds it in this process.
    A missing or bad field stops with a ``GPUFileError`` naming the file, the field and what it takes."""
    import yaml

    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as exc:
        raise GPUFileError(f"cannot read the GPU file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise GPUFileError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise GPUFileError(f"{path} must hold a mapping of fields ({', '.join(GPU_FILE_FIELDS)}), got {data!r}")
    unknown = sorted(set(data) - set(GPU_FILE_FIELDS) - set(GPU_FILE_OPTIONAL))
    if unknown:
        raise GPUFileError(f"{path}: unknown field(s) {', '.join(unknown)}; the fields are: "
                           f"{', '.join([*GPU_FILE_FIELDS, *GPU_FILE_OPTIONAL])}")
    vendor = str(data.get("vendor", "nvidia")).lower()
    for name, (what, example) in GPU_FILE_FIELDS.items():
        if data.get(name) in (None, "") and not (name == "compute_capability" and vendor != "nvidia"):
            raise GPUFileError(f"{path}: missing field {name!r}: {what}, e.g. {name}: {example}")
    gpu = _file_gpu(path, data, vendor)
    if gpu.key in _csv_gpus():
        raise GPUFileError(f"{path}: key {gpu.key!r} is a catalog GPU's; give yours another (--gpu {gpu.key} "
                           "uses the catalog's row)")
    _DESCRIBED[gpu.key] = gpu
    return gpu


def _file_gpu(path: str, d: dict, vendor: str) -> GPU:
    def num(name: str, required: bool = False) -> float | None:
        v = d.get(name)
        if v in (None, "") and not required:
            return None
        try:
            x = float(v)
        except (TypeError, ValueError):
            x = float("nan")
        if not x > 0:
            raise GPUFileError(f"{path}: field {name!r} must be a positive number, got {v!r}")
        return x

    def choice(name: str, choices: tuple[str, ...], default: str) -> str:
        v = str(d.get(name, default)).lower()
        if v not in choices:
            shown = ", ".join(c for c in choices if c)
            raise GPUFileError(f"{path}: field {name!r} must be one of: {shown}; got {d.get(name)!r}")
        return v

    key = str(d["key"]).lower()
    if not key.replace("-", "").replace("_", "").isalnum():
        raise GPUFileError(f"{path}: field 'key' must be letters, digits and '-', got {d['key']!r}")
    choice("vendor", VENDORS, "nvidia")
    scope = choice("nvlink_scope", NVLINK_SCOPES, "")
    if d.get("nvlink_gbps") and not scope:
        raise GPUFileError(f"{path}: field 'nvlink_scope' is needed with nvlink_gbps: 'all' (NVSwitch joins every GPU) "
                           "or 'pairs' (a bridge joins two cards)")
    p2p = d.get("pcie_p2p")
    if p2p not in (None, True, False):
        raise GPUFileError(f"{path}: field 'pcie_p2p' must be true or false, got {p2p!r}")
    return GPU(
        key=key, name=str(d["name"]), memory_gb=num("memory_gb", True),
        architecture=choice("architecture", ARCHITECTURES, ""),
        compute_capability=num("compute_capability", vendor == "nvidia"),
        peak_tflops={p: v for p in PRECISIONS if (v := num(f"{p}_tflops", p == "fp32")) is not None},
        board_power_w=num("board_power_w", True), price_usd=num("price_usd"),
        price_source=f"{path}: {d.get('source', 'the user')}", spec_source=f"{path}: {d.get('source', 'the user')}",
        memory_bandwidth_gbps=num("memory_bandwidth_gbps", True), nvlink_gbps=num("nvlink_gbps"),
        nvlink_scope=scope,
        pcie_gbps=num("pcie_gbps", True), pcie_p2p=p2p, in_study=False, fp8_tflops=num("fp8_tflops"),
        pcie_gen=int(num("pcie_gen")) if d.get("pcie_gen") else None, vendor=vendor,
        price_date=str(d.get("price_date", "")))
