"""The memory model: peak memory per GPU of a configuration at a micro-batch, the largest micro-batch predicted to
fit, and what offloading needs from the host.

**Memory** per GPU at the peak of a micro-step (end of forward, start of backward), for the way
``measure/`` runs each configuration:
- No sharding (one GPU, or DDP): fp32 weights (4 B/param), fp32 gradients (4), Adam's two fp32 moments (8).
  16-bit recipes run under ``torch.autocast``, which keeps those fp32 tensors and saves a 16-bit copy of every
  weight for backward (2 more B/param). DDP adds its fp32 gradient buckets (4): the gradients that the
  accumulating micro-steps allocate after ``zero_grad(set_to_none=True)`` are not views of them.
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
- Activations: transformers by Korthikanti et al. 2022 (*Reducing Activation Recomputation in Large
  Transformer Models*, Sec. 4.1): ``s*b*h*(34 + 5*a*s/h)`` bytes per layer for 16-bit activations; the
  ``a*s^2`` term drops with SDPA/flash attention. Checkpointing keeps each layer's input plus the larger of
  one layer's activations (recomputed in backward) and the head's. The LM logits (``s*b*V``) add their own
  bytes plus the fp32 log-softmax kept for backward and the two fp32 gradients that exist together at the
  start of backward. Vision models and Mamba's reference path: the bytes autograd saves for backward,
  recorded with ``saved_tensors_hooks`` on a meta-device forward of one sample and attributed to the
  checkpointed blocks. Mamba with mamba-ssm kernels: what its fused function saves (``mamba_fused_layer``).
- Overhead: CUDA context, cuBLAS workspace, NCCL (more than one GPU) and an allocator-fragmentation allowance.

Every constant of the memory model is a field of ``Coefficients``: calibrate them against measured peaks
(``results.jsonl`` rows carry ``peak_memory_gb``, ``torch.cuda.max_memory_allocated``, which compares with
``MemoryEstimate.allocated``; ``total`` adds what the allocator does not see). Memory is in bytes;
GiB = 2**30 bytes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..catalog.config import Config
from ..catalog.models import ModelSpec

from .facts import ActivationProfile, ModelStats, saved_tensors_of
from .stats import BYTES, GIB, MAMBA_COUNT_TOKENS, model_stats, spec_of

# --- memory: the coefficients ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Coefficients:
    """Every constant of the memory model, in one place to calibrate against measured peaks.

    Defaults come from the cited sources and library defaults; the overhead terms are assumptions.
    """

    # Activations. Korthikanti et al. 2022 Sec. 4.1: bytes per s*b*h per transformer layer, 16-bit values.
    transformer_layer: float = 34.0
    # x a*s/h per layer, only when attention scores are materialised (eager). Korthikanti et al. count 5 (16-bit
    # scores and probabilities, a 1-byte dropout mask); transformers' eager attention keeps the softmax output
    # in fp32 (4 bytes) and its 16-bit copy for the value product (2): 6, which the shipped naive runs confirm.
    attention_scores: float = 6.0
    # With dropout on the probabilities, the value product takes the dropout's 16-bit output instead of the
    # copy, and dropout keeps its 1-byte mask: one byte more per score.
    attention_dropout_mask: float = 1.0
    # mamba-ssm's fused function (checkpoint_lvl 1) saves xz (4h), x_dbl and out (2h) in 16-bit; the block
    # adds its fp32 residual (h) and the normalised input (h): about 18 bytes per token per hidden unit.
    mamba_fused_layer: float = 18.0
    # LM logits at the start of backward: the fp32 log-softmax kept for backward and the two fp32 gradients
    # (of the loss's log-softmax output and of its input) before either is freed.
    loss_fp32_copies: float = 3.0
    activation_scale: float = 1.0  # one multiplier on all activations (calibration)
    # Sharded and distributed states (DeepSpeed and FSDP defaults as measure/apply.py configures them).
    zero_bucket_elements: float = 5e8  # DeepSpeed reduce_bucket_size default
    zero3_live_params: float = 1e9  # DeepSpeed stage3_max_live_parameters / max_reuse_distance defaults
    gathered_units: float = 2.0  # FSDP full-shard: the block running plus the one prefetched
    # Overhead outside the model's tensors (assumptions).
    cuda_context_gib: float = 0.5
    workspace_gib: float = 0.25  # cuBLAS/cuDNN workspaces
    nccl_gib: float = 0.5  # communicator buffers when more than one GPU
    fragmentation: float = 0.10  # caching-allocator reserve beyond allocated bytes, as a fraction
    usable_fraction: float = 0.99  # of the catalog's nominal memory (as GiB) that the driver reports


COEFFICIENTS = Coefficients()


# --- memory: activations ---------------------------------------------------------------------------------

def saved_tensor_profile(model: ModelSpec | str, tiny: bool, attn: str, dtype: str, seq_len: int | None = None
                         ) -> ActivationProfile:
    """Bytes autograd saves for backward in one forward of one sample (meta device: ``meta.saved_tensor_bytes``;
    kept for the catalog), by checkpointed block."""
    return saved_tensors_of(spec_of(model).key, tiny, attn, dtype, seq_len)


def _logits_bytes(seq: int, vocab: int, k: Coefficients) -> float:
    """The fp32 tensors of the loss alive at the start of backward. The compute-dtype logits are not among
    them: the step keeps only ``outputs.loss`` (``models.loss_of``), and the fp32 upcast saves nothing."""
    return seq * vocab * 4 * k.loss_fp32_copies


def _attention_impl(spec: ModelSpec, kernels: bool) -> str:
    """The attention measure/ runs: eager without kernels, a fused kernel (SDPA or flash) with them."""
    return "sdpa" if kernels and spec.kernel == "sdpa" else "eager"


def activation_profile(model: ModelSpec | str, tiny: bool, kernels: bool,
                       k: Coefficients = COEFFICIENTS) -> ActivationProfile:
    """Activation bytes of one sample for the model family (see the module docstring)."""
    spec = spec_of(model)
    r = spec.recipe_for(tiny)
    c = BYTES[r.precision]
    if spec.transformer_shape is not None:
        layers, h = spec.transformer_shape(tiny)
        st = model_stats(spec.key, tiny)
        s, a = r.seq_len, st.heads
        per_score = k.attention_scores + (k.attention_dropout_mask if st.attention_dropout > 0 else 0.0)
        attn = 0.0 if _attention_impl(spec, kernels) != "eager" else per_score * a * s / h
        layer = s * h * (k.transformer_layer + attn) * c / 2  # the paper's constants are for 2-byte values
        head = s * h * c + _logits_bytes(s, r.vocab_size, k)
        return ActivationProfile((layer,) * layers, (s * h * c,) * layers, head)
    if spec.kernel == "mamba-ssm":
        s, st = r.seq_len, model_stats(spec.key, tiny)
        net_h = st.hidden
        head = s * net_h * c + _logits_bytes(s, r.vocab_size, k)
        if kernels:  # mamba-ssm's fused function; the residual stream is fp32
            n = len(st.block_params)
            return ActivationProfile((k.mamba_fused_layer * s * net_h * c / 2,) * n, (4.0 * s * net_h,) * n, head)
        short = min(MAMBA_COUNT_TOKENS, s)
        ref = saved_tensor_profile(spec, tiny, "eager", r.precision, short).scaled(s / short)
        return ActivationProfile(ref.blocks, ref.block_inputs, head)
    return saved_tensor_profile(spec, tiny, _attention_impl(spec, kernels), r.precision)


# --- memory: states and the estimate ---------------------------------------------------------------------

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


def _ddp_states(n: int, c: int, st: ModelStats) -> _States:
    """Plain model or DDP. Autocast saves 16-bit weight copies. DDP's fp32 buckets hold every gradient; with
    ``gradient_as_bucket_view`` the gradients would be views of them, but the step zeroes with
    ``set_to_none=True``, so the accumulating micro-steps (under ``no_sync``) allocate their gradients afresh
    beside the buckets: one more fp32 copy of the gradients on every rank."""
    autocast_copy = c * st.params if c < 4 else 0.0
    buckets = 4.0 * st.params if n > 1 else 0.0
    return _States(4.0 * st.params + autocast_copy, 4.0 * st.params, 8.0 * st.params, buckets)


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


def _states(config: Config, k: Coefficients) -> _States:
    m, n = config.methods, config.n_gpus
    c = BYTES[config.recipe.precision]
    st = model_stats(config.spec.key, config.tiny)
    if m.uses_deepspeed:
        return _zero_states(int(m.sharding[-1]), m.offload, n, c, st, k)
    if m.uses_fsdp:
        return _fsdp_states(m.sharding == "fsdp_full_shard", m.offload, n, c, st, k)
    return _ddp_states(n, c, st)


def predict_memory(config: Config, micro_batch: int, coeffs: Coefficients = COEFFICIENTS) -> MemoryEstimate:
    """Predicted per-GPU memory of ``config`` at ``micro_batch`` samples per micro-step."""
    if micro_batch < 1:
        raise ValueError(f"the micro-batch must be at least 1, got {micro_batch}")
    k, m = coeffs, config.methods
    s = _states(config, k)
    profile = activation_profile(config.spec, config.tiny, m.kernels, k)
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
