"""The newest state from a live peer, over the process group, instead of from the checkpoint.

When the group re-forms and a member holds the state of the last finished step in memory (a
survivor, or any rank stopped at a step boundary for a newcomer), the members that lack it (the
newcomers) receive model, optimizer, scheduler and trainer state from it: the tensors themselves,
one flat buffer per dtype broadcast over the process group straight into fresh tensors, and the
rest (the structure, numbers, strings) as JSON. No pickle, no ``torch.save``: serialising
``minilm``'s 258 MB, copying the bytes around and loading them back cost 3.5 s here, the
tensors alone a fraction of it.

Both sides compute :func:`training_state_digest` (a sha256 of every tensor and number, by name,
so it does not depend on how the state was packed): the receiver checks its digest against the
sender's, and anyone can check it against the checkpoint of the same step. The checkpoint is still
written: disk stays the fallback.
"""
from __future__ import annotations

import json
import time
from collections import OrderedDict

import torch
import torch.distributed as dist

from course_lib.ddp.consistency import state_digest


def training_state_digest(parts: dict) -> str:
    """:func:`~course_lib.ddp.consistency.state_digest` of what training goes on from: every part
    but the group ``trainer.pt`` records (its ``config`` holds the world size of the member's group
    when the state was taken). Two members can hold one step in groups of different sizes: a
    newcomer handed step 26 by a group of one, then left alone before its first step, saves step
    26 as a member of a group of two. Their states are the same bits; only that record differs."""
    return state_digest({**parts, "trainer.pt": parts["trainer.pt"]["state"]})


def _pack(value, tensors: list):
    """JSON for everything but the tensors, which go to ``tensors`` (dict keys keep their type,
    tuples stay tuples, a state dict keeps its module versions)."""
    if isinstance(value, torch.Tensor):
        tensors.append(value.detach().cpu().contiguous())
        return {"t": len(tensors) - 1}
    if isinstance(value, dict):
        node = {"d": [[k, _pack(v, tensors)] for k, v in value.items()]}
        if getattr(value, "_metadata", None) is not None:
            node["m"] = list(value._metadata.items())
        return node
    if isinstance(value, tuple):
        return {"u": [_pack(v, tensors) for v in value]}
    if isinstance(value, list):
        return [_pack(v, tensors) for v in value]
    return value


def _unpack(node, tensors: list):
    if isinstance(node, list):
        return [_unpack(v, tensors) for v in node]
    if not isinstance(node, dict):
        return node
    if "t" in node:
        return tensors[node["t"]]
    if "u" in node:
        return tuple(_unpack(v, tensors) for v in node["u"])
    out = OrderedDict((k, _unpack(v, tensors)) for k, v in node["d"])
    if "m" in node:
        out._metadata = OrderedDict((k, v) for k, v in node["m"])
    return out


def _broadcast_bytes(data: bytes | None, src: int, group) -> bytes:
    size = torch.tensor([len(data) if data is not None else 0], dtype=torch.int64)
    dist.broadcast(size, src, group=group)
    buf = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data is not None else \
        torch.empty(int(size.item()), dtype=torch.uint8)
    dist.broadcast(buf, src, group=group)
    return data if data is not None else buf.numpy().tobytes()


def share(parts: dict | None, source: int, receivers: list[int], rank: int) -> tuple[dict | None, dict]:
    """A collective of every rank of the current group: ``source`` sends ``parts`` (its state, as
    objects) to ``receivers``. Returns the received parts (on a receiver, else ``None``) and what
    was measured (bytes, seconds, digest)."""
    t0 = time.perf_counter()
    ranks = sorted({source, *receivers})
    group = None if len(ranks) == dist.get_world_size() else dist.new_group(ranks)  # every rank creates it
    if rank not in ranks:
        return None, {}
    tensors, header = [], None
    if rank == source:
        skeleton = _pack(parts, tensors)
        header = json.dumps({"skeleton": skeleton, "shapes": [[str(t.dtype)[6:], list(t.shape)] for t in tensors],
                             "digest": training_state_digest(parts)}).encode()
    meta = json.loads(_broadcast_bytes(header, source, group))
    shapes = [(getattr(torch, dtype), torch.Size(shape)) for dtype, shape in meta["shapes"]]
    received = [None] * len(shapes)
    for dtype in dict.fromkeys(d for d, _ in shapes):  # one flat buffer per dtype
        index = [i for i, (d, _) in enumerate(shapes) if d == dtype]
        flat = torch.cat([tensors[i].reshape(-1) for i in index]) if rank == source else \
            torch.empty(sum(shapes[i][1].numel() for i in index), dtype=dtype)
        dist.broadcast(flat, source, group=group)
        for i, piece in zip(index, flat.split([shapes[i][1].numel() for i in index])):
            received[i] = piece.view(shapes[i][1])
    info = {"bytes": sum(t.numel() * t.element_size() for t in received), "digest": meta["digest"], "from_rank": source}
    if rank == source:
        return None, {**info, "seconds": time.perf_counter() - t0}
    state = _unpack(meta["skeleton"], received)
    digest = training_state_digest(state)
    if digest != meta["digest"]:
        raise RuntimeError(f"the state received from rank {source} does not match its digest "
                           f"({digest[:12]} != {meta['digest'][:12]}): not using it")
    return state, {**info, "seconds": time.perf_counter() - t0}
