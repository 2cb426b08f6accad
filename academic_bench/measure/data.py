"""The micro-batches a measurement feeds its steps: random samples of the model's input, pinned in host memory."""
from __future__ import annotations

from typing import Iterator

import torch

from ..catalog.config import Config


def host_batches(cfg: Config, mbs: int, n: int, seed: int) -> list[dict[str, torch.Tensor]]:
    """Pre-made random micro-batches in (pinned) host memory, copied to the GPU inside each step."""
    g = torch.Generator().manual_seed(seed)
    out = [cfg.spec.make_batch(mbs, tiny=cfg.tiny, generator=g) for _ in range(n)]
    if torch.cuda.is_available():
        out = [{k: v.pin_memory() for k, v in b.items()} for b in out]
    return out


STREAM_BATCHES = 8  # the sustained run's dataset, in micro-batches, cycled (the data are random anyway)
DATA_WORKERS = 2  # DataLoader worker processes that collate it


def micro_batches(cfg: Config, mbs: int, device: str, seed: int) -> Iterator[dict[str, torch.Tensor]]:
    """Micro-batches as a training run gets them: a DataLoader whose worker processes collate them and, on a
    GPU, a thread that pins them; each micro-step copies its batch to the device. Only the sustained run reads
    them: collated on the main thread, which drives the GPU and under offload the optimizer, they slowed
    host-bound configurations, and inside synchronized phases that work was exposed where a training run overlaps
    it (``results.ENGINE_REVISION`` 5 and 6). The stream loops over ``STREAM_BATCHES`` batches."""
    from torch.utils.data import DataLoader, TensorDataset

    pool = host_batches(cfg, mbs * STREAM_BATCHES, 1, seed)[0]
    keys = list(pool)
    loader = DataLoader(TensorDataset(*[pool[k] for k in keys]), batch_size=mbs, pin_memory=device == "cuda",
                        drop_last=True, num_workers=DATA_WORKERS, persistent_workers=True)
    while True:
        for tensors in loader:
            yield dict(zip(keys, tensors))
