"""The audit's observer inside every Python process of an audited run (stdlib + torch only).

The folder that holds this file is first on the run's ``PYTHONPATH``, so every interpreter the
run starts (each rank under torchrun or ``mp.spawn``, a forkserver and its children) imports
``sitecustomize`` from it, which calls :func:`install`. Nothing is imported from the kit: the
audited script runs with whatever Python it names, as long as that Python has torch.

Once torch is imported, :func:`install` registers torch's global optimizer-step hooks and wraps
a few functions (``torch.save``/``load``, the RNG setters, ``DataLoader``'s ``__next__``,
``DistributedSampler.__iter__``, ``os.fsync``/``os.replace``/``os._exit``). They change no value
the script computes; they write one JSON line per event to ``$out/<pid>-<ns>.jsonl``:

* ``step``: per optimizer step, digests of the parameters after it, the gradients, the optimizer
  state after it (the full three every ``every`` steps and on a process's first step, where the
  state *before* it is recorded too), the learning rates, the other hyper-parameters, every RNG
  (Python's, NumPy's global one, torch's CPU generator, CUDA's once initialised) and the
  batches the ``DataLoader`` handed out since the previous step;
* ``save``/``load``: each ``torch.save``/``torch.load`` (its target, and at a save the
  parameter digests that let a resume be found by content), ``seed``/``restore``: each RNG
  setter, ``sampler``: each pass of a ``DistributedSampler`` (its epoch), ``end``: the final
  digests as the process leaves, ``fault``: a fault delivered.

A fault (``$COURSE_LIB_AUDIT``'s ``fault``) is real: SIGKILL or SIGTERM sent to this process as
the optimizer step ``at`` (counted in the reference run's steps, see :func:`resume_point`)
begins, or half of a checkpoint's bytes written and then SIGKILL (``during-save``).
"""
from __future__ import annotations

import atexit
import importlib.abc
import io
import json
import os
import random
import signal
import sys
import time

# the digests, beside this file: on the run's PYTHONPATH in an audited process, in the kit's package for its map
digests = importlib.import_module(f"{__package__}.course_lib_audit_digests" if __package__ else "course_lib_audit_digests")

ENV = "COURSE_LIB_AUDIT"


# --------------------------------------------------------------------------- the observer
class Probe:
    """One process's records; reset in a forked child (its parent's file and counts are not its own)."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.every = max(1, int(cfg.get("every", 1)))
        self.fault = cfg.get("fault")
        self._table = None
        self.reset()

    def reset(self) -> None:
        self.pid, self.fd, self.steps, self.offset = os.getpid(), None, 0, None
        self.optimizers: dict[int, int] = {}  # id(optimizer) -> 0, 1, ... in order of their first step
        self.last = None  # the optimizer of the newest step
        self.batches: list[str] = []
        self.positions: list[int] = []  # each batch's place in its DataLoader pass (1 = the pass's first batch)
        self.fired = False
        self.cut_pending = False  # a during-save fault waits for the bytes of an in-memory save to reach a file
        self.saves_here = 0  # torch.save calls at the step a during-save fault cuts
        self.saved_at = self.synced_at = None  # the steps of the newest torch.save, and of an fsync after it
        self.pre: dict = {}
        self.seconds = 0.0  # time spent in this probe's hooks

    # ------------------------------------------------------------------ writing
    def write(self, record: dict) -> None:
        if self.fd is None:
            if self._in_data_worker():
                return
            os.makedirs(self.cfg["out"], exist_ok=True)
            path = os.path.join(self.cfg["out"], f"{os.getpid()}-{time.time_ns()}.jsonl")
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._put({"type": "start", "pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv,
                       "env_rank": os.environ.get("RANK"), "time": time.time()})
        self._put(record)

    def _put(self, record: dict) -> None:
        os.write(self.fd, (json.dumps(record, default=repr) + "\n").encode())  # unbuffered: a SIGKILL loses nothing

    @staticmethod
    def _in_data_worker() -> bool:
        data = sys.modules.get("torch.utils.data")
        return data is not None and data.get_worker_info() is not None

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

    def _align(self, optimizer, params: str, state: str) -> None:
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
        t0 = time.perf_counter()
        k = self.steps + 1
        first = k == 1
        index = self.optimizers.setdefault(id(optimizer), len(self.optimizers))
        full = first or k % self.every == 0
        pre = {"k": k, "opt": index, "rank": self.rank(), "lr": [float(g["lr"]) for g in optimizer.param_groups],
               "hyper": digests.hyper_digest(optimizer), "rng": digests.rng_digests(), "data": self.batches or None,
               "pos": self.positions}
        self.batches, self.positions = [], []
        if first and index == 0:
            pre["params_before"], pre["state_before"] = digests.params_digest(optimizer), digests.state_digest(optimizer)
            self._align(optimizer, pre["params_before"], pre["state_before"])
            pre["resumed_from"] = self.offset
        if full:
            pre["grads"] = digests.grads_digest(optimizer)
        pre["g"] = self.global_step(k)
        self.pre = pre
        self.seconds += time.perf_counter() - t0
        self._maybe_signal(pre["g"], pre["rank"])

    def after_step(self, optimizer, args, kwargs) -> None:
        t0 = time.perf_counter()
        self.steps += 1
        self.last = optimizer
        record = {"type": "step", **self.pre}
        if "grads" in record:  # a full record: the state after the step too
            record["params"], record["state"] = digests.params_digest(optimizer), digests.state_digest(optimizer)
        self.seconds += time.perf_counter() - t0
        record["probe_s"] = round(self.seconds, 6)
        record["t"] = time.time()
        self.write(record)

    # ------------------------------------------------------------------ faults
    def _mine(self, mode_set: tuple, g: int | None, rank: int) -> bool:
        f = self.fault
        return (f is not None and not self.fired and f["mode"] in mode_set and g is not None and f["at"] == g
                and f.get("rank") in (None, rank))

    def _maybe_signal(self, g, rank) -> None:
        if not self._mine(("sigkill", "sigterm"), g, rank):
            return
        self.fired = True
        mode = self.fault["mode"]
        self.mark_fault({"type": "fault", "mode": mode, "at": g, "k": self.steps, "rank": rank, "t": time.time()})
        os.kill(os.getpid(), signal.SIGTERM if mode == "sigterm" else signal.SIGKILL)

    def mark_fault(self, record: dict) -> None:
        """Record the fault, and tell the auditor (a file ``FAULT`` beside the records) it happened."""
        self.write(record)
        with open(os.path.join(self.cfg["out"], "FAULT"), "a") as f:
            f.write(f"{os.getpid()}\n")

    def _cut_and_die(self, what: str) -> None:
        self.mark_fault({"type": "fault", "mode": "during-save", "at": self.global_step(self.steps), "k": self.steps,
                    "rank": self.rank(), "target": what, "t": time.time()})
        os.kill(os.getpid(), signal.SIGKILL)

    def save_fault_here(self) -> bool:
        """Is this ``torch.save`` the one a ``during-save`` fault cuts? (Its ``nth`` save of the step.)"""
        if not self._mine(("during-save",), self.global_step(self.steps), self.rank()):
            return False
        self.saves_here += 1
        return self.saves_here > int(self.fault.get("nth", 0))

    # ------------------------------------------------------------------ wrappers
    def save(self, real, obj, f, *args, **kwargs):
        record = {"type": "save", "k": self.steps, "g": self.global_step(self.steps), "rank": self.rank(),
                  "target": _target(f)}
        if self.last is not None:  # the state this save holds, to find a resume from it by content
            t0 = time.perf_counter()
            record["params"], record["state"] = digests.params_digest(self.last), digests.state_digest(self.last)
            self.seconds += time.perf_counter() - t0
        self.write(record)
        self.saved_at = self.steps
        if not self.save_fault_here():
            return real(obj, f, *args, **kwargs)
        self.fired = True
        buf = io.BytesIO()
        real(obj, buf, *args, **kwargs)
        data = buf.getbuffer()
        if isinstance(f, (str, bytes, os.PathLike)):
            with open(f, "wb") as out:
                _write_half(out, data)
            self._cut_and_die(record["target"])
        if hasattr(f, "fileno") and _is_real_file(f):
            f.write(data[: len(data) // 2])
            f.flush()
            os.fsync(f.fileno())
            self._cut_and_die(record["target"])
        self.cut_pending = True  # an in-memory save: cut the file its bytes go to (at its fsync or rename)
        f.write(data)
        return None

    def load(self, real, f, *args, **kwargs):
        record = {"type": "load", "k": self.steps, "rank": self.rank(), "target": _target(f)}
        try:
            out = real(f, *args, **kwargs)
        except BaseException as err:
            self.write({**record, "error": f"{type(err).__name__}: {str(err)[:300]}"})
            raise
        self.write(record)
        return out

    def rng_call(self, kind: str, which: str) -> None:
        self.write({"type": kind, "which": which, "k": self.steps, "rank": self.rank(), "t": time.time()})

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
        return real(src, dst, *args, **kwargs)

    def synced(self) -> None:
        """An fsync or a rename after a torch.save of this step: its bytes reach a file (once per step)."""
        if self.saved_at == self.steps and self.synced_at != self.steps:
            self.synced_at = self.steps
            self.write({"type": "sync", "k": self.steps})

    def batch(self, value, position) -> None:
        t0 = time.perf_counter()
        self.batches.append(digests.digest(value))
        self.positions.append(position)
        self.seconds += time.perf_counter() - t0

    def end(self, how: str) -> None:
        if self.last is None or self.fd is None:
            return
        self.write({"type": "end", "how": how, "k": self.steps, "rank": self.rank(),
                    "params": digests.params_digest(self.last), "state": digests.state_digest(self.last),
                    "probe_s": round(self.seconds, 6), "t": time.time()})
        self.last = None  # once


def _target(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return os.path.abspath(os.fspath(f))
    name = getattr(f, "name", None)
    return os.path.abspath(name) if isinstance(name, str) else f"<{type(f).__name__}>"


def _is_real_file(f) -> bool:
    try:
        f.fileno()
        return True
    except (OSError, io.UnsupportedOperation, AttributeError):
        return False


def _write_half(f, data) -> None:
    f.write(data[: len(data) // 2])
    f.flush()
    os.fsync(f.fileno())


# --------------------------------------------------------------------------- installing it
PROBE: Probe | None = None


def _wrap(owner, name: str, make) -> None:
    real = getattr(owner, name, None)
    if real is not None and not getattr(real, "_audit_wrapped", False):
        wrapper = make(real)
        wrapper._audit_wrapped = True
        wrapper.__wrapped__ = real
        setattr(owner, name, wrapper)


def _on_torch(torch) -> None:
    """Everything that needs torch, once it is imported."""
    p = PROBE
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    register_optimizer_step_pre_hook(p.before_step)
    register_optimizer_step_post_hook(p.after_step)
    for owner in (torch, torch.serialization):
        _wrap(owner, "save", lambda real: lambda obj, f, *a, **k: p.save(real, obj, f, *a, **k))
        _wrap(owner, "load", lambda real: lambda f, *a, **k: p.load(real, f, *a, **k))
    for owner, name, kind in ((torch, "manual_seed", "seed"), (torch.random, "manual_seed", "seed"),
                              (torch, "seed", "seed"), (torch, "set_rng_state", "restore"),
                              (torch.random, "set_rng_state", "restore")):
        _wrap(owner, name, lambda real, kind=kind: _announcing(real, kind, "torch"))
    import torch.utils.data.dataloader as loader
    import torch.utils.data.distributed as distributed

    def next_batch(real):
        def __next__(self):
            value = real(self)
            p.batch(value, getattr(self, "_num_yielded", None))
            return value
        return __next__
    _wrap(loader._BaseDataLoaderIter, "__next__", next_batch)

    def sampler_iter(real):
        def __iter__(self):
            p.write({"type": "sampler", "k": p.steps, "rank": p.rank(), "epoch": getattr(self, "epoch", None),
                     "shuffle": getattr(self, "shuffle", None), "t": time.time()})
            return real(self)
        return __iter__
    _wrap(distributed.DistributedSampler, "__iter__", sampler_iter)


def _on_numpy(np) -> None:
    _wrap(np.random, "seed", lambda real: _announcing(real, "seed", "numpy"))
    _wrap(np.random, "set_state", lambda real: _announcing(real, "restore", "numpy"))


def _announcing(real, kind: str, which: str):
    def call(*args, **kwargs):
        PROBE.rng_call(kind, which)
        return real(*args, **kwargs)
    return call


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once the module ``name`` has been imported (its code run)."""

    def __init__(self, name: str, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenLoader(spec.loader, self.then)
                return spec
        return None


class _ThenLoader(importlib.abc.Loader):
    def __init__(self, loader, then):
        self._loader, self._then = loader, then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _when_imported(name: str, then) -> None:
    if name in sys.modules:
        then(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, then))


def install() -> None:
    """Start observing this process (called by the probe folder's ``sitecustomize``)."""
    global PROBE
    if PROBE is not None or not os.environ.get(ENV):
        return
    PROBE = Probe(json.loads(os.environ[ENV]))
    p = PROBE
    os.register_at_fork(after_in_child=p.reset)
    _wrap(random, "seed", lambda real: _announcing(real, "seed", "python"))
    _wrap(random, "setstate", lambda real: _announcing(real, "restore", "python"))
    _wrap(os, "fsync", lambda real: lambda fd: p.fsync(real, fd))
    _wrap(os, "replace", lambda real: lambda src, dst, *a, **k: p.rename(real, src, dst, *a, **k))
    _wrap(os, "rename", lambda real: lambda src, dst, *a, **k: p.rename(real, src, dst, *a, **k))

    def _exit(real):
        def leave(code):
            p.end("os._exit")
            real(code)
        return leave
    _wrap(os, "_exit", _exit)
    atexit.register(lambda: p.end("exit"))
    _when_imported("torch", _on_torch)
    _when_imported("numpy", _on_numpy)
