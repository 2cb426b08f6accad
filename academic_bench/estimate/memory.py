"""The memory model: peak memory per GPU of a configuration at a micro-batch, the largest micro-batch predicted to
fit, and what offloading needs from the host.

**Memory** per GPU at the peak of a micro-step (end of forward, start of backward), for the way
``measure/`` runs each configuration:
- No sharding (one GPU, or DDP): fp32 weights (4 B/param), fp32 gradients (4), Adam's two fp32 moments (8).
  16-bit recipes run under ``torch.autocast``, which keeps those fp32 tensors and saves a 16-bit copy of every
  weight for backward (2 more B/param), except of the weights of linear layers trained in FP8 (torchao's float8
  layers cast the fp32 weight to FP8 themselves). DDP adds its fp32 gradient buckets (4): the gradients that the
  accumulating micro-steps allocate after ``zero_grad(set_to_none=True)`` are not views of them. Weights built
  in 16 bits (``weight_bytes`` 2: a config.json decoder measured before its build was made fp32) train
  purely in 16 bits: 16-bit weights, gradients and Adam moments (8 B/param), no copy.
- DeepSpeed ZeRO-1/2/3 (its own fp16/bf16 mode): weights and gradients in the recipe's dtype (2 or 4 B/param),
  optimizer states 12 B/param (fp32 master copy + two moments; DeepSpeed keeps the fp32 copy even for fp32
  models). Stage 1 shards the optimizer states over the GPUs, stage 2 also the gradients, stage 3 also the
  weights. Stages 1/2 add two gradient buckets of ``reduce_bucket_size`` elements (``overlap_comm``), stage 3
  one, plus the parameters it keeps gathered (up to ``stage3_max_live_parameters``; reuse within
  ``stage3_max_reuse_distance`` keeps them, so small models stay gathered). Offload moves the optimizer states
  to the CPU (stages 1/2) and the weights too (stage 3).
- FSDP2 (``fully_shard`` per block, 16-bit ``MixedPrecisionPolicy``): fp32 weights, fp32 gradients and Adam
  states sharded (4 + 4 + 8 B/param over the GPUs). Shard-grad-op keeps every block's 16-bit unsharded
  weights from forward to backward (ZeRO-2-like); full-shard keeps the root's (embeddings, head) plus
  ``gathered_units`` blocks (ZeRO-3-like). Offload (``CPUOffloadPolicy``) keeps sharded weights, gradients and
  optimizer states on the CPU.
- Activations: ``activations`` (compiled decoders with fused attention from their shape; Korthikanti et al.
  2022 otherwise; the loss; vision models and Mamba). The residual stream is fp32 where fp32 weights run under
  autocast (the PyTorch path), 16-bit where DeepSpeed or FSDP cast the weights.
- Overhead: CUDA context, cuBLAS workspace, NCCL (more than one GPU) and an allocator-fragmentation allowance.

Every constant of the memory model is a field of ``Coefficients`` (``coefficients``): calibrate them against
measured peaks (``results.jsonl`` rows carry ``peak_memory_gb``, ``torch.cuda.max_memory_allocated``, which
compares with ``MemoryEstimate.allocated``; ``total`` adds what the allocator does not see). Memory is in bytes;
GiB = 2**30 bytes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ..catalog.config import Config

from .activations import activation_profile, saved_tensor_profile  # noqa: F401
from .coefficients import COEFFICIENTS, Coefficients
from .facts import ActivationProfile, ModelStats  # noqa: F401
from .stats import BYTES, GIB, model_stats

@dataclass(frozen=True)
class MemoryEstimate:
    """Predicted memory of one GPU at the peak of a micro-step, in bytes (``cpu``: offloaded to host memory).

    ``allocated`` compares with ``torch.cuda.max_memory_allocated``; ``total`` (plus context, workspace and
    fragmentation) is what must fit in the GPU.
    """

    weights: float
    gradients: float
    optimizer_states: float
    activations: float
    buffers: float  # communication buckets (DeepSpeed, DDP)
    overhead: float  # CUDA context, workspace, NCCL, fragmentation allowance
    cpu: float = 0.0

    @property
    def allocated(self) -> float:
        return self.weights + self.gradients + self.optimizer_states + self.activations + self.buffers

    @property
    def total(self) -> float:
        return self.allocated + self.overhead

    def gib(self) -> dict[str, float]:
        """Every field and the totals in GiB, for printing and JSON."""
        return {k: v / GIB for k, v in {**asdict(self), "allocated": self.allocated, "total": self.total}.items()}


@dataclass(frozen=True)
class _States:
    weights: float
    gradients: float
    optimizer_states: float
    buffers: float = 0.0
    cpu: float = 0.0


def _ddp_states(n: int, c: int, st: ModelStats, w: int = 4, fp8: bool = False) -> _States:
    """Plain model or DDP, weights of ``w`` bytes. Autocast saves 16-bit copies of wider weights, except of the
    blocks' weights where they train in FP8 (``fp8``: torchao's float8 layers cast the weight itself to FP8 and
    keep no 16-bit copy; the few linear layers FP8 leaves out for their shape are not told apart). DDP's buckets
    (in the weights' dtype) hold every gradient; with ``gradient_as_bucket_view`` the gradients would be views of
    them, but the step zeroes with ``set_to_none=True``, so the accumulating micro-steps (under ``no_sync``)
    allocate their gradients afresh beside the buckets: one more copy of the gradients on every rank. Adam's
    moments take the weights' dtype."""
    autocast_copy = c * (st.params - (sum(st.block_params) if fp8 else 0)) if c < w else 0.0
    buckets = float(w) * st.params if n > 1 else 0.0
    return _States(float(w) * st.params + autocast_copy, float(w) * st.params, 2.0 * w * st.params, buckets)


def _zero_states(stage: int, offload: bool, n: int, c: int, st: ModelStats, k: Coefficients) -> _States:
    p = st.params
    weights, grads, opt = c * p, c * p, 12.0 * p / n
    if stage >= 2:
        grads /= n
    buffers = (2 if stage < 3 else 1) * k.zero_bucket_elements * c
    cpu = 0.0
    if stage == 3:
        gathered = c * min(p, k.zero3_live_params)
        weights = weights / n + gathered
    if offload:
        # ZeRO-Offload keeps an fp32 gradient partition beside the optimizer's on the CPU at every stage; from
        # stage 2 the GPU holds no gradients, only the buckets (``buffers``).
        cpu, opt = opt + 4.0 * p / n, 0.0
        if stage >= 2:
            grads = 0.0
        if stage == 3:
            cpu += weights - gathered
            weights = gathered
    return _States(weights, grads, opt, buffers, cpu)


def _fsdp_states(full_shard: bool, offload: bool, n: int, c: int, st: ModelStats, k: Coefficients) -> _States:
    p = st.params
    if full_shard:
        biggest = max(st.block_params, default=0)
        unsharded = c * min(p, st.root_params + k.gathered_units * biggest)
    else:
        unsharded = c * p  # every block's unsharded weights stay from forward to backward
    sharded = _States(4.0 * p / n, 4.0 * p / n, 8.0 * p / n)
    if offload:
        cpu = sharded.weights + sharded.gradients + sharded.optimizer_states
        return _States(unsharded, 0.0, 0.0, 0.0, cpu)
    return _States(sharded.weights + unsharded, sharded.gradients, sharded.optimizer_states)


def _states(config: Config, k: Coefficients, weight_bytes: int = 4) -> _States:
    m, n = config.methods, config.n_gpus
    c = BYTES[config.recipe.precision]
    st = model_stats(config.spec.key, config.tiny)
    if m.uses_deepspeed:
        return _zero_states(int(m.sharding[-1]), m.offload, n, c, st, k)
    if m.uses_fsdp:
        return _fsdp_states(m.sharding == "fsdp_full_shard", m.offload, n, c, st, k)
    # With bf16 weights the 16-bit "copy" is the weights themselves, which FP8 keeps too.
    return _ddp_states(n, c, st, weight_bytes, m.fp8 != "none" and not m.bf16_weights)


def residual_bytes(config: Config, weight_bytes: int = 4) -> int:
    """Bytes of one residual-stream element: the weights' own where the PyTorch path autocasts them (an fp32
    embedding's output stays fp32 through the residual additions), the recipe's where DeepSpeed or FSDP cast the
    weights to it."""
    c = BYTES[config.recipe.precision]
    return c if config.methods.uses_deepspeed or config.methods.uses_fsdp else max(c, weight_bytes)


def predict_memory(config: Config, micro_batch: int, coeffs: Coefficients = COEFFICIENTS,
                   weight_bytes: int = 4) -> MemoryEstimate:
    """Predicted per-GPU memory of ``config`` at ``micro_batch`` samples per micro-step, its model built with
    weights of ``weight_bytes`` (4, as every model is built now; 2 for the config.json decoders measured while
    their build took the config's 16-bit dtype)."""
    if micro_batch < 1:
        raise ValueError(f"the micro-batch must be at least 1, got {micro_batch}")
    k, m = coeffs, config.methods
    s = _states(config, k, weight_bytes)
    if m.fused_ce:
        k = replace(k, chunked_loss=True)
    # bf16 weights (beyond the paper) keep the residual stream in bf16; their states take the same bytes per
    # parameter as fp32 weights' (2 + 2 for weights and gradients, 4 for the fp32 master, beside Adam's 8).
    residual = residual_bytes(config, 2 if m.bf16_weights else weight_bytes)
    profile = activation_profile(config.spec, config.tiny, m.kernels, k, residual, m.fp8 != "none")
    activations = profile.per_sample(m.checkpointing) * micro_batch * k.activation_scale
    allocated = s.weights + s.gradients + s.optimizer_states + activations + s.buffers
    fixed = k.cuda_context_gib + k.workspace_gib + (k.nccl_gib if config.n_gpus > 1 else 0.0)
    overhead = fixed * GIB + k.fragmentation * allocated
    return MemoryEstimate(s.weights, s.gradients, s.optimizer_states, activations, s.buffers, overhead, s.cpu)


# DeepSpeed's own estimators (``estimate_zero2/3_model_states_mem_needs``) multiply offloaded states by this
# ``additional_buffer_factor`` for pinned staging buffers and allocator slack.
HOST_BUFFER_FACTOR = 1.5


def host_memory_need(config: Config, coeffs: Coefficients = COEFFICIENTS) -> float:
    """Bytes of host memory one node needs for the states its ranks offload (0 without offloading)."""
    per_node = config.n_gpus // max(1, config.nodes)
    return _states(config, coeffs).cpu * per_node * HOST_BUFFER_FACTOR


def host_memory_verdict(config: Config, host_memory_gib: float | None = None) -> dict | None:
    """Whether the states ``config`` offloads fit the host memory of its machine (``host_memory_gib``, else the
    paper's machine for its GPUs per node, ``paper.typical_host_memory``): {"fits", "need_gib", "have_gib",
    "source", "reason"}; None without offloading. "fits" is None where no host memory is known."""
    from ..catalog.paper import typical_host_memory

    need = host_memory_need(config) / GIB
    if not need:
        return None
    per_node = config.n_gpus // max(1, config.nodes)
    typical = typical_host_memory(per_node) if host_memory_gib is None else (host_memory_gib, "--host-memory")
    if typical is None:
        return {"fits": None, "need_gib": need, "have_gib": None, "source": None,
                "reason": f"offloading needs {need:,.1f} GiB of host memory per machine; no machine of the paper "
                          f"hosts {per_node} GPUs, so it is unchecked: pass --host-memory GiB"}
    have, source = typical  # DIMMs come in binary sizes: a "64 GB" desktop holds 64 GiB
    fits = need <= have
    return {"fits": fits, "need_gib": need, "have_gib": have, "source": source,
            "reason": f"offloaded states need {need:,.1f} GiB of host memory per machine (with DeepSpeed's "
                      f"{HOST_BUFFER_FACTOR:g}x buffers), {'within' if fits else 'more than'} the {have:,.0f} GiB "
                      f"of {source}" + ("" if fits or host_memory_gib is not None else
                                         "; pass --host-memory GiB for another machine")}


def host_fits(config: Config) -> bool:
    """Whether the states ``config`` offloads fit the host memory of the paper's machine for its GPUs per node
    (``host_memory_verdict``); True without offloading or where no such machine is known."""
    host = host_memory_verdict(config)
    return host is None or host["fits"] is not False


def usable_bytes(gpu_memory_gb: float, coeffs: Coefficients = COEFFICIENTS) -> float:
    """Bytes a GPU of the catalog's nominal size offers (the nominal size is read as GiB)."""
    return gpu_memory_gb * GIB * coeffs.usable_fraction


def micro_batch_choices(config: Config) -> list[int]:
    """Powers of two that divide the per-GPU batch, smallest first (the measured search's candidates)."""
    out, mbs = [], 1
    while mbs <= config.per_gpu_batch and config.per_gpu_batch % mbs == 0:
        out.append(mbs)
        mbs *= 2
    return out


def max_micro_batch(config: Config, gpu_memory_gb: float, coeffs: Coefficients = COEFFICIENTS) -> int | None:
    """Largest power-of-two micro-batch (up to the per-GPU batch) predicted to fit; None if 1 does not."""
    capacity, best = usable_bytes(gpu_memory_gb, coeffs), None
    for mbs in micro_batch_choices(config):
        if predict_memory(config, mbs, coeffs).total > capacity:
            break
        best = mbs
    return best
