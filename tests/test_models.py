"""The model catalog: sizes match the paper, recipes carry sources, inputs have the right shape, tiny variants
train on the CPU."""
from __future__ import annotations

import warnings

import pytest
import torch

from academic_bench.catalog.models import CATALOG, UnknownModelError, get_model, loss_of
from academic_bench.measure.apply import Ran, apply_checkpointing, blocks

NINE = ["pythia-160m", "pythia-410m", "pythia-1b", "pythia-2.8b", "pythia-6.9b", "roberta-large", "mamba-2.8b",
        "convnext-xlarge", "vit-large"]


def test_the_nine_replication_models_are_in_the_catalog():
    assert list(CATALOG) == NINE


@pytest.mark.parametrize("key", NINE)
def test_built_model_matches_the_papers_size_within_5_percent(key):
    spec = get_model(key)
    with torch.device("meta"):  # no memory, seconds
        model = spec.build(False)
    n = sum(p.numel() for p in model.parameters())
    assert abs(n / spec.paper_params - 1) < 0.05, f"{key}: {n:,} parameters vs the paper's {spec.paper_params:,.0f}"


@pytest.mark.parametrize("key", NINE)
def test_recipe_is_complete_and_cites_its_sources(key):
    r = get_model(key).recipe
    assert r.global_batch > 0 and r.steps > 0
    assert r.precision in ("fp32", "fp16", "bf16")
    assert (r.seq_len is None) != (r.image_size is None)
    assert r.optimizer.name in ("adam", "adamw") and r.optimizer.lr > 0 and r.optimizer.source
    assert r.sources, f"{key} gives no source for its recipe"


@pytest.mark.parametrize("key", NINE)
def test_tiny_variant_trains_one_step_on_the_cpu(key):
    spec = get_model(key)
    model = spec.build(True)
    batch = spec.make_batch(2, tiny=True, generator=torch.Generator().manual_seed(0))
    opt = spec.recipe.optimizer.build(model.parameters())
    loss = loss_of(model, batch)
    loss.backward()
    opt.step()
    assert torch.isfinite(loss)


def test_random_inputs_have_the_recipes_shape_and_dtype():
    lm = get_model("pythia-1b").make_batch(2, tiny=False)
    assert lm["input_ids"].shape == (2, 2049) and lm["input_ids"].dtype == torch.long
    assert int(lm["input_ids"].max()) < get_model("pythia-1b").recipe.vocab_size
    mlm = get_model("roberta-large").make_batch(2, tiny=True)
    assert (mlm["labels"] == -100).any(), "masked LM labels ignore unmasked positions"
    img = get_model("vit-large").make_batch(2, tiny=False)
    assert img["pixel_values"].shape == (2, 3, 224, 224) and img["pixel_values"].dtype == torch.float32
    assert int(img["labels"].max()) < 21843


def test_attention_implementation_is_chosen_at_build():
    assert get_model("pythia-160m").build(True, "eager").config._attn_implementation == "eager"
    assert get_model("pythia-160m").build(True, "sdpa").config._attn_implementation == "sdpa"
    vit = get_model("vit-large").build(True, "eager")
    assert not any(getattr(m, "fused_attn", False) for m in vit.modules())


def test_training_models_keep_no_kv_cache():
    assert get_model("pythia-160m").build(True).config.use_cache is False


def test_unknown_model_names_the_valid_ones():
    with pytest.raises(UnknownModelError, match="pythia-1b"):
        get_model("gpt-5")


@pytest.mark.parametrize("key", NINE)
def test_checkpointing_recomputes_every_block_in_the_backward_through_the_librarys_current_switch(key):
    """Every block runs again in the backward, and the switch is the model library's current one (transformers'
    old name warns that v6 removes it)."""
    spec = get_model(key)
    model = spec.build(True).train()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        apply_checkpointing(model, Ran())
    ran_in_backward: set[int] = set()
    backward = False
    found = blocks(model, spec)
    for i, block in enumerate(found):
        # The layers inside a block: transformers checkpoints a block's forward, not its call, so the block's own
        # hooks stay outside the recompute.
        for layer in list(block.modules())[1:]:
            layer.register_forward_pre_hook(lambda m, args, i=i: ran_in_backward.add(i) if backward else None)
    loss = loss_of(model, spec.make_batch(2, tiny=True, generator=torch.Generator().manual_seed(0)))
    backward = True
    loss.backward()
    assert ran_in_backward == set(range(len(found)))
