"""The parent's side of a run's processes: one run per directory, waiting for the ranks and
saying how the one that ended the run ended (a rank's own side is :mod:`course_lib._runtime.rank_start`).

Shared by :func:`course_lib.ddp.launch.launch`, the book's runner (:mod:`course_lib.textbook.run`)
and :func:`course_lib._runtime.spawn_check.try_spawn`, so that a killed rank is spotted the same
way everywhere (:func:`~course_lib._runtime.portability.killed_hard`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch.multiprocessing as mp

from course_lib._runtime.portability import killed_hard
from course_lib.config import ConfigError


@dataclass
class RankEnd:
    """How the rank that ended a run ended: killed by ``signal``, exited with ``exit_code``, or
    raised (``error``: its traceback)."""
    rank: int
    exit_code: int | None = None
    signal: str | None = None
    error: str | None = None


def join_ranks(ctx, poll: Callable[[], None] = lambda: None, timeout: float | None = None,
               grace_period: float | None = None) -> RankEnd | None:
    """Wait for every process of ``ctx`` (torch's ``ProcessContext``), calling ``poll()`` between
    looks; ``None`` if all finished cleanly. Otherwise the rank that ended the run: the first one
    killed hard (its peers then fail on a lost connection, which is not the cause), else the one
    that failed first. torch then SIGTERMs the others, after ``grace_period`` seconds (the time
    survivors have to save). Past ``timeout`` the ranks are killed and ``TimeoutError`` raised."""
    spawn_log = logging.getLogger("torch.multiprocessing.spawn")  # its "Terminating process ..." is noise
    level = spawn_log.level
    spawn_log.setLevel(logging.ERROR)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while not ctx.join(timeout=0.2, grace_period=grace_period):
            poll()
            if deadline is not None and time.monotonic() > deadline:
                for proc in ctx.processes:
                    proc.kill()
                raise TimeoutError(f"the ranks did not finish within {timeout:.0f} s")
    except (mp.ProcessRaisedException, mp.ProcessExitedException) as err:
        # the failure torch saw first, if it was a hard kill: a survivor torch SIGKILLs after its grace
        # period is killed hard too, and may have a lower rank
        killed = next((r for r in (err.error_index, *range(len(ctx.processes)))
                       if killed_hard(ctx.processes[r].exitcode)), None)
        if killed is None and isinstance(err, mp.ProcessRaisedException):
            return RankEnd(err.error_index, error=str(err))
        rank = killed if killed is not None else err.error_index
        code = ctx.processes[rank].exitcode
        return RankEnd(rank, exit_code=code if code >= 0 else None, signal=signal.Signals(-code).name if code < 0 else None)
    finally:
        spawn_log.setLevel(level)
        poll()
        for path in ctx.error_files:  # spawn leaves a failed rank's traceback file in /tmp
            Path(path).unlink(missing_ok=True)
    return None


@contextlib.contextmanager
def run_dir_lock(run_dir: str | Path):
    """Hold ``DIR/.lock`` for the life of a run: two runs in one folder would interleave their
    checkpoints and ledgers. The kernel releases it when the holder dies, SIGKILL included, so a
    crashed run never leaves a stale lock."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(run_dir) / ".lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            raise ConfigError(f"{run_dir} is in use by another run ({f.read().strip() or 'unknown process'}); "
                              "wait for it to end, stop it, or pick another --run-dir") from None
        f.truncate(0)
        f.write(f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%H:%M:%S')}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
