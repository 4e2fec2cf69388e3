"""Held-out evaluation, shared by the ranks: each scores every ``W``-th review, the counts are
all-reduced, so the score is the same whatever the world size and every rank knows it."""
from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.nn.functional as F


@torch.no_grad()
def held_out_metrics(model: torch.nn.Module, data, pad_id: int, rank: int, world_size: int, device: torch.device,
                     limit: int = 0, autocast=contextlib.nullcontext, batch_size: int = 256) -> dict:
    """``val_loss``, ``val_accuracy`` and ``val_count`` on the first ``limit`` (0 = all)
    reviews of ``data``. A collective: every rank calls it."""
    model.eval()
    n = len(data) if not limit else min(limit, len(data))
    mine = list(range(rank, n, world_size))
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
