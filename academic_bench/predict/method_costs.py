"""What each memory-saving method, and each GPU beyond the first, adds to a training step, from what it does.

The work model (``decoder_work``) and the transfer model (``transfer``) give the step of free-lunch training on
one GPU's share of the batch. The methods add to it:

- **activation checkpointing** recomputes the forward of every checkpointed block in the backward: one more
  forward of the blocks, a third of their forward-and-backward work (the forward is 2 of the 6 FLOPs per weight
  and token; llm-foundry's hardware-FLOPs utilisation counts checkpointing the same way, 4 passes instead of 3)
  (``recompute_s``);
- **data parallelism and sharding** move bytes between the GPUs (``collectives``), over the link between them
  (``ring_gbps``, below), on a ring: an all-gather or a reduce-scatter sends ``(n - 1) / n`` of the tensor from
  each GPU, an all-reduce twice that. The central answer charges every collective its whole time: the study's
  own two-GPU DDP rows have a boundary micro-step longer than the accumulating ones by more than their whole
  all-reduce over NVLink, so nothing of it was hidden there. The fastest end of the range lets a collective
  issued during the backward (a gradient reduction) or the forward (a prefetched all-gather) run beside that
  pass's kernels and cost only what it takes beyond them; one issued after the optimizer step (ZeRO-1/2's
  all-gather of the updated weights) waits for nothing and costs its whole time either way (``exposed_s``);
- **offloading** copies gradients to the host and weights back over the host link (PCIe, ``host_copy_s``), and
  runs the optimizer on the host at the rate the study measured for that library's CPU optimizer
  (``host_optimizer_s``, ``measured_host_rates``).

Bytes per GPU and optimizer step, for a model of ``P`` parameters, training dtype of ``c`` bytes, ``g``
accumulation steps (as ``measure/apply.py`` configures each library):

| method | each micro-step | at the boundary micro-step | after the optimizer step |
| --- | --- | --- | --- |
| DDP (``none``, n > 1) | | all-reduce of the gradients: fp32 under autocast, ``c`` bytes with bf16 weights | |
| ZeRO-1 | | reduce-scatter of ``c``-byte gradients | all-gather of the weights |
| ZeRO-2 | reduce-scatter of the gradients (partitioned, so reduced as they come) | | all-gather |
| ZeRO-3 | all-gather in the forward and in the backward, reduce-scatter of the gradients | | |
| FSDP shard-grad-op | all-gather in the forward (weights kept to the backward) | fp32 reduce-scatter | |
| FSDP full-shard | all-gather in the forward and in the backward | fp32 reduce-scatter | |

A sharding method is never charged less than the data parallelism it replaces (``collective_s``): the study's
answers do not credit a memory-saving method with speed, except through the larger micro-batch its memory allows.
The data parallelism a ZeRO stage replaces is DeepSpeed's own (``replaced_ddp``), which in its bf16 mode reduces
bf16 gradients, half the bytes of torch DDP's fp32 ones under autocast: a ZeRO-1 step sends what it sends and is
no longer charged torch DDP's fp32 all-reduce. Measurements disagreed with that older floor: on the study's two
H200s Pythia-1B's step was shorter with ZeRO-1 than with DDP (notebooks/runs/h200x2/results.jsonl), and eight
RTX 3090s ran TinyLlama under ZeRO-2 and under bf16 DDP with about the same slowdown over one card (the published
points of ``answer.published_check``). ``sharding_beside_ddp`` lists every synchronised step measurement of a
sharding on several GPUs beside the DDP row of the same model, setup and other methods, each with its state
(counted, or why it is no result); the book's "Other hardware" page shows them.

The link a ring gets between ``n`` GPUs (``ring_gbps``) is NVLink where it joins every GPU (half the datasheet's
both-directions figure). Over PCIe it is less than the datasheet's rate per direction (``hardware.GPU.pcie_gbps``),
for three reasons, each with its source:

1. NCCL plans a PCIe link at three quarters of its signalling rate (``PCIE_USABLE``): its topology model
   (NVIDIA/nccl src/graph/topo.h) rates a Gen3 x16 link, 16 GB/s per direction, at ``PCI_BW 12.0``, and a Gen4
   x16 link at 24 GB/s;
2. eight GPUs on x16 links need 128 PCIe lanes, more than one Intel Xeon Scalable socket has (48 on the 2nd
   generation, 64 on the 3rd), so a machine of more than ``GPUS_PER_SOCKET`` GPUs spans two sockets and its ring
   crosses the link between them, which NCCL rates at 10 GB/s (``SKL_QPI_BW``, Skylake to Ice Lake:
   ``INTER_SOCKET_GBPS``). A one-socket AMD EPYC host (128 lanes) would not cross; the central answer takes the
   two-socket machine that eight x16 GPUs usually need;
3. GPUs without PCIe peer access (GeForce cards: ``hardware.GPU.pcie_p2p``) cannot write into each other's
   memory, so NCCL stages every byte in host memory (its SHM transport, "used between devices when peer-to-peer
   cannot happen, therefore, host memory is used", NCCL's environment documentation): each byte crosses the PCIe
   fabric twice, into host memory and out of it, through the same root complex, which halves the rate
   (``STAGED_CROSSINGS``).

Eight RTX 3090s thus get 5 GB/s per direction between them, not the 32 GB/s of their x16 links.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Mapping

from ..catalog.hardware import GPU
from ..catalog.methods import Methods
from ..estimate.stats import RECOMPUTE_FRACTION  # one extra forward of the checkpointed blocks

if TYPE_CHECKING:
    import pandas as pd

FORWARD_SHARE = 1.0 / 3.0  # of a micro-step's compute, the forward (the rest is the backward)
FP32 = 4
# The link between the GPUs over PCIe (module docstring, ``ring_gbps``), from NCCL's topology model
# (NVIDIA/nccl src/graph/topo.h) and Intel's lane counts.
PCIE_USABLE = 0.75  # NCCL's PCI_BW 12.0 GB/s for a PCIe Gen3 x16 link, whose signalling rate is 16 GB/s per direction
GPUS_PER_SOCKET = 4  # x16 GPUs one Xeon Scalable socket holds: 64 lanes (3rd generation)
INTER_SOCKET_GBPS = 10.0  # NCCL's SKL_QPI_BW: the link between two Intel sockets, Skylake to Ice Lake
STAGED_CROSSINGS = 2  # without PCIe peer access each byte goes into host memory and out of it
# The library whose CPU optimizer runs the host's step with offloading: DeepSpeed's CPUAdam, or torch's Adam on
# the host under FSDP2's CPUOffloadPolicy (measure/apply.py).
ENGINES = ("deepspeed", "fsdp")


def engine(m: Methods) -> str:
    """The library a sharded configuration runs under (``ENGINES``)."""
    return "deepspeed" if m.uses_deepspeed else "fsdp"


def recompute_s(block_s: float) -> float:
    """Seconds activation checkpointing adds to a step whose checkpointed blocks take ``block_s`` (forward and
    backward): one more forward of them."""
    return RECOMPUTE_FRACTION * block_s


@dataclass(frozen=True)
class Traffic:
    """Bytes one GPU sends per optimizer step, by when they are sent (module docstring's table)."""

    forward: float = 0.0  # during each micro-step's forward, summed over the micro-steps
    backward: float = 0.0  # during each micro-step's backward, summed
    boundary: float = 0.0  # during the boundary micro-step's backward only
    after_step: float = 0.0  # after the optimizer step: nothing to run beside

    @property
    def total(self) -> float:
        return self.forward + self.backward + self.boundary + self.after_step


def collectives(m: Methods, n_gpus: int, params: float, dtype_bytes: int, gas: int) -> Traffic:
    """What ``m`` sends between ``n_gpus`` GPUs per optimizer step (module docstring's table)."""
    if n_gpus <= 1:
        return Traffic()
    ring = (n_gpus - 1) / n_gpus
    once = ring * params * dtype_bytes  # one all-gather or reduce-scatter of every weight in the training dtype
    fp32 = ring * params * FP32
    if m.sharding == "none":  # DDP reduces the gradients in the dtype they have: fp32 under autocast
        return Traffic(boundary=2 * (once if m.bf16_weights else fp32))
    if m.sharding == "zero1":
        return Traffic(boundary=once, after_step=once)
    if m.sharding == "zero2":
        return Traffic(backward=gas * once, after_step=once)
    if m.sharding == "zero3":
        return Traffic(forward=gas * once, backward=gas * 2 * once)
    if m.sharding == "fsdp_shard_grad_op":
        return Traffic(forward=gas * once, boundary=fp32)
    if m.sharding == "fsdp_full_shard":
        return Traffic(forward=gas * once, backward=gas * once, boundary=fp32)
    raise ValueError(f"unknown sharding {m.sharding!r}")


def ring_gbps(gpu: GPU, n_gpus: int) -> float | None:
    """GB/s per direction a ring collective gets between ``n_gpus`` GPUs of type ``gpu`` (module docstring):
    NVLink where it joins them all, else the PCIe rate NCCL plans, capped by the link between two sockets beyond
    ``GPUS_PER_SOCKET`` GPUs and halved where the bytes are staged in host memory. None on one GPU, or where the
    catalog has no link for the GPU."""
    if n_gpus <= 1:
        return None
    if gpu.nvlink_gbps and (gpu.nvlink_scope == "all" or n_gpus <= 2):
        return gpu.link_gbps(n_gpus)
    if not gpu.pcie_gbps:
        return None
    rate = PCIE_USABLE * gpu.pcie_gbps
    if n_gpus > GPUS_PER_SOCKET:
        rate = min(rate, INTER_SOCKET_GBPS)
    return rate if gpu.pcie_p2p else rate / STAGED_CROSSINGS


def exposed_s(traffic: Traffic, link_gbps: float, micro_step_s: float, gas: int) -> float:
    """Seconds of ``traffic`` over a link of ``link_gbps`` (GB/s per direction) that no compute hides: each
    pass's collectives beyond that pass's compute (``micro_step_s`` per micro-step, ``FORWARD_SHARE`` of it the
    forward), and everything after the optimizer step."""
    bw = link_gbps * 1e9
    forward, backward = FORWARD_SHARE * micro_step_s, (1 - FORWARD_SHARE) * micro_step_s
    return (max(0.0, traffic.forward / bw - gas * forward) + max(0.0, traffic.backward / bw - gas * backward)
            + max(0.0, traffic.boundary / bw - backward) + traffic.after_step / bw)


def collective_s(m: Methods, n_gpus: int, gpu: GPU, params: float, dtype_bytes: int, gas: int,
                 micro_step_s: float | None = None) -> float:
    """Seconds per optimizer step the GPUs' collectives add to ``n_gpus`` x ``gpu`` (0 on one GPU), over the
    link between them: all of their time, or with ``micro_step_s`` (compute seconds per micro-step) only what
    the passes they run beside do not hide (``exposed_s``: the fastest end of the range). A sharding is charged
    at least what the data parallelism it replaces would cost (``replaced_ddp``; module docstring)."""
    link = ring_gbps(gpu, n_gpus)
    if n_gpus <= 1 or not link:
        return 0.0

    def cost(methods: Methods) -> float:
        t = collectives(methods, n_gpus, params, dtype_bytes, gas)
        return t.total / (link * 1e9) if micro_step_s is None else exposed_s(t, link, micro_step_s, gas)

    if m.sharding == "none":
        return cost(m)
    return max(cost(m), cost(replaced_ddp(m)))


def replaced_ddp(m: Methods) -> Methods:
    """The data parallelism a sharding ``m`` replaces, in the same library and gradient dtype: DeepSpeed's
    bf16 mode keeps bf16 weights and reduces bf16 gradients without ZeRO too (the study's ``bf16_weights`` DDP),
    FSDP reduces in fp32 as torch DDP under autocast does."""
    return Methods(compile=m.compile, kernels=m.kernels, tf32=m.tf32, checkpointing=m.checkpointing,
                   bf16_weights=m.uses_deepspeed)


def host_bytes_split(m: Methods, n_gpus: int, params: float, dtype_bytes: int, gas: int) -> tuple[float, float]:
    """(bytes copied in the micro-steps, bytes copied at the boundary) over one GPU's host link per optimizer step
    with offloading (0 without): DeepSpeed moves the gradient partition's running sum between the GPU and the host
    in each micro-step (ZeRO-1 sends it at the boundary only, in fp32) and copies the updated weights back, and
    ZeRO-3 fetches its weight shard from the host in each forward and backward; FSDP2's CPUOffloadPolicy copies
    the fp32 weight shard in for each all-gather and the fp32 gradient shard out at the boundary. The first
    repeat with the accumulation steps, so a step of fewer, larger micro-steps copies less per sample."""
    if not m.offload or m.sharding == "none":
        return 0.0, 0.0
    shard = params / n_gpus
    if m.uses_deepspeed:
        # ZeRO-2 and ZeRO-3 keep the gradient partition's running sum on the host (DeepSpeed 0.19): ZeRO-2 sends
        # it out after every micro-step once there is more than one and brings it back to add to each after the
        # first (stage_1_and_2.py, async_accumulate_grad_in_cpu_via_gpu); ZeRO-3 sends it out and brings it back
        # in every micro-step (stage3.py, partition_grads); both in 16 bits, then fp32 once at the boundary.
        # ZeRO-1 sends the fp32 gradients at the boundary only.
        sixteen = {"zero1": 0, "zero2": 2 * gas - 1 if gas > 1 else 0, "zero3": 2 * gas}[m.sharding]
        # Weights: ZeRO-3 fetches its shard in each forward and backward; the others copy it back once updated.
        fetches, back = (2 * gas, 0) if m.sharding == "zero3" else (0, 1)
        return (sixteen + fetches) * shard * dtype_bytes, shard * FP32 + back * shard * dtype_bytes
    gathers = 2 if m.sharding == "fsdp_full_shard" else 1
    return gas * gathers * shard * FP32, shard * FP32


def host_bytes(m: Methods, n_gpus: int, params: float, dtype_bytes: int, gas: int) -> float:
    """Bytes one GPU copies over its host link per optimizer step with offloading (``host_bytes_split``, both
    parts)."""
    return sum(host_bytes_split(m, n_gpus, params, dtype_bytes, gas))


# The offloading methods whose per-micro-step copies the study's phases show exposed
# (``offload_phases.micro_step_excess``: the accumulating micro-step beyond ZeRO-1 + offload's at the same
# micro-batch is about what the copies take, for FSDP on every model and for ZeRO-2 on the 1B and larger ones; on
# Pythia-160M ZeRO-2's is more, a per-micro-step cost of its own besides the copies, which stays carried per sample).
# ZeRO-3's excess does not follow its copies (far above them on a small model, below them on a large one):
# DeepSpeed prefetches its weight shards and its hooks cost per micro-step, so its micro-steps are carried as
# measured.
COPIES_EXPOSED = ("zero2", "fsdp_full_shard", "fsdp_shard_grad_op")


def micro_step_copy_s(m: Methods, n_gpus: int, gpu: GPU, params: float, dtype_bytes: int, gas: int) -> float:
    """Seconds per optimizer step of the host copies that repeat in every micro-step (``host_bytes_split``'s
    first part) over ``gpu``'s host link (``GPU.pcie_gbps``, per direction)."""
    moved = host_bytes_split(m, n_gpus, params, dtype_bytes, gas)[0]
    if not moved:
        return 0.0
    if not gpu.pcie_gbps:
        raise ValueError(f"the GPU catalog has no pcie_gbps for {gpu.key!r} (data/gpus.csv)")
    return moved / (gpu.pcie_gbps * 1e9)


def host_copy_s(m: Methods, n_gpus: int, gpu: GPU, params: float, dtype_bytes: int, gas: int) -> float:
    """Seconds per optimizer step of offloading's copies over the host link (``GPU.pcie_gbps``, per direction;
    charged whole: the study's offloaded steps wait for them)."""
    moved = host_bytes(m, n_gpus, params, dtype_bytes, gas)
    if not moved:
        return 0.0
    if not gpu.pcie_gbps:
        raise ValueError(f"the GPU catalog has no pcie_gbps for {gpu.key!r} (data/gpus.csv)")
    return moved / (gpu.pcie_gbps * 1e9)


def optimizer_shards(m: Methods, n_gpus: int) -> int:
    """Over how many GPUs ``m`` splits the optimizer step: all of them with sharding (ZeRO and FSDP keep each GPU's
    shard of the optimizer states and step it alone), none without (each GPU steps every parameter)."""
    return n_gpus if m.sharding != "none" else 1


def host_optimizer_s(m: Methods, n_gpus: int, params: float, rates: Mapping[str, float]) -> float:
    """Seconds of the optimizer step on the host with offloading (0 without): each GPU's shard of the
    parameters at ``rates[engine]`` seconds per parameter (``measured_host_rates``)."""
    if not m.offload or m.sharding == "none":
        return 0.0
    return params / n_gpus * rates[engine(m)]


@lru_cache(maxsize=4)
def measured_host_rates(root: str | None = None) -> dict[str, float]:
    """Seconds per parameter of the host's optimizer step, per library (``ENGINES``), from every counted row of
    the runs in ``root`` (default the shipped runs; ``host_rates_of``)."""
    from ..analysis import counted, runs_frame

    return host_rates_of(counted.results(runs_frame(root)))


def host_rates_of(rows: pd.DataFrame) -> dict[str, float]:
    """Seconds per parameter of the host's optimizer step, per library (``ENGINES``), from counted result rows
    (``analysis.counted.results``): the median over their offloaded Pythia rows of the optimizer phase x GPUs /
    parameters, or over every offloaded model's rows for a library no Pythia row ran under. The optimizer phase
    also holds the copy of the updated weights back to the GPU, which is small beside the host's arithmetic."""
    from ..estimate import model_stats

    rows = rows[rows["offload"].astype(bool) & rows["optimizer_median_s"].notna()]
    if rows.empty:
        raise ValueError("no counted offloaded run to take the host's optimizer rate from")
    per_param = rows["optimizer_median_s"] * rows["n_gpus"] / rows["model"].map(lambda k: model_stats(k).params)
    library = rows["sharding"].str.startswith("zero").map({True: "deepspeed", False: "fsdp"})
    pythia = rows["model"].str.startswith("pythia")
    out = {k: float(v) for k, v in per_param[pythia].groupby(library[pythia]).median().items()}
    for k, v in per_param.groupby(library).median().items():
        out.setdefault(k, float(v))
    return out


def method_s(m: Methods, n_gpus: int, gpu: GPU, params: float, dtype_bytes: int, gas: int,
             rates: Mapping[str, float]) -> dict[str, float]:
    """Seconds per optimizer step each cost of ``m`` adds on ``n_gpus`` x ``gpu`` beyond the compute of the
    micro-steps: the collectives (whole), offloading's host copies and host optimizer step."""
    return {"collectives": collective_s(m, n_gpus, gpu, params, dtype_bytes, gas),
            "host copies": host_copy_s(m, n_gpus, gpu, params, dtype_bytes, gas),
            "host optimizer": host_optimizer_s(m, n_gpus, params, rates)}


SHARDING_PAIR_COLUMNS = ["setup", "model", "methods", "step_time_s", "state", "ddp_methods", "ddp_step_time_s",
                         "ddp_state"]


def sharding_beside_ddp(root: str | None = None) -> pd.DataFrame:
    """Every synchronised step measurement of a sharding on several GPUs, beside the DDP measurement of the same
    model, setup and other methods, each with its state: "counted", or why it is not a result
    (``analysis.counted.uncounted``): the evidence for the rule that a sharding is never charged less than DDP."""
    import pandas as pd

    from ..analysis import counted, runs_frame

    df = runs_frame(root)
    if df.empty:
        return pd.DataFrame(columns=SHARDING_PAIR_COLUMNS)
    step = df[(df["timing"] == "synced") & (df["mode"] == "step") & ~df["tiny"].astype(bool)
              & df["step_time_s"].notna() & (df["n_gpus"] > 1)]
    counted_ids = set(counted.results(df).index)
    why = counted.uncounted(df)["why"]
    state = {i: "counted" if i in counted_ids else str(why.get(i, "not a result")) for i in step.index}
    same = ["setup", "model", "compile", "kernels", "tf32", "checkpointing"]
    ddp = step[(step["sharding"] == "none") & ~step["offload"].astype(bool)]
    rows = []
    for i, r in step[step["sharding"] != "none"].iterrows():
        mates = ddp[(ddp[same] == r[same]).all(axis=1)]
        d = mates.iloc[0] if len(mates) else None
        rows.append({"setup": r["setup"], "model": r["model"], "methods": r["methods_label"],
                     "step_time_s": r["step_time_s"], "state": state[i],
                     "ddp_methods": None if d is None else d["methods_label"],
                     "ddp_step_time_s": None if d is None else d["step_time_s"],
                     "ddp_state": None if d is None else state[d.name]})
    return pd.DataFrame(rows, columns=SHARDING_PAIR_COLUMNS)


ZERO3_PAIR_COLUMNS = ["setup", "model", "methods", "micro_batch", "zero1_micro_batch", "copies_s", "per_sample_ratio"]


def zero3_beside_zero1(root: str | None = None) -> pd.DataFrame:
    """Every counted one-GPU ZeRO-3 row beside the counted ZeRO-1 row of the same setup, model and other methods:
    ``per_sample_ratio``, its accumulating micro-step per sample over ZeRO-1's, once the host copies that
    ``host_bytes`` charges each ZeRO-3 micro-step with offloading (``copies_s``: the gradients' running sum in and
    out, the weights in for the forward and the backward, at the host link's datasheet rate) are taken off.
    Above 1 it is what re-pricing ZeRO-1 to ZeRO-3 (``other_methods.with_methods``) does not charge: a cost of
    the micro-step's work, counted per sample, rather than of the bytes fetched."""
    import pandas as pd

    from ..analysis import counted, runs_frame
    from ..catalog.hardware import get_gpu
    from ..catalog.models import get_model
    from ..estimate import BYTES, model_stats

    rows = counted.results(runs_frame(root))
    if rows.empty:
        return pd.DataFrame(columns=ZERO3_PAIR_COLUMNS)
    rows = rows[(rows["n_gpus"] == 1) & rows["sharding"].isin(["zero1", "zero3"]) & rows["accumulate_median_s"].notna()]
    same = ["setup", "model", "compile", "kernels", "tf32", "checkpointing", "offload"]
    out = []
    for _, z3 in rows[rows["sharding"] == "zero3"].iterrows():
        mates = rows[(rows["sharding"] == "zero1") & (rows[same] == z3[same]).all(axis=1)]
        if mates.empty:
            continue
        z1 = mates.iloc[0]
        m = Methods(sharding="zero3", offload=bool(z3["offload"]))
        params, c = float(model_stats(z3["model"]).params), BYTES[get_model(z3["model"]).recipe.precision]
        gpu = get_gpu(str(z3["gpu"]))
        # What host_bytes charges each micro-step: one more micro-step's copies (the gradients' running sum in and
        # out, the weights in twice).
        copies = host_copy_s(m, 1, gpu, params, c, 2) - host_copy_s(m, 1, gpu, params, c, 1)
        per_sample = (z3["accumulate_median_s"] - copies) / z3["micro_batch"]
        ratio = per_sample / (z1["accumulate_median_s"] / z1["micro_batch"])
        out.append({"setup": z3["setup"], "model": z3["model"], "methods": z3["methods_label"],
                    "micro_batch": int(z3["micro_batch"]), "zero1_micro_batch": int(z1["micro_batch"]),
                    "copies_s": copies, "per_sample_ratio": float(ratio)})
    return pd.DataFrame(out, columns=ZERO3_PAIR_COLUMNS)
