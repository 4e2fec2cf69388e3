"""The chapter's template, reconstructed and run for real, and what it loses against the kit's.

The chapter prints its DDP template in parts, some as images, with an example model on toy data;
:mod:`.book` is a **reconstruction** of it on the kit's data (its docstring says what it keeps),
with the choices the chapter leaves open made by the kit: :data:`DEVIATIONS` lists every one and
why (:func:`deviations` shows it as a table). :func:`run_book` runs it on real processes;
:mod:`.lessons` judges it against the kit's under the same real kills.
"""
import importlib

# name -> the module that holds it, imported when first asked for: a rank that imports
# ``course_lib.textbook.book`` (the chapter's worker) need not import pandas and the lessons
_HOME = {"train": "book", "resume_training": "book", "evaluate": "book", "run_book": "run", "BookRun": "run",
         "checkpoints": "run", "checkpoint_contents": "run", "what_the_book_loses": "lessons",
         "crash_during_save": "lessons", "DEVIATIONS": "reconstruction", "deviations": "reconstruction"}
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
