"""The audit's observer inside every Python process of an audited run (stdlib + torch only).

One :class:`Probe` per interpreter, installed by this folder's ``sitecustomize``
(:mod:`resume_audit_install` connects it to the libraries); the audited script runs with
whatever Python it names, as long as that Python has torch. The probe changes no value the
script computes; it writes one JSON line per event to ``$out/<pid>-<ns>.jsonl``
(:mod:`resume_audit_schema`) and delivers ``$RESUME_AUDIT``'s ``fault``, a real one: at the
optimizer step ``at`` (the reference run's numbering), in a save, or at the ``n``-th file event
of its role (:mod:`resume_audit_files`). How it watches: docs/audit.md.
"""
from __future__ import annotations

import collections
import importlib
import io
import json
import os
import signal
import sys
import threading
import time
import weakref

_here = f"{__package__}." if __package__ else ""
digests = importlib.import_module(f"{_here}resume_audit_digests")
files = importlib.import_module(f"{_here}resume_audit_files")

ENV = "RESUME_AUDIT"
PARENT = "RESUME_AUDIT_PARENT"  # the supervisor's pid: the command's own process is its child
EVENT_FAULTS = ("before", "torn", "power-data", "power-names")  # struck at a file event (resume_audit.crashpoints)
POWER = ("power-data", "power-names")
HISTORY = 256  # steps whose tensors a save is matched against


class Probe:
    """One process's records; reset in a forked child (its parent's file and counts are not its own)."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.every = max(1, int(cfg.get("every", 1)))
        self.fault = cfg.get("fault")
        self._table = None
        self.averaged: list = []  # weak references to the AveragedModels (EMA, SWA) of this process
        self.nested = threading.local()  # inside a save: the serializers it calls are not saves
        self.modules: list = []  # weak references to the modules whose parameters were asked for
        self.reset()

    def reset(self) -> None:
        self.fd, self.steps, self.offset = None, 0, None
        self.silent = False  # a DataLoader worker: its parent records the batches it makes
        self.hidden = 0  # inside a library's own optimizer step that trains nothing (DCP's state initialisation)
        self.optimizers: dict[int, int] = {}  # id(optimizer) -> 0, 1, ... in order of their first step
        self.last = None  # the optimizer of the newest step
        self.stepper = None  # the thread that steps it: a save from another is a background save
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
        self.counts: dict[str, int] = {}  # file events so far, per role and thread (file_event)
        self.numbering = threading.Lock()  # threads of this process number and record their events one at a time
        self.tear = None  # the file a torn fault cuts once it is written
        self.history: collections.deque = collections.deque(maxlen=HISTORY)  # (step, params' keys, state's keys)
        self._roots = None
        self.pre: dict = {}
        self.seconds = 0.0  # time spent in this probe's hooks
        run = self.cfg.get("run")
        shadows = os.path.join(self.cfg["out"], "shadows") if (self.fault or {}).get("mode") in POWER else None
        self.watch = files.FileWatch(self, run, shadows) if run else None

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

    write_record = write

    def _put(self, record: dict) -> None:
        os.write(self.fd, (json.dumps(record, default=repr) + "\n").encode())  # unbuffered: a SIGKILL loses nothing

    def event(self, kind: str, **values) -> None:
        """A record of ``kind`` at this process's current step."""
        self.write({"type": kind, "local_step": self.steps, "rank": self.rank(), **values, "t": time.time()})

    # ------------------------------------------------------------------ who and where
    @staticmethod
    def known_rank() -> int | None:
        torch = digests._torch()
        dist = getattr(torch, "distributed", None) if torch is not None else None
        if dist is not None and dist.is_available() and dist.is_initialized():
            return dist.get_rank()
        return int(os.environ["RANK"]) if os.environ.get("RANK", "").isdigit() else None

    def rank(self) -> int:
        known = self.known_rank()
        return 0 if known is None else known

    def who(self) -> str:
        """This process's role, the same in every run of the command: ``rank{R}``, ``main`` (the
        command's own process, before it knows a rank), ``proc`` (another)."""
        known = self.known_rank()
        if known is not None:
            return f"rank{known}"
        return "main" if str(os.getppid()) == os.environ.get(PARENT) else "proc"

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
        if pre["full"]:
            if not closure:
                pre["grads"] = digests.grads_digest(optimizer)
            pre["buffers"] = digests.buffers_digest(self.roots(optimizer))  # as the step's forward left them
        pre["step"] = self.global_step(k)
        self.pre = pre
        self.seconds += time.perf_counter() - t0
        if self.watch is not None:
            self.watch.settle()
        self._maybe_signal(pre["step"], pre["rank"])

    def after_step(self, optimizer, args, kwargs) -> None:
        if self.hidden:
            return
        t0 = time.perf_counter()
        self.steps += 1
        self.last, self.stepper = optimizer, threading.get_ident()
        record = {"type": "step", **self.pre, "backwards": self.backwards}
        self.backwards = 0
        if record.pop("full"):  # the state after the step too; a closure's gradients only exist now
            record.setdefault("grads", digests.grads_digest(optimizer))
            record["params"], record["state"] = digests.params_digest(optimizer), digests.state_digest(optimizer)
            self._remember(optimizer)
        self.seconds += time.perf_counter() - t0
        record["probe_s"] = round(self.seconds, 6)
        record["t"] = time.time()
        self.write(record)

    def backward(self) -> None:
        self.backwards += 1

    # ------------------------------------------------------------------ the model beyond its parameters
    def model_seen(self, module) -> None:
        """A module whose parameters were asked for (to build an optimizer, wrap it in DDP, clip
        its gradients): the model is among these, and its buffers are digested with each step."""
        if not any(ref() is module for ref in self.modules):
            self.modules.append(weakref.ref(module))
            self._roots = None

    def roots(self, optimizer) -> list:
        """The outermost modules seen that hold a parameter of ``optimizer``, in the order seen."""
        if self._roots is None:
            mods = [m for m in (ref() for ref in self.modules) if m is not None]
            inner = {id(sub) for m in mods for sub in m.modules() if sub is not m}
            trained = {id(p) for g in optimizer.param_groups for p in g["params"]}
            self._roots = [m for m in mods if id(m) not in inner and any(id(p) in trained for p in m.parameters())]
        return self._roots

    def _remember(self, optimizer) -> None:
        """The tensors of this step's state, to tell later which step a save holds."""
        self.history.append((self.steps, digests.keys_of(digests._params(optimizer)),
                             digests.keys_of(digests.state_tensors(optimizer))))

    def _holds(self, obj) -> tuple:
        """The latest steps of this process whose parameters, and whose optimizer state, are all
        inside ``obj`` (``None``: no step's)."""
        if not self.history or self.history[-1][0] != self.steps:
            self._remember(self.last)
        held = digests.tensor_keys(obj)
        params = next((s for s, p, _ in reversed(self.history) if p and p <= held), None)
        state = next((s for s, _, st in reversed(self.history) if st and st <= held), None)
        return params, state

    # ------------------------------------------------------------------ faults
    def _mine(self, modes: tuple, step: int | None, rank: int) -> bool:
        """Is the fault due here: at its step, or (a save's) at the first save from its step on, which
        a background save makes some steps later than the run never interrupted did."""
        f = self.fault
        if f is None or self.fired or f["mode"] not in modes or step is None or f.get("rank") not in (None, rank):
            return False
        return f["at"] <= step if f["mode"] in ("during-save", "during-commit") else f["at"] == step

    def _maybe_signal(self, step, rank) -> None:
        if not self._mine(("sigkill", "sigterm"), step, rank):
            return
        self.fired = True
        mode = self.fault["mode"]
        self.mark_fault(mode=mode, at=step)
        os.kill(os.getpid(), signal.SIGTERM if mode == "sigterm" else signal.SIGKILL)

    def mark_fault(self, power: bool = False, **values) -> None:
        """Record the fault, and tell the supervisor (a file ``FAULT`` beside the records) it
        happened: a power cut ends every process of the command at once."""
        self.event("fault", **values)
        with open(os.path.join(self.cfg["out"], "FAULT"), "a") as f:
            f.write(f"{os.getpid()}{' power' if power else ''}\n")

    def _cut_and_die(self, what: str, mode: str = "during-save") -> None:
        self.mark_fault(mode=mode, at=self.global_step(self.steps), target=what)
        os.kill(os.getpid(), signal.SIGKILL)

    def quiet(self) -> None:
        """From here on, what this process does to files is the audit's (a cut), not the script's."""
        if self.watch is not None:
            self.watch.quiet += 1

    def file_event(self, op: str, path: str, **extra) -> None:
        """A file event under the run (:mod:`resume_audit_files`): numbered within this role and
        thread (``rank0``; another thread than the main one adds its name: ``rank0/checkpoint-writer``,
        so TensorBoard's writer or a background save cannot shift the training thread's numbers),
        recorded, and struck when it is the fault's (a kill before it happens, or a power cut then;
        ``torn``: the file is cut once it is written)."""
        if self.silent:  # a DataLoader worker: not the script's own process
            return
        who = self.who()
        thread = threading.current_thread()
        if thread is not threading.main_thread():  # its own numbers: threads interleave differently in every run
            who = f"{who}/{thread.name}"
        with self.numbering:  # numbered and recorded in one order, whichever thread comes first
            n = self.counts[who] = self.counts.get(who, 0) + 1
            self.event("file", op=op, path=path, who=who, n=n, **{k: v for k, v in extra.items() if v is not None})
        f = self.fault
        if f is None or self.fired or f["mode"] not in EVENT_FAULTS or (f.get("who"), f.get("n")) != (who, n):
            return
        self.fired = True
        full = os.path.join(self.watch.run, path)
        if f["mode"] == "torn" and op in files.TEARABLE and (op in ("write", "copy") or extra.get("python_open")):
            self.tear = full  # cut once written: by the writer's wrapper, or when Python closes the file
            return
        mode = "before" if f["mode"] == "torn" else f["mode"]  # what cannot be torn is struck before it happens
        self.mark_fault(power=mode in POWER, mode=mode, at=self.global_step(self.steps), event=[who, n], op=op,
                        target=path)
        os.kill(os.getpid(), signal.SIGKILL)

    def torn(self, path) -> bool:
        """Is ``path`` the file a torn fault cuts once written?"""
        return self.tear is not None and os.path.abspath(os.fspath(path)) == self.tear

    def tear_now(self, path) -> None:
        """Cut the written file ``path`` to half its size, then die (a ``torn`` fault)."""
        self.quiet()
        size = os.path.getsize(path)
        os.truncate(path, size // 2)
        self.die_torn(f"{path} ({size} bytes, cut to {size // 2})")

    def die_torn(self, what: str) -> None:
        self.mark_fault(mode="torn", at=self.global_step(self.steps), event=[self.fault["who"], self.fault["n"]],
                        target=what)
        os.kill(os.getpid(), signal.SIGKILL)

    # ------------------------------------------------------------------ saves and loads
    def saving(self, via: str, target: str, obj=None) -> bool:
        """A save begins (``torch.save``, safetensors, ``pickle``, NumPy): record what it holds
        (the latest steps whose parameters and optimizer state are inside it; whether it holds
        live tensors, from a thread other than the one that trains); is it the one a
        ``during-save`` fault cuts (the ``nth`` save of its step)? A ``during-commit`` fault of
        this step waits for the rename or copy of the file it writes (:meth:`rename`, :meth:`copy`)."""
        step = self.global_step(self.steps)
        record = {"step": step, "target": target, "via": via, "pending": self.backwards}
        background = self.stepper is not None and threading.get_ident() != self.stepper
        if background:
            record["thread"] = threading.current_thread().name
        if self.last is not None:
            t0 = time.perf_counter()
            if obj is not None:
                try:  # what the save holds: evidence, never a reason to break the script's save
                    record["holds"] = list(self._holds(obj))
                    record["live"] = digests.holds_live(obj, digests.live_ids(self.last))
                except Exception as err:  # noqa: BLE001 (a tensor kind the probe does not know: say so, go on)
                    record["holds_error"] = f"{type(err).__name__}: {str(err)[:120]}"
            if not background:  # the state at this step, to find a resume from it by content
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
        if isinstance(f, (str, bytes, os.PathLike)) or _is_real_file(_underlying(f)):
            self.quiet()
        if isinstance(f, (str, bytes, os.PathLike)):
            with open(f, "wb") as out:
                _write_half(out, data)
            self._cut_and_die(target_of(f))
        if _is_real_file(_underlying(f)):
            _write_half(f, data)
            self._cut_and_die(target_of(f))
        self.cut_pending = True

    def serialized(self, via: str, obj, f, write):
        """A save by a serializer (``torch.save``, ``pickle.dump``, ``numpy.save``): ``write(dst)``
        writes the whole of it into ``dst``. Recorded; cut half-way by a during-save fault; a
        native write to a path is a file event of its own, and a torn fault cuts it once written."""
        if getattr(self.nested, "depth", 0):  # a serializer inside another's save (a tensor pickled): not a save
            return write(f)
        self.nested.depth = 1
        try:
            return self._serialized(via, obj, f, write)
        finally:
            self.nested.depth = 0

    def _serialized(self, via: str, obj, f, write):
        path = f if isinstance(f, (str, os.PathLike)) else None
        native = path is not None and self.watch is not None and via in ("torch.save", "safetensors") \
            and self.watch.native_write(path)
        if not self.saving(via, target_of(f), obj):
            out = write(f)
            if native:
                self.watch.written(path)
                if self.torn(path):
                    self.tear_now(path)
            return out
        buf = io.BytesIO()
        write(buf)
        self.cut(buf.getbuffer(), f)
        f.write(buf.getbuffer())  # into memory: cut where it reaches a file
        return None

    def loading(self, via: str, real, f, *args, **kwargs):
        record = {"target": target_of(f), "via": via}
        if isinstance(f, (str, os.PathLike)) and self.watch is not None and self.watch.under(record["target"]):
            record["file"] = files.fingerprint(record["target"])
        try:
            out = real(f, *args, **kwargs)
        except BaseException as err:
            self.event("load", **record, error=f"{type(err).__name__}: {str(err)[:300]}")
            raise
        self.event("load", **record)
        return out

    def file_read(self, path: str, fingerprint: dict | None) -> None:
        """A file under the run opened for reading: which content a resume read."""
        self.event("read", path=path, **({"file": fingerprint} if fingerprint else {}))

    def fsync(self, real, fd):
        if self.watch is not None:
            self.watch.fsync(fd)
        real(fd)
        self.synced()
        if self.cut_pending:
            self.quiet()
            size = os.fstat(fd).st_size
            os.ftruncate(fd, size // 2)
            real(fd)
            self._cut_and_die(f"fd {fd} ({size} bytes)")

    def rename(self, real, src, dst, *args, **kwargs):
        self.synced()
        if self.cut_pending and os.path.isfile(src):
            self.quiet()
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
            self.quiet()
            with open(src, "rb") as f:
                data = f.read()
            with open(dst, "wb") as out:
                _write_half(out, data)
            self._cut_and_die(f"{dst} (half-way through the copy of {src})", "during-commit")
        out = real(src, dst, *args, **kwargs)
        if self.watch is not None:
            self.watch.written(os.fspath(dst))
        if self.torn(dst):
            self.tear_now(os.path.abspath(os.fspath(dst)))
        return out

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

    def loader(self, data_loader) -> None:
        """A DataLoader pass begins: its workers, and its own generator's state (what orders the pass)."""
        gen = data_loader.generator
        self.event("loader", workers=data_loader.num_workers, generator=gen is not None,
                   **({"generator_state": digests.digest(gen.get_state())} if gen is not None else {}))

    def ema_digest(self) -> str | None:
        """The averaged models (EMA, SWA) that are still alive, or ``None`` when there are none."""
        models = [m for m in (ref() for ref in self.averaged) if m is not None]
        return digests.digest([m.state_dict() for m in models]) if models else None

    def end(self, how: str) -> None:
        if self.watch is not None:
            self.watch.settle()
        if self.last is None or self.fd is None:
            return
        ema = self.ema_digest()
        self.event("end", how=how, params=digests.params_digest(self.last), state=digests.state_digest(self.last),
                   buffers=digests.buffers_digest(self.roots(self.last)),
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
