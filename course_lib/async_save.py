"""Asynchronous checkpoint writes: training goes on while rank 0's write lands on disk.

The training thread serialises the state (:func:`course_lib.checkpoint.serialize`: the bytes
are the snapshot), hands the write and commit to a :class:`BackgroundWriter`, and continues.
"""
from __future__ import annotations

import os
import threading

from .portability import nice_is_per_thread


class BackgroundWriter:
    """At most one checkpoint write in flight: a new one waits for the previous to finish.

    The writer thread runs at the lowest CPU priority (Linux: ``nice`` applies per thread), so
    on a machine whose cores the ranks keep busy it uses the moments they wait (all-reduce,
    I/O) instead of taking CPU from training: the save lasts longer, training does not.
    A job that raises does so again in the training thread, at the next ``wait`` or ``submit``:
    a writer that fails must not leave the run believing it has checkpoints."""

    def __init__(self):
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            err, self._error = self._error, None
            raise RuntimeError("the background checkpoint writer failed; see the cause above") from err

    def submit(self, job, background: bool) -> None:
        self.wait()
        if background:
            self._thread = threading.Thread(target=self._run, args=(job,), name="checkpoint-writer", daemon=True)
            self._thread.start()
        else:
            job()

    def _run(self, job) -> None:
        try:
            _at_low_priority(job)
        except BaseException as err:  # noqa: BLE001 - handed to the training thread
            self._error = err


def _at_low_priority(job) -> None:
    if nice_is_per_thread():
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    job()
