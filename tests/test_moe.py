"""Mixtures of experts from their config.json: the experts a token runs (FLOPs), every expert in memory, the
experts' kernel as a method, and the routing a measured step keeps. Tiny configs of the four families the study
reads (OLMoE, Qwen2-MoE with a shared expert, Mixtral, DeepSeek-V2 with shared experts, a dense first layer and
latent attention), built on the CPU; nothing is downloaded."""
from __future__ import annotations

import json

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from academic_bench import estimate as est
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import parse_methods
from academic_bench.catalog.models import loss_of
from academic_bench.catalog.models.from_config import decoder_spec
from academic_bench.measure import experts
from academic_bench.measure.apply import Ran, apply_experts_kernel
from academic_bench.measure.routing import expert_token_counts

COMMON = {"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 256, "max_position_embeddings": 64,
          "tie_word_embeddings": False, "torch_dtype": "float32"}
TINY = {
    "olmoe": {**COMMON, "model_type": "olmoe", "intermediate_size": 32, "num_hidden_layers": 2,
              "num_key_value_heads": 4, "num_experts": 8, "num_experts_per_tok": 2},
    "qwen2_moe": {**COMMON, "model_type": "qwen2_moe", "intermediate_size": 96, "moe_intermediate_size": 32,
                  "shared_expert_intermediate_size": 48, "num_hidden_layers": 2, "num_key_value_heads": 2,
                  "num_experts": 8, "num_experts_per_tok": 2},
    "mixtral": {**COMMON, "model_type": "mixtral", "intermediate_size": 32, "num_hidden_layers": 2,
                "num_key_value_heads": 2, "num_local_experts": 4, "num_experts_per_tok": 2},
    "deepseek_v2": {**COMMON, "model_type": "deepseek_v2", "intermediate_size": 96, "moe_intermediate_size": 16,
                    "num_hidden_layers": 3, "num_key_value_heads": 4, "n_routed_experts": 8, "n_shared_experts": 2,
                    "num_experts_per_tok": 2, "first_k_dense_replace": 1, "kv_lora_rank": 16, "q_lora_rank": None,
                    "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16},
}
SEQ = 32


def _spec(tmp_path, kind: str, precision: str | None = None):
    path = tmp_path / kind / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(TINY[kind]))
    return decoder_spec(path, seq_len=SEQ, tokens=1e6, global_batch=8, precision=precision).spec


def _experts(net) -> list:
    return [m for m in net.modules() if hasattr(m, "has_gate") and hasattr(m, "num_experts")]


@pytest.mark.parametrize("kind", list(TINY))
def test_the_experts_a_token_runs_are_read_from_the_build(tmp_path, kind):
    spec, cfg = _spec(tmp_path, kind), TINY[kind]
    m = spec.moe
    assert m.experts == max(cfg.get(k, 0) for k in ("num_experts", "num_local_experts", "n_routed_experts"))
    assert m.per_token == cfg["num_experts_per_tok"]
    assert m.moe_layers == cfg["num_hidden_layers"] - cfg.get("first_k_dense_replace", 0)
    assert m.shared_width == cfg.get("shared_expert_intermediate_size",
                                     cfg.get("n_shared_experts", 0) * cfg.get("moe_intermediate_size", 0))
    torch.manual_seed(0)
    net = spec.build()
    routed = sum(p.numel() for e in _experts(net) for p in e.parameters())
    assert m.expert_params == routed  # every routed expert's weights, counted from the real model
    st = est.model_stats(spec)
    assert st.params == sum(p.numel() for p in net.parameters())  # memory holds every expert


def _counted(spec) -> int:
    """FlopCounterMode over one forward and backward of one sequence on the CPU. The experts run transformers'
    per-expert loop ("eager"), whose products each multiply the tokens routed to that expert: the counts sum to
    tokens x top-k whatever the routing, so the count is the active experts' FLOPs without forcing a routing.
    Eager attention computes the whole score matrix, as the convention counts it."""
    torch.manual_seed(0)
    net = spec.build(False, "eager").train()
    net.set_experts_implementation("eager")
    counter = FlopCounterMode(display=False)
    with counter:
        loss_of(net, spec.make_batch(1, generator=torch.Generator().manual_seed(0))).backward()
    return counter.get_total_flops()


@pytest.mark.parametrize("kind", list(TINY))
def test_active_expert_flops_match_the_flop_counter(tmp_path, kind):
    """The convention also counts the norms' weights as 6 FLOPs per token, which no product multiplies: 0.4-0.7% of
    these tiny models, within the 1%."""
    spec = _spec(tmp_path, kind)
    assert est.flops_per_sample(spec) == pytest.approx(_counted(spec), rel=0.01)
    assert "active params" in est.flops_method(spec)


def test_only_the_top_k_share_of_the_routed_experts_is_charged(tmp_path):
    spec = _spec(tmp_path, "olmoe")
    st, m = est.model_stats(spec), spec.moe
    dense = 6 * (st.params - st.input_embedding) * SEQ
    assert est.flops_per_sample(spec) < dense  # the dense convention would charge every expert
    halved = (6 * (1 - m.per_token / m.experts) * m.expert_params) * SEQ
    attention = 12 * TINY["olmoe"]["num_hidden_layers"] * 64 * SEQ * SEQ
    assert est.flops_per_sample(spec) == pytest.approx(dense - halved + attention)


def test_memory_counts_every_experts_weights_gradients_and_optimizer_states(tmp_path):
    spec = _spec(tmp_path, "qwen2_moe")
    mem = est.predict_memory(Config(spec.key, "h100-80gb", 1, methods=parse_methods("free-lunch")), 1)
    params = est.model_stats(spec).params
    # fp32 weights and gradients of all experts, and the 16-bit copies of every weight that bf16 autocast keeps for
    # backward (estimate.memory's plain-model states)
    assert mem.weights == (4 + 2) * params and mem.gradients == 4 * params
    assert mem.optimizer_states == 8 * params  # Adam's two fp32 moments


def _one_step(spec, kernels_name: str) -> tuple[float, float]:
    torch.manual_seed(0)
    net = spec.build(False, "sdpa").train()
    net.set_experts_implementation(kernels_name)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    batch = spec.make_batch(2, generator=torch.Generator().manual_seed(1))
    first = loss_of(net, batch)
    first.backward()
    opt.step()
    return first.item(), loss_of(net, batch).item()


@pytest.mark.parametrize("kind", ["olmoe", "qwen2_moe"])
def test_each_experts_kernel_on_the_cpu_trains_the_same_step(tmp_path, kind):
    """The per-expert loop, batched and grouped products (transformers' and the study's at the autocast dtype): one
    step each from the same weights and batch gives the same losses before and after the optimizer step."""
    experts.register()
    spec = _spec(tmp_path, kind)
    reference = _one_step(spec, "eager")
    for name in ("batched_mm", "grouped_mm", experts.NAME):
        assert _one_step(spec, name) == pytest.approx(reference, rel=1e-4), name


def _grouped_dtypes(monkeypatch) -> list:
    """The operand dtypes of every call of torch's grouped GEMM from here on."""
    seen, real = [], torch.nn.functional.grouped_mm

    def spy(a, b, *args, **kwargs):
        seen.append((a.dtype, b.dtype))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "grouped_mm", spy)
    return seen


def _autocast_step(spec, name: str, compiled: bool = False):
    """Output and the experts' weight gradients of one forward and backward under a bf16 autocast, fp32 weights
    (``compiled``: each experts module traced whole by torch.compile, as the study's compiled blocks hold them)."""
    torch.manual_seed(0)
    net = spec.build(False, "sdpa").train()
    net.set_experts_implementation(name)
    for m in _experts(net) if compiled else ():
        m.forward = torch.compile(m.forward, backend="aot_eager", fullgraph=True)
    batch = spec.make_batch(2, generator=torch.Generator().manual_seed(1))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = loss_of(net, batch)
    loss.backward()
    return loss.item(), [m.down_proj.grad for m in _experts(net)]


def test_the_fast_experts_kernel_runs_its_products_at_the_autocast_dtype(tmp_path, monkeypatch):
    """The recipe trains fp32 weights under a bf16 autocast. transformers' grouped_mm casts the products' input to
    the weights' dtype (fp32 products, and under compile its per-expert loop); the study's kernel runs them in bf16
    as autocast runs a linear layer, and the gradients reach the fp32 weights as the loop's do."""
    spec = _spec(tmp_path, "olmoe")
    experts.register()
    seen = _grouped_dtypes(monkeypatch)
    fp32_loss, fp32_grads = _autocast_step(spec, "grouped_mm")
    assert seen and all(d == (torch.float32, torch.float32) for d in seen)  # why the study has its own
    seen.clear()
    loss, grads = _autocast_step(spec, experts.NAME)
    assert seen and all(d == (torch.bfloat16, torch.bfloat16) for d in seen)
    assert loss == pytest.approx(fp32_loss, rel=1e-3)
    for g, ref in zip(grads, fp32_grads):  # the same products, rounded to bf16: the same gradients up to rounding
        assert g is not None and g.dtype == torch.float32
        assert float((g - ref).norm() / ref.norm()) < 0.05
    seen.clear()  # compiled, it stays torch's grouped GEMM in bf16 (transformers' would fall back to its loop)
    assert _autocast_step(spec, experts.NAME, compiled=True)[0] == pytest.approx(loss, rel=1e-3)
    assert seen and all(d == (torch.bfloat16, torch.bfloat16) for d in seen)


def test_naive_runs_the_loop_and_the_kernels_switch_the_grouped_products(tmp_path):
    spec = _spec(tmp_path, "mixtral")
    net = spec.build()
    for kernels, expected in ((False, "eager"), (True, experts.NAME)):
        ran = Ran()
        apply_experts_kernel(net, kernels, "cpu", ran)
        assert ran.experts == expected and net.config._experts_implementation == expected
        assert f"experts:{expected}" in ran.kernels


def test_a_dense_model_has_no_experts_kernel(tmp_path):
    path = tmp_path / "llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**COMMON, "model_type": "llama", "intermediate_size": 96, "num_hidden_layers": 2,
                                "num_key_value_heads": 2}))
    spec = decoder_spec(path, seq_len=SEQ, tokens=1e6, global_batch=8).spec
    ran = Ran()
    apply_experts_kernel(spec.build(), True, "cpu", ran)
    assert spec.moe is None and ran.experts == "n/a" and not any(k.startswith("experts") for k in ran.kernels)


def test_the_routing_counts_every_token_top_k_times_per_layer(tmp_path):
    spec = _spec(tmp_path, "deepseek_v2")
    net = spec.build()
    counts = expert_token_counts(net, spec.make_batch(2), "cpu")
    assert len(counts) == spec.moe.moe_layers
    assert all(len(c) == spec.moe.experts and sum(c) == 2 * SEQ * spec.moe.per_token for c in counts)


def test_the_work_model_charges_each_expert_at_its_share_of_the_tokens(tmp_path):
    """A mixture is answered by the work model: its matrix products are the dense matrices at every token and each
    routed expert's at top-k / experts of them, so without the GEMM curve they are 6 x active weights x tokens."""
    from academic_bench.predict import decoder_work as dw

    spec = _spec(tmp_path, "qwen2_moe", precision="bf16")  # the work model's profiles are bf16
    st, m = est.model_stats(spec), spec.moe
    assert dw.not_modelled(spec.key) is None
    w = dw.work(spec.key, 2, 1)
    active = st.matrix_params - (1 - m.active_share) * m.expert_params
    assert w.matmul == pytest.approx(6 * active * 2 * SEQ)
    dense_width = 2 * (64 + TINY["qwen2_moe"]["intermediate_size"])  # what a dense decoder of its config would stream
    assert w.memory > dense_width * 2 * SEQ  # top-k experts, the shared expert and the routing's gathers


def test_the_work_model_charges_a_layers_experts_at_the_rate_of_their_grouped_product(tmp_path):
    """Free-lunch's grouped GEMM runs every expert of a layer in one launch: under a rate that grows with a
    product's size, the experts' products cost what one product of all their FLOPs costs per FLOP, so a mixture
    of many small experts is charged no more per FLOP than one of few large ones of the same active FLOPs."""
    from academic_bench.predict import decoder_work as dw
    from academic_bench.results.gemm import GemmCurve

    spec = _spec(tmp_path, "qwen2_moe", precision="bf16")
    m, mb = spec.moe, 2
    curve = GemmCurve("h100-80gb", (1e6, 1e9, 1e12), (1e12, 100e12, 700e12), "test")
    got = dw.work(spec.key, mb, 1, curve).matmul
    expected = sum(6.0 * size * share * mb * SEQ
                   * curve.slowness(2.0 * mb * SEQ * share * size * (m.experts if share < 1 else 1))
                   for size, share in est.moe.matrix_products(spec, est.model_stats(spec).matrix_sizes))
    per_expert = sum(6.0 * size * share * mb * SEQ * curve.slowness(2.0 * mb * SEQ * share * size)
                     for size, share in est.moe.matrix_products(spec, est.model_stats(spec).matrix_sizes))
    assert got == pytest.approx(expected) and got < per_expert
