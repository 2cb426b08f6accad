"""Free-lunch with bf16 weights and fp32 master weights in the optimizer (``--methods free-lunch+bf16w``), the
PyTorch counterpart of what DeepSpeed's bf16 mode keeps: applied to a tiny model on the CPU, and trained side
by side with the default path (fp32 weights under bf16 autocast, AdamW on them) to the same losses."""
from __future__ import annotations

import json

import pytest
import torch

from academic_bench.catalog.config import Config
from academic_bench.measure.apply import MasterWeights, Ran, apply_bf16_weights
from academic_bench.measure.data import host_batches
from academic_bench.measure.stepper import Stepper
from academic_bench.catalog.methods import FREE_LUNCH, Methods, exclusion_reason, parse_methods, search_space
from academic_bench.catalog.models import get_model
from academic_bench.catalog.models.from_config import decoder_spec

# A Llama-shaped decoder small enough for a CPU step, with a bf16 recipe (its config says bfloat16).
TINY_BF16 = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 64,
             "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
# Loss parity: after STEPS optimizer steps on the same batches from the same initial weights, each step's loss
# of the bf16-weight path is within LOSS_TOLERANCE (relative) of the fp32-weight path's. The forward matmuls
# see the same bf16 values either way (autocast rounds the fp32 weights to bf16; the masters round to the same
# bf16 weights); what differs is the bf16 rounding of embeddings and norms and the gradients accumulated in bf16.
STEPS, LOSS_TOLERANCE = 30, 0.02


def decoder(tmp_path) -> str:
    path = tmp_path / "tiny-bf16" / "config.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(TINY_BF16))
    return decoder_spec(path, seq_len=32, tokens=1e6, global_batch=8).spec.key


def test_the_switch_is_named_labelled_and_kept_out_of_the_search_space():
    m = parse_methods("free-lunch+bf16w")
    assert m.bf16_weights and m.free_lunch and m.label() == "free-lunch + bf16 weights [beyond the paper]"
    assert Methods.from_dict(m.to_dict()) == m
    assert "bf16_weights" not in FREE_LUNCH.to_dict(), "configurations without it keep their ids"
    assert not any(v.bf16_weights for n in (1, 2) for v in search_space(n)[0]), "not searched until validated"
    assert "DeepSpeed and FSDP" in exclusion_reason(parse_methods("free-lunch+bf16w+zero1+offload"), 1)
    with pytest.raises(ValueError, match="bf16 weights need a bf16 recipe"):
        Config("roberta-large", "h100-80gb", 1, methods=m).check()  # an fp16 recipe


def test_applied_to_a_tiny_model_the_weights_are_bf16_and_the_optimizer_keeps_fp32_masters():
    model = get_model("pythia-160m").build(True, "sdpa")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    buffers = {n: b.dtype for n, b in model.named_buffers()}
    ran = Ran(precision="bf16")
    opt = apply_bf16_weights(model, lambda ps: torch.optim.AdamW(ps, lr=1e-3), ran)
    assert isinstance(opt, MasterWeights)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert {n: b.dtype for n, b in model.named_buffers()} == buffers, "buffers (rotary frequencies) stay as built"
    masters = [p for g in opt.param_groups for p in g["params"]]
    assert len(masters) == len(list(model.parameters())) and {p.dtype for p in masters} == {torch.float32}
    assert all(torch.equal(m, before[n]) for m, (n, _) in zip(masters, model.named_parameters()))
    assert "bf16 weights, fp32 master weights in the optimizer" in ran.notes
    loss = sum(p.float().sum() for p in model.parameters())
    loss.backward()
    opt.step()
    assert all(p.dtype == torch.float32 for p in masters) and all(s["exp_avg"].dtype == torch.float32
                                                                  for s in opt.state.values())
    assert all(torch.equal(p, m.to(torch.bfloat16)) for p, m in zip(model.parameters(), masters))
    opt.zero_grad(set_to_none=True)
    assert all(p.grad is None for p in model.parameters()) and all(m.grad is None for m in masters)


def losses(cfg: Config, steps: int) -> list[float]:
    torch.manual_seed(0)
    stepper = Stepper(cfg, 4, cfg.per_gpu_batch // 4, "cpu")  # two micro-steps a step: accumulation counts
    batches = host_batches(cfg, 4, cfg.per_gpu_batch // 4, seed=1)
    out = []
    for _ in range(steps):
        total = 0.0
        for i, batch in enumerate(batches):
            total += float(stepper.micro_step(batch, sync=i == len(batches) - 1))
        stepper.optimizer_step()
        out.append(total)
    return out


def test_bf16_weights_train_to_the_losses_of_fp32_master_adamw_on_the_cpu(tmp_path):
    key = decoder(tmp_path)
    base = Methods(kernels=True)
    reference = losses(Config(key, "h100-80gb", 1, methods=base), STEPS)
    mine = losses(Config(key, "h100-80gb", 1, methods=Methods(kernels=True, bf16_weights=True)), STEPS)
    assert reference[-1] < 0.9 * reference[0], "the run learns (the comparison means something)"
    worst = max(abs(a - b) / a for a, b in zip(mine, reference))
    print(f"bf16 weights against fp32 weights: largest relative loss difference {worst:.3%}, losses "
          f"{reference[0]:.3f} -> {reference[-1]:.3f} and {mine[0]:.3f} -> {mine[-1]:.3f}")
    assert worst <= LOSS_TOLERANCE, f"largest relative loss difference {worst:.3%} over {STEPS} steps"


def test_the_stepper_runs_the_bf16_weight_path_and_says_so(tmp_path):
    cfg = Config(decoder(tmp_path), "h100-80gb", 1, methods=Methods(kernels=True, bf16_weights=True))
    stepper = Stepper(cfg, 4, cfg.per_gpu_batch // 4, "cpu")
    assert isinstance(stepper.opt, MasterWeights) and stepper.autocast
    assert {p.dtype for p in stepper.model.parameters()} == {torch.bfloat16}
    assert "bf16 weights, fp32 master weights in the optimizer" in stepper.ran.notes


def _tiny_bf16(seed: int) -> tuple[torch.nn.Module, MasterWeights]:
    torch.manual_seed(seed)
    model = get_model("pythia-160m").build(True, "sdpa")
    return model, apply_bf16_weights(model, lambda ps: torch.optim.AdamW(ps, lr=1e-3), Ran(precision="bf16"))


def _step(model: torch.nn.Module, opt: MasterWeights, seed: int) -> None:
    torch.manual_seed(seed)
    batch = get_model("pythia-160m").make_batch(2, tiny=True)
    model(**batch).loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def test_the_master_weight_optimizer_saves_and_resumes_as_a_torch_optimizer():
    """``state_dict`` and ``load_state_dict`` round-trip through ``torch.save``: a run resumed from them (on a
    model whose bf16 weights were built from another seed) takes the same next step as the run that saved them,
    bit for bit, because the fp32 masters travel with the state."""
    import io

    model, opt = _tiny_bf16(0)
    assert isinstance(opt, torch.optim.Optimizer)
    for seed in (1, 2):
        _step(model, opt, seed)
    buffer = io.BytesIO()
    torch.save(opt.state_dict(), buffer)
    saved = opt.state_dict()
    assert saved["state"] and len(saved["masters"]) == len(opt.masters)
    assert all(s["exp_avg"].dtype == torch.float32 for s in saved["state"].values())

    other_model, other = _tiny_bf16(123)
    other_model.load_state_dict(model.state_dict())  # the bf16 weights, as a model checkpoint keeps them
    buffer.seek(0)
    other.load_state_dict(torch.load(buffer, weights_only=True))
    assert all(torch.equal(a, b) for a, b in zip(other.masters, opt.masters))
    assert other.inner.state is other.state and other.inner.param_groups is other.param_groups
    other.param_groups[0]["lr"] = opt.param_groups[0]["lr"] = 5e-4  # one set of groups: the wrapped one's too
    assert other.inner.param_groups[0]["lr"] == 5e-4 == opt.inner.param_groups[0]["lr"]

    _step(model, opt, 3)
    _step(other_model, other, 3)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), other_model.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(opt.masters, other.masters))
    with pytest.raises(ValueError, match="master weights"):
        other.load_state_dict({**saved, "masters": saved["masters"][:-1]})
