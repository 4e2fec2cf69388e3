"""Real faults: real signals sent to real worker processes.

Three modes (``--kill-mode``), fired on rank ``--kill-rank`` at global step ``--kill-at-step``
of the *first* attempt only (a resumed run must be allowed to finish):

* ``sigkill``: SIGKILL when the step begins. No handler can run: a hard crash, like the
  out-of-memory killer or a pulled plug. Everything since the last checkpoint is lost.
* ``sigterm``: SIGTERM when the step begins. The handler only raises a flag; the step
  finishes, the ranks agree (one all-reduce) to stop, save a checkpoint and exit. This is how
  schedulers (Slurm, Kubernetes, spot instances) announce a preemption.
* ``during-save``: SIGKILL in the middle of writing the first checkpoint at or after the
  step, with half of a file on disk. The commit protocol must make that harmless.
"""
from __future__ import annotations

import os
import signal
from typing import Callable

from .config import TrainConfig

EXIT_PREEMPTED = 143  # 128 + SIGTERM: what a shell reports for a process ended by SIGTERM


class FaultInjector:
    def __init__(self, cfg: TrainConfig, rank: int, attempt: int):
        self.step = cfg.kill_at_step
        self.mode = cfg.kill_mode
        self.armed = bool(cfg.kill_at_step) and rank == cfg.kill_rank and attempt == 1

    def before_step(self, step: int) -> None:
        """Called as global step ``step`` (1-based) begins."""
        if self.armed and step == self.step and self.mode in ("sigkill", "sigterm"):
            self.armed = False  # fire once
            os.kill(os.getpid(), signal.SIGKILL if self.mode == "sigkill" else signal.SIGTERM)

    def during_save(self, step: int) -> Callable[[], None] | None:
        """The hook :func:`course_lib.checkpoint.write_part` calls half-way, or ``None``."""
        if self.armed and self.mode == "during-save" and step >= self.step:
            return lambda: os.kill(os.getpid(), signal.SIGKILL)
        return None


class GracefulStop:
    """SIGTERM (and SIGINT) set a flag instead of killing: the loop checks it after each
    step. Installed only in the main thread of a worker process."""

    def __init__(self):
        self.requested: str | None = None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handler)

    def _handler(self, signum, _frame) -> None:
        self.requested = signal.Signals(signum).name


def kill(pid: int, mode: str = "sigkill") -> None:
    """Send a real signal to a running worker (the lab's "kill now" button)."""
    sig = {"sigkill": signal.SIGKILL, "sigterm": signal.SIGTERM}.get(mode)
    if sig is None:
        raise ValueError(f"kill mode must be 'sigkill' or 'sigterm' from outside, got {mode!r}")
    os.kill(pid, sig)
