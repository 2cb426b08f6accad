"""ConvNeXt-XLarge (ImageNet-22k head) and ViT-L/16 (ImageNet-21k head) from timm, random init.

Architectures: Liu et al. 2022 (ConvNeXt), Dosovitskiy et al. 2021 (ViT); timm model definitions.
Recipes: paper Table 3 (224 px, batch 4096, 312K steps, fp32) and the papers' optimizer settings.
"""
from __future__ import annotations

from .spec import ModelSpec, Optimizer, Recipe

PAPER_T3 = "paper Table 3 (Appendix C)"
CONVNEXT_SRC = "Liu et al. 2022 (ConvNeXt), Table 5 ImageNet-22K pre-training: AdamW lr 4e-3, wd 0.05"
VIT_SRC = "Dosovitskiy et al. 2021 (ViT), Table 3 ImageNet-21k: Adam 0.9/0.999, lr 1e-3, wd 0.03"
TINY = dict(image_size=32, num_classes=10)


def _timm(name: str, num_classes: int, **tiny_kwargs):
    def build(tiny: bool, attn: str = "sdpa"):
        import timm
        from timm.layers import set_fused_attn

        # timm's attention reads this switch when a block is built: SDPA kernels or the eager matmul path.
        set_fused_attn(attn != "eager")

        if tiny:
            return timm.create_model(name, pretrained=False, num_classes=TINY["num_classes"], **tiny_kwargs)
        return timm.create_model(name, pretrained=False, num_classes=num_classes)

    return build


def _recipe(opt: Optimizer, classes: int) -> Recipe:
    return Recipe(global_batch=4096, steps=312_000, precision="fp32", optimizer=opt, image_size=224,
                  num_classes=classes, sources={"global_batch": PAPER_T3, "steps": PAPER_T3,
                                                "image_size": PAPER_T3, "precision": PAPER_T3,
                                                "optimizer": opt.source})


def _tiny(opt: Optimizer) -> Recipe:
    return Recipe(global_batch=8, steps=312_000, precision="fp32", optimizer=opt,
                  image_size=TINY["image_size"], num_classes=TINY["num_classes"])


CONVNEXT_OPT = Optimizer("adamw", 4e-3, (0.9, 0.999), 1e-8, 0.05, source=CONVNEXT_SRC)
VIT_OPT = Optimizer("adam", 1e-3, (0.9, 0.999), 1e-8, 0.03, source=VIT_SRC)

MODELS = [
    ModelSpec(
        key="convnext-xlarge", family="convnext", display="ConvNeXt-XLarge-22k", paper_params=390e6,
        task="image-classification", recipe=_recipe(CONVNEXT_OPT, 21841), tiny_recipe=_tiny(CONVNEXT_OPT),
        build=_timm("convnext_xlarge", 21841, depths=(1, 1, 1, 1), dims=(16, 32, 64, 128)),
        block_types=("ConvNeXtStage",), kernel="none",
    ),
    ModelSpec(
        key="vit-large", family="vit", display="ViT-L/16-21k", paper_params=325e6,
        task="image-classification", recipe=_recipe(VIT_OPT, 21843), tiny_recipe=_tiny(VIT_OPT),
        build=_timm("vit_large_patch16_224", 21843, img_size=32, patch_size=8, embed_dim=64, depth=2,
                    num_heads=4),
        block_types=("Block",),
    ),
]
