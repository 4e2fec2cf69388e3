"""The chapter's template, reconstructed and run for real, and what it loses against the kit's.

The chapter prints its DDP template in parts, some as images, with an example model on toy data;
:mod:`.book` is a **reconstruction** of it on the kit's data (its docstring says what it keeps),
with the choices the chapter leaves open made by the kit: :data:`DEVIATIONS` lists every one and
why (:func:`deviations` shows it as a table).

* :mod:`.book`: the reconstruction, to read top to bottom;
* :mod:`.observer`: the kit's thin observer inside it (ledger rows, planned faults, summary);
* :mod:`.run`: :func:`run_book`, the spawn of the book's worker on real processes;
* :mod:`.lessons`: :func:`what_the_book_loses` and :func:`crash_during_save`, the book's run
  against the kit's under the same real kills, judged by ``compare_runs``;
* :mod:`.reconstruction`: what the reconstruction does where the chapter's template is not this;
* ``python -m course_lib.textbook``: the reconstruction of the chapter's loop as a script (what ``audit`` judges).
"""
import importlib

# name -> the module that holds it, imported when first asked for: a rank that imports
# ``course_lib.textbook.book`` (the chapter's worker) need not import pandas and the lessons
_HOME = {"train": "book", "resume_training": "book", "evaluate": "book", "run_book": "run", "BookRun": "run",
         "checkpoints": "run", "checkpoint_contents": "run", "what_the_book_loses": "lessons",
         "crash_during_save": "lessons", "DEVIATIONS": "reconstruction", "deviations": "reconstruction",
         "source": "reconstruction"}
_MODULES = ("book", "observer", "run", "lessons", "reconstruction")


def __getattr__(name: str):
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*_HOME, *_MODULES])


__all__ = list(_HOME)
