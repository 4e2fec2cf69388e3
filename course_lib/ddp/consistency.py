"""Do all ranks hold the same model? DDP promises it; the end of every run checks it.

A run whose ranks end with different parameters is not one model but several, and whatever
caused it (a thread count that differs between ranks, a kernel that is not deterministic, a
resume that restored one rank differently) must be found, not averaged away. So the check
names the tensors that differ, by how much, and the first step whose gradient norm differs.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import torch
import torch.distributed as dist

from course_lib.watch.monitor import read_ledger


def state_digest(state) -> str:
    """sha256 over the content of ``state``: tensors bit for bit (with dtype and shape), numbers
    and strings by ``repr``, dicts by sorted key, lists by position. It does not depend on how
    the state was packed, so a state sent from a peer, loaded from a checkpoint or held in
    memory can be compared."""
    h = hashlib.sha256()
    _feed(h, "", state)
    return h.hexdigest()


def _feed(h, key: str, value) -> None:
    h.update(key.encode())
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy())  # the buffer itself, no copy
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            _feed(h, f"{key}/{k}", value[k])
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _feed(h, f"{key}[{i}]", v)
    else:
        h.update(repr(value).encode())


def check_ranks_agree(model: torch.nn.Module, world_size: int, run_dir: str | Path, rank: int) -> str:
    """This rank's parameter digest, after checking every rank has the same one (a collective:
    every rank calls it). Raises ``RuntimeError`` with the diagnosis when they differ."""
    digest = state_digest(model.state_dict())  # equal digests, equal bits
    digests = [None] * world_size
    dist.all_gather_object(digests, digest)
    if len(set(digests)) != 1:
        _explain_divergence(model, world_size, run_dir, rank)
    return digest


def _explain_divergence(model: torch.nn.Module, world_size: int, run_dir: str | Path, rank: int) -> None:
    mine = {name: t.detach().cpu() for name, t in model.state_dict().items()}
    theirs: list = [None] * world_size
    dist.all_gather_object(theirs, {"params": mine, "threads": torch.get_num_threads(),
                                    "grad_norms": {r["step"]: r["grad_norm"] for r in read_ledger(run_dir, rank)}})
    ref = theirs[0]
    lines = []
    for r, other in enumerate(theirs[1:], start=1):
        bad = {n: float((t - ref["params"][n]).abs().max()) for n, t in other["params"].items()
               if not torch.equal(t, ref["params"][n])}
        first = next((s for s, g in other["grad_norms"].items() if ref["grad_norms"].get(s) != g), None)
        lines.append(f"rank {r} vs rank 0: {len(bad)} tensor(s) differ (max |diff| {bad}); threads "
                     f"{other['threads']} vs {ref['threads']}; first step whose grad norm differs: {first}")
    raise RuntimeError("ranks ended with different parameters: " + " | ".join(lines))
