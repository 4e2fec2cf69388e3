"""The seam an extension replaces DDP's gradient sync through: :class:`GradientSync`.

The core's sync is DDP itself, inline in :meth:`course_lib.ddp.train.Trainer._run_batch`. An
extension passes a factory ``gradients(model) -> GradientSync`` to the trainer instead (the kit's
world-size-invariant reduction: ``course_lib.beyond.invariant.InvariantStep``).
"""
from __future__ import annotations

from typing import Protocol

import torch


class GradientSync(Protocol):
    """Computes the global batch's gradient into every ``param.grad``, in place of DDP's
    all-reduce. All its collectives come before the optimizer step: a rank that sees a peer fail
    in one still holds the last finished step."""
    contiguous: bool  # a rank's share of a global batch: one block (True), or every W-th sample
    rank_rng: bool    # does each rank's RNG (dropout) belong in the checkpoint?
    invariant: bool   # the same bits on any world size: a checkpoint may resume on another one

    def parts(self, indices: list[int]) -> list[list[int]]:
        """This rank's micro-batches of its share ``indices`` of the global batch."""

    def compute(self, step: int, batches: list[dict[str, torch.Tensor]]) -> tuple[float, float]:
        """Forward and backward of ``batches`` (one per part, on the device) of global step
        ``step`` (1-based), a collective; returns this rank's loss and the global batch's."""
