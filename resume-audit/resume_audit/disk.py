"""What is on a run's disk: the checkpoints the script wrote (intact or not) and which one a
resume read, from the probe's records and a look at the folder between attempts.

A *checkpoint of step s* is every save (``torch.save``, safetensors, ``pickle``, NumPy) the
script made after its step s, on every rank, followed to the file it ended up in (a save to a
temporary file is renamed onto its checkpoint's name). It is *complete* once every one of those
files was written whole (the probe's ``written`` record, its inode, size and modification time),
and *intact* while the disk still holds every one of them as written: a crash may tear a file
half-way, a save in place may overwrite the previous checkpoint, a power cut may take back what
was never fsynced. The step a checkpoint holds is the step of the state inside it, where the
probe could tell (``holds``), so a background save is placed where its content belongs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from resume_audit.records import Process


def scan(run: Path) -> dict[str, dict]:
    """Every file under ``run``: relative path -> ``{ino, size, mtime_ns}``."""
    out = {}
    for folder, _, names in os.walk(run):
        for name in names:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            out[os.path.relpath(path, run)] = {"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    return out


def same(a: dict | None, b: dict | None) -> bool:
    return a is not None and b is not None and all(a.get(k) == b.get(k) for k in ("ino", "size", "mtime_ns"))


@dataclass
class Checkpoint:
    step: int                                        # the reference's step whose state it holds
    files: dict[str, dict | None] = field(default_factory=dict)  # final path -> its fingerprint when written whole
    moved: bool = False                              # a later save moved a file of it away from where it was put

    @property
    def complete(self) -> bool:
        return bool(self.files) and all(fp is not None for fp in self.files.values())

    def intact(self, disk: dict[str, dict]) -> bool:
        return self.complete and all(same(disk.get(path), fp) for path, fp in self.files.items())


def checkpoints(processes: list[Process], run: Path, finals: dict | None = None) -> list[Checkpoint]:
    """The checkpoints the processes of one attempt wrote, by step (a step's saves on every rank:
    one checkpoint), each file followed through its renames to where it ended. ``finals``
    (:func:`final_paths` of the run never interrupted): where each save ends when its protocol
    runs to its end; a save whose file is not there yet (a rename still to come) is not complete."""
    by_step: dict[int, Checkpoint] = {}
    for key, step, path, written, moved in _saves(processes, run):
        if finals is not None and finals.get(key, path) != path:
            written = None
        c = by_step.setdefault(step, Checkpoint(step))
        c.files[path], c.moved = written, c.moved or moved
    return [by_step[s] for s in sorted(by_step)]


def final_paths(processes: list[Process], run: Path) -> dict:
    """``(rank, step, i) -> path``: where the ``i``-th save of that rank after that step ended."""
    return {key: path for key, _, path, _, _ in _saves(processes, run)}


def _saves(processes: list[Process], run: Path):
    """``((rank, step, i), step held, final path, fingerprint once written, moved)`` of every save to
    a file; *moved*: a later step's save renamed it away from where its own save put it (a backup
    made before the new file takes the name)."""
    for p in processes:
        offset = step_offset(p)
        events, seen = happened(p), {}
        for i, e in enumerate(events):
            if e["type"] != "save" or e.get("step") is None or e["target"].startswith("<"):
                continue
            held = (e.get("holds") or [None])[0]
            step = offset + held if held is not None and e.get("thread") else e["step"]
            path, written = follow(events[i + 1:], rel(e["target"], run))
            if step <= 0 or path is None:
                continue
            later = next((j for j, x in enumerate(events)
                          if j > i and x["type"] == "save" and (x.get("step") or 0) > e["step"]), len(events))
            put = follow(events[i + 1:later], rel(e["target"], run))[0]
            n = seen[(p.rank, step)] = seen.get((p.rank, step), -1) + 1
            yield (p.rank, step, n), step, path, written, put != path


def step_offset(process: Process) -> int:
    """The uninterrupted run's step this process went on from: its local step numbers plus this."""
    return next((s.get("resumed_from") for s in process.steps[:1]), 0) or 0


def happened(process: Process) -> list[dict]:
    """The process's records, less the file event a fault struck just before it happened."""
    f = process.fault
    if not f or not f.get("event") or f["mode"] == "torn":
        return process.events
    who, n = f["event"]
    return [e for e in process.events if not (e["type"] == "file" and e["who"] == who and e["n"] == n)]


def rel(target: str, run: Path) -> str | None:
    try:
        return str(Path(target).resolve().relative_to(Path(run).resolve()))
    except ValueError:
        return None


def follow(events: list[dict], path: str | None) -> tuple[str | None, dict | None]:
    """Where the file at ``path`` ended (renames), and its fingerprint once written whole."""
    written = None
    for e in events:
        if path is None:
            break
        if e["type"] == "written" and e["path"] == path:
            written = {k: e.get(k) for k in ("ino", "size", "mtime_ns")}
        elif e["type"] == "file" and e["op"] == "rename" and moved(path, e) is not None:
            path = moved(path, e)
        elif e["type"] == "file" and e["op"] in ("create", "truncate", "write") and e["path"] == path and written:
            break  # written again: a later save's
    return path, written


def moved(path: str, rename: dict) -> str | None:
    """Where a ``rename`` event puts ``path`` (the file itself, or one inside a folder it moves);
    ``None``: it does not move it, or moves it outside the run."""
    src, dst = rename["path"], rename.get("dst", "")
    if os.path.isabs(dst) or not (path == src or path.startswith(src + "/")):
        return None
    return dst + path[len(src):]


def newest(found: list[Checkpoint], disk: dict[str, dict] | None = None) -> int:
    """The step of the newest checkpoint complete (``disk``: intact on it) (0: none)."""
    ok = [c.step for c in found if (c.intact(disk) if disk is not None else c.complete)]
    return max(ok, default=0)


def read_by(process: Process) -> list[dict]:
    """The fingerprints of the files under the run a process read before its first step."""
    out = []
    for e in process.events:
        if e["type"] == "step":
            break
        if e["type"] in ("read", "load") and e.get("file"):
            out.append(e["file"])
    return out


def loaded(found: list[Checkpoint], process: Process) -> int | None:
    """The step of the checkpoint whose file ``process`` read before its first step (``None``: none it knows)."""
    fps = read_by(process)
    hits = [c.step for c in found for fp in c.files.values() if any(same(fp, r) for r in fps)]
    return max(hits, default=None)


def unseen(disk: dict[str, dict], processes: list[Process]) -> list[str]:
    """Files under the run that no recorded event wrote: a writer the audit cannot see (and so
    cannot cut, nor tell a power cut's loss of): a program that is not Python, a library's native code."""
    made: set[str] = set()
    events = sorted((e for p in processes for e in p.events if e["type"] in ("file", "written")),
                    key=lambda e: e.get("t", 0))
    for e in events:
        if e["type"] == "file" and e["op"] == "rename":
            made |= {moved(path, e) or path for path in made} | {e.get("dst")}
        else:
            made.add(e["path"])
    return sorted(path for path in disk if path not in made)
