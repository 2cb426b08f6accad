"""The switches beyond the paper applied to tiny models on the CPU, through the libraries made for them.

- FP8 (torchao float8): torchao's own ``convert_to_float8_training`` and float8 layers, which run on the CPU
  (``torch._scaled_mm`` has a CPU kernel), wherever torchao is installed; where it is not, a recording stand-in
  checks the same wiring, and the real-library tests fail under ``CI=true`` instead of skipping.
- The fused cross-entropy (Liger): its kernel is Triton, CUDA GPUs only, so a recording stand-in with Liger's
  interface computes the loss with torch on the CPU; that the real class is the one chosen on a GPU is checked
  where liger-kernel is installed.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import Methods
from academic_bench.catalog.models import get_model
from academic_bench.measure import apply
from academic_bench.measure.apply import Ran, Unsupported, apply_fp8, apply_fused_cross_entropy
from academic_bench.measure.data import host_batches
from academic_bench.measure.stepper import Stepper

from conftest import skip_or_fail


# --- stand-ins, used only where the library cannot run here ----------------------------------------------------

class RecordingFusedLoss(nn.Module):
    """Liger's ``LigerFusedLinearCrossEntropyLoss`` interface (constructor and call), computed with torch: the CPU
    cannot run its Triton kernel. Records every call's weight and shapes."""

    calls: list[dict] = []

    def __init__(self, ignore_index: int = -100, softcap: float | None = None, **_: object):
        super().__init__()
        self.ignore_index, self.softcap = ignore_index, softcap

    def forward(self, lin_weight, _input, target, bias=None):
        RecordingFusedLoss.calls.append({"weight": lin_weight, "input": tuple(_input.shape),
                                         "target": tuple(target.shape), "softcap": self.softcap})
        logits = F.linear(_input, lin_weight, bias).float()
        if self.softcap:
            logits = self.softcap * torch.tanh(logits / self.softcap)
        return F.cross_entropy(logits, target, ignore_index=self.ignore_index)


class StandInFloat8Linear(nn.Linear):
    """What the stand-in conversion turns an eligible layer into (the same weights, the same product)."""


class StandInFloat8Config:
    def __init__(self, recipe: str):
        self.recipe = recipe

    @classmethod
    def from_recipe_name(cls, name: str) -> "StandInFloat8Config":
        return cls(name)


def stand_in_convert(model: nn.Module, config: StandInFloat8Config, module_filter_fn) -> nn.Module:
    """``convert_to_float8_training``'s contract: every ``nn.Linear`` the filter accepts becomes a float8 layer."""
    for fqn, module in list(model.named_modules()):
        if type(module) is nn.Linear and module_filter_fn(module, fqn):
            module.__class__ = StandInFloat8Linear
            module.recipe = config.recipe
    return model


@pytest.fixture
def fused_loss(monkeypatch):
    RecordingFusedLoss.calls = []
    monkeypatch.setattr(apply, "fused_loss_class", lambda device: RecordingFusedLoss)
    return RecordingFusedLoss


@pytest.fixture(params=["torchao", "stand-in"])
def float8(request, monkeypatch):
    """The float8 layer type the conversion makes: torchao's own (where installed), else the stand-in's."""
    if request.param == "torchao":
        if not apply.has("torchao"):
            skip_or_fail("torchao is not installed (pip install -e '.[test]')")
        from torchao.float8.float8_linear import Float8Linear

        return Float8Linear
    monkeypatch.setattr(apply, "float8_training", lambda: (stand_in_convert, StandInFloat8Config))
    return StandInFloat8Linear


def tiny_decoder() -> nn.Module:
    torch.manual_seed(0)
    return get_model("pythia-160m").build(True, "sdpa")  # 2 layers, hidden 64, vocabulary 512


def batch(seq: int = 16, n: int = 2) -> dict[str, torch.Tensor]:
    ids = torch.randint(0, 512, (n, seq), generator=torch.Generator().manual_seed(1))
    return {"input_ids": ids, "labels": ids}


# --- FP8 -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise"])
def test_fp8_converts_every_eligible_linear_layer_but_the_lm_head_and_trains(float8, recipe):
    model, ran = tiny_decoder(), Ran(precision="bf16")
    linears = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    apply_fp8(model, recipe, "cpu", ran)
    converted = [n for n, m in model.named_modules() if isinstance(m, float8)]
    assert converted == [n for n in linears if n != "lm_head"] and type(model.get_output_embeddings()) is nn.Linear
    assert ran.kernels == [f"torchao float8 {recipe}"]
    assert ran.notes == [f"FP8 training (torchao float8, {recipe} scaling): {len(converted)} of {len(linears)} linear "
                         "layers; kept in bf16: the output layer"]
    loss = model(**batch()).loss
    loss.backward()
    assert torch.isfinite(loss) and all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_fp8_keeps_the_layers_whose_sizes_an_fp8_product_cannot_take_and_says_which(float8):
    model = nn.Sequential(nn.Linear(64, 128), nn.Linear(128, 40), nn.Linear(40, 64))
    ran = Ran(precision="bf16")
    apply_fp8(model, "rowwise", "cpu", ran)
    assert [type(m) is float8 for m in model] == [True, False, False]
    assert ran.notes[0].endswith("1 of 3 linear layers; kept in bf16: 1 (128 x 40), 2 (40 x 64)")
    with pytest.raises(Unsupported, match="divisible by 16"):
        apply_fp8(nn.Sequential(nn.Linear(72, 40)), "rowwise", "cpu", Ran())


def test_fp8_needs_fp8_tensor_cores_and_torchao(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (8, 0))
    with pytest.raises(Unsupported, match=r"FP8 tensor cores \(compute capability 8.9\+\); this one has compute "
                                          r"capability 8.0"):
        apply_fp8(tiny_decoder(), "rowwise", "cuda", Ran())
    monkeypatch.setattr(apply, "has", lambda module: module != "torchao")
    with pytest.raises(Unsupported, match="needs torchao"):
        apply_fp8(tiny_decoder(), "rowwise", "cpu", Ran())


def test_the_stepper_converts_to_fp8_before_it_compiles(float8, monkeypatch):
    """Compile fuses float8's scaling into each block, so the blocks must hold the float8 layers when compiled
    (compile itself is recorded here: it takes minutes on the CPU, and its order is what is checked)."""
    seen = []
    monkeypatch.setattr(apply, "apply_compile", lambda model, spec, ran: seen.append(
        sum(isinstance(m, float8) for m in model.modules())))
    cfg = Config("pythia-160m", "h100-80gb", methods=Methods(compile=True, kernels=True, fp8="tensorwise"), tiny=True)
    stepper = Stepper(cfg, 4, 2, "cpu")
    assert seen == [8], "compiled once, after the 8 float8 layers (2 blocks x 4 projections) were in place"
    loss = stepper.micro_step(host_batches(cfg, 4, 1, seed=0)[0], sync=True)
    stepper.optimizer_step()
    assert torch.isfinite(loss) and "torchao float8 tensorwise" in stepper.ran.kernels


# --- the fused cross-entropy ---------------------------------------------------------------------------------

def test_the_fused_loss_is_transformers_causal_lm_loss_without_running_the_lm_head(fused_loss):
    plain, fused = tiny_decoder(), tiny_decoder()
    ran = Ran()
    apply_fused_cross_entropy(fused, "cpu", ran)
    head_ran = []
    fused.get_output_embeddings().register_forward_hook(lambda *a: head_ran.append(True))
    b = batch()
    b["labels"] = b["labels"].clone()
    b["labels"][0, :5] = -100  # unlabelled positions are left out, as transformers leaves them
    want, got = plain(**b).loss, fused(**b).loss
    torch.testing.assert_close(got, want)
    want.backward(), got.backward()
    for (name, p), q in zip(plain.named_parameters(), fused.parameters()):
        torch.testing.assert_close(q.grad, p.grad, msg=name)
    assert head_ran == [], "no logits tensor: the LM head's layer never runs, its weight goes to the fused loss"
    [call] = fused_loss.calls
    assert call["weight"] is fused.get_output_embeddings().weight and call["input"] == (2 * 16, 64) and call["target"] == (32,)
    assert ran.kernels == ["liger fused linear cross-entropy"]


def test_the_fused_loss_passes_a_logit_soft_cap_on_and_refuses_a_logit_scale(fused_loss):
    model = tiny_decoder()
    model.config.final_logit_softcapping = 30.0
    apply_fused_cross_entropy(model, "cpu", Ran())
    model(**batch())
    assert fused_loss.calls[-1]["softcap"] == 30.0
    model = tiny_decoder()
    model.config.logit_scale = 0.0625
    with pytest.raises(Unsupported, match="scales its logits"):
        apply_fused_cross_entropy(model, "cpu", Ran())


def test_the_stepper_trains_with_the_fused_loss_to_the_same_losses(fused_loss):
    def losses(methods: Methods) -> list[float]:
        cfg = Config("pythia-160m", "h100-80gb", methods=methods, tiny=True)
        torch.manual_seed(0)
        stepper = Stepper(cfg, 4, 2, "cpu")
        batches = host_batches(cfg, 4, 2, seed=1)
        out = []
        for _ in range(3):
            out.append(sum(float(stepper.micro_step(b, sync=i == 1)) for i, b in enumerate(batches)))
            stepper.optimizer_step()
        return out

    want = losses(Methods(kernels=True))
    got = losses(Methods(kernels=True, fused_ce=True))
    assert got == pytest.approx(want, rel=1e-5) and len(fused_loss.calls) == 6


def test_liger_is_the_kernel_on_a_gpu_and_refused_elsewhere():
    with pytest.raises(Unsupported, match="CUDA GPUs only"):
        apply.fused_loss_class("cpu")
    if not apply.has("liger_kernel"):
        skip_or_fail("liger-kernel is not installed (pip install -e '.[test]')")
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

    assert apply.fused_loss_class("cuda") is LigerFusedLinearCrossEntropyLoss


def test_without_liger_the_configuration_is_unsupported(monkeypatch):
    monkeypatch.setattr(apply, "has", lambda module: module != "liger_kernel")
    with pytest.raises(Unsupported, match="needs liger-kernel"):
        apply.fused_loss_class("cuda")
