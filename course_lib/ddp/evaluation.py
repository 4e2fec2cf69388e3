"""Held-out evaluation, shared by the ranks: each scores every ``W``-th review of the chosen
set, the counts are all-reduced, so the score is the same whatever the world size and every
rank knows it.

A limited evaluation (``--eval-limit N``) scores a fixed *stratified* subset: the held-out
split keeps the source's order, every negative review before every positive one, so "the
first N" of it were all negative for N below ~2,490, and a model that answers "negative" to
everything scored 100% on them.
"""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F


def stratified_subset(labels: torch.Tensor, n: int) -> list[int]:
    """``n`` indices of ``labels`` (sorted), each class keeping its share of the whole (largest
    remainders get the leftover places), drawn by a fixed permutation per class."""
    labels = torch.as_tensor(labels)
    if n >= len(labels):
        return list(range(len(labels)))
    classes, counts = torch.unique(labels, return_counts=True)
    quotas = counts.double() * n / len(labels)
    take = quotas.floor().long()
    for i in torch.argsort(quotas - take, descending=True, stable=True)[: n - int(take.sum())]:
        take[i] += 1
    gen = torch.Generator().manual_seed(0)  # a property of the data, not of a run: every run scores the same reviews
    chosen = []
    for cls, k in zip(classes.tolist(), take.tolist()):
        members = torch.nonzero(labels == cls).flatten()
        chosen += members[torch.randperm(len(members), generator=gen)[:k]].tolist()
    return sorted(chosen)


@torch.no_grad()
def held_out_metrics(model: torch.nn.Module, data, pad_id: int, rank: int, world_size: int, device: torch.device,
                     limit: int = 0, autocast=contextlib.nullcontext, batch_size: int = 256) -> dict:
    """``val_loss``, ``val_accuracy`` and ``val_count`` on ``data`` (``limit`` > 0: a fixed
    stratified subset of that many reviews). A collective: every rank calls it."""
    model.eval()
    chosen = stratified_subset(data.labels, limit) if limit else list(range(len(data)))
    mine = chosen[rank::world_size]
    sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss sum, correct, count
    for start in range(0, len(mine), batch_size):
        idx = mine[start:start + batch_size]
        batch = {k: v.to(device) for k, v in data.batch(idx, pad_id).items()}
        with autocast():
            logits = model(batch["input_ids"], batch["attention_mask"]).float()
        sums += torch.tensor([F.cross_entropy(logits, batch["label"], reduction="sum").item(),
                              (logits.argmax(1) == batch["label"]).sum().item(), len(idx)],
                             dtype=torch.float64, device=device)
    if world_size > 1:
        dist.all_reduce(sums)
    count = max(sums[2].item(), 1)
    return {"val_loss": sums[0].item() / count, "val_accuracy": sums[1].item() / count, "val_count": int(sums[2].item())}
