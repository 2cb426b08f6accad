"""Every method charged from what it does (``method_costs``) in the work model's answers (``decoder_work``) and
``estimate --methods``: checkpointing's recompute, the collectives of DDP and sharding over the GPUs' link,
offloading's host copies and host optimizer. Synthetic profiles stand in for the measured ones."""
from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from academic_bench.predict import decoder_work as dw
from academic_bench.predict import method_costs as mc
from academic_bench.predict.work_units import counted_shape
from academic_bench.cli import main
from academic_bench.catalog.hardware import get_gpu
from academic_bench.catalog.methods import FREE_LUNCH, exclusion_reason, parse_methods, search_space
from academic_bench.catalog.models import get_model
from academic_bench.catalog.models.from_config import decoder_spec
from test_decoder_work import _decoder, _profile
from measured import typed_figures  # noqa: F401  (a fixture)

RATES = {"deepspeed": 4e-10, "fsdp": 2e-9}  # host seconds per parameter: the order of the study's
PROFILES = None


def _profiles() -> pd.DataFrame:
    global PROFILES
    if PROFILES is None:
        PROFILES = pd.concat([_profile("pythia-160m", 32, 32), _profile("pythia-410m", 16, 64)])
    return PROFILES


def _tokens_per_gpu(key: str, gpu: str, n: int, spec: str):
    p = _prediction(key, gpu, n, spec)
    if p is None:
        return None, None
    r = get_model(key).recipe
    return r.global_batch * r.seq_len / p.step_time_s / n, p.micro_batch


def _prediction(key: str, gpu: str, n: int, spec: str):
    return dw.predict_decoder(key, gpu, n, dw.calibration_points(_profiles()), parse_methods(spec), host_rates=RATES)


def test_checkpointing_is_charged_one_more_forward_of_the_blocks(tmp_path):
    key = _decoder(tmp_path, "d")
    points = dw.calibration_points(_profiles())
    plain = dw.predict_decoder(key, "h100-80gb", 1, points, FREE_LUNCH)
    ckpt = dw.predict_decoder(key, "h100-80gb", 1, points, replace(FREE_LUNCH, checkpointing=True))
    assert ckpt.micro_batch == plain.micro_batch
    # A third of the blocks' work more: less than a third of the step (head, loss, optimizer are not recomputed).
    assert plain.step_time_s * 1.15 < ckpt.step_time_s < plain.step_time_s * (1 + 1 / 3)
    assert "recomputes" in ckpt.basis


def test_the_collectives_move_what_each_method_sends():
    p, c, n, gas = 1e9, 2, 8, 4
    once = 7 / 8 * p * c
    ddp = mc.collectives(FREE_LUNCH, n, p, c, gas)
    assert ddp.boundary == pytest.approx(2 * 7 / 8 * p * 4) and ddp.total == ddp.boundary
    assert mc.collectives(parse_methods("free-lunch+zero1"), n, p, c, gas).total == pytest.approx(2 * once)
    assert mc.collectives(parse_methods("free-lunch+zero2"), n, p, c, gas).total == pytest.approx((gas + 1) * once)
    assert mc.collectives(parse_methods("free-lunch+zero3"), n, p, c, gas).total == pytest.approx(3 * gas * once)
    assert mc.collectives(FREE_LUNCH, 1, p, c, gas).total == 0
    # Beside enough compute a pass's collectives cost nothing; after the optimizer step they cost all their time.
    t = mc.Traffic(backward=1e9, after_step=1e9)
    assert mc.collective_s(FREE_LUNCH, 8, get_gpu("h100-80gb"), p, c, gas) == pytest.approx(ddp.total / 450e9)
    assert mc.exposed_s(t, 100, micro_step_s=10.0, gas=1) == pytest.approx(1e9 / 100e9)
    assert mc.exposed_s(t, 100, micro_step_s=0.0, gas=1) == pytest.approx(2e9 / 100e9)


def test_several_gpus_over_pcie_cost_each_gpu_its_all_reduce(tmp_path):
    """Eight RTX 3090s (PCIe between them) train slower per GPU than one: each waits for the all-reduce, which
    takes longer over PCIe than over the H100s' NVSwitch."""
    key = _decoder(tmp_path, "d", hidden_size=1024, intermediate_size=2752, num_hidden_layers=8)
    key = decoder_spec(tmp_path / "d" / "config.json", seq_len=512, tokens=1e9, global_batch=512).spec.key
    one, _ = _tokens_per_gpu(key, "rtx3090", 1, "free-lunch+ckpt")
    eight, _ = _tokens_per_gpu(key, "rtx3090", 8, "free-lunch+ckpt")
    assert eight < 0.97 * one
    params, ddp = counted_shape(key).params, parse_methods("free-lunch+ckpt")
    assert mc.collective_s(ddp, 8, get_gpu("rtx3090"), params, 2, 1) > \
        5 * mc.collective_s(ddp, 8, get_gpu("h100-80gb"), params, 2, 1) > 0


def test_offloading_charges_its_host_copies_and_the_host_optimizer(tmp_path):
    key = _decoder(tmp_path, "d")
    m = parse_methods("free-lunch+zero2+offload")
    points = dw.calibration_points(_profiles())
    p = dw.predict_decoder(key, "h100-80gb", 2, points, m, host_rates=RATES)
    base = dw.predict_decoder(key, "h100-80gb", 2, points, parse_methods("free-lunch+zero2"), host_rates=RATES)
    params = counted_shape(key).params
    host = mc.host_optimizer_s(m, 2, params, RATES) + mc.host_copy_s(m, 2, get_gpu("h100-80gb"), params, 2, p.gas)
    assert p.micro_batch == base.micro_batch and p.step_time_s >= base.step_time_s + 0.99 * host - \
        dw.predict_on_setup(key, "h100x1", dw.calibration_points(_profiles()), p.micro_batch, p.gas).seconds[
            "optimizer"]
    assert "host optimizer" in p.basis and "host copies" in p.basis


def _without(m, switch: str):
    if switch == "checkpointing":
        return replace(m, checkpointing=False)
    if switch == "offload":
        return replace(m, offload=False)
    # The data parallelism the sharding replaces: DeepSpeed's own reduces bf16 gradients (method_costs.replaced_ddp).
    return replace(m, sharding="none", bf16_weights=m.uses_deepspeed)


@pytest.mark.parametrize("gpu", ["h100-80gb", "a100-80gb", "rtx3090"])
def test_no_method_makes_an_answer_faster_unless_its_memory_allows_a_larger_micro_batch(tmp_path, gpu):
    """Over every valid combination of the search space: taking any one method away never makes the answer
    slower, except where the method lets a larger micro-batch fit, or, for a sharding, by no more than the
    optimizer step it splits over the GPUs (each steps its shard alone). Taking a sharding away leaves the data
    parallelism of the same library."""
    keys = [_decoder(tmp_path, "small"),
            _decoder(tmp_path, "wide", hidden_size=2048, intermediate_size=5504, num_hidden_layers=8,
                     num_attention_heads=16, num_key_value_heads=4, vocab_size=32000)]
    checked = 0
    for key in keys:
        for n in (1, 2, 8):
            for m in search_space(n)[0]:
                fast, mbs = _tokens_per_gpu(key, gpu, n, _spec(m))
                for switch in ("checkpointing", "offload", "sharding"):
                    if not (m.checkpointing if switch == "checkpointing" else m.offload if switch == "offload"
                            else m.sharding != "none"):
                        continue
                    other = _without(m, switch)
                    if exclusion_reason(other, n):
                        continue
                    base, base_mbs = _tokens_per_gpu(key, gpu, n, _spec(other))
                    if fast is None or base is None:
                        continue
                    checked += 1
                    if switch == "sharding" and mbs == base_mbs:
                        sharded, whole = _prediction(key, gpu, n, _spec(m)), _prediction(key, gpu, n, _spec(other))
                        saved = whole.optimizer_s * (1 - 1 / n)
                        assert sharded.step_time_s >= (whole.step_time_s - saved) * (1 - 1e-9), (key, n, m.label())
                        continue
                    assert fast <= base * (1 + 1e-9) or mbs > base_mbs, (key, n, m.label(), other.label())
    assert checked > 20


def _spec(m) -> str:
    from academic_bench.cli.estimate import methods_spec

    return methods_spec(m)


def test_estimate_charges_the_methods_it_is_given(tmp_path, monkeypatch, capsys):
    """``estimate --methods`` answers from the work model with the methods charged: checkpointing takes longer at
    the same micro-batch, and a sharding on eight GPUs is no faster than the data parallelism it replaces unless
    its micro-batch is larger."""
    from academic_bench import analysis

    monkeypatch.setattr(analysis, "profiles", lambda root=None: _profiles())
    path = tmp_path / "d" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
                                "num_attention_heads": 8, "num_key_value_heads": 2, "num_hidden_layers": 4,
                                "vocab_size": 1000, "max_position_embeddings": 2048, "hidden_act": "silu",
                                "tie_word_embeddings": False, "torch_dtype": "bfloat16"}))

    def run(methods: str, gpus: int) -> dict:
        assert main(["estimate", "--model", str(path), "--tokens", "1e9", "--seq-len", "512", "--gpu", "rtx3090",
                     "--gpus", str(gpus), "--methods", methods, "--global-batch", "64", "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    plain, ckpt = run("free-lunch", 1), run("free-lunch+ckpt", 1)
    assert ckpt["answer"]["by"] == "work model" and ckpt["micro_batch"] == plain["micro_batch"]
    assert ckpt["answer"]["settings"]["methods"] == "free-lunch+ckpt"
    assert ckpt["days"] > 1.15 * plain["days"]
    # ZeRO-3 against the data parallelism it replaces: DeepSpeed's own, which reduces bf16 gradients.
    ddp, ds_ddp, zero3 = run("free-lunch", 8), run("free-lunch+bf16w", 8), run("free-lunch+zero3", 8)
    assert zero3["answer"]["by"] == "work model"
    assert zero3["days"] >= ds_ddp["days"] or (zero3["answer"]["settings"]["micro_batch"]
                                               > ds_ddp["answer"]["settings"]["micro_batch"])
    assert ddp["days"] * 8 > plain["days"]  # eight GPUs over PCIe: each slower than one alone


def test_without_pcie_peer_access_the_ring_is_staged_in_host_memory():
    """GeForce cards cannot write into each other's memory over PCIe: NCCL stages every byte in host memory, so
    a ring between them gets half the rate of the same PCIe link with peer access; beyond one CPU socket's GPUs
    the ring also crosses the link between the sockets. NVLink where it joins every GPU is unchanged."""
    geforce, pro = get_gpu("rtx3090"), get_gpu("a6000")
    assert not geforce.pcie_p2p and pro.pcie_p2p and not get_gpu("rtx4090").pcie_p2p
    with_p2p = replace(geforce, pcie_p2p=True)
    assert mc.ring_gbps(geforce, 4) == pytest.approx(mc.ring_gbps(with_p2p, 4) / 2)
    assert mc.ring_gbps(with_p2p, 4) == pytest.approx(mc.PCIE_USABLE * geforce.pcie_gbps)
    assert mc.ring_gbps(with_p2p, 4) < geforce.pcie_gbps
    assert mc.ring_gbps(pro, 8) == pytest.approx(mc.INTER_SOCKET_GBPS) and mc.ring_gbps(pro, 8) < mc.ring_gbps(pro, 4)
    assert mc.ring_gbps(geforce, 8) == pytest.approx(mc.INTER_SOCKET_GBPS / 2)
    assert mc.ring_gbps(geforce, 2) == geforce.link_gbps(2)  # the bridge of a pair
    assert mc.ring_gbps(get_gpu("h100-80gb"), 8) == get_gpu("h100-80gb").nvlink_gbps / 2
    assert mc.ring_gbps(geforce, 1) is None
    # Eight RTX 3090s: DDP's all-reduce of a billion fp32 gradients takes seconds, not a fraction of one.
    assert mc.collective_s(FREE_LUNCH, 8, geforce, 1e9, 2, 1) == pytest.approx(2 * 7 / 8 * 1e9 * 4 / 5e9)


def test_ddp_with_bf16_weights_reduces_bf16_gradients_and_zero_is_floored_at_deepspeeds_own():
    p, n = 1e9, 8
    fp32 = mc.collectives(FREE_LUNCH, n, p, 2, 1)
    bf16 = mc.collectives(parse_methods("free-lunch+bf16w"), n, p, 2, 1)
    assert bf16.total == pytest.approx(fp32.total / 2)
    zero1 = parse_methods("free-lunch+zero1")
    assert mc.replaced_ddp(zero1) == parse_methods("free-lunch+bf16w")
    assert mc.replaced_ddp(parse_methods("free-lunch+fsdp_full_shard")) == FREE_LUNCH
    h100 = get_gpu("h100-80gb")
    # ZeRO-1 sends a bf16 reduce-scatter and all-gather: a bf16 all-reduce's bytes, half of torch DDP's fp32 ones.
    assert mc.collective_s(zero1, n, h100, p, 2, 1) == pytest.approx(mc.collective_s(
        parse_methods("free-lunch+bf16w"), n, h100, p, 2, 1))
    assert mc.collective_s(zero1, n, h100, p, 2, 1) < mc.collective_s(FREE_LUNCH, n, h100, p, 2, 1)


# --- a measured configuration re-priced to other methods (other_methods) -----------------------------------

def _measured(methods=FREE_LUNCH, **kw):
    from academic_bench.predict.transfer import Source

    base = dict(setup="synthetic", model="pythia-160m", gpu="h100-80gb", n_gpus=1, methods=methods, micro_batch=32,
                gas=32, step_time_s=10.0, model_flops_per_step=1e15, optimizer_s=0.1, split={"flop": 1.0},
                split_basis="configuration")
    return Source(**(base | kw))


def test_repricing_takes_off_one_methods_costs_and_charges_the_others():
    """``other_methods.with_methods``: checkpointing adds one more forward of the blocks to the micro-steps'
    compute; offloading replaces the GPU's optimizer step by the host's and adds its host copies; and re-pricing
    there and back gives the measured step again."""
    from academic_bench.predict import other_methods as om
    from academic_bench.estimate import model_stats

    src, gpu = _measured(), get_gpu("h100-80gb")
    params = float(model_stats("pythia-160m").params)
    assert om.with_methods(src, FREE_LUNCH, RATES, None) is src
    share = om.recomputed_share("pythia-160m")
    assert 0.5 < share < 1  # the LM head and its loss run once
    ckpt = om.with_methods(src, replace(FREE_LUNCH, checkpointing=True), RATES, None)
    assert ckpt.step_time_s == pytest.approx((10.0 - 0.1) * (1 + share / 3) + 0.1)
    m = parse_methods("free-lunch+zero2+offload")
    off = om.with_methods(src, m, RATES, None)
    assert off.optimizer_s == pytest.approx(params * RATES["deepspeed"])
    assert off.sync_s == pytest.approx(mc.host_copy_s(m, 1, gpu, params, 2, 32)) and off.sync_s > 0
    assert off.step_time_s == pytest.approx(9.9 + off.optimizer_s + off.sync_s)
    back = om.with_methods(off, FREE_LUNCH, RATES, gpu_rate=0.1 / params)
    assert back.step_time_s == pytest.approx(src.step_time_s) and back.methods == FREE_LUNCH
    zero1 = om.with_methods(src, parse_methods("free-lunch+zero1+offload"), RATES, None)
    assert zero1.sync_s < off.sync_s  # ZeRO-1 copies the gradients once a step, ZeRO-2 every micro-step


def test_a_repriced_prediction_fits_the_target_methods_and_says_it_was_repriced():
    from academic_bench.predict import other_methods as om, transfer
    from academic_bench.catalog.config import Config
    from academic_bench.estimate import max_micro_batch

    m = parse_methods("free-lunch+ckpt+zero2+offload")
    p = om.predict_with_methods(_measured(), m, "h200", 1, RATES)
    assert p.micro_batch == min(max_micro_batch(Config("pythia-160m", "h200", 1, methods=m), 141), 1024)
    assert "re-priced from free-lunch to" in p.basis and p.methods == m
    same = om.predict_with_methods(_measured(), FREE_LUNCH, "h200", 1, RATES)
    assert same == transfer.predict(_measured(), "h200", 1)


def test_the_sharding_rule_rests_on_what_the_runs_hold():
    """``sharding_beside_ddp``: each sharded measurement on several GPUs beside its DDP row, with what each is;
    the rule that a sharding is never charged less than DDP stays while none of them is a counted result faster
    than a counted DDP row."""
    pairs = mc.sharding_beside_ddp()
    assert list(pairs.columns) == mc.SHARDING_PAIR_COLUMNS
    both = pairs[(pairs["state"] == "counted") & (pairs["ddp_state"] == "counted")]
    assert not (both["step_time_s"] < both["ddp_step_time_s"]).any(), both


def test_a_repriced_prediction_charges_the_extras_of_the_micro_steps_it_runs():
    """Offloading under ZeRO-2 copies the gradients to the host in every micro-step: carried to a GPU where a
    larger micro-batch fits, the prediction runs fewer micro-steps and pays fewer copies, not the source's count
    (the transfer model carries the re-priced extras as they are)."""
    from academic_bench.predict import other_methods as om
    from academic_bench.estimate import model_stats

    src, m = _measured(), parse_methods("free-lunch+zero2+offload")
    params = float(model_stats("pythia-160m").params)
    p = om.predict_with_methods(src, m, "h200", 1, RATES)
    assert p.micro_batch > src.micro_batch and p.gas < src.gas
    assert om.with_methods(src, m, RATES, None, p.gas).sync_s == pytest.approx(
        mc.host_copy_s(m, 1, get_gpu("h100-80gb"), params, 2, p.gas))
    fewer = om.with_methods(src, m, RATES, None, p.gas)
    more = om.with_methods(src, m, RATES, None)
    assert more.sync_s > fewer.sync_s
    assert p.step_time_s < om.predict(more, "h200", 1, micro_batch=p.micro_batch).step_time_s


def test_zero3_beside_zero1_is_the_per_sample_cost_the_copies_do_not_explain(tmp_path, typed_figures):
    """``method_costs.zero3_beside_zero1``: a counted one-GPU ZeRO-3 row beside the ZeRO-1 row of the same model
    and other methods; its micro-step per sample over ZeRO-1's once the copies charged each micro-step are off."""
    from academic_bench.catalog.config import Config
    from academic_bench.estimate import model_stats
    from academic_bench.results import ResultStore, make_row

    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    for spec, mbs, acc in (("free-lunch+zero1+offload", 16, 1.0), ("free-lunch+zero3+offload", 8, 0.8)):
        c = Config("pythia-160m", "h100-80gb", 1, methods=parse_methods(spec))
        times = {"accumulate": {"median": acc}}
        store.append(make_row(c, setup="h100x1", outcome="ok", search="smart", micro_batch=mbs, gas=1024 // mbs,
                              step_time_s=10.0, days=1.0, times=times))
        store.append({**make_row(c, setup="h100x1", outcome="ok", mode="validate", micro_batch=mbs, gas=1024 // mbs,
                                 step_time_s=10.0, days=1.0,
                                 validate={"steps": 3, "sustained_step_s": 10.0, "predicted_step_s": 10.0,
                                           "rel_error": 0.0}), "config_id": f"v-{spec}"})
    pairs = mc.zero3_beside_zero1(str(tmp_path))
    assert pairs[["model", "micro_batch", "zero1_micro_batch"]].values.tolist() == [["pythia-160m", 8, 16]]
    # the gradients' running sum in and out, the weights in for the forward and the backward: four 16-bit copies
    copies = 4 * model_stats("pythia-160m").params * 2 / (get_gpu("h100-80gb").pcie_gbps * 1e9)
    assert pairs["copies_s"].iloc[0] == pytest.approx(copies)
    assert pairs["per_sample_ratio"].iloc[0] == pytest.approx(((0.8 - copies) / 8) / (1.0 / 16))


def test_deepspeed_offload_moves_the_gradients_running_sum_both_ways_each_micro_step():
    """DeepSpeed ZeRO-2/3 with offload keep the gradient partition's running sum on the host: ZeRO-2 sends it out
    after every micro-step once there are several and brings it back to each after the first, ZeRO-3 sends it
    out and brings it back in every micro-step, both in 16 bits, and the boundary sends fp32 gradients once;
    ZeRO-1 sends fp32 at the boundary only. So each more micro-step costs ZeRO-2 and ZeRO-3 two 16-bit copies of
    the gradients, not one (ZeRO-3 two of the weights besides)."""
    params, gas, c = 1e9, 8, 2
    weights = params * c

    def copies(spec: str, g: int) -> float:
        return mc.host_bytes(parse_methods(spec), 1, params, c, g)

    assert copies("free-lunch+zero1+offload", gas) == pytest.approx(params * 4 + weights)
    assert copies("free-lunch+zero2+offload", gas) == pytest.approx(params * 4 + (2 * gas - 1) * params * c + weights)
    assert copies("free-lunch+zero2+offload", 1) == pytest.approx(copies("free-lunch+zero1+offload", 1))
    assert copies("free-lunch+zero3+offload", 1) == pytest.approx(params * 4 + 2 * params * c + 2 * weights)
    for spec, more in (("free-lunch+zero2+offload", 2), ("free-lunch+zero3+offload", 4)):
        assert copies(spec, gas + 1) - copies(spec, gas) == pytest.approx(more * params * c)


def test_the_host_copies_split_into_those_of_the_micro_steps_and_those_of_the_boundary():
    """The copies that repeat in every micro-step grow with the accumulation steps and the boundary's do not; the
    two add up to ``host_bytes``. ZeRO-1 copies nothing in its micro-steps, and no method without offload
    copies anything."""
    params, c = 1e9, 2
    for spec in ("free-lunch+zero1+offload", "free-lunch+zero2+offload", "free-lunch+zero3+offload",
                 "free-lunch+fsdp_shard_grad_op+offload", "free-lunch+fsdp_full_shard+offload", "free-lunch+zero3"):
        m = parse_methods(spec)
        for gas in (2, 8):
            micro, boundary = mc.host_bytes_split(m, 1, params, c, gas)
            assert micro + boundary == pytest.approx(mc.host_bytes(m, 1, params, c, gas))
            assert mc.host_bytes_split(m, 1, params, c, gas + 1)[1] == boundary
        if not m.offload or m.sharding == "zero1":
            assert mc.host_bytes_split(m, 1, params, c, 8)[0] == 0
        else:
            assert mc.host_bytes_split(m, 1, params, c, 8)[0] > mc.host_bytes_split(m, 1, params, c, 2)[0]


def test_a_repriced_source_holds_no_copies_for_the_transfer_to_take_out():
    """Re-pricing ZeRO-1 + offload to FSDP + offload charges FSDP's copies for the micro-steps the target runs in
    the extras; the transfer then carries the re-priced step as it is on the same GPU, with fewer, larger
    micro-steps, instead of taking copies out of compute that never held them."""
    from academic_bench.predict import other_methods, transfer

    zero1 = parse_methods("free-lunch+zero1+offload")
    src = transfer.Source(setup="synthetic", model="pythia-160m", gpu="h100-80gb", n_gpus=1, methods=zero1,
                          micro_batch=32, gas=32, step_time_s=10.0, model_flops_per_step=1e15, split={"flop": 1.0},
                          split_basis="configuration")
    fsdp = parse_methods("free-lunch+fsdp_full_shard+offload")
    priced = other_methods.with_methods(src, fsdp, {"deepspeed": 1e-9, "fsdp": 1e-9}, None, gas=16)
    assert not priced.copies_in_step
    got = transfer.predict(priced, "h100-80gb", 1, micro_batch=64)
    assert got.gas == 16 and got.step_time_s == pytest.approx(priced.step_time_s)
