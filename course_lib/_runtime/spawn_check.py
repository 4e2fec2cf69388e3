"""Why a worker for ``torch.multiprocessing.spawn`` lives in a module (notebook 03, optional deep-dive C).

A spawned child starts a fresh interpreter and imports its function by name: one defined in a
notebook cell (the kernel's ``__main__``) cannot be found there, and the child says so on *its*
stderr, which Jupyter does not show in the cell. :func:`try_spawn` runs the experiment and
returns the children's own words.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

import torch.multiprocessing as mp

from course_lib._runtime.processes import join_ranks

GRACE = 10  # seconds the other children have, after one failed, to fail with their own words


def try_spawn(fn: Callable, nprocs: int = 2, timeout: float = 60) -> str:
    """Start ``fn`` on ``nprocs`` processes with ``torch.multiprocessing.spawn`` and return what
    happened, in the children's own words (the module docstring says why a cell's ``fn`` fails):
    their stderr (they inherit the parent's file descriptor 2, pointed at a file while they
    start) with the parent's exception. After the first child fails, the others get ``GRACE``
    seconds to end on their own: stopped at once, a child still starting (a loaded machine)
    would never print its error. Notebook 03, deep-dive C."""
    with tempfile.TemporaryFile(mode="w+") as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        # buffered, a child's stderr is written a line at a time: unbuffered (PYTHONUNBUFFERED, as
        # in some terminals and CI), two children failing at once interleave their lines mid-line
        unbuffered = os.environ.pop("PYTHONUNBUFFERED", None)
        try:
            ctx = mp.start_processes(fn, nprocs=nprocs, join=False, start_method="spawn")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if unbuffered is not None:
                os.environ["PYTHONUNBUFFERED"] = unbuffered
        try:
            end = join_ranks(ctx, timeout=timeout, grace_period=GRACE)
        except TimeoutError:
            outcome = f"still running after {timeout:.0f} s: killed"
        else:
            outcome = "every process finished without an error" if end is None else _said(end)
        err.seek(0)
        children = [line for line in err.read().splitlines() if line.strip()]
    last = [line for line in children if not line.startswith((" ", "Traceback"))][-nprocs:]
    return "\n".join([f"parent: {outcome}", *(f"child:  {line}" for line in last)])


def _said(end) -> str:
    """torch's own words for how the first failing process ended."""
    if end.error:
        return f"ProcessRaisedException: {end.error}"
    how = f"signal {end.signal}" if end.signal else f"exit code {end.exit_code}"
    return f"ProcessExitedException: process {end.rank} terminated with {how}"
