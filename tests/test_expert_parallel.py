"""Expert parallelism as published mixture-of-experts runs use it (``predict.expert_parallel``): each GPU holds its
share of the routed experts whole, neither gathers nor reduces them, passes over its own alone, and sends the tokens
to the other GPUs' experts and back; a published point marked ``ep`` is predicted so."""
from __future__ import annotations

import pytest

from academic_bench.answer.store import work_model
from academic_bench.catalog.hardware import get_gpu
from academic_bench.catalog.methods import parse_methods
from academic_bench.catalog.models import get_model
from academic_bench.catalog.models.from_config import decoder_spec
from academic_bench.catalog.published import config_path
from academic_bench.estimate import BYTES, model_stats
from academic_bench.predict import expert_parallel as ep
from academic_bench.predict.decoder_work import predict_decoder
from academic_bench.predict.work_units import weight_passes_s
from academic_bench.predict.method_costs import collective_s

FSDP = parse_methods("free-lunch+fsdp_full_shard")


@pytest.fixture(scope="module")
def qwen() -> str:
    """Qwen3-30B-A3B at the NeMo AutoModel summary's settings: 8 GPUs, micro-batch 4, 16 accumulation steps."""
    return decoder_spec(config_path("Qwen3-30B-A3B"), seq_len=4096, tokens=512 * 4096, global_batch=512,
                        precision="bf16").spec.key


def test_each_gpu_holds_its_share_of_the_routed_experts(qwen):
    experts = get_model(qwen).moe.expert_params
    assert ep.experts_elsewhere(qwen, 8) == pytest.approx(experts * 7 / 8)
    assert ep.experts_elsewhere(qwen, 1) == 0.0
    assert ep.experts_elsewhere("pythia-1b", 8) == 0.0 and ep.routed_experts("pythia-1b") == 0.0


def test_a_token_reaches_the_gpus_its_uniformly_chosen_experts_sit_on():
    """Counted over every choice of 2 of 8 experts spread over 4 GPUs (2 each): the other GPUs a token reaches."""
    from itertools import combinations

    choices = list(combinations(range(8), 2))
    # The token sits on GPU 0; expert e is on GPU e // 2.
    reached = sum(len({e // 2 for e in c} - {0}) for c in choices) / len(choices)
    assert ep.remote_gpus(8, 2, 4) == pytest.approx(reached)
    assert ep.remote_gpus(8, 8, 4) == pytest.approx(3)  # every expert: every other GPU


def test_the_all_to_all_sends_each_token_to_the_gpus_it_reaches_in_every_pass(qwen):
    """From Qwen3-30B-A3B's config.json: per mixture layer and pass, each token's hidden state in bf16 out to the
    other GPUs its 8 of 128 experts sit on and back, at the ring rate of 8 H100s."""
    import json

    from academic_bench.predict.method_costs import ring_gbps

    c = json.loads(config_path("Qwen3-30B-A3B").read_text())
    link = ring_gbps(get_gpu("h100-80gb"), 8) * 1e9
    reach = ep.remote_gpus(c["num_experts"], c["num_experts_per_tok"], 8)
    per_pass = c["num_hidden_layers"] * 2 * 4096 * reach * c["hidden_size"] * 2 / link
    assert ep.all_to_all_s(qwen, "h100-80gb", 8, 4096) == pytest.approx(2 * per_pass)


def test_the_tokens_all_to_all_grows_with_the_tokens_and_the_recompute(qwen):
    one = ep.all_to_all_s(qwen, "h100-80gb", 8, 4096)
    assert one > 0
    assert ep.all_to_all_s(qwen, "h100-80gb", 8, 2 * 4096) == pytest.approx(2 * one)
    assert ep.all_to_all_s(qwen, "h100-80gb", 8, 4096, checkpointing=True) == pytest.approx(1.5 * one)
    assert ep.all_to_all_s(qwen, "h100-80gb", 1, 4096) == 0.0


def test_spread_experts_change_the_step_by_the_passes_the_collectives_and_the_all_to_all(qwen):
    """On a profiled GPU (no transfer), the step with the experts spread is the FSDP step less the passes over the
    experts other GPUs hold, less the collectives of those experts, plus the tokens' all-to-all."""
    points, rates, evidence = work_model()
    fsdp = predict_decoder(qwen, "h100-80gb", 8, points, FSDP, rates, micro_batch=4, evidence=evidence)
    spread = predict_decoder(qwen, "h100-80gb", 8, points, FSDP, rates, micro_batch=4, evidence=evidence,
                             expert_parallel=True)
    gas, gpu = spread.gas, get_gpu("h100-80gb")
    params, dtype = float(model_stats(qwen).params), BYTES["bf16"]
    elsewhere = ep.experts_elsewhere(qwen, 8)
    passes = weight_passes_s(qwen, gas, "h100-80gb", evidence) - weight_passes_s(qwen, gas, "h100-80gb", evidence,
                                                                                 elsewhere=elsewhere)
    gathered = collective_s(FSDP, 8, gpu, params, dtype, gas) - collective_s(
        FSDP, 8, gpu, params - ep.routed_experts(qwen), dtype, gas)
    a2a = ep.all_to_all_s(qwen, "h100-80gb", 8, 4 * gas * 4096)
    assert passes > 0 and gathered > 0 and a2a > 0
    assert spread.step_time_s == pytest.approx(fsdp.step_time_s - passes - gathered + a2a, rel=1e-9)
    assert "expert parallelism" in spread.basis and "expert all-to-all" in spread.basis
    assert "expert parallelism" not in fsdp.basis


def test_a_dense_decoder_is_the_same_with_or_without_spread_experts():
    points, rates, evidence = work_model()
    a = predict_decoder("pythia-1b", "h100-80gb", 8, points, FSDP, rates, evidence=evidence)
    b = predict_decoder("pythia-1b", "h100-80gb", 8, points, FSDP, rates, evidence=evidence, expert_parallel=True)
    assert a.step_time_s == pytest.approx(b.step_time_s)


def test_spread_experts_are_not_charged_beside_offloading(qwen):
    points, rates, evidence = work_model()
    with pytest.raises(ValueError, match="offloading"):
        predict_decoder(qwen, "h100-80gb", 8, points, parse_methods("free-lunch+fsdp_full_shard+offload"), rates,
                        micro_batch=1, evidence=evidence, expert_parallel=True)
