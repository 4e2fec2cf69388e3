"""Every file event an audited process makes under its run folder (stdlib only): what a crash,
or a power cut, can interrupt.

CPython's audit hooks (``sys.addaudithook``) see the opens, renames, removes and directory
changes of Python code (``open``, ``pathlib``, ``os``, ``shutil``, and so ``pickle``, ``json``,
``numpy.save``); the native writers (``torch.save`` to a path, safetensors) and ``os.fsync``
raise no audit event, so :mod:`resume_audit_install` wraps them and reports them here. Each
event that changes the disk is numbered within its process and role (:func:`FileWatch.who`:
``rank{R}``, ``main`` for the command's own process, ``proc`` for another), so that a fresh run
of the same command can be struck at the same event: the crash points of
:mod:`resume_audit.crashpoints`. Reads are recorded too (what a resume loaded, by the file's
fingerprint: inode, size, modification time), unnumbered.

The events are data for the parent side, which replays them to know what a power cut could
leave (:mod:`resume_audit.power`); for that, a file about to be replaced or removed is kept by a
hard link (its *shadow*) when the attempt is one a power cut will strike.
"""
from __future__ import annotations

import os
import stat
import threading
import time
import uuid

WRITE_OPS = ("create", "truncate", "append", "write", "fsync", "fsync-dir", "rename", "remove", "mkdir", "rmdir",
             "copy")
TEARABLE = ("create", "truncate", "write", "copy")  # a crash can leave these files half-written


def fingerprint(path: str) -> dict | None:
    """What identifies a file's content without reading it: inode, size, modification time."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return {"ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def fd_path(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _abs(path, dir_fd: int | None = None) -> str | None:
    if isinstance(path, int) or path is None:  # a file descriptor: fsync and friends say it themselves
        return fd_path(path) if isinstance(path, int) else None
    try:
        path = os.fsdecode(os.fspath(path))
    except TypeError:
        return None
    if not os.path.isabs(path) and dir_fd not in (None, -1):
        base = fd_path(dir_fd)
        if base is not None:
            path = os.path.join(base, path)
    return os.path.normpath(os.path.abspath(path))


class FileWatch:
    """The file events of one process under ``run``; ``probe`` writes and numbers them and may
    strike at one (:meth:`Probe.file_event`)."""

    def __init__(self, probe, run: str, shadows: str | None):
        self.probe, self.run, self.shadows = probe, os.path.normpath(run), shadows
        # written by Python code: path -> the fingerprint last recorded (None: none yet), taken once closed (settle)
        self.pending: dict[str, dict | None] = {}
        # a background writer announces and renames while the trainer settles; re-entrant: a signal handler that
        # saves runs in the main thread, perhaps while it holds the lock
        self.pending_lock = threading.RLock()
        self._local = threading.local()

    @property
    def quiet(self) -> int:
        """Above 0 while this thread does the audit's own file work (shadows, tears), not the
        script's. Per thread: a background writer's save is the script's even while the training
        thread is inside a hook (one count for the process once dropped a background save's file)."""
        return getattr(self._local, "quiet", 0)

    @quiet.setter
    def quiet(self, value: int) -> None:
        self._local.quiet = value

    def under(self, path: str | None) -> bool:
        return path is not None and (path == self.run or path.startswith(self.run + os.sep))

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.run)

    # ------------------------------------------------------------------ the audit hook
    def hook(self, event: str, args: tuple) -> None:
        if self.quiet or event not in _HANDLED:
            return
        self.quiet += 1
        try:
            _HANDLED[event](self, args)
        finally:
            self.quiet -= 1

    def _open(self, args) -> None:
        path, mode, flags = args
        path = _abs(path)
        if not self.under(path):
            return
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else \
            bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC))
        if os.path.isdir(path):
            return  # a folder opened to fsync it: the fsync is the event
        if not writes:
            self.probe.file_read(self.rel(path), fingerprint(path))
            return
        exists = os.path.exists(path)
        truncates = (isinstance(mode, str) and "w" in mode) or bool(flags & os.O_TRUNC)
        op = "append" if exists and not truncates else "truncate" if exists else "create"
        with self.pending_lock:
            self.pending[path] = None
        self.probe.file_event(op, self.rel(path), python_open=isinstance(mode, str))

    def _rename(self, args) -> None:
        src, dst = _abs(args[0], args[2]), _abs(args[1], args[3])
        if not (self.under(src) or self.under(dst)):
            return
        shadow = self.keep(dst) if dst and os.path.isfile(dst) else None
        folder = bool(src) and os.path.isdir(src)
        self.probe.file_event("rename", self.rel(src) if self.under(src) else src,
                              dst=self.rel(dst) if self.under(dst) else dst, shadow=shadow, folder=folder or None)
        with self.pending_lock:
            for path in [p for p in self.pending if p == src or p.startswith(src + os.sep)]:
                seen = self.pending.pop(path)
                if self.under(dst):
                    self.pending[dst + path[len(src):]] = seen

    def _remove(self, args) -> None:
        path = _abs(args[0], args[1] if len(args) > 1 else None)
        if self.under(path):
            with self.pending_lock:
                self.pending.pop(path, None)
            self.probe.file_event("remove", self.rel(path), shadow=self.keep(path) if os.path.isfile(path) else None)

    def _mkdir(self, args) -> None:
        """Every ``mkdir`` call, also of a folder that exists (``os.makedirs(exist_ok=True)``: ranks
        racing to make one folder), so that the events' numbers do not depend on who won."""
        path = _abs(args[0], args[2] if len(args) > 2 else None)
        if self.under(path):
            self.probe.file_event("mkdir", self.rel(path), exists=os.path.isdir(path) or None)

    def _rmdir(self, args) -> None:
        path = _abs(args[0], args[1] if len(args) > 1 else None)
        if self.under(path):
            self.probe.file_event("rmdir", self.rel(path))

    def _copy(self, args) -> None:
        src, dst = _abs(args[0]), _abs(args[1])
        if self.under(dst):
            with self.pending_lock:
                self.pending[dst] = None
            self.probe.file_event("copy", self.rel(dst), src=self.rel(src) if self.under(src) else src,
                                  shadow=self.keep(dst) if os.path.isfile(dst) else None)

    # ------------------------------------------------------------------ what the hooks cannot see
    def native_write(self, path: str) -> bool:
        """A native writer (``torch.save``, safetensors) is about to write ``path``: is it under the run?"""
        path = _abs(path)
        if self.quiet or not self.under(path):
            return False
        op = "truncate" if os.path.exists(path) else "create"
        self.probe.file_event("write", self.rel(path), replaces=op == "truncate")
        return True

    def written(self, path: str) -> None:
        """A write has finished: the file's fingerprint, to know it again when a resume reads it."""
        path = _abs(path)
        if self.under(path):
            with self.pending_lock:
                self.pending.pop(path, None)
            self.probe.write_record({"type": "written", "path": self.rel(path), **(fingerprint(path) or {}),
                                     "t": time.time()})

    def fsync(self, fd: int) -> None:
        path = fd_path(fd)
        if self.quiet or not self.under(path):
            return
        try:
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
            size = os.fstat(fd).st_size
        except OSError:
            return
        if is_dir:
            self.probe.file_event("fsync-dir", self.rel(path))
        else:
            self.probe.file_event("fsync", self.rel(path), size=size)

    def settle(self) -> None:
        """Fingerprint the files Python code wrote that this process holds open no more (called at
        each step and at exit): a write is complete once its file is closed. A file leaves the
        watch when two looks find the same fingerprint: the audit hook announces an open *before*
        it happens, so a look in between (another thread's save) finds no file yet, or the old
        content of one the open will truncate; the next look records what was written."""
        if not self.pending:
            return
        held = set()
        for name in _listdir("/proc/self/fd"):
            target = fd_path(int(name)) if name.isdigit() else None
            if target is not None:
                held.add(target)
        with self.pending_lock:
            looks = sorted(self.pending.items())
        for path, seen in looks:
            if path in held:
                continue
            fp = fingerprint(path)
            with self.pending_lock:
                if fp is None or self.pending.get(path, False) != seen:
                    continue  # not there yet, or opened or moved again since this look began: the next look
                if fp == seen:
                    del self.pending[path]
                    continue
                self.pending[path] = fp
            self.probe.write_record({"type": "written", "path": self.rel(path), **fp, "t": time.time()})

    def keep(self, path: str) -> str | None:
        """A hard link to ``path`` before it is replaced or removed, when a power cut may undo that
        (its shadow, in the probe's records); ``None`` otherwise."""
        if self.shadows is None:
            return None
        os.makedirs(self.shadows, exist_ok=True)
        shadow = os.path.join(self.shadows, uuid.uuid4().hex)
        try:
            os.link(path, shadow)
        except OSError:
            return None
        return shadow


_HANDLED = {"open": FileWatch._open, "os.rename": FileWatch._rename, "os.remove": FileWatch._remove,
            "os.mkdir": FileWatch._mkdir, "os.rmdir": FileWatch._rmdir, "shutil.copyfile": FileWatch._copy}


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


class TornFile:
    """A file opened for writing by Python code that a ``torn`` fault cuts: once the script
    closes it (its whole content written), it is cut to half its size and the process dies,
    which is what a crash in the middle of the write leaves, whatever library wrote it."""

    def __init__(self, f, path: str, die):
        object.__setattr__(self, "_f", f)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_die", die)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __setattr__(self, name, value):
        setattr(self._f, name, value)

    def __iter__(self):
        return iter(self._f)

    def __enter__(self):
        self._f.__enter__()
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._f.close()
        size = os.path.getsize(self._path)
        os.truncate(self._path, size // 2)
        self._die(f"{self._path} ({size} bytes, cut to {size // 2})")
