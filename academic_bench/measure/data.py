"""The micro-batches a measurement feeds its steps: random samples of the model's input, pinned in host memory."""
from __future__ import annotations

from typing import Iterator

import torch

from ..catalog.config import Config
from .images import FP32_IMAGES, UINT8_IMAGES


def host_batches(cfg: Config, mbs: int, n: int, seed: int) -> list[dict[str, torch.Tensor]]:
    """Pre-made random micro-batches in (pinned) host memory, copied to the GPU inside each step."""
    g = torch.Generator().manual_seed(seed)
    out = [cfg.spec.make_batch(mbs, tiny=cfg.tiny, generator=g) for _ in range(n)]
    if torch.cuda.is_available():
        out = [{k: v.pin_memory() for k, v in b.items()} for b in out]
    return out


STREAM_BATCHES = 8  # the sustained run's dataset, in micro-batches, cycled (the data are random anyway)
DATA_WORKERS = 2  # DataLoader worker processes that collate it
# ImageNet's channel means and deviations, by which image pipelines (timm's ``PrefetchLoader``) normalise uint8
# images once they are on the GPU.
IMAGE_MEAN, IMAGE_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def images_fed(cfg: Config, uint8_images: bool = True) -> str | None:
    """How the sustained run feeds ``cfg``'s images (``UINT8_IMAGES`` or ``FP32_IMAGES``); None for a model of
    tokens."""
    if cfg.spec.task != "image-classification":
        return None
    return UINT8_IMAGES if uint8_images else FP32_IMAGES


def stream_dataset(cfg: Config, n: int, seed: int, uint8_images: bool = True) -> dict[str, torch.Tensor]:
    """The sustained run's ``n`` random samples. Images as uint8, as a dataset decodes them: fp32 images are four
    times the bytes for the workers to collate, the pinning thread to pin and the copy to move, and on a
    16-bit ViT-L/16 or ConvNeXt-XL step that host work, not the extrapolation, made the validations miss
    (``notebooks/runs/h100x1/evidence/vision16/data-path/``)."""
    if not (uint8_images and images_fed(cfg)):
        return host_batches(cfg, n, 1, seed)[0]
    r = cfg.spec.recipe_for(cfg.tiny)
    g = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (n, 3, r.image_size, r.image_size), dtype=torch.uint8, generator=g)
    return {"pixel_values": images, "labels": torch.randint(0, int(r.num_classes), (n,), generator=g)}


def micro_batches(cfg: Config, mbs: int, device: str, seed: int, workers: int | None = None,
                  uint8_images: bool = True) -> Iterator[dict[str, torch.Tensor]]:
    """Micro-batches as a training run gets them: a DataLoader whose worker processes (``workers``, default
    ``DATA_WORKERS``) collate them and, on a GPU, a thread that pins them; each micro-step copies its batch to the
    device. Images come as uint8 and become normalised floats on the device, on the compute stream, as the next
    micro-step's first work (``uint8_images=False``: fp32 images collated on the host, as the engine fed them
    before). Only the sustained run reads them: collated on the main thread, which drives the GPU and under
    offload the optimizer, they slowed host-bound configurations, and inside synchronized phases that work was
    exposed where a training run overlaps it (``results.ENGINE_REVISION`` 5 and 6). The stream loops over
    ``STREAM_BATCHES`` batches."""
    from torch.utils.data import DataLoader, TensorDataset

    pool = stream_dataset(cfg, mbs * STREAM_BATCHES, seed, uint8_images)
    keys = list(pool)
    workers = DATA_WORKERS if workers is None else workers
    loader = DataLoader(TensorDataset(*[pool[k] for k in keys]), batch_size=mbs, pin_memory=device == "cuda",
                        drop_last=True, num_workers=workers, persistent_workers=workers > 0)
    to_float = _normaliser(device) if uint8_images and images_fed(cfg) else None  # as stream_dataset made them
    while True:
        for tensors in loader:
            batch = dict(zip(keys, tensors))
            if to_float:
                batch["pixel_values"] = to_float(batch["pixel_values"])
            yield batch


def _normaliser(device: str):
    """uint8 images to normalised fp32 on ``device``: copied as bytes, then scaled there."""
    mean = torch.tensor(IMAGE_MEAN, device=device).view(1, 3, 1, 1) * 255
    std = torch.tensor(IMAGE_STD, device=device).view(1, 3, 1, 1) * 255
    return lambda x: x.to(device, non_blocking=True).float().sub_(mean).div_(std)
