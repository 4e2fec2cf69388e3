"""Exercises a learner can check: write the chapter's code, have it run (and killed) for real.

``check(id, *functions)`` passes or fails with a diagnosis, ``hint(id)`` gives the next hint,
``solution(id, reveal=True)`` the reference solution (without ``reveal``: only the call that shows
it), ``quiz(nb)`` the notebook's self-check quiz; one call per cell. A check's randomness is seeded per
attempt and printed: ``check(..., seed=N)`` repeats it. How they behave: docs/exercises.md.
"""
from __future__ import annotations

import importlib
import inspect
import tempfile
from pathlib import Path

from course_lib.exercises import ex01, ex02, ex03, ex04, ex05  # noqa: F401  (each registers its exercises)
from course_lib.exercises.base import EXERCISES, Result, run_check
from course_lib.exercises.carry import write_module
from course_lib.exercises.quiz import quiz
from course_lib.lab.i18n import resolve, tr

__all__ = ["check", "hint", "solution", "quiz", "solution_of", "EXERCISES", "Result"]

_hints_shown: dict[str, int] = {}


class Shown(str):
    """Text a notebook cell shows once, as text (a plain ``str`` would be echoed as its repr,
    quotes and ``\\n`` included). ``shown`` may be shorter than the string itself."""

    def _ipython_display_(self):
        print(getattr(self, "shown", str(self)))


def _exercise(exercise_id: str):
    if exercise_id not in EXERCISES:
        raise KeyError(f"no exercise {exercise_id!r}; the exercises are {', '.join(sorted(EXERCISES))}")
    return EXERCISES[exercise_id]


def check(exercise_id: str, *functions, seed: int | None = None, lang: str | None = None) -> Result:
    """Run the learner's ``functions`` (in the order the exercise names them) through the real
    machinery; returns a :class:`Result` (a small table in a notebook; truthy when it passes).
    Used in every notebook (exercises)."""
    return run_check(_exercise(exercise_id), functions, seed, resolve(lang))


def hint(exercise_id: str, lang: str | None = None) -> str:
    """The next hint of ``exercise_id`` (one more each call; the last one repeats), shown by the
    notebook cell that asks for it. Used in every notebook (exercises)."""
    ex, lang = _exercise(exercise_id), resolve(lang)
    shown = min(_hints_shown.get(exercise_id, 0) + 1, len(ex.hints))
    _hints_shown[exercise_id] = shown
    return Shown(tr("Hint {k} of {n} ({id}): {h}", lang, k=shown, n=len(ex.hints), id=exercise_id,
                    h=ex.hints[shown - 1][lang == "zh"]))


def solution_of(exercise_id: str) -> tuple:
    """The reference solution's functions, in ``check`` order: ``check(id, *solution_of(id))`` passes."""
    ex = _exercise(exercise_id)
    module = importlib.import_module(ex.solution)
    return tuple(getattr(module, name) for name in ex.functions)


def solution(exercise_id: str, reveal: bool = False, lang: str | None = None) -> str:
    """The reference solution of ``exercise_id``, only when asked for. With ``reveal=True``: where
    it lives and its source (a notebook shows the functions; the string is the whole module, a
    runnable answer file), which runs through the same check: ``check(id, *solution_of(id))``.
    Without it: a notice of the call that reveals it and of the hints left, and nothing of the
    answer, so that a cell that runs it in order gives nothing away. Used in every notebook (exercises)."""
    ex, lang = _exercise(exercise_id), resolve(lang)
    if not reveal:
        total = len(ex.hints)
        left = total - _hints_shown.get(exercise_id, 0)
        hints = (tr("hint(\"{id}\") gives the next hint ({k} of {n} left)", lang, id=exercise_id, k=left, n=total) if left
                 else tr("You have seen all {n} hints of {id}", lang, id=exercise_id, n=total))
        return Shown(tr("The reference solution of {id} is one call away: solution(\"{id}\", reveal=True). "
                        "Stuck? {hints}.", lang, id=exercise_id, hints=hints))
    functions = solution_of(exercise_id)
    with tempfile.TemporaryDirectory() as tmp:  # the functions with what they need, as the checks carry them
        sources = write_module(dict(zip(ex.functions, functions)), Path(tmp) / "s.py", lang).read_text()
    where = Path(inspect.getfile(functions[0])).resolve().relative_to(Path(__file__).resolve().parents[2])  # course_lib/...
    head = tr("# reference solution of {id}: {path}\n# run it through the same check: check('{id}', "
              "*solution_of('{id}'))\n\n", lang, id=exercise_id, path=where.as_posix())
    text = Shown(head + sources)  # the whole module: a runnable answer file
    text.shown = head + "\n\n".join(inspect.getsource(f) for f in functions)  # what a reader needs
    return text
