"""The crash points of a run: every file event the run never interrupted made under ``{run}``
(:mod:`resume_audit_files`), each a place a fresh run of the command can be struck, in the ways
that event allows:

* ``before``: killed just before it happens (a create, a write, an fsync, a rename, a remove);
* ``torn``: the file it writes cut to half its bytes once written, then killed (any writer:
  ``torch.save``, safetensors, and Python's ``open()``, so ``pickle``, ``json``, NumPy);
* ``power-data`` and ``power-names``: the machine goes down just before it
  (:mod:`resume_audit.power`), where that could lose something (some data not fsynced, some
  create, rename or remove whose folder was not fsynced).

:func:`sampled` draws a few by the seed, from the events of the steps that save (a checkpoint's
events rather than the set-up's); :func:`every` gives them all (``--every-event``).
"""
from __future__ import annotations

import random

from resume_audit.plan import EVENT_KINDS, Fault
from resume_audit.power import Disk
from resume_audit.records import Process

TEARABLE = ("create", "truncate", "write", "copy")


def points(processes: list[Process]) -> list[tuple[Fault, bool]]:
    """Every ``(fault, in_a_save)`` the reference's file events allow, in the order they happened;
    ``in_a_save``: the event came in a step of its process that saved a checkpoint."""
    events = sorted((e for p in processes for e in p.of_type("file")), key=lambda e: e["t"])
    saving = {(p.pid, e["local_step"]) for p in processes for e in p.of_type("save") if e["local_step"] > 0}
    pid_of = {id(e): p.pid for p in processes for e in p.of_type("file")}
    disk, out = Disk(), []
    for e in events:
        at, kw = e["local_step"], {"who": e["who"], "n": e["n"], "op": e["op"], "path": e["path"]}
        kinds = ["before"]
        if e["op"] in TEARABLE and (e["op"] in ("write", "copy") or e.get("python_open")):
            kinds.append("torn")
        if any(f.dirty for f in disk.files.values()):
            kinds.append("power-data")
        if disk.pending:
            kinds.append("power-names")
        in_save = (pid_of[id(e)], at) in saving
        out += [(Fault(kind, at, None, **kw), in_save) for kind in kinds]
        disk.replay(e)
    return out


def every(processes: list[Process], under: str | None = None) -> list[Fault]:
    """Every crash point (``under``: of the files under that folder of the run only)."""
    return [f for f, _ in points(processes) if _under(f, under)]


def _under(fault: Fault, folder: str | None) -> bool:
    if folder is None:
        return True
    folder = folder.strip("/")
    return fault.path == folder or (fault.path or "").startswith(folder + "/")


def sampled(processes: list[Process], count: int, seed: int = 0, under: str | None = None) -> list[Fault]:
    """``count`` crash points drawn by ``seed``, the kinds taken in turn (a torn write, a power
    cut losing data, a kill before an event, a power cut undoing names), each from the events
    of the steps that save where there are such; a power cut after the first save's step, where
    a complete checkpoint can be lost."""
    found = [(f, in_save) for f, in_save in points(processes) if _under(f, under)]
    pool = [f for f, in_save in found if in_save] or [f for f, _ in found]
    first = min((f.at for f in pool), default=0)
    later = [f for f in pool if f.kind not in ("power-data", "power-names") or f.at > first]
    pool = later if any(f.kind in ("power-data", "power-names") for f in later) else pool
    rng, chosen = random.Random(seed), []
    order = ["torn", "power-data", "before", "power-names"]
    for i in range(count * 4):
        if len(chosen) >= count:
            break
        kind = order[i % len(order)]
        options = [f for f in pool if f.kind == kind and f not in chosen]
        if options:
            chosen.append(rng.choice(options))
    return sorted(chosen, key=lambda f: (f.at, f.who or "", f.n, EVENT_KINDS.index(f.kind)))


def resolve(fault: Fault, processes: list[Process]) -> Fault | None:
    """A crash point given by hand (``torn@e12``), completed from the reference: its role, step,
    what the event does (``None``: the run never interrupted made no such event)."""
    for f, _ in points(processes):
        if f.n == fault.n and (fault.who is None or f.who == fault.who):
            return Fault(fault.kind, f.at, None, who=f.who, n=f.n, op=f.op, path=f.path)
    return None
