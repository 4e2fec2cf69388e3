"""Data order as a pure function of (seed, epoch, step): what makes exact resume possible.

``ResumableDistributedSampler`` *is* a :class:`~torch.utils.data.DistributedSampler`
(``set_epoch`` included, same permutation: ``randperm(n, generator=seed + epoch)``) with two
changes that a resumable run needs:

* it works in *global batches*: global step ``s`` of an epoch always uses the same
  ``global_batch_size`` samples, and rank ``r`` of ``W`` takes every ``W``-th of them. So the
  global order of samples does not depend on the world size (a 2-rank run can continue on 1);
* it can start at any step of an epoch (``set_position``), with nothing replayed: no need to
  "fast-forward" a data loader through batches that were already trained on.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator

import torch
from torch.utils.data import DistributedSampler


class ResumableDistributedSampler(DistributedSampler):
    def __init__(self, n: int, global_batch_size: int, num_replicas: int, rank: int, seed: int = 0,
                 contiguous: bool = False):
        if global_batch_size % num_replicas:
            raise ValueError(f"global batch {global_batch_size} not divisible by {num_replicas} ranks")
        if n < global_batch_size:
            raise ValueError(
                f"only {n} training samples for a global batch of {global_batch_size}: "
                "use more data (--train-limit) or a smaller --global-batch-size")
        super().__init__(range(n), num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed, drop_last=True)
        self.n, self.global_batch_size, self.start_step, self.contiguous = n, global_batch_size, 0, contiguous

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order to draw; it starts at its first step (:meth:`set_position` moves it)."""
        super().set_epoch(epoch)
        self.start_step = 0

    @property
    def steps_per_epoch(self) -> int:
        return self.n // self.global_batch_size  # the last partial global batch is dropped

    def set_position(self, step_in_epoch: int) -> None:
        """Start the current epoch at ``step_in_epoch`` (0 = its beginning)."""
        if not 0 <= step_in_epoch <= self.steps_per_epoch:
            raise ValueError(f"step {step_in_epoch} outside an epoch of {self.steps_per_epoch} steps")
        self.start_step = step_in_epoch

    def global_batches(self) -> Iterator[list[int]]:
        """Every rank's samples of each step, from the current position to the epoch's end."""
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        perm = torch.randperm(self.n, generator=g)
        for step in range(self.start_step, self.steps_per_epoch):
            yield perm[step * self.global_batch_size:(step + 1) * self.global_batch_size].tolist()

    def share(self, global_batch: list[int]) -> list[int]:
        """This rank's part of a global batch: every ``W``-th sample, or (``contiguous``, for the
        invariant reduction's micro-batch blocks) the ``r``-th of ``W`` equal slices."""
        if self.contiguous:
            size = len(global_batch) // self.num_replicas
            return global_batch[self.rank * size:(self.rank + 1) * size]
        return global_batch[self.rank::self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        """This rank's indices, step by step, from the current position to the epoch's end."""
        for chunk in self.global_batches():
            yield from self.share(chunk)

    def __len__(self) -> int:
        return (self.steps_per_epoch - self.start_step) * (self.global_batch_size // self.num_replicas)


def sample_digest(sample_ids: list[int]) -> str:
    """Short digest of the sample ids of one step (order-insensitive)."""
    return hashlib.blake2b(",".join(map(str, sorted(sample_ids))).encode(), digest_size=8).hexdigest()
