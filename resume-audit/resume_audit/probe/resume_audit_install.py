"""Connecting the :class:`~resume_audit_probe.Probe` to a process's libraries (torch,
safetensors, NumPy, ``pickle``, ``random``, ``os``), each as it is imported, and to CPython's
audit hooks for file events (stdlib + torch only; called by this folder's ``sitecustomize``).
What is watched, and what cannot be: docs/audit.md.

Each wrapper calls the original and returns what it returns; a module imported by name
before the wrap (``from safetensors.torch import save_file``) is wrapped first, because the wrap
happens as its module finishes importing.
"""
from __future__ import annotations

import atexit
import builtins
import functools
import importlib
import importlib.abc
import io
import json
import os
import pickle
import random
import shutil
import sys
import weakref

_here = f"{__package__}." if __package__ else ""
probe = importlib.import_module(f"{_here}resume_audit_probe")
digests, files = probe.digests, probe.files

PROBE = None


def _wrap(owner, name: str, make) -> None:
    """Replace ``owner.name`` by ``make(original)``, once, looking like the original (a DataLoader
    worker's target is pickled by its module and name)."""
    real = getattr(owner, name, None)
    if real is None or getattr(real, "_audit_wrapped", False):
        return
    wrapper = functools.update_wrapper(make(real), real, updated=())
    wrapper._audit_wrapped = True
    setattr(owner, name, wrapper)


def _first(hook):
    """A ``make`` for :func:`_wrap`: the wrapper calls ``hook`` with the call's arguments, then the original."""
    def make(real):
        def call(*args, **kwargs):
            hook(*args, **kwargs)
            return real(*args, **kwargs)
        return call
    return make


def _announcing(kind: str, which: str):
    """A ``make`` for :func:`_wrap`: a ``kind`` record (seed, restore) of the RNG ``which``, then the original."""
    return _first(lambda *_, **__: PROBE.event(kind, which=which))


# --------------------------------------------------------------------------- torch
def _on_torch(torch) -> None:
    p = PROBE
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    register_optimizer_step_pre_hook(p.before_step)
    register_optimizer_step_post_hook(p.after_step)

    _wrap(torch.autograd, "backward", _first(lambda *_, **__: p.backward()))
    for owner in (torch, torch.serialization):
        _wrap(owner, "save", lambda real: lambda obj, f, *a, **k: p.serialized(
            "torch.save", obj, f, lambda dst: real(obj, dst, *a, **k)))
        _wrap(owner, "load", lambda real: lambda f, *a, **k: p.loading("torch.load", real, f, *a, **k))
    _wrap(torch.nn.Module, "named_parameters", _first(lambda self, *_, **__: p.model_seen(self)))
    for owner, name, kind in ((torch, "manual_seed", "seed"), (torch.random, "manual_seed", "seed"),
                              (torch, "seed", "seed"), (torch, "set_rng_state", "restore"),
                              (torch.random, "set_rng_state", "restore")):
        _wrap(owner, name, _announcing(kind, "torch"))
    _on_data(torch)
    _on_amp(torch)
    _when_imported("torch.optim.swa_utils", _on_swa)
    _when_imported("torch.distributed.checkpoint.state_dict", _on_dcp_state_dict)


def _on_data(torch) -> None:
    p = PROBE
    import torch.utils.data._utils.worker as worker
    import torch.utils.data.dataloader as loader
    import torch.utils.data.distributed as distributed

    def next_batch(real):
        def __next__(self):
            value = real(self)
            p.batch(value, getattr(self, "_num_yielded", None))
            return value
        return __next__
    _wrap(loader._BaseDataLoaderIter, "__next__", next_batch)

    _wrap(loader._BaseDataLoaderIter, "__init__", _first(lambda self, data_loader, *_, **__: p.loader(data_loader)))
    # a DataLoader worker: its batches are recorded once, by the process it serves
    _wrap(worker, "_worker_loop", _first(lambda *_, **__: setattr(p, "silent", True)))
    _wrap(distributed.DistributedSampler, "__iter__", _first(lambda self: p.event(
        "sampler", epoch=getattr(self, "epoch", None), shuffle=getattr(self, "shuffle", None),
        seed=getattr(self, "seed", None))))


def _on_amp(torch) -> None:
    scaler = getattr(getattr(torch, "amp", None), "grad_scaler", None)
    if scaler is None:
        return

    def step(real):
        def call(self, *args, **kwargs):
            if self.is_enabled() and self._scale is not None:
                PROBE.scales.append(self.get_scale())
            before = PROBE.steps
            out = real(self, *args, **kwargs)
            if PROBE.steps == before:  # an overflow: the optimizer step was skipped, its gradients dropped
                PROBE.backwards = 0
            return out
        return call
    _wrap(scaler.GradScaler, "step", step)


def _on_swa(swa) -> None:
    def remember(real):
        def __init__(self, *args, **kwargs):
            real(self, *args, **kwargs)
            PROBE.averaged.append(weakref.ref(self))
        return __init__
    _wrap(swa.AveragedModel, "__init__", remember)


def _on_dcp_state_dict(module) -> None:
    """DCP's ``get_state_dict``/``set_state_dict`` run a real ``optimizer.step()`` (zero gradients,
    learning rate 0) to create an empty optimizer's state: not a training step, so not one of the
    run's steps."""
    def hidden(real):
        def _init_optim_state(*args, **kwargs):
            PROBE.hidden += 1
            try:
                return real(*args, **kwargs)
            finally:
                PROBE.hidden -= 1
        return _init_optim_state
    _wrap(module, "_init_optim_state", hidden)


# --------------------------------------------------------------------------- safetensors, numpy
def _on_safetensors(st) -> None:
    p = PROBE

    def save_file(real):
        def call(tensors, filename, *args, **kwargs):
            def write(dst):
                if isinstance(dst, (str, os.PathLike)):
                    return real(tensors, dst, *args, **kwargs)
                return dst.write(st.save(tensors, *args, **kwargs))
            return p.serialized("safetensors", tensors, filename, write)
        return call
    _wrap(st, "save_file", save_file)

    def save(real):
        def call(tensors, *args, **kwargs):
            cut = p.saving("safetensors", "<bytes>", tensors)  # into memory: cut where it reaches a file
            p.cut_pending = p.cut_pending or cut
            return real(tensors, *args, **kwargs)
        return call
    _wrap(st, "save", save)
    _wrap(st, "load_file", lambda real: lambda f, *a, **k: p.loading("safetensors", real, f, *a, **k))
    _wrap(st, "load", lambda real: lambda data, *a, **k: p.loading("safetensors", real, data, *a, **k))


def _on_safetensors_root(root) -> None:
    _wrap(root, "safe_open", lambda real: lambda f, *a, **k: PROBE.loading("safetensors", real, f, *a, **k))


def _on_numpy(np) -> None:
    p = PROBE
    _wrap(np.random, "seed", _announcing("seed", "numpy"))
    _wrap(np.random, "set_state", _announcing("restore", "numpy"))
    _wrap(np, "save", lambda real: lambda file, arr, *a, **k: p.serialized(
        "numpy", arr, file, lambda dst: real(dst, arr, *a, **k)))
    for name in ("savez", "savez_compressed"):
        _wrap(np, name, lambda real: lambda file, *a, **k: p.serialized(
            "numpy", [a, k], file, lambda dst: real(dst, *a, **k)))
    _wrap(np, "load", lambda real: lambda f, *a, **k: p.loading("numpy", real, f, *a, **k))


def _on_pickle() -> None:
    p = PROBE
    _wrap(pickle, "dump", lambda real: lambda obj, f, *a, **k: p.serialized(
        "pickle", obj, f, lambda dst: real(obj, dst, *a, **k)))
    _wrap(pickle, "load", lambda real: lambda f, *a, **k: p.loading("pickle", real, f, *a, **k))


def _on_open() -> None:
    """Only where a torn fault is due: ``open`` hands back, for the file it strikes, one that is
    cut once the script has written and closed it (:class:`resume_audit_files.TornFile`)."""
    p = PROBE

    def wrapper(real):
        def call(file, *args, **kwargs):
            f = real(file, *args, **kwargs)
            if isinstance(file, (str, os.PathLike)) and p.torn(file):
                return files.TornFile(f, os.path.abspath(os.fspath(file)), lambda what: (p.quiet(), p.die_torn(what)))
            return f
        return call
    _wrap(builtins, "open", wrapper)
    io.open = builtins.open


# --------------------------------------------------------------------------- as each module is imported
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
    if PROBE is not None or not os.environ.get(probe.ENV):
        return
    PROBE = p = probe.Probe(json.loads(os.environ[probe.ENV]))
    os.register_at_fork(after_in_child=p.reset)
    _wrap(random, "seed", _announcing("seed", "python"))
    _wrap(random, "setstate", _announcing("restore", "python"))
    _wrap(os, "fsync", lambda real: lambda fd: p.fsync(real, fd))
    _wrap(os, "fdatasync", lambda real: lambda fd: p.fsync(real, fd))
    _wrap(os, "replace", lambda real: lambda src, dst, *a, **k: p.rename(real, src, dst, *a, **k))
    _wrap(os, "rename", lambda real: lambda src, dst, *a, **k: p.rename(real, src, dst, *a, **k))
    _wrap(shutil, "copyfile", lambda real: lambda src, dst, *a, **k: p.copy(real, src, dst, *a, **k))
    _wrap(os, "_exit", _first(lambda code: p.end("os._exit")))
    atexit.register(lambda: p.end("exit"))
    _on_pickle()
    if p.watch is not None:
        sys.addaudithook(lambda event, args: p.watch.hook(event, args) if PROBE is p else None)
        if (p.fault or {}).get("mode") == "torn":
            _on_open()
    _when_imported("torch", _on_torch)
    _when_imported("numpy", _on_numpy)
    _when_imported("safetensors.torch", _on_safetensors)
    _when_imported("safetensors", _on_safetensors_root)
