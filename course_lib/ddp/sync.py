"""How the ranks' gradients become the global batch's in one step: the interface a trainer's
gradient sync meets, and DDP's, the chapter's (the kit's other one, the world-size-invariant
reduction, is :class:`course_lib.beyond.invariant.InvariantStep`). :meth:`Trainer.gradient_sync
<course_lib.ddp.train.Trainer.gradient_sync>` builds one for each rank's place in the group.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Protocol

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class GradientSync(Protocol):
    """How the ranks' gradients become the global batch's in one step, chosen by ``--reduction``:
    :class:`DDPSync`, or :class:`course_lib.beyond.invariant.InvariantStep`."""
    model: torch.nn.Module  # what the forward pass runs through
    contiguous: bool        # a rank's share of a global batch: every W-th sample, or one block
    rank_rng: bool          # does each rank's RNG (dropout) belong in the checkpoint?

    def run(self, step: int, indices: list[int], batch_of: Callable, autocast: Callable) -> tuple[float, float | None]:
        """Forward + backward of this rank's ``indices``, leaving the global batch's gradient in
        ``param.grad``; returns this rank's loss and the global loss (``None``: not known yet)."""


class DDPSync:
    """DDP: each rank computes the gradients of its share, and DDP all-reduces (averages) them
    during the last backward pass of the step, bucket by bucket, while backward goes on."""
    contiguous, rank_rng = False, True

    def __init__(self, model: torch.nn.Module, device: torch.device, micro_batch: int, bucket_view: bool,
                 skip: bool = False):
        # gradient_as_bucket_view: the gradients *are* views into DDP's all-reduce buckets, so a
        # step neither copies them (minilm: ~90 MB) into the buckets and back nor reallocates them
        self.model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None,
                         gradient_as_bucket_view=bucket_view)
        self.micro_batch, self.skip = micro_batch, skip  # skip: --skip-grad-sync (notebook 03, teaching only)

    def run(self, step, indices, batch_of, autocast) -> tuple[float, None]:
        """This rank's share in micro-batches of ``--micro-batch``: gradients accumulate locally
        (``no_sync``) and are all-reduced once, in the last backward pass."""
        size = self.micro_batch or len(indices)
        parts = [indices[i:i + size] for i in range(0, len(indices), size)]
        loss = 0.0
        for i, part in enumerate(parts):
            batch = batch_of(part)
            with self.model.no_sync() if i < len(parts) - 1 or self.skip else contextlib.nullcontext(), autocast():
                logits = self.model(batch["input_ids"], batch["attention_mask"])
                part_loss = F.cross_entropy(logits.float(), batch["label"]) * (len(part) / len(indices))
                part_loss.backward()  # the last one all-reduces the gradients over the ranks
            loss += part_loss.item()
        return loss, None
