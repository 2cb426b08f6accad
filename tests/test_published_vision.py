"""The published vision points (timm's training benchmark, fp16 autocast) predicted from the study's 16-bit rows of
ViT-L/16 and ConvNeXt-XL (``predict.published_vision``), in synthetic runs folders: the expectation is the transfer
model's own prediction of the row that should carry, never a typed number."""
from __future__ import annotations

import math

import pytest

from academic_bench.analysis import frame_from_rows
from academic_bench.answer import published_check as pc
from academic_bench.catalog.config import Config
from academic_bench.catalog.methods import FREE_LUNCH, NAIVE
from academic_bench.catalog.models import get_model
from academic_bench.catalog.published import load_published_throughput
from academic_bench.predict import published_vision
from academic_bench.predict.published_vision import SAME_ARCHITECTURE, VISION_RESULTS
from academic_bench.results.spread import VALIDATION_TOLERANCE
from academic_bench.predict.transfer import predict, source_from_row
from academic_bench.results import ResultStore, make_row
from measured import measured_fields


@pytest.fixture(scope="module")
def points():
    return load_published_throughput()


def _point(points, name: str, gpu: str | None = None):
    row = points[points["model"] == name].iloc[0].copy()
    if gpu is not None:
        row["gpu"] = gpu
    return row


def write_row(root, model: str, methods=NAIVE, *, mfu: float = 0.4, validated: bool = True, setup: str = "h100x1",
              gpu: str = "h100-80gb", micro_batch: int = 128) -> dict:
    """A 16-bit row as ``bench --precision ... --validate 3`` keeps it in ``<setup>/evidence/vision16/``: a step
    measured with its own sustained check (within the tolerance), or a step-mode row alone."""
    cfg = Config(model, gpu, 1, methods=methods)
    fields = measured_fields(cfg, micro_batch, mfu=mfu)
    row = make_row(cfg, setup=setup, outcome="ok", **fields)
    if validated:
        step = fields["step_time_s"]
        row.update(mode="validate", validate={"steps": 3, "sustained_step_s": step, "predicted_step_s": step,
                                               "rel_error": 0.0})
    ResultStore(root / setup / VISION_RESULTS).append(row)
    return row


def expected_rate(row: dict, gpu: str, micro_batch: int, root) -> float:
    """Images per second per GPU that the transfer model carries ``row`` to on one ``gpu`` at ``micro_batch``."""
    flat = frame_from_rows([row]).iloc[0].to_dict()
    p = predict(source_from_row(flat), gpu, 1, micro_batch=micro_batch, runs=str(root))
    return get_model(flat["model"]).recipe.global_batch / p.step_time_s


def test_a_published_fp16_point_is_predicted_from_a_bf16_row_by_the_transfer_model(points, tmp_path):
    row = write_row(tmp_path, "vit-large@bf16")
    point = _point(points, "vit_large_patch16_224")
    got = pc.predict_point(point, root=tmp_path)
    assert got["kind"] == "predicted" and not got["why_not"], got["why_not"]
    want = expected_rate(row, str(point["gpu"]), int(point["micro_batch"]), tmp_path)
    assert got["predicted"] == pytest.approx(want, rel=1e-9)
    assert got["ratio"] == pytest.approx(float(point["samples_per_s_per_gpu"]) / want, rel=1e-9)
    assert got["source_gpu"] == "h100-80gb"
    # the basis says which row carried, in which precision, and why bf16 stands for the published fp16
    assert "vit-large@bf16" in got["by"] and row["config_id"] in got["by"] and "bf16 and fp16" in got["by"]
    # DeiT III large is the same architecture; ViT-B is not, and says so
    assert pc.predict_point(_point(points, "deit3_large_patch16_224"), root=tmp_path)["kind"] == "predicted"
    base = pc.predict_point(_point(points, "vit_base_patch16_224"), root=tmp_path)
    assert math.isnan(base["predicted"]) and "another architecture" in base["why_not"]


def test_an_fp16_row_and_the_naive_eager_step_are_preferred_and_a_bf16_row_never_carries_where_the_rates_differ(
        points, tmp_path):
    write_row(tmp_path, "convnext-xlarge@bf16", FREE_LUNCH, mfu=0.3)
    point = _point(points, "convnext_xlarge_in22ft1k")
    assert "free-lunch" in pc.predict_point(point, root=tmp_path)["by"]  # the only row there is
    naive = write_row(tmp_path, "convnext-xlarge@bf16", NAIVE, mfu=0.2)
    assert naive["config_id"] in pc.predict_point(point, root=tmp_path)["by"]  # timm's benchmark ran eagerly
    # a V100 has no bf16 tensor rate (data/gpus.csv): the bf16 rows do not carry there
    volta = pc.predict_point(_point(points, "convnext_xlarge_in22ft1k", gpu="v100-32gb"), root=tmp_path)
    assert volta["kind"] == "none" and "bf16 and fp16 rates agree" in volta["why_not"]
    fp16 = write_row(tmp_path, "convnext-xlarge@fp16", NAIVE, mfu=0.2)
    for gpu in ("v100-32gb", str(point["gpu"])):  # the published precision's row, wherever it is
        got = pc.predict_point(_point(points, "convnext_xlarge_in22ft1k", gpu=gpu), root=tmp_path)
        assert fp16["config_id"] in got["by"] and "agree" not in got["by"]
        assert got["predicted"] == pytest.approx(expected_rate(fp16, gpu, int(point["micro_batch"]), tmp_path))


def test_only_a_validated_16_bit_row_carries_and_without_one_the_point_says_why(points, tmp_path):
    point = _point(points, "vit_large_patch16_224")
    got = pc.predict_point(point, root=tmp_path)
    assert math.isnan(got["predicted"]) and "not predictable" in got["why_not"] and "fp32" in got["why_not"]
    assert "--precision bf16" in got["why_not"]  # what would measure one
    write_row(tmp_path, "vit-large@bf16", validated=False)
    got = pc.predict_point(point, root=tmp_path)
    assert math.isnan(got["predicted"]) and "validated" in got["why_not"]
    missed = tmp_path / "missed"
    row = write_row(missed, "vit-large@bf16", validated=False)
    sustained = row["step_time_s"] * 1.08  # its sustained steps slower than the timed step, outside the tolerance
    row.update(mode="validate", validate={"steps": 3, "sustained_step_s": sustained,
                                          "predicted_step_s": row["step_time_s"],
                                          "rel_error": (row["step_time_s"] - sustained) / sustained})
    ResultStore(missed / "h100x1" / VISION_RESULTS).append(row)
    got = pc.predict_point(point, root=missed)
    assert math.isnan(got["predicted"]), got
    assert f"outside the {VALIDATION_TOLERANCE:.0%} validation tolerance" in got["why_not"], got["why_not"]
    assert f"h100x1/{VISION_RESULTS}" in got["why_not"]  # the file the missed row is in, its setup named
    recipe = tmp_path / "fp32"
    write_row(recipe, "vit-large", validated=True)  # the recipe's fp32 row, validated, is no 16-bit row
    assert math.isnan(pc.predict_point(point, root=recipe)["predicted"])


def test_the_validations_are_the_rows_that_timed_sustained_steps_and_the_missed_those_of_a_missed_class(tmp_path):
    write_row(tmp_path, "vit-large@bf16")  # validated within the tolerance
    write_row(tmp_path, "convnext-xlarge@bf16", validated=False)  # a step alone: no validation
    done = published_vision.sixteen_bit_validations(root=tmp_path)
    assert list(done["model"]) == ["vit-large@bf16"]
    assert published_vision.sixteen_bit_validations(done, missed=True).empty
    row = write_row(tmp_path, "vit-large@bf16", validated=False, setup="h200x1", gpu="h200")
    sustained = row["step_time_s"] * 1.08
    row.update(mode="validate", validate={"steps": 3, "sustained_step_s": sustained,
                                          "predicted_step_s": row["step_time_s"],
                                          "rel_error": (row["step_time_s"] - sustained) / sustained})
    ResultStore(tmp_path / "h200x1" / VISION_RESULTS).append(row)
    write_row(tmp_path, "convnext-xlarge@bf16", validated=False, setup="h200x1", gpu="h200")  # its class missed; no validation
    frame = published_vision.sixteen_bit_frame(tmp_path)
    assert len(published_vision.sixteen_bit_validations(frame)) == 2
    missed = published_vision.sixteen_bit_validations(frame, missed=True)
    assert list(zip(missed["setup"], missed["model"])) == [("h200x1", "vit-large@bf16")]


@pytest.mark.parametrize("name", sorted(SAME_ARCHITECTURE))
def test_a_published_model_of_the_same_architecture_counts_the_catalog_models_flops_but_for_its_head(name):
    """What ``SAME_ARCHITECTURE`` claims, counted by torch's FlopCounterMode on timm's own models (meta device):
    the published model's forward and backward of one image is within a part in a thousand of the catalog
    model's, and the difference is the head's (6 FLOPs per weight: forward, input and weight gradients)."""
    import timm
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from academic_bench.estimate import flops_per_sample
    from academic_bench.estimate.meta import conv_backward_flop

    key = SAME_ARCHITECTURE[name]
    with torch.device("meta"):
        net = timm.create_model(name, pretrained=False)
    counter = FlopCounterMode(display=False, custom_mapping={torch.ops.aten.convolution_backward: conv_backward_flop})
    with counter:
        x = torch.randn(1, 3, 224, 224, device="meta")
        torch.nn.functional.cross_entropy(net(x).float(), torch.zeros(1, dtype=torch.long, device="meta")).backward()
    published, catalog = counter.get_total_flops(), flops_per_sample(key)
    head = net.get_classifier()
    assert catalog - published == 6 * head.in_features * (get_model(key).recipe.num_classes - head.out_features)
    assert abs(catalog - published) / catalog < 1e-3


def test_the_answers_are_kept_under_a_key_that_the_16_bit_rows_change(tmp_path):
    """The published ranges widen the answers by what the published check observed, vision points included: a
    16-bit row must make the kept answers stale (``answer.store.content_key``)."""
    from academic_bench.answer.store import content_key

    before = content_key(tmp_path)
    write_row(tmp_path, "vit-large@bf16")
    assert content_key(tmp_path) != before


def test_each_vision_validation_says_how_its_images_were_fed(tmp_path):
    """A validation made before the engine fed uint8 images reads as fed fp32; one that says uint8 reads so; a
    step alone and a model of tokens have no images fed."""
    from academic_bench.measure.images import FP32_IMAGES, UINT8_IMAGES

    old = write_row(tmp_path, "vit-large@bf16")
    new = write_row(tmp_path, "convnext-xlarge@bf16")
    new["validate"]["images"] = UINT8_IMAGES
    step = write_row(tmp_path, "vit-large@bf16", validated=False)
    tokens = make_row(Config("pythia-160m", "h100-80gb", 1), setup="h100x1", outcome="ok",
                      **measured_fields(Config("pythia-160m", "h100-80gb", 1), 8, mfu=0.4),
                      mode="validate", validate={"steps": 3, "sustained_step_s": 1.0, "predicted_step_s": 1.0,
                                                 "rel_error": 0.0})
    fed = frame_from_rows([old, new, step, tokens])["validate_images"].tolist()
    assert fed[:2] == [FP32_IMAGES, UINT8_IMAGES] and all(f is None or f != f for f in fed[2:])  # None or NaN


def test_the_vision_validations_are_told_apart_by_how_their_images_were_fed(tmp_path):
    """A validation fed fp32 images that missed and one fed uint8 images that held are counted each by its own
    error, not by its method class's latest state (which the later one sets)."""
    from academic_bench.measure.images import FP32_IMAGES, UINT8_IMAGES
    from academic_bench.predict.published_vision import sixteen_bit_frame, validations_by_feed

    old = write_row(tmp_path, "vit-large@bf16", validated=False)
    sustained = old["step_time_s"] * 1.08
    old.update(mode="validate", started_at="2026-01-01T00:00:00+00:00",
               validate={"steps": 3, "sustained_step_s": sustained, "predicted_step_s": old["step_time_s"],
                         "rel_error": (old["step_time_s"] - sustained) / sustained})
    ResultStore(tmp_path / "h100x1" / VISION_RESULTS).append(old)
    new = write_row(tmp_path, "vit-large@bf16")
    new["validate"]["images"] = UINT8_IMAGES
    store = tmp_path / "h100x1" / VISION_RESULTS
    store.write_text("")
    for row in (old, new):
        ResultStore(store).append(row)
    by = validations_by_feed(root=tmp_path).set_index("images")
    assert list(by.index) == [FP32_IMAGES, UINT8_IMAGES]
    assert (by.loc[FP32_IMAGES, "validations"], by.loc[FP32_IMAGES, "within"]) == (1, 0)
    assert by.loc[FP32_IMAGES, "least"] == pytest.approx(abs(old["validate"]["rel_error"]))
    assert (by.loc[UINT8_IMAGES, "validations"], by.loc[UINT8_IMAGES, "within"]) == (1, 1)
    assert set(sixteen_bit_frame(tmp_path)["validation"]) == {"validated"}  # the class, by its latest


def test_a_16_bit_row_s_own_profile_splits_its_step_and_the_point_says_which_split(points, tmp_path):
    """Without a profile of its own the row's step is split as its setup's median profile; with one in
    ``VISION_PROFILES`` (its configuration, its micro-batch) it is split by it, and the prediction moves with it."""
    from academic_bench.predict.published_vision import VISION_PROFILES
    from academic_bench.predict.transfer import SPLIT_WORDS
    from academic_bench.results import append_profile

    row = write_row(tmp_path, "vit-large@bf16", micro_batch=128)
    cfg = Config.from_dict(row["config"])
    setup_line = Config("pythia-1b", "h100-80gb", 1)  # the setup's own profile: all matrix products

    def entry(kinds: dict, micro_batch: int, gas: int) -> dict:
        busy = sum(kinds.values())
        return {"micro_batch": micro_batch, "gas": gas, "reps": 3, "device": "cuda", "timer": "gpu kernels",
                "step_wall_s": busy / 0.95, "busy_s": busy, "busy_share": 0.95,
                "kinds": [{"kind": k, "seconds": v, "share": v / busy} for k, v in kinds.items()], "top": [],
                "ran": {}}

    append_profile(tmp_path / "h100x1" / "profiles.jsonl", setup_line, entry({"matrix multiplication": 9.0}, 4, 4),
                   setup="h100x1")
    point = _point(points, "vit_large_patch16_224")
    before = pc.predict_point(point, root=tmp_path)
    assert SPLIT_WORDS["setup"] in before["by"], before
    append_profile(tmp_path / "h100x1" / VISION_PROFILES, cfg,
                   entry({"matrix multiplication": 3.0, "elementwise and other": 6.0}, 128, row["gas"]),
                   setup="h100x1")
    after = pc.predict_point(point, root=tmp_path)
    assert SPLIT_WORDS["configuration"] in after["by"], after
    # a memory-bound share carries by the bandwidth ratio, larger than the matrix products' rate ratio
    assert after["predicted"] > before["predicted"]


def test_the_kernels_below_the_tensor_rate_are_found_in_the_carried_rows_profiles():
    """The book explains the vision medians by the unaligned and depthwise kernels of the H100 profiles the timm
    points are carried from: both models are read, their seconds are part of the matrix-product time, and the
    products' ratio they are carried by is the largest of the three."""
    import re

    from academic_bench.predict.published_vision import LOW_RATE, low_rate_kernels

    low = low_rate_kernels("rtx3090").set_index("model")
    assert set(low.index) == {"vit-large", "convnext-xlarge"}
    assert ((low["low_rate_s"] > 0) & (low["low_rate_s"] < low["flop_s"])).all()
    assert (low["flop_ratio"] > low[["cuda_ratio", "memory_ratio"]].max(axis=1)).all()
    # the book names one GPU they are carried from and one step size for both
    assert low["source_gpu"].nunique() == 1 and low["images"].nunique() == 1
    assert re.search(LOW_RATE, "cutlass_75_tensorop_bf16_s1688gemm_bf16_64x64_tn_align1")
    assert re.search(LOW_RATE, "dgrad2d_c1_k1_nhwc_specialized")
    assert not re.search(LOW_RATE, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")
    # aligned operands run at the tensor-core rate: ViT's patch embedding, and no "align1" prefix of "align16"
    assert not re.search(LOW_RATE, "cutlass_tensorop_bf16_s16816fprop_optimized_bf16_128x128_32x5_nhwc_align8")
    assert not re.search(LOW_RATE, "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x3_tn_align16")
