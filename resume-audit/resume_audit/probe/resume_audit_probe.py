"""The audit's observer inside every Python process of an audited run (stdlib + torch only).

One :class:`Probe` per interpreter, installed by this folder's ``sitecustomize``
(:mod:`resume_audit_install` connects it to the libraries); the audited script runs with
whatever Python it names, as long as that Python has torch. The probe changes no value the
script computes; it writes one JSON line per event to ``$out/<pid>-<ns>.jsonl``
(:mod:`resume_audit_schema`) and delivers ``$RESUME_AUDIT``'s ``fault``, a real one, as
the optimizer step ``at`` (the reference run's numbering) begins. How it watches: docs/audit.md.
"""
from __future__ import annotations

import importlib
import io
import json
import os
import signal
import sys
import time

# the digests, beside this file: on the run's PYTHONPATH in an audited process, in the kit's package for its map
digests = importlib.import_module(f"{__package__}.resume_audit_digests" if __package__ else "resume_audit_digests")

ENV = "RESUME_AUDIT"


class Probe:
    """One process's records; reset in a forked child (its parent's file and counts are not its own)."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.every = max(1, int(cfg.get("every", 1)))
        self.fault = cfg.get("fault")
        self._table = None
        self.averaged: list = []  # weak references to the AveragedModels (EMA, SWA) of this process
        self.reset()

    def reset(self) -> None:
        self.fd, self.steps, self.offset = None, 0, None
        self.silent = False  # a DataLoader worker: its parent records the batches it makes
        self.hidden = 0  # inside a library's own optimizer step that trains nothing (DCP's state initialisation)
        self.optimizers: dict[int, int] = {}  # id(optimizer) -> 0, 1, ... in order of their first step
        self.last = None  # the optimizer of the newest step
        self.batches: list[str] = []
        self.positions: list[int] = []  # each batch's place in its DataLoader pass (1 = the pass's first batch)
        self.backwards = 0  # backward passes since the last step
        self.scales: list[float] = []  # a GradScaler's scale at each of its steps since the last optimizer step
        self.fired = False
        self.cut_pending = False  # a during-save fault waits for the bytes of an in-memory save to reach a file
        self.commit_pending = None  # a during-commit fault's step: it waits for the rename or copy after that save
        self.commit_src = None  # ... of the file that save wrote (None: it wrote to memory, so the first one)
        self.saves_here = 0  # saves at the step a during-save fault cuts
        self.saved_at = self.synced_at = None  # the steps of the newest save, and of an fsync after it
        self.pre: dict = {}
        self.seconds = 0.0  # time spent in this probe's hooks

    # ------------------------------------------------------------------ writing
    def write(self, record: dict) -> None:
        if self.fd is None:
            if self.silent:
                return
            os.makedirs(self.cfg["out"], exist_ok=True)
            path = os.path.join(self.cfg["out"], f"{os.getpid()}-{time.time_ns()}.jsonl")
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._put({"type": "start", "pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv,
                       "env_rank": os.environ.get("RANK"), "time": time.time()})
        self._put(record)

    def _put(self, record: dict) -> None:
        os.write(self.fd, (json.dumps(record, default=repr) + "\n").encode())  # unbuffered: a SIGKILL loses nothing

    def event(self, kind: str, **values) -> None:
        """A record of ``kind`` at this process's current step."""
        self.write({"type": kind, "local_step": self.steps, "rank": self.rank(), **values, "t": time.time()})

    # ------------------------------------------------------------------ who and where
    @staticmethod
    def rank() -> int:
        torch = digests._torch()
        dist = getattr(torch, "distributed", None) if torch is not None else None
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank()
        return int(os.environ.get("RANK", 0))

    def global_step(self, local: int) -> int | None:
        return None if self.offset is None else self.offset + local

    def _align(self, params: str, state: str) -> None:
        """On the first step: which step of the reference this process goes on from."""
        ref = self.cfg.get("reference")
        if not ref:
            self.offset = 0
            return
        if self._table is None:
            with open(ref) as f:
                self._table = json.load(f)
        table = self._table.get(str(self.rank()), [])
        self.offset = digests.resume_point(table, params, state, self.cfg.get("hint"))

    # ------------------------------------------------------------------ the optimizer's hooks
    def before_step(self, optimizer, args, kwargs) -> None:
        if self.hidden:
            return
        t0 = time.perf_counter()
        k = self.steps + 1
        first = k == 1
        index = self.optimizers.setdefault(id(optimizer), len(self.optimizers))
        closure = (args[0] if args else kwargs.get("closure")) is not None  # gradients computed inside the step
        pre = {"local_step": k, "optimizer": index, "rank": self.rank(),
               "lr": [float(g["lr"]) for g in optimizer.param_groups], "hyper": digests.hyper_digest(optimizer),
               "rng": digests.rng_digests(), "batches": self.batches or None, "positions": self.positions}
        if self.scales:
            pre["scale"] = self.scales
        ema = self.ema_digest()
        if ema is not None:
            pre["ema"] = ema
        self.batches, self.positions, self.scales = [], [], []
        if first and index == 0:
            pre["params_before"], pre["state_before"] = digests.params_digest(optimizer), digests.state_digest(optimizer)
            self._align(pre["params_before"], pre["state_before"])
            pre["resumed_from"] = self.offset
        pre["full"] = first or k % self.every == 0
        if pre["full"] and not closure:
            pre["grads"] = digests.grads_digest(optimizer)
        pre["step"] = self.global_step(k)
        self.pre = pre
        self.seconds += time.perf_counter() - t0
        self._maybe_signal(pre["step"], pre["rank"])

    def after_step(self, optimizer, args, kwargs) -> None:
        if self.hidden:
            return
        t0 = time.perf_counter()
        self.steps += 1
        self.last = optimizer
        record = {"type": "step", **self.pre, "backwards": self.backwards}
        self.backwards = 0
        if record.pop("full"):  # the state after the step too; a closure's gradients only exist now
            record.setdefault("grads", digests.grads_digest(optimizer))
            record["params"], record["state"] = digests.params_digest(optimizer), digests.state_digest(optimizer)
        self.seconds += time.perf_counter() - t0
        record["probe_s"] = round(self.seconds, 6)
        record["t"] = time.time()
        self.write(record)

    def backward(self) -> None:
        self.backwards += 1

    # ------------------------------------------------------------------ faults
    def _mine(self, modes: tuple, step: int | None, rank: int) -> bool:
        f = self.fault
        return (f is not None and not self.fired and f["mode"] in modes and step is not None and f["at"] == step
                and f.get("rank") in (None, rank))

    def _maybe_signal(self, step, rank) -> None:
        if not self._mine(("sigkill", "sigterm"), step, rank):
            return
        self.fired = True
        mode = self.fault["mode"]
        self.mark_fault(mode=mode, at=step)
        os.kill(os.getpid(), signal.SIGTERM if mode == "sigterm" else signal.SIGKILL)

    def mark_fault(self, **values) -> None:
        """Record the fault, and tell the supervisor (a file ``FAULT`` beside the records) it happened."""
        self.event("fault", **values)
        with open(os.path.join(self.cfg["out"], "FAULT"), "a") as f:
            f.write(f"{os.getpid()}\n")

    def _cut_and_die(self, what: str, mode: str = "during-save") -> None:
        self.mark_fault(mode=mode, at=self.global_step(self.steps), target=what)
        os.kill(os.getpid(), signal.SIGKILL)

    # ------------------------------------------------------------------ saves and loads
    def saving(self, via: str, target: str) -> bool:
        """A save begins (``torch.save``, safetensors): record it; is it the one a ``during-save``
        fault cuts (the ``nth`` save of its step)? A ``during-commit`` fault of this step waits for
        the rename or copy of the file it writes (:meth:`rename`, :meth:`copy`)."""
        step = self.global_step(self.steps)
        record = {"step": step, "target": target, "via": via, "pending": self.backwards}
        if self.last is not None:  # the state this save holds, to find a resume from it by content
            t0 = time.perf_counter()
            record["params"], record["state"] = digests.params_digest(self.last), digests.state_digest(self.last)
            self.seconds += time.perf_counter() - t0
        self.event("save", **record)
        self.saved_at = self.steps
        if self._mine(("during-commit",), step, self.rank()):
            self.fired, self.commit_pending = True, self.steps  # the save is written whole; its rename or copy is struck
            self.commit_src = None if target.startswith("<") else target
        if not self._mine(("during-save",), step, self.rank()):
            return False
        self.saves_here += 1
        self.fired = self.saves_here > int(self.fault.get("nth", 0))
        return self.fired

    def cut(self, data, f) -> None:
        """Write the first half of a save's bytes where they were going, and die; bytes that go to
        memory are cut where they reach a file (their fsync or rename: :meth:`fsync`, :meth:`rename`)."""
        if isinstance(f, (str, bytes, os.PathLike)):
            with open(f, "wb") as out:
                _write_half(out, data)
            self._cut_and_die(target_of(f))
        if _is_real_file(_underlying(f)):
            _write_half(f, data)
            self._cut_and_die(target_of(f))
        self.cut_pending = True

    def torch_save(self, real, obj, f, *args, **kwargs):
        if not self.saving("torch.save", target_of(f)):
            return real(obj, f, *args, **kwargs)
        buf = io.BytesIO()
        real(obj, buf, *args, **kwargs)
        self.cut(buf.getbuffer(), f)
        f.write(buf.getbuffer())  # into memory: cut where it reaches a file
        return None

    def loading(self, via: str, real, f, *args, **kwargs):
        record = {"target": target_of(f), "via": via}
        try:
            out = real(f, *args, **kwargs)
        except BaseException as err:
            self.event("load", **record, error=f"{type(err).__name__}: {str(err)[:300]}")
            raise
        self.event("load", **record)
        return out

    def fsync(self, real, fd):
        real(fd)
        self.synced()
        if self.cut_pending:
            size = os.fstat(fd).st_size
            os.ftruncate(fd, size // 2)
            real(fd)
            self._cut_and_die(f"fd {fd} ({size} bytes)")

    def rename(self, real, src, dst, *args, **kwargs):
        self.synced()
        if self.cut_pending and os.path.isfile(src):
            size = os.path.getsize(src)
            os.truncate(src, size // 2)
            self._cut_and_die(f"{src} ({size} bytes, before its rename)")
        if self._commit(src) and not _across_file_systems(src, dst):  # the rename onto the checkpoint never happens
            self._cut_and_die(f"{dst} (just before the rename of {src})", "during-commit")
        return real(src, dst, *args, **kwargs)  # across file systems: fails (EXDEV), and shutil.move copies instead

    def copy(self, real, src, dst, *args, **kwargs):
        """``shutil.copyfile`` (``copy``, ``copy2`` and a ``move`` across file systems go through
        it): a during-commit fault writes half of ``src`` into ``dst``, then SIGKILL."""
        if self._commit(src) and os.path.isfile(src):
            with open(src, "rb") as f:
                data = f.read()
            with open(dst, "wb") as out:
                _write_half(out, data)
            self._cut_and_die(f"{dst} (half-way through the copy of {src})", "during-commit")
        return real(src, dst, *args, **kwargs)

    def _commit(self, src) -> bool:
        """Is this rename or copy the one a during-commit fault strikes: of the struck save's file?"""
        return self.commit_pending == self.steps and self.commit_src in (None, os.path.abspath(os.fspath(src)))

    def synced(self) -> None:
        """An fsync or a rename after a save of this step: its bytes reach a file (once per step)."""
        if self.saved_at == self.steps and self.synced_at != self.steps:
            self.synced_at = self.steps
            self.write({"type": "sync", "local_step": self.steps})

    # ------------------------------------------------------------------ data
    def batch(self, value, position) -> None:
        t0 = time.perf_counter()
        self.batches.append(digests.digest(value))
        self.positions.append(position)
        self.seconds += time.perf_counter() - t0

    def ema_digest(self) -> str | None:
        """The averaged models (EMA, SWA) that are still alive, or ``None`` when there are none."""
        models = [m for m in (ref() for ref in self.averaged) if m is not None]
        return digests.digest([m.state_dict() for m in models]) if models else None

    def end(self, how: str) -> None:
        if self.last is None or self.fd is None:
            return
        ema = self.ema_digest()
        self.event("end", how=how, params=digests.params_digest(self.last), state=digests.state_digest(self.last),
                   **({"ema": ema} if ema is not None else {}), probe_s=round(self.seconds, 6))
        self.last = None  # once


def target_of(f) -> str:
    """Where a save or load goes: an absolute path, or ``<BytesIO>`` for memory."""
    if isinstance(f, (str, os.PathLike)):
        return os.path.abspath(os.fspath(f))
    f = _underlying(f)
    name = getattr(f, "name", None)
    return os.path.abspath(name) if isinstance(name, str) else f"<{type(f).__name__}>"


def _across_file_systems(src, dst) -> bool:
    """A rename from one file system to another cannot happen: ``shutil.move`` then copies, and a
    during-commit fault strikes that copy (:meth:`Probe.copy`), where a kill leaves half a file."""
    try:
        return os.stat(src).st_dev != os.stat(os.path.dirname(os.path.abspath(os.fspath(dst)))).st_dev
    except OSError:
        return False


def _underlying(f):
    """The file under a stream that wraps one (``.raw``: DCP's writer, buffered streams)."""
    for _ in range(8):
        if isinstance(getattr(f, "name", None), str) or getattr(f, "raw", None) is None:
            return f
        f = f.raw
    return f


def _is_real_file(f) -> bool:
    try:
        f.fileno()
        return True
    except (OSError, io.UnsupportedOperation, AttributeError):
        return False


def _write_half(f, data) -> None:
    """The first half of ``data`` into ``f`` (a file, or a stream over one), on the disk."""
    f.write(data[: len(data) // 2])
    f.flush()
    raw = _underlying(f)
    raw.flush()
    os.fsync(raw.fileno())
