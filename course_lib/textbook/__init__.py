"""The chapter's own code, run for real, and what it loses against the kit's.

* :mod:`.book`: the chapter's template as the chapter has it (DDP worker, the per-rank lines,
  ``SummaryWriter`` per epoch, the three-item ``model_epoch_{N}.pth``, ``resume_training``);
* :mod:`.observer`: the kit's thin observer inside it (ledger rows, planned faults, summary);
* :mod:`.run`: :func:`run_book`, the spawn of the book's worker on real processes;
* :mod:`.lessons`: :func:`what_the_book_loses` and :func:`crash_during_save`, the book's run
  against the kit's under the same real kills, judged by ``compare_runs``.
"""
from course_lib.textbook.book import evaluate, resume_training, train
from course_lib.textbook.lessons import crash_during_save, what_the_book_loses
from course_lib.textbook.run import BookRun, checkpoint_contents, checkpoints, run_book

__all__ = ["train", "resume_training", "evaluate", "run_book", "BookRun", "checkpoints", "checkpoint_contents",
           "what_the_book_loses", "crash_during_save"]
