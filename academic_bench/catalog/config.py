"""A configuration to measure: (model, GPU type, GPU count, nodes, methods, micro-batch), with a stable id."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field

from .hardware import get_gpu
from .methods import FP8_MULTIPLE, FREE_LUNCH, Methods, beyond_paper_variants, exclusion_reason, hardware_reason
from .models import get_model


def run_name(model: str, gpu: str, n_gpus: int, tiny: bool = False, device: str | None = None) -> str:
    """How every output names a run: 'pythia-1b on 1 x h100-80gb'; a tiny variant never with a GPU's name, which
    would read as that GPU's result: 'tiny pythia-160m on the CPU (a workshop run, not a GPU result)'."""
    if not tiny:
        return f"{model} on {n_gpus} x {gpu}"
    where = {"cpu": " on the CPU", "cuda": f" on {n_gpus} GPU(s)"}.get(device or "", "")  # unrecorded: not said
    return f"tiny {model}{where} (a workshop run, not a GPU result)"


@dataclass(frozen=True)
class Config:
    model: str
    gpu: str
    n_gpus: int = 1
    nodes: int = 1
    methods: Methods = field(default_factory=Methods)
    micro_batch: int | None = None  # None: find the largest that fits
    tiny: bool = False  # the CPU/workshop variant of the model

    def __post_init__(self) -> None:
        if self.n_gpus < 1:
            raise ValueError(f"the GPU count must be at least 1, got {self.n_gpus}")
        if self.nodes < 1 or self.n_gpus % self.nodes:
            raise ValueError(f"{self.n_gpus} GPUs cannot be split evenly over {self.nodes} nodes")

    @property
    def spec(self):
        return get_model(self.model)

    @property
    def recipe(self):
        return self.spec.recipe_for(self.tiny)

    @property
    def per_gpu_batch(self) -> int:
        """Samples each GPU processes per optimizer step (the global batch is never changed)."""
        return self.recipe.global_batch // self.n_gpus

    def gas(self, micro_batch: int | None = None) -> int:
        """Gradient accumulation steps: global batch / (micro-batch x GPUs)."""
        mbs = micro_batch or self.micro_batch
        if not mbs:
            raise ValueError("the micro-batch is not known yet")
        return self.per_gpu_batch // mbs

    @property
    def smallest_micro_batch(self) -> int:
        """The smallest micro-batch the methods allow, and the step between sizes: 1, except under FP8 training,
        whose weight-gradient products take the micro-batch's tokens (micro-batch x sequence length) as one
        dimension, which must be divisible by ``FP8_MULTIPLE``: Pythia's 2049-token sequences need 16 (a
        Pythia-6.9B at micro-batch 1 and 2 stopped there with "size(1)=2049 not divisible by 16")."""
        if self.methods.fp8 == "none" or self.spec.task == "image-classification":
            return 1
        return FP8_MULTIPLE // math.gcd(self.recipe.seq_len, FP8_MULTIPLE)

    def check(self) -> None:
        """Stop before any work when the combination cannot run; the message names the choices."""
        spec = get_model(self.model)
        if not self.tiny:
            get_gpu(self.gpu)  # an unknown GPU names the catalog's
        check_gpu_count(spec.key, self.n_gpus, self.tiny)
        if self.micro_batch is not None:
            if self.micro_batch < 1 or self.per_gpu_batch % self.micro_batch:
                divisors = [d for d in range(1, self.per_gpu_batch + 1) if self.per_gpu_batch % d == 0]
                raise ValueError(f"micro-batch {self.micro_batch} must divide the per-GPU batch "
                                 f"{self.per_gpu_batch}; choose one of: {divisors}")
            step = self.smallest_micro_batch
            if self.micro_batch % step:
                allowed = [d for d in range(step, self.per_gpu_batch + 1, step) if self.per_gpu_batch % d == 0]
                raise ValueError(f"micro-batch {self.micro_batch} cannot run FP8 training: its tokens "
                                 f"({self.micro_batch} x {self.recipe.seq_len}) must be divisible by {FP8_MULTIPLE}; "
                                 f"choose one of: {allowed}")
        reason = self.methods_reason()
        if reason:
            raise ValueError(f"invalid combination ({self.methods.label()} on {self.n_gpus} GPU(s)): {reason}")

    def refusal(self) -> str | None:
        """Why ``check`` stops this configuration (its message), or None where it can run: a sweep's ``invalid``
        row, written before any work."""
        try:
            self.check()
        except ValueError as exc:
            return str(exc)
        return None

    def methods_reason(self) -> str | None:
        """Why this configuration's methods cannot run (None when they can): the model's rule
        (``model_reason``), the combination's (``methods.exclusion_reason``), then the GPU's
        (``methods.hardware_reason``, the recipe's precision among them; a tiny variant, or a configuration with no GPU
        named yet, has none)."""
        spec = get_model(self.model)
        reason = model_reason(spec, self.tiny, self.methods) or exclusion_reason(self.methods, self.n_gpus)
        if reason is None and self.per_gpu_batch % self.smallest_micro_batch:
            reason = (f"FP8 training needs micro-batches of a multiple of {self.smallest_micro_batch} samples "
                      f"({self.recipe.seq_len}-token sequences), and the per-GPU batch {self.per_gpu_batch} is not one")
        if reason is None and not self.tiny and self.gpu:
            reason = hardware_reason(self.methods, get_gpu(self.gpu), self.recipe.precision)
        return reason

    def name(self, device: str | None = None) -> str:
        """``run_name`` of this configuration."""
        return run_name(self.model, self.gpu, self.n_gpus, self.tiny, device)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["methods"] = self.methods.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        d = dict(d)
        d["methods"] = Methods.from_dict(d.get("methods", {}))
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    @property
    def id(self) -> str:
        """Stable hash of the configuration's fields (same fields, same id, across runs and machines)."""
        blob = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def training_precision(gpu: str, given: str | None = None) -> str:
    """The precision a decoder from its config.json trains in on ``gpu``: ``given`` (``--precision``), else by rule
    bf16 where the GPU has it (its dense bf16 peak in data/gpus.csv), else fp16. A config.json's ``torch_dtype`` is
    how its weights are stored, not how it was trained: read as a recipe, OLMo-2-1B's ``float32`` trained in fp32
    for 553 days where bf16 takes 283."""
    if given is not None:
        return given
    return "bf16" if get_gpu(gpu).peak_tflops.get("bf16") else "fp16"


def precision_words(gpu: str, given: str | None, stored: str | None) -> str:
    """How the precision was chosen, for the answer's first line."""
    chosen = training_precision(gpu, given)
    if given is not None:
        return f"in {chosen} (--precision)"
    kept = f"; the config's torch_dtype {stored} is how its weights are stored" if stored else ""
    return f"in {chosen} (the rule: bf16 where the GPU has it{kept}; --precision overrides)"


def check_gpu_count(model: str, n_gpus: int, tiny: bool = False) -> None:
    """Stop when ``model``'s global batch does not divide over ``n_gpus`` (the recipe's batch is never changed):
    the one rule every command applies to a GPU count, naming the counts that do divide."""
    spec = get_model(model)
    batch = spec.recipe_for(tiny).global_batch
    if n_gpus >= 1 and batch % n_gpus:
        counts = [n for n in range(1, min(batch, 64) + 1) if batch % n == 0]
        raise ValueError(f"{spec.key}'s global batch {batch} does not divide over {n_gpus} GPUs; choose one of: "
                         f"{', '.join(map(str, counts))}")


def model_reason(spec, tiny: bool, m: Methods) -> str | None:
    """Why a switch beyond the paper does not apply to this model (None when it does): bf16 weights need a bf16
    recipe, the fused cross-entropy a decoder's LM head and next-token loss, FP8 training a compiled model."""
    precision = spec.recipe_for(tiny).precision
    if m.bf16_weights and precision != "bf16":
        return (f"bf16 weights need a bf16 recipe; {spec.key}'s is {precision}: drop bf16w, or choose a model "
                "trained in bf16")
    if m.fused_ce and spec.task != "causal-lm":
        return (f"the fused cross-entropy replaces a decoder's LM head and next-token loss; {spec.key} is a "
                f"{spec.task} model")
    if m.fp8 != "none" and not spec.compiles:
        return f"FP8 training needs compile, and {spec.display} is not compiled (the paper does not compile it)"
    return None


def beyond_paper_space(model: str, gpu: str | None, n_gpus: int = 1, tiny: bool = False,
                       base: Methods = FREE_LUNCH) -> tuple[list[Methods], list[tuple[Methods, str]]]:
    """(valid variants, [(excluded variant, reason)]) of ``base`` with the switches beyond the paper
    (``methods.beyond_paper_variants``) for a model on ``n_gpus`` x ``gpu`` (None: the GPU's rules are not
    applied): what may be measured beside the paper's search space, never inside it."""
    valid, excluded = [], []
    for m in beyond_paper_variants(base):
        reason = Config(model, gpu or "", n_gpus, methods=m, tiny=tiny).methods_reason()
        (excluded.append((m, reason)) if reason else valid.append(m))
    return valid, excluded


def deepspeed_config(cfg: Config, micro_batch: int, gas: int) -> dict:
    """A DeepSpeed config with the recipe's optimizer and hyper-parameters spelled out (no "auto" values): what
    ``measure.apply.apply_deepspeed`` runs and ``export`` writes (a plain dict: no torch to make it)."""
    opt, m = cfg.recipe.optimizer, cfg.methods
    stage = int(m.sharding[-1])
    zero: dict = {"stage": stage, "overlap_comm": True, "contiguous_gradients": True}
    if m.offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        if stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    return {
        "train_micro_batch_size_per_gpu": micro_batch,
        "gradient_accumulation_steps": gas,
        "optimizer": {"type": "Adam" if opt.name == "adam" else "AdamW", "params": {
            "lr": opt.lr, "betas": list(opt.betas), "eps": opt.eps, "weight_decay": opt.weight_decay,
            # DeepSpeed's "Adam" defaults to decoupled (AdamW) decay; say which one the recipe uses.
            "adam_w_mode": opt.name == "adamw",
            **({} if m.offload else {"torch_adam": True}),
        }},
        "zero_optimization": zero,
        "fp16": {"enabled": cfg.recipe.precision == "fp16", "initial_scale_power": 16},
        "bf16": {"enabled": cfg.recipe.precision == "bf16"},
        "gradient_clipping": 0.0,
        "steps_per_print": 1_000_000_000,
        "wall_clock_breakdown": False,
    }
