"""Where a step's time goes (``academic-bench profile``): kernel names sorted into kinds of work, and the CPU
twin of a profile (a tiny model, its ATen operators timed by torch.profiler) through the command, the
analysis and the chart. The GPU's kernels are profiled on the GPU machines (``academic-bench profile``, each
run recorded in its setup's evidence README)."""
from __future__ import annotations

import json

import pytest

from academic_bench import analysis
from academic_bench.book import charts
from academic_bench.cli import main
from academic_bench.catalog.config import Config
from academic_bench.catalog.kernels import KIND_NAMES, kind_of
from academic_bench.catalog.methods import NAIVE
from academic_bench.results import ResultStore, load_profiles, make_row

from measured import typed_figures  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("typed_figures")  # synthetic rows with typed-in figures

# Kernel names as torch.profiler reports them on H100s (cuBLAS, FlashAttention, SDPA's CUTLASS kernels,
# torch.compile's Triton kernels, PyTorch's fused AdamW, NCCL, copies) and ATen operators on a CPU; the second
# group is from our own H100 traces (run 9, notebooks/runs/h100x1/profiles.jsonl), where the first patterns
# put Mamba's scan among the elementwise kernels and a fused bias add among the matrix products.
NAMES = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
    "__5x_cublas": "matrix multiplication",
    "nvjet_tst_192x192_64x4_2x1_v_bz_coopA_TNN": "matrix multiplication",
    "triton_tem_fused_mm_0": "matrix multiplication",
    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc": "convolution",
    "void at::native::conv_depthwise2d_forward_kernel<2, float>(...)": "convolution",
    "aten::convolution_backward": "convolution",
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
    # ours
    "void selective_scan_bwd_kernel<Selective_Scan_bwd_kernel_traits<128, 16, true, true, true, true, true, "
    "c10::BFloat16, float> >(SSMParamsBwd)": "state-space scan",
    "void causal_conv1d_fwd_kernel<Causal_conv1d_fwd_kernel_traits<128, 4, true, c10::BFloat16, float> >"
    "(ConvParamsBase)": "state-space scan",
    "void cudnn::cnn::wgrad2d_grouped_direct_kernel<false, true, int, float, float, float>"
    "(cudnn::cnn::WgradGroupedDirectParams, float const*, float const*": "convolution",
    "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x64x64": "convolution",
    "dgrad2d_c1_k1_nhwc_specialized": "convolution",
    "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NTN": "matrix multiplication",
    "void cutlass::Kernel2<cutlass_75_tensorop_f16_s1688gemm_f16_128x128_tn_align1>"
    "(cutlass_75_tensorop_f16_s1688gemm_f16_128x128_tn_align1::Params)": "matrix multiplication",
    "triton_poi_fused_add_addmm_view_3": "elementwise and other",  # the bias add after a product, not one
    "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x256_1x4x1_cga1x1x1_kernel0_0":
        "attention",
    "fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80,"
    " float, true, false, false, 64, 64, 64, f": "attention",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
    "{lambda()#3}::operator()() const::{lambda()": "memory copy",
    "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)"
    "::{lambda(float)#1}, std::array<char*,": "memory copy",
    "void tensorTransformGeneric<float, float, float, true, false, false, (cudnnKernelDataType_t)2>"
    "(cudnnTensorTransformStruct, tensorTransformParams, int,": "memory copy",
    "triton_poi_fused__to_copy_14": "memory copy",
    "triton_poi_fused__to_copy_add_cat_slice_slice_backward_7": "elementwise and other",
    "triton_per_fused__to_copy_add_native_layer_norm_native_layer_norm_backward_view_14": "normalisation",
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::"
    "(anonymous namespace)::LogSoftMaxBackwardEpilogue>(fl": "loss and softmax",
}


@pytest.mark.parametrize("name", NAMES)
def test_each_kernel_name_gets_its_kind_of_work(name):
    assert kind_of(name) == NAMES[name]


WORKSHOP = "cpu-tiny"  # a tiny model profiled on the CPU is kept in a folder that names no GPU


def _profile(tmp_path, *extra: str) -> int:
    return main(["profile", "--model", "pythia-160m", "--gpu", "h100-80gb", "--gpus", "1", "--tiny",
                 "--device", "cpu", "--reps", "1", "--out", str(tmp_path / WORKSHOP / "profiles.jsonl"), *extra])


def test_a_cpu_profile_splits_the_step_by_kind_and_reaches_the_book_chart(tmp_path, capsys):
    assert _profile(tmp_path, "--methods", "naive", "--micro-batch", "2") == 0
    out = capsys.readouterr().out
    assert "matrix multiplication" in out and "appended to" in out
    (entry,) = load_profiles(tmp_path)
    assert [k["kind"] for k in entry["kinds"]] == KIND_NAMES
    kinds = {k["kind"]: k["share"] for k in entry["kinds"]}
    seen = f"kinds {kinds}, busy {entry['busy_s']} s of {entry['step_wall_s']} s"  # said if an assertion fails
    assert sum(kinds.values()) == pytest.approx(1.0), seen
    # A tiny model on a CPU spends much of its step in per-operator overhead (views, slices, small adds), which
    # the catch-all collects and which grows when the machine is busy; of the named kinds of work, a
    # transformer's step is still mostly matrix products.
    named = {k: v for k, v in kinds.items() if k != "elementwise and other"}
    assert max(named, key=named.get) == "matrix multiplication", seen
    assert entry["gas"] * entry["micro_batch"] == Config("pythia-160m", "h100-80gb", 1, tiny=True).per_gpu_batch
    assert 0 < entry["busy_share"] <= 1 and entry["timer"] == "cpu operators (self time)", seen
    assert entry["top"] and all(t["kind"] in KIND_NAMES for t in entry["top"])
    df = analysis.profiles(tmp_path)
    assert set(df["kind"]) == set(KIND_NAMES) and df["tiny"].all() and (df["setup"] == "h100x1-tiny").all()
    spec = charts.profile_bars(df.assign(setting="Pythia-160M naive")).to_dict()
    assert spec["encoding"]["color"]["field"] == "kind"
    assert "No profile yet" in json.dumps(charts.profile_bars(df.iloc[:0]).to_dict())


def test_best_profiles_the_fastest_measured_configuration_at_its_micro_batch(tmp_path):
    store = ResultStore(tmp_path / WORKSHOP / "results.jsonl")
    tiny = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, tiny=True)
    store.append(make_row(tiny, setup=WORKSHOP, outcome="ok", search="naive", micro_batch=4, gas=2,
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
    assert not (tmp_path / WORKSHOP / "profiles.jsonl").exists()


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
    assert not (tmp_path / WORKSHOP / "profiles.jsonl").exists()


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


def test_every_profiled_accumulating_micro_step_adds_into_gradients(monkeypatch):
    """A step's accumulating micro-steps (all but the first after an optimizer step) add their gradients into
    those held; so must each one the profiler times, else it leaves out the accumulation over every weight."""
    from academic_bench.measure import profile

    seen = []
    real = profile.Stepper.micro_step

    def watch(self, batch, sync):
        if not sync:
            seen.append(all(p.grad is not None for p in self.model.parameters() if p.requires_grad))
        return real(self, batch, sync)

    profiled = []
    real_profiled = profile._profiled

    def count(run, device, reps):
        start = len(seen)
        out = real_profiled(run, device, reps)
        profiled.append(seen[start:])
        return out

    monkeypatch.setattr(profile.Stepper, "micro_step", watch)
    monkeypatch.setattr(profile, "_profiled", count)
    cfg = Config("pythia-160m", "cpu", 1, methods=NAIVE, tiny=True)
    profile.profile_step(cfg, cfg.per_gpu_batch // 4, "cpu", reps=2, warmup=1)
    assert profiled[0] and all(profiled[0]), "the accumulating phase, timed first"


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


def test_the_line_names_every_kernel_above_a_thousandth_of_the_busy_time():
    """Enough names to sort a profile again when the patterns improve; not every name of a long trace."""
    from academic_bench.measure.profile import TOP_MIN_SHARE, _one_step

    names = {"aten::mm": 0.9, "aten::gelu": 0.0995, "aten::tiny_op": 0.0005}
    step = _one_step([(1, names, 1.0)])
    assert [t["name"] for t in step["top"]] == ["aten::mm", "aten::gelu"]
    assert 0.0005 < TOP_MIN_SHARE * step["busy_s"]
    assert {k["kind"]: k["seconds"] for k in step["kinds"]}["elementwise and other"] == pytest.approx(0.1)


def _line(tmp_path, kinds: dict, top: list, busy_s: float = 10.0, micro_batch: int = 4, setup: str = "h100x1",
          config: Config | None = None, timer: str = "gpu kernels") -> Config:
    from academic_bench.results import append_profile

    config = config or Config("pythia-1b", "h100-80gb", 1)
    entry = {"micro_batch": micro_batch, "gas": config.per_gpu_batch // micro_batch, "reps": 3, "device": "cuda",
             "timer": timer, "step_wall_s": busy_s / 0.9, "busy_s": busy_s, "busy_share": 0.9,
             "kinds": [{"kind": k, "seconds": v, "share": v / busy_s} for k, v in kinds.items()],
             "top": [{"name": n, "kind": k, "seconds": v} for n, k, v in top], "ran": {}}
    append_profile(tmp_path / setup / "profiles.jsonl", config, entry, setup=setup)
    return config


def test_a_recorded_profile_is_sorted_again_with_todays_patterns(tmp_path):
    """A line written before the patterns knew Mamba's scan: its named kernel moves to today's kind, the
    unnamed rest keeps the kind it was given, and the seconds add up as before."""
    scan = "void selective_scan_bwd_kernel<Selective_Scan_bwd_kernel_traits<128, 16>>(SSMParamsBwd)"
    _line(tmp_path, {"matrix multiplication": 3.0, "elementwise and other": 7.0},
          [(scan, "elementwise and other", 4.0), ("nvjet_sm90_tst_128x256", "matrix multiplication", 3.0)])
    df = analysis.profiles(tmp_path).set_index("kind")
    assert df.loc["state-space scan", "seconds"] == pytest.approx(4.0)
    assert df.loc["elementwise and other", "seconds"] == pytest.approx(3.0)
    assert df.loc["matrix multiplication", "seconds"] == pytest.approx(3.0)
    assert df["seconds"].sum() == pytest.approx(10.0) and df["share"].sum() == pytest.approx(1.0)


def test_mfu_is_the_product_of_busy_time_flop_kernel_time_and_their_rate(tmp_path):
    """The factors the book reads what limits an MFU from: their product is the measured MFU times the
    measured over the profiled step time; a profile at another micro-batch has no measured MFU to factor."""
    cfg = _line(tmp_path, {"matrix multiplication": 6.0, "attention": 1.0, "normalisation": 0.5,
                           "elementwise and other": 2.5}, [])
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    peak = analysis.dense16_peak("h100-80gb")  # a bf16 row: its MFU is already on the book's one basis
    store.append(make_row(cfg, setup="h100x1", outcome="ok", search="smart", micro_batch=4, gas=cfg.per_gpu_batch // 4,
                          step_time_s=11.0, days=30.0, mfu=0.5, peak_flops=peak))
    # Its method class validated against sustained training by the same engine: a result.
    store.append(make_row(cfg, setup="h100x1", outcome="ok", search="smart", mode="validate", micro_batch=4,
                          gas=cfg.per_gpu_batch // 4, step_time_s=11.0, days=30.0, mfu=0.5, peak_flops=peak,
                          validate={"steps": 3, "sustained_step_s": 11.0, "predicted_step_s": 11.0, "rel_error": 0.0}))
    other = Config("pythia-160m", "h100-80gb", 1)
    _line(tmp_path, {"matrix multiplication": 1.0}, [], micro_batch=2, config=other)
    store.append(make_row(other, setup="h100x1", outcome="ok", search="smart", micro_batch=8,
                          gas=other.per_gpu_batch // 8, step_time_s=2.0, days=3.0, mfu=0.3, peak_flops=1e15))
    f = analysis.mfu_factors(analysis.runs_frame(tmp_path), analysis.profiles(tmp_path))
    assert list(f["model"]) == ["pythia-1b"], "the 160M profile ran at micro-batch 2, its result at 8"
    r = f.iloc[0]
    assert r["busy_share"] == pytest.approx(0.9) and r["flop_share"] == pytest.approx(0.7)
    assert r["flop_rate"] == pytest.approx(0.5 * 11.0 / 7.0)
    assert r["busy_share"] * r["flop_share"] * r["flop_rate"] == pytest.approx(r["mfu"] * 11.0 / r["step_wall_s"])
    assert (r["other_kind"], r["other_share"]) == ("elementwise and other", pytest.approx(0.25))


def test_an_fp32_runs_factors_are_rated_on_the_dense_16_bit_peak_as_every_mfu_the_book_shows(tmp_path):
    """A vision model trains in fp32 (TF32) and its row rates its MFU on the TF32 peak; the factors read it on the
    dense 16-bit peak, so that the profile table shows the MFU the best-configuration table beside it shows."""
    from academic_bench.catalog.hardware import get_gpu

    cfg = _line(tmp_path, {"matrix multiplication": 6.0, "elementwise and other": 4.0}, [],
                config=Config("vit-large", "h100-80gb", 1))
    tf32 = get_gpu("h100-80gb").peak_flops("fp32", tf32=True)
    store = ResultStore(tmp_path / "h100x1" / "results.jsonl")
    for mode in ("step", "validate"):
        store.append(make_row(cfg, setup="h100x1", outcome="ok", search="smart", mode=mode, micro_batch=4,
                              gas=cfg.per_gpu_batch // 4, step_time_s=11.0, days=30.0, mfu=0.4, peak_flops=tf32,
                              **({"validate": {"steps": 3, "sustained_step_s": 11.0, "predicted_step_s": 11.0,
                                               "rel_error": 0.0}} if mode == "validate" else {})))
    r = analysis.mfu_factors(analysis.runs_frame(tmp_path), analysis.profiles(tmp_path)).iloc[0]
    dense16 = analysis.dense16_peak("h100-80gb")
    assert r["peak_flops"] == dense16
    assert r["mfu"] == pytest.approx(0.4 * tf32 / dense16)
    assert r["busy_share"] * r["flop_share"] * r["flop_rate"] == pytest.approx(r["mfu"] * 11.0 / r["step_wall_s"])


def test_the_matmul_check_is_read_from_the_setups_evidence(tmp_path):
    evidence = tmp_path / "h100x1" / "evidence"
    evidence.mkdir(parents=True)
    (evidence / "matmul_peak_check.txt").write_text("matmul 8192^3 fp32: 51.5 TFLOP/s\n"
                                                    "matmul 8192^3 bf16: 700.0 TFLOP/s\n")
    assert analysis.matmul_check("h100x1", tmp_path) == {"fp32": 51.5e12, "bf16": 700e12}
    assert analysis.matmul_check("h200x1", tmp_path) == {}



def test_the_largest_kernel_of_each_profile_is_named_with_todays_kind(tmp_path):
    wgrad = "void cudnn::cnn::wgrad2d_grouped_direct_kernel<false, true, int, float, float, float>(params)"
    _line(tmp_path, {"matrix multiplication": 6.0, "elementwise and other": 4.0},
          [(wgrad, "matrix multiplication", 4.0), ("nvjet_sm90_tst_128x256", "matrix multiplication", 2.0)],
          config=Config("convnext-xlarge", "h100-80gb", 1))
    (r,) = analysis.largest_kernels(tmp_path).itertuples()
    assert (r.model, r.name, r.kind, r.share) == ("convnext-xlarge", wgrad, "convolution", pytest.approx(0.4))


def test_out_of_memory_under_the_profiler_tries_a_smaller_micro_batch_unless_one_was_given(tmp_path, capsys,
                                                                                          monkeypatch):
    """The profiler's buffers can push the measured micro-batch past the GPU (Pythia-2.8B on one H100): without
    --micro-batch it says so and profiles the next smaller one; with it, it stops with the message."""
    import torch

    from academic_bench.measure import profile

    real, tried = profile.profile_step, []

    def small_gpu(cfg, micro_batch, device, **kw):
        tried.append(micro_batch)
        if micro_batch > 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(cfg, micro_batch, device, **kw)

    monkeypatch.setattr(profile, "profile_step", small_gpu)
    store = ResultStore(tmp_path / WORKSHOP / "results.jsonl")
    tiny = Config("pythia-160m", "h100-80gb", 1, methods=NAIVE, tiny=True)
    store.append(make_row(tiny, setup=WORKSHOP, outcome="ok", search="naive", micro_batch=4, gas=2,
                          step_time_s=1.0, days=1.0))
    assert _profile(tmp_path, "--methods", "best") == 0
    err = capsys.readouterr().err
    assert tried == [4, 2, 1]
    assert "out of memory at micro-batch 4 under the profiler; trying micro-batch 2" in err
    (entry,) = load_profiles(tmp_path)
    assert (entry["micro_batch"], entry["gas"]) == (1, 8), "the entry records what it profiled"
    tried.clear()
    assert _profile(tmp_path, "--methods", "best", "--micro-batch", "2") == 2
    assert tried == [2] and "out of memory at micro-batch 2 under the profiler" in capsys.readouterr().err
    assert len(load_profiles(tmp_path)) == 1, "nothing written for the failed one"


def test_a_decoder_from_its_config_json_is_profiled_outside_the_setups_profiles(tmp_path, capsys):
    """``profile --model PATH/config.json`` (with --tokens and --seq-len, as bench takes it) profiles the decoder
    the file describes; a small config runs on the CPU. Its line goes where --out says, here beside the decoders'
    measurements, which the study's own profiles (``analysis.profiles``) never read."""
    from academic_bench.results import read_lines

    folder = tmp_path / "h100x1" / "evidence" / "decoders"
    (folder / "small-llama").mkdir(parents=True)
    (folder / "small-llama" / "config.json").write_text(json.dumps(
        {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
         "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 256, "max_position_embeddings": 64,
         "torch_dtype": "float32"}))
    args = ["profile", "--model", str(folder / "small-llama" / "config.json"), "--tokens", "1e6", "--seq-len", "32",
            "--global-batch", "4", "--gpu", "h100-80gb", "--gpus", "1", "--device", "cpu", "--reps", "1",
            "--methods", "naive", "--micro-batch", "2", "--out", str(folder / "profiles.jsonl")]
    assert main(args) == 0, capsys.readouterr().err
    (entry,) = [obj for _, obj in read_lines(folder / "profiles.jsonl")]
    assert entry["config"]["model"].startswith("small-llama@") and (entry["micro_batch"], entry["gas"]) == (2, 2)
    assert entry["setup"] == "h100x1-cpu" and {k["kind"] for k in entry["kinds"]} == set(KIND_NAMES)
    assert analysis.profiles(tmp_path).empty
    # --tokens belongs to a config.json: with a catalog model it stops before any work
    assert main(["profile", "--model", "pythia-160m", "--tokens", "1e6", "--gpu", "h100-80gb", "--gpus", "1",
                 "--tiny", "--device", "cpu", "--micro-batch", "2", "--out", str(tmp_path / "p.jsonl")]) == 2
    assert "--tokens" in capsys.readouterr().err and not (tmp_path / "p.jsonl").exists()


def test_profile_bench_and_estimate_name_one_decoder_configuration_for_one_precision(tmp_path):
    """A config.json stating float32 is trained in bf16 when ``--precision bf16`` asks for it: bench and profile
    (as estimate) take the option alike, so a profile of a measured decoder profiles the configuration measured
    (its key, which finds its row's micro-batch), not an fp32 one of the same shape."""
    from academic_bench.cli import build_parser
    from academic_bench.cli.args import model_key

    cfg = tmp_path / "small-gpt2" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps({"model_type": "gpt2", "n_embd": 64, "n_head": 4, "n_layer": 2, "vocab_size": 256,
                               "n_positions": 64, "dtype": "float32"}))
    common = ["--model", str(cfg), "--tokens", "1e6", "--seq-len", "32", "--gpu", "h100-80gb", "--gpus", "1"]
    parser = build_parser()
    keys = {cmd: model_key(parser.parse_args([cmd, *common, "--precision", "bf16", *extra]))
            for cmd, extra in (("bench", ["--out", str(tmp_path / "r.jsonl")]),
                               ("profile", ["--out", str(tmp_path / "p.jsonl")]))}
    assert len(set(keys.values())) == 1, keys
    ruled = model_key(parser.parse_args(["profile", *common, "--out", str(tmp_path / "p.jsonl")]))
    assert ruled == keys["profile"], "the config's float32 is storage: the rule trains in bf16 on an H100"
    fp32 = model_key(parser.parse_args(["profile", *common, "--precision", "fp32", "--out", str(tmp_path / "p.jsonl")]))
    assert fp32 != keys["profile"], "fp32 by --precision is another configuration"
