"""Why a rank's training ended (:class:`Outcome`), and the one map from that to the exit code
every launcher reads (:func:`exit_code`).

A rank leaves with its outcome's code: ``launch`` names it in
:class:`~course_lib.ddp.launch.RunInterrupted`, a scheduler requeues a job that exits
:data:`EXIT_PREEMPTED`, and ``python -m course_lib train`` answers :data:`EXIT_INTERRUPTED`
when a rank was killed, :data:`EXIT_FAILED` when one raised. The core ends in :data:`DONE` or
:data:`PREEMPTED`; an extension defines outcomes of its own (one without a code is no end of the
process: a group that re-forms and goes on in it).
"""
from __future__ import annotations

from dataclasses import dataclass

EXIT_DONE = 0
EXIT_FAILED = 1         # a rank raised an exception
EXIT_INTERRUPTED = 3    # `python -m course_lib train`: a rank was killed or stopped; continue with --resume auto
EXIT_PREEMPTED = 143    # 128 + SIGTERM, what a shell reports for a process ended by SIGTERM: this step is saved


@dataclass(frozen=True)
class Outcome:
    name: str
    code: int | None  # the exit code it ends a rank with; None: it ends no process


DONE = Outcome("done", EXIT_DONE)                # every planned step trained, the final checkpoint and summary written
PREEMPTED = Outcome("preempted", EXIT_PREEMPTED)  # SIGTERM (or SIGINT): this step saved; continue with --resume auto


def exit_code(outcome: Outcome) -> int:
    """The exit code a rank that ended in ``outcome`` leaves with."""
    if outcome.code is None:
        raise ValueError(f"the outcome {outcome.name!r} ends no process: it goes on where it was returned")
    return outcome.code
