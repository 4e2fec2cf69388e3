"""A rank's start and end as a process: starting the processes of one run on this machine
(spawn's API, ``torch.multiprocessing``, from a forkserver where the OS has one:
:func:`course_lib._runtime.portability.start_method` says why), the store a rank started by
torchrun forms its group on, and leaving without the interpreter's teardown.
:func:`course_lib.ddp.launch.launch`, the book's runner and the exercises' real kills all start
their processes here.

A forkserver is started once per process, at its first launch, and its children inherit *its*
environment, frozen at that moment. So every rank is given the parent's environment of its own
launch (when the launch began, the platform's process-group settings, a cache folder a test
set later), exactly what a spawned rank would inherit.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import NoReturn

import torch.distributed as dist
import torch.multiprocessing as mp

from course_lib._runtime.portability import check_spawn_safe, start_method, tcpstore_uses_libuv

# what every process imports before its first step (each torch.optim optimizer imports
# torch._dynamo): the forkserver imports them once, and each process is a fork of it
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
                preload: Sequence[str] = ()):
    """``worker(rank, *args)`` on ``nprocs`` new processes; returns torch's ``ProcessContext``
    (``join``, ``pids``, ``processes``) without waiting. ``method``: ``auto``, ``forkserver``
    or ``spawn``. ``worker`` must live in a module: it travels by name. The ranks get this
    process's environment plus ``env``, which this process itself does not get."""
    method = _method(method, [worker.__module__, *preload])
    return mp.start_processes(_in_the_launchs_environment, args=(worker, {**os.environ, **(env or {})}, *args),
                              nprocs=nprocs, join=False, start_method=method)


def _in_the_launchs_environment(rank: int, worker: Callable, env: dict, *args) -> None:
    # A fork shares the server's heap until a page is written; the garbage collector's first full
    # pass writes to every inherited object's header, a stall in a small run (CONTRIBUTING). Frozen
    # objects are never scanned; the child's own still are.
    gc.freeze()
    os.environ.clear()
    os.environ.update(env)
    worker(rank, *args)


def attempt_store(rank: int, world_size: int, timeout: timedelta):
    """Under torchrun, a store whose keys are private to this attempt.

    With the agents' shared store (torchrun's default), every restart reuses one TCPStore, and
    gloo can read the addresses the previous, killed attempt published there: the restarted
    ranks then hang in ``init_process_group`` (seen here; cf. pytorch/pytorch#135712). A prefix
    per ``TORCHELASTIC_RESTART_COUNT`` keeps each attempt's keys apart. Without it
    (``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``, the kit's elastic commands) every round has a store
    of its own, which rank 0 hosts on a fresh port, and no prefix: the nodes' restart counts
    differ (a failure counts on its node only), so a prefix by them would part the ranks."""
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if restart is None or "MASTER_ADDR" not in os.environ:
        return None
    agent_hosts = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    base = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world_size,
                         is_master=not agent_hosts and rank == 0, timeout=timeout, multi_tenant=not agent_hosts,
                         use_libuv=tcpstore_uses_libuv())
    return dist.PrefixStore(f"course_lib/attempt-{restart}", base) if agent_hosts else base


def run_then_exit(work: Callable[[], int | None]) -> NoReturn:
    """Run a rank's ``work`` and leave with the exit code it returns (``None``: 0), without the
    interpreter's teardown, in which a rank could die with SIGABRT after its work was on disk
    (CONTRIBUTING: "terminate called without an active exception"). An exception propagates:
    its traceback is the report."""
    code = work()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if code is None else code)


_HELD_GROUPS: list = []


def hold_process_group() -> None:
    """Keep this rank's default process group referenced until the rank leaves through
    :func:`run_then_exit`, so that its C++ destructor never runs. ``~ProcessGroupGloo`` joins gloo's
    worker threads inside a Python object's deallocation, which holds the GIL; a worker thread
    still freeing a finished collective's tensor needs the GIL: a deadlock (seen when a rank's
    last reference to a DDP model went at the end of the book's ``train``)."""
    _HELD_GROUPS.append(dist.group.WORLD)

