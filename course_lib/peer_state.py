"""The newest state from a live peer, over the process group, instead of from the checkpoint.

When the group re-forms and a member holds the state of the last finished step in memory (a
survivor, or any rank stopped at a step boundary for a newcomer), the members that lack it (the
newcomers) receive model, optimizer, scheduler and trainer state from it: the bytes
:func:`course_lib.checkpoint.serialize` makes (what a checkpoint part holds), broadcast as one
``uint8`` tensor, read back with ``torch.load(weights_only=True)``, like a checkpoint.

Both sides compute :func:`state_digest` (a sha256 of every tensor and number, by name, so it does
not depend on how the bytes were packed): the receiver checks its digest against the sender's,
and anyone can check it against the checkpoint of the same step (``digest_of_checkpoint``). The
checkpoint is still written: disk stays the fallback.
"""
from __future__ import annotations

import hashlib
import io
import json
import time

import torch
import torch.distributed as dist

from . import checkpoint as ckpt

STATE_PARTS = ckpt.STATE_PARTS  # model.pt, optimizer.pt, scheduler.pt, trainer.pt


def _walk(h, key: str, value) -> None:
    h.update(key.encode())
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            _walk(h, f"{key}/{k}", value[k])
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _walk(h, f"{key}[{i}]", v)
    else:
        h.update(repr(value).encode())


def state_digest(parts: dict) -> str:
    """sha256 over the content of every part (tensors bit for bit, numbers by ``repr``)."""
    h = hashlib.sha256()
    for name in sorted(parts):
        _walk(h, name, parts[name])
    return h.hexdigest()


def digest_of_checkpoint(path) -> str:
    """:func:`state_digest` of a checkpoint's state parts, read from disk."""
    return state_digest({name: ckpt.load_part(path, name) for name in STATE_PARTS})


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
    sending = rank == source
    header = body = None
    if sending:
        blobs = {name: bytes(ckpt.serialize(obj)) for name, obj in parts.items()}
        header = json.dumps({"sizes": {n: len(b) for n, b in blobs.items()}, "digest": state_digest(parts)}).encode()
        body = b"".join(blobs.values())
    meta = json.loads(_broadcast_bytes(header, source, group))
    body = _broadcast_bytes(body, source, group)
    info = {"bytes": len(body), "digest": meta["digest"], "from_rank": source}
    if sending:
        return None, {**info, "seconds": time.perf_counter() - t0}
    received, offset = {}, 0
    for name, size in meta["sizes"].items():
        received[name] = torch.load(io.BytesIO(body[offset:offset + size]), weights_only=True)
        offset += size
    digest = state_digest(received)
    if digest != meta["digest"]:
        raise RuntimeError(f"the state received from rank {source} does not match its digest "
                           f"({digest[:12]} != {meta['digest'][:12]}): not using it")
    return received, {**info, "seconds": time.perf_counter() - t0}
