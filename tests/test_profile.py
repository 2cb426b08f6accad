"""Where a step's time goes (``academic-bench profile``): kernel names sorted into kinds of work, and the CPU
twin of a profile (a tiny model, its ATen operators timed by torch.profiler) through the command, the
analysis and the chart. The GPU's kernels are profiled on the lent machines (``jobs/h100x1-session9.sh``)."""
from __future__ import annotations

import json

import pytest

from academic_bench import analysis, charts
from academic_bench.cli import main
from academic_bench.config import Config
from academic_bench.measure.profile import KIND_NAMES, kind_of
from academic_bench.methods import NAIVE
from academic_bench.results import ResultStore, load_profiles, make_row

# Kernel names as torch.profiler reports them on H100s (cuBLAS, FlashAttention, SDPA's CUTLASS kernels,
# torch.compile's Triton kernels, PyTorch's fused AdamW, NCCL, copies) and ATen operators on a CPU.
NAMES = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
    "__5x_cublas": "matrix multiplication",
    "nvjet_tst_192x192_64x4_2x1_v_bz_coopA_TNN": "matrix multiplication",
    "triton_tem_fused_mm_0": "matrix multiplication",
    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc": "matrix multiplication",
    "void at::native::conv_depthwise2d_forward_kernel<2, float>(...)": "matrix multiplication",
    "aten::addmm": "matrix multiplication",
    "aten::mm": "matrix multiplication",
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>": "attention",
    "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>::Params)": "attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "attention",
    "triton_per_fused__to_copy_add_native_layer_norm_0": "normalisation",
    "triton_red_fused__log_softmax__to_copy_nll_loss_forward_2": "loss and softmax",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor<...>>": "optimizer",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)": "communication",
    "Memcpy HtoD (Pinned -> Device)": "memory copy",
    "aten::copy_": "memory copy",
    "triton_poi_fused_convert_element_type_gelu_1": "elementwise and other",  # 'convert' is no convolution
    "triton_poi_fused_add_mul_3": "elementwise and other",
}


@pytest.mark.parametrize("name", NAMES)
def test_each_kernel_name_gets_its_kind_of_work(name):
    assert kind_of(name) == NAMES[name]


def _profile(tmp_path, *extra: str) -> int:
    return main(["profile", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--tiny",
                 "--device", "cpu", "--reps", "1", "--out", str(tmp_path / "h100x1" / "profiles.jsonl"), *extra])


def test_a_cpu_profile_splits_the_step_by_kind_and_reaches_the_book_chart(tmp_path, capsys):
    assert _profile(tmp_path, "--methods", "naive", "--micro-batch", "2") == 0
    out = capsys.readouterr().out
    assert "matrix multiplication" in out and "appended to" in out
    (entry,) = load_profiles(tmp_path)
    assert [k["kind"] for k in entry["kinds"]] == KIND_NAMES
    kinds = {k["kind"]: k["share"] for k in entry["kinds"]}
    seen = f"kinds {kinds}, busy {entry['busy_s']} s of {entry['step_wall_s']} s"  # said if an assertion fails
    assert sum(kinds.values()) == pytest.approx(1.0), seen
    assert kinds["matrix multiplication"] > 0.2, f"a transformer's step is mostly matrix multiplications: {seen}"
    assert entry["gas"] * entry["micro_batch"] == Config("pythia-160m", "h100-80gb", 1, tiny=True).per_gpu_batch
    assert 0 < entry["busy_share"] <= 1 and entry["timer"] == "cpu operators (self time)", seen
    assert entry["top"] and all(t["kind"] in KIND_NAMES for t in entry["top"])
    df = analysis.profiles(tmp_path)
    assert set(df["kind"]) == set(KIND_NAMES) and df["tiny"].all() and (df["setup"] == "h100x1-tiny").all()
    spec = charts.profile_bars(df.assign(setting="Pythia-160M naive")).to_dict()
    assert spec["encoding"]["color"]["field"] == "kind"
    assert "No profile yet" in json.dumps(charts.profile_bars(df.iloc[:0]).to_dict())


def test_best_profiles_the_fastest_measured_configuration_at_its_micro_batch(tmp_path):
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    tiny = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, tiny=True)
    store.append(make_row(tiny, setup="h100x1", outcome="ok", search="naive", micro_batch=4, gas=2,
                          step_time_s=1.0, days=1.0))
    assert _profile(tmp_path, "--methods", "best") == 0
    (entry,) = load_profiles(tmp_path)
    assert (entry["config_id"], entry["micro_batch"]) == (tiny.id, 4)


@pytest.mark.parametrize("extra, message", [
    (["--methods", "free-lunch+zero2+offload", "--micro-batch", "2"], "without sharding or offloading"),
    (["--methods", "naive"], "give --micro-batch"),
    (["--methods", "best"], "no measured configuration of pythia-160m"),
    (["--methods", "naive", "--micro-batch", "3"], "does not divide"),
])
def test_what_the_profiler_cannot_take_stops_with_a_message_and_writes_nothing(tmp_path, capsys, extra, message):
    assert _profile(tmp_path, *extra) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "h100x1" / "profiles.jsonl").exists()


def test_several_gpus_are_refused_before_any_work(tmp_path, capsys):
    code = main(["profile", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "2", "--tiny", "--micro-batch",
                 "2", "--out", str(tmp_path / "p.jsonl")])
    assert code == 2 and "use --gpus 1" in capsys.readouterr().err


def test_a_missing_kernel_library_is_a_message_not_a_traceback(tmp_path, capsys, monkeypatch):
    from academic_bench.measure import apply, profile

    def missing(*_, **__):
        raise apply.Unsupported("Mamba's fast kernels need mamba_ssm, which could not be imported")

    monkeypatch.setattr(profile, "profile_step", missing)
    assert _profile(tmp_path, "--methods", "naive", "--micro-batch", "2") == 2
    assert "cannot profile naive here: Mamba's fast kernels need mamba_ssm" in capsys.readouterr().err
    assert not (tmp_path / "h100x1" / "profiles.jsonl").exists()


def test_gpu_kernel_time_counts_each_kernel_once(tmp_path):
    """The GPU branch, with events as torch.profiler gives them: kernels count, the host's operators do not
    (their time is the kernels'), nor does a record_function range drawn over the kernels it launched."""
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from academic_bench.measure.profile import _busy_times

    def ev(name, device, us, annotation=False):
        return SimpleNamespace(name=name, device_type=device, device_time_total=us, self_cpu_time_total=us,
                               is_async=False, is_user_annotation=annotation)

    events = [ev("nvjet_tst_128x256", DeviceType.CUDA, 3000), ev("nvjet_tst_128x256", DeviceType.CUDA, 1000),
              ev("triton_poi_fused_gelu_0", DeviceType.CUDA, 500), ev("aten::mm", DeviceType.CPU, 40),
              ev("## Call CompiledFxGraph abc ##", DeviceType.CUDA, 4500, annotation=True)]
    prof = SimpleNamespace(events=lambda: events)
    assert _busy_times(prof, on_gpu=True) == {"nvjet_tst_128x256": 0.004, "triton_poi_fused_gelu_0": 0.0005}
    assert _busy_times(prof, on_gpu=False) == {"aten::mm": 0.00004}


def test_the_phases_are_weighted_as_one_step_runs_them():
    """(GAS - 1) accumulating micro-steps and one boundary micro-step with the optimizer step."""
    from academic_bench.measure.profile import _one_step

    step = _one_step([(31, {"aten::mm": 0.2, "aten::gelu": 0.05}, 0.3),
                      (1, {"aten::mm": 0.2, "multi_tensor_apply_kernel": 0.1}, 0.4)])
    assert step["step_wall_s"] == pytest.approx(31 * 0.3 + 0.4)
    assert step["busy_s"] == pytest.approx(31 * 0.25 + 0.3)
    assert step["busy_share"] == pytest.approx((31 * 0.25 + 0.3) / (31 * 0.3 + 0.4))
    assert _one_step([(1, {"aten::mm": 1.02}, 1.0)])["busy_share"] == 1.0, "two clocks: capped at always busy"
    kinds = {k["kind"]: k["seconds"] for k in step["kinds"]}
    assert kinds["matrix multiplication"] == pytest.approx(32 * 0.2)
    assert kinds["optimizer"] == pytest.approx(0.1) and kinds["elementwise and other"] == pytest.approx(31 * 0.05)
    assert step["top"][0]["name"] == "aten::mm"
