"""A power cut, modelled: what the disk may hold after the machine went down, from the file
events the probe recorded (:mod:`resume_audit_files`), applied to the run's folder before the
command is started again.

POSIX promises little without ``fsync`` (`fsync`, `rename` in POSIX.1-2017; the ext4 and XFS
documentation; Pillai et al., "All File Systems Are Not Created Equal", OSDI '14, which found
real applications relying on more): data written since a file's last ``fsync`` may be lost, and
a create, rename or remove may be undone unless its directory was fsynced after it. Two states
a crash may leave are tried, each in a run of its own, so that a failure names what was missing:

* ``power-data``: every file keeps its name, but what was written since its last ``fsync`` is
  lost (a file appended to goes back to its size at that ``fsync``; one created or truncated
  since, and never fsynced, is empty): the missing ``fsync`` of a file.
* ``power-names``: every create, rename and remove not followed by an ``fsync`` of its
  directory is undone (the file a rename replaced, or a remove deleted, comes back from the
  hard link the probe kept), the data kept: the missing ``fsync`` of a directory.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from resume_audit.disk import happened
from resume_audit.records import Process

MODES = ("power-data", "power-names")


@dataclass
class _File:
    durable: int | None = None  # its size at its last fsync (None: no data of it is durable)
    dirty: bool = True


@dataclass
class Disk:
    """The run's files as the events left them, and what of that a power cut may take back."""
    files: dict[str, _File] = field(default_factory=dict)
    pending: list[tuple] = field(default_factory=list)  # (op, folder, ...) not yet made durable by the folder's fsync

    def replay(self, e: dict) -> None:
        op, path = e["op"], e["path"]
        if os.path.isabs(path):
            return  # outside the run (a rename from elsewhere): only its other end matters
        folder = os.path.dirname(path)
        if op in ("create", "write", "copy", "truncate"):
            new = op == "create" or (op in ("write", "copy") and not (e.get("replaces") or e.get("shadow")))
            if new:
                self.pending.append(("create", folder, path))
            self.files[path] = _File(None, True)
        elif op == "append":
            self.files.setdefault(path, _File(None, True)).dirty = True
        elif op == "fsync":
            self.files[path] = _File(e.get("size"), False)
        elif op == "fsync-dir":
            done = os.path.normpath(path)
            self.pending = [p for p in self.pending if os.path.normpath(p[1] or ".") != done]
        elif op == "rename":
            self._rename(path, e.get("dst", ""), e)
        elif op == "remove":
            self.files.pop(path, None)
            self.pending.append(("remove", folder, path, e.get("shadow")))
        elif op == "mkdir" and not e.get("exists"):
            self.pending.append(("mkdir", folder, path))
        elif op == "rmdir":
            self.pending.append(("rmdir", folder, path))

    def _rename(self, path: str, dst: str, e: dict) -> None:
        if os.path.isabs(dst):
            self.files.pop(path, None)
            return
        for name in [n for n in self.files if n == path or n.startswith(path + "/")]:  # a folder moves what is in it
            self.files[dst + name[len(path):]] = self.files.pop(name)
        if not e.get("folder"):
            self.files.setdefault(dst, _File(None, False))
        self.pending.append(("rename", os.path.dirname(dst), path, dst, e.get("shadow")))

    def lose_data(self, run: Path) -> list[str]:
        """``power-data``: what was written since each file's last fsync is gone. Returns the files changed."""
        changed = []
        for path, f in sorted(self.files.items()):
            full = run / path
            if not f.dirty or not full.is_file():
                continue
            size = f.durable or 0
            if full.stat().st_size != size:
                os.truncate(full, size)
                changed.append(path)
        return changed

    def undo_names(self, run: Path) -> list[list[str]]:
        """``power-names``: the creates, renames and removes no fsync of their folder made durable
        are undone, newest first. Returns what was undone: ``[op, path, ...]`` each."""
        said = []
        for entry in reversed(self.pending):
            op = entry[0]
            if op == "create" and (run / entry[2]).exists():
                (run / entry[2]).unlink()
                said.append(["create", entry[2]])
            elif op == "rename":
                src, dst, shadow = entry[2], entry[3], entry[4]
                if (run / dst).exists():
                    os.replace(run / dst, run / src)
                    if shadow and Path(shadow).exists():
                        os.link(shadow, run / dst)
                    said.append(["rename", src, dst])
            elif op == "remove" and entry[3] and Path(entry[3]).exists() and not (run / entry[2]).exists():
                os.link(entry[3], run / entry[2])
                said.append(["remove", entry[2]])
            elif op == "mkdir" and (run / entry[2]).is_dir():
                shutil.rmtree(run / entry[2])
                said.append(["mkdir", entry[2]])
            elif op == "rmdir" and not (run / entry[2]).exists():
                (run / entry[2]).mkdir(parents=True)
                said.append(["rmdir", entry[2]])
        return said


def replayed(processes: list[Process]) -> Disk:
    """The file events of every process, in the order they happened; not the one a fault struck
    just before it happened (it is recorded, then struck)."""
    disk = Disk()
    events = sorted((e for p in processes for e in happened(p) if e["type"] == "file"), key=lambda e: e["t"])
    for e in events:
        disk.replay(e)
    return disk


def cut_power(mode: str, processes: list[Process], run: Path) -> list:
    """Leave in ``run`` what a power cut of ``mode`` may leave after ``processes`` ran; returns
    what it changed (files whose data it took back, or the names it undid)."""
    disk = replayed(processes)
    return disk.lose_data(Path(run)) if mode == "power-data" else disk.undo_names(Path(run))
