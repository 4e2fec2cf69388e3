"""The audit's digests of a process's state, and where a resume went on from (stdlib + torch only).

Imported by :mod:`resume_audit_probe` inside every process of an audited run (this folder is
on its ``PYTHONPATH``), and by the audit's judge (:mod:`resume_audit.judge`), which compares
the digests the two sides wrote. A digest is sha256 over per-tensor CRC32s (dtype, shape and
bytes), cut to ``DIGEST_CHARS`` hex characters: equal digests, equal bits.
"""
from __future__ import annotations

import hashlib
import random
import sys
import zlib

DIGEST_CHARS = 16


# --------------------------------------------------------------------------- digests
def _bytes_of(tensor):
    """The raw bytes of a tensor, without a copy where it is a contiguous CPU tensor."""
    t = tensor.detach()
    if hasattr(t, "to_local"):  # a DTensor (FSDP2, tensor parallel): this rank's shard, with no collective
        t = t.to_local()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous().reshape(-1)
    try:
        return t.view(_torch().uint8).numpy()
    except (RuntimeError, TypeError):  # no NumPy, or a dtype it cannot view
        return bytes(t.untyped_storage())[: t.numel() * t.element_size()]


def _feed(h, value) -> None:
    """Hash ``value`` (tensors, containers, numbers, strings) into ``h``, structure included."""
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):  # its bytes by CRC-32: twice sha256's speed here
        h.update(f"T{value.dtype}{tuple(value.shape)}".encode())
        h.update(zlib.crc32(_bytes_of(value)).to_bytes(4, "little"))
    elif type(value).__module__ == "numpy" and hasattr(value, "tobytes"):
        h.update(f"N{getattr(value, 'dtype', '')}{getattr(value, 'shape', '')}".encode())
        h.update(value.tobytes())
    elif isinstance(value, dict):
        h.update(b"{")
        for key in sorted(value, key=repr):
            h.update(repr(key).encode())
            _feed(h, value[key])
        h.update(b"}")
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for item in value:
            _feed(h, item)
        h.update(b"]")
    else:
        h.update(repr(value).encode())


def digest(*values) -> str:
    """A short hex digest of ``values``: sha256 over their structure, with each tensor's dtype,
    shape and the CRC-32 of its bytes (a state that differs in one tensor is missed with odds of
    2**-32; in several, of 2**-32 for each)."""
    h = hashlib.sha256()
    for v in values:
        _feed(h, v)
    return h.hexdigest()[:DIGEST_CHARS]


def _params(optimizer) -> list:
    return [p for group in optimizer.param_groups for p in group["params"]]


def params_digest(optimizer) -> str:
    return digest(_params(optimizer))


def grads_digest(optimizer) -> str:
    return digest([p.grad if p.grad is not None else "none" for p in _params(optimizer)])


def state_digest(optimizer) -> str:
    """The optimizer's per-parameter state (Adam's moments and step counts), in parameter order."""
    return digest([optimizer.state.get(p, {}) for p in _params(optimizer)])


def buffers_digest(modules) -> str:
    """The buffers of ``modules`` (BatchNorm's running statistics, any registered buffer), by name."""
    return digest([dict(m.named_buffers()) for m in modules])


def tensor_keys(value, limit: int = 100_000) -> set:
    """``(shape, CRC-32)`` of every tensor or array inside ``value`` (dicts, lists, objects'
    ``__dict__`` one level deep): what a saved object holds, to tell which step's state it is."""
    found: set = set()
    todo, seen = [value], 0
    torch = _torch()
    while todo and seen < limit:
        v = todo.pop()
        seen += 1
        if torch is not None and isinstance(v, torch.Tensor):
            found.add((tuple(v.shape), zlib.crc32(_bytes_of(v))))
        elif type(v).__module__ == "numpy" and hasattr(v, "tobytes") and hasattr(v, "shape"):
            found.add((tuple(v.shape), zlib.crc32(v.tobytes())))
        elif isinstance(v, dict):
            todo.extend(v.values())
        elif isinstance(v, (list, tuple)):
            todo.extend(v)
    return found


def keys_of(tensors) -> frozenset:
    """:func:`tensor_keys` of a list of tensors (a step's parameters, its optimizer state)."""
    return frozenset(tensor_keys(list(tensors)))


def state_tensors(optimizer) -> list:
    return [t for p in _params(optimizer) for t in optimizer.state.get(p, {}).values()
            if _torch() is not None and isinstance(t, _torch().Tensor) and t.dim() > 0]


def _storage(tensor) -> int:
    """Where a tensor's bytes live (a DTensor: its local shard's)."""
    t = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    return t.untyped_storage().data_ptr()


def live_ids(optimizer) -> set:
    """The storages of the optimizer's parameters and of its state: a saved object that holds
    one of them holds live tensors, which training goes on changing."""
    return {_storage(t) for t in _params(optimizer) + state_tensors(optimizer)}


def holds_live(value, ids: set) -> bool:
    torch, todo = _torch(), [value]
    while todo:
        v = todo.pop()
        if torch is not None and isinstance(v, torch.Tensor):
            if _storage(v) in ids:
                return True
        elif isinstance(v, dict):
            todo.extend(v.values())
        elif isinstance(v, (list, tuple)):
            todo.extend(v)
    return False


def rng_digests() -> dict:
    """A digest of every global RNG a step can draw from."""
    out = {"python": digest(random.getstate())}
    np = sys.modules.get("numpy")
    if np is not None:
        out["numpy"] = digest(list(np.random.get_state()))
    torch = _torch()
    if torch is not None:
        out["torch"] = digest(torch.get_rng_state())
        if torch.cuda.is_available() and torch.cuda.is_initialized():  # this rank's own device only
            out["cuda"] = digest(torch.cuda.get_rng_state(torch.cuda.current_device()))
    return out


def hyper_digest(optimizer) -> str:
    """The param groups' settings other than the parameters and the learning rate."""
    return digest([{k: v for k, v in g.items() if k not in ("params", "lr")} for g in optimizer.param_groups])


def _torch():
    return sys.modules.get("torch")


# --------------------------------------------------------------------------- where a resume went on
def resume_point(table: list, params: str, state: str, hint: int | None = None) -> int | None:
    """The step ``c`` of the reference run whose state after it equals ``(params, state)`` (the
    state before a resumed process's first step): the resume went on from there. ``table``:
    ``[c, params, state]`` rows of the reference (``c = 0``: before its first step). The
    parameters and the optimizer state must both match; failing that, the parameters alone (an
    optimizer restored wrongly). Several matches (a step that changed nothing): the latest not
    after ``hint``, the newest step the interrupted attempt reached. ``None``: no state of the
    reference run."""
    for rows in ([r for r in table if r[1] == params and r[2] == state], [r for r in table if r[1] == params]):
        if rows:
            steps = sorted({r[0] for r in rows})
            before = [c for c in steps if hint is None or c <= hint]
            return (before or steps)[-1]
    return None
