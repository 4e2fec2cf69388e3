"""Starting the processes of one run on this machine: spawn's API (``torch.multiprocessing``),
with a forkserver where the OS has one (:func:`course_lib._runtime.portability.start_method` says
why). :func:`course_lib.ddp.launch.launch`, the book's runner and the exercises' real kills all
start their processes here.

A forkserver is started once per process, at its first launch, and its children inherit *its*
environment, frozen at that moment. So every rank is given the parent's environment of its own
launch (when the launch began, the platform's process-group settings, a cache folder a test
set later), exactly what a spawned rank would inherit.
"""
from __future__ import annotations

import gc
import importlib.util
import multiprocessing
import os
import types
from collections.abc import Callable
from pathlib import Path

import torch.multiprocessing as mp

from course_lib._runtime.portability import check_spawn_safe, start_method

# what every process imports before its first step (each torch.optim optimizer imports
# torch._dynamo, ~0.7 s): the forkserver imports them once, and each process is a fork of it
RANK_IMPORTS = ["torch._dynamo"]  # the callers add their worker's module and what it needs


def _method(method: str, preload: list[str]) -> str:
    """The start method to use, once the ranks can start at all (:func:`~course_lib._runtime.portability.check_spawn_safe`).
    Only the first forkserver start of this process starts the server: what it preloads then
    (:data:`RANK_IMPORTS`, the worker's module, ``preload``) every later fork inherits."""
    check_spawn_safe()
    method = start_method(method)
    if method == "forkserver":
        multiprocessing.get_context("forkserver").set_forkserver_preload(list(dict.fromkeys(RANK_IMPORTS + preload)))
    return method


def start_ranks(worker: Callable, args: tuple, nprocs: int, method: str = "auto", env: dict | None = None,
                preload: list[str] = ()):
    """``worker(rank, *args)`` on ``nprocs`` new processes; returns torch's ``ProcessContext``
    (``join``, ``pids``, ``processes``) without waiting. ``method``: ``auto``, ``forkserver``
    or ``spawn``. ``worker`` must live in a module: it travels by name. The ranks get this
    process's environment plus ``env``, which this process itself does not get."""
    method = _method(method, [worker.__module__, *preload])
    return mp.start_processes(_in_the_launchs_environment, args=(worker, {**os.environ, **(env or {})}, *args),
                              nprocs=nprocs, join=False, start_method=method)


def start_process(target: Callable, args: tuple = (), method: str = "auto") -> multiprocessing.Process:
    """``target(*args)`` in one new process, started as a rank is, with this process's
    environment; returns the started ``multiprocessing.Process`` (``join``, ``exitcode``: -9
    when a SIGKILL ended it). ``target`` must live in a module."""
    proc = multiprocessing.get_context(_method(method, [target.__module__])).Process(
        target=_in_environment, args=(target, dict(os.environ), *args))
    proc.start()
    return proc


def _in_the_launchs_environment(rank: int, worker: Callable, env: dict, *args) -> None:
    _in_environment(worker, env, rank, *args)


def _in_environment(target: Callable, env: dict, *args) -> None:
    # A fork shares the server's heap (torch and all) until a page is written. The garbage
    # collector's first full pass writes to every inherited object's header, so the child copied
    # the whole heap then: a 0.25-0.3 s stall in a small run's last step, wherever the pass fell
    # (measured in a 1.9-2.1 s launch). Frozen objects are never scanned; the child's own still are.
    gc.freeze()
    os.environ.clear()
    os.environ.update(env)
    target(*args)


def load_module(path: str | Path) -> types.ModuleType:
    """Import a module from its file (in a rank: a learner's functions that a notebook cell
    defined, written to a file by :func:`course_lib.exercises.carry.write_module`)."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
