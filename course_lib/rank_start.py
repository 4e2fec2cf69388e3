"""Starting the ranks of one run on this machine, for :func:`course_lib.launch.launch` and the
book's runner (:mod:`course_lib.textbook.run`): spawn's API (``torch.multiprocessing``), with a
forkserver where the OS has one (:func:`course_lib.portability.start_method` says why).

A forkserver is started once per process, at its first launch, and its children inherit *its*
environment, frozen at that moment. So every rank is given the parent's environment of its own
launch (when the launch began, the platform's process-group settings, a cache folder a test
set later), exactly what a spawned rank would inherit.
"""
from __future__ import annotations

import multiprocessing
import os
from typing import Callable

import torch.multiprocessing as mp

from .portability import start_method

# what every rank imports before its first step (each torch.optim optimizer imports
# torch._dynamo, ~0.7 s): the forkserver imports them once, and each rank is a fork of it
RANK_IMPORTS = ["course_lib.launch", "course_lib.train", "course_lib.textbook.run", "torch._dynamo"]


def start_ranks(worker: Callable, args: tuple, nprocs: int, method: str = "auto", env: dict | None = None):
    """``worker(rank, *args)`` on ``nprocs`` new processes; returns torch's ``ProcessContext``
    (``join``, ``pids``, ``processes``) without waiting. ``method``: ``auto``, ``forkserver``
    or ``spawn``. ``worker`` must live in a module: it travels by name. The ranks get this
    process's environment plus ``env``, which this process itself does not get."""
    method = start_method(method)
    if method == "forkserver":  # only the first launch of this process starts the server
        multiprocessing.get_context("forkserver").set_forkserver_preload(RANK_IMPORTS)
    return mp.start_processes(_in_the_launchs_environment, args=(worker, {**os.environ, **(env or {})}, *args),
                              nprocs=nprocs, join=False, start_method=method)


def _in_the_launchs_environment(rank: int, worker: Callable, env: dict, *args) -> None:
    os.environ.clear()
    os.environ.update(env)
    worker(rank, *args)
