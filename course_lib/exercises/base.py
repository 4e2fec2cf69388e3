"""What every exercise shares: the catalogue, the result a check returns, the learner's errors.

An :class:`Exercise` names the functions a learner writes, its progressive hints (English, and
their Chinese from the one store: :func:`course_lib.lab.i18n.both`), where its reference solution
lives, and its *checker*: a function that runs the learner's functions through the kit's real
machinery and returns the diagnosis. A checker
raises :class:`Fail` with a diagnosis a teacher would give; an exception in the learner's code
is caught by :func:`learner_call` and shown as the learner's own traceback, short, with the
exercise named.
"""
from __future__ import annotations

import html
import random
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from course_lib.lab.i18n import tr


class Fail(Exception):
    """A check's verdict "fail", with the diagnosis (already in the learner's language)."""


def book_data():
    """The book's reviews, prepared once and cached: the textbook's run and the exercises share them."""
    from course_lib.data.prepare import prepare_imdb
    from course_lib.textbook.run import DATA_LIMIT

    return prepare_imdb(limit=DATA_LIMIT, progress=False)


def short_traceback(err: BaseException) -> str:
    """The frames of ``err`` that belong to the learner (not to course_lib, torch or Python),
    and the error line; the last three frames when none is theirs."""
    frames = traceback.extract_tb(err.__traceback__)
    mine = [f for f in frames if not any(part in f.filename for part in ("course_lib", "site-packages", "/lib/python"))]
    lines = [f'  File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line}' for f in mine or frames[-3:]]
    return "\n".join(lines + [f"{type(err).__name__}: {err}"])


def learner_call(exercise: str, lang: str, fn: Callable, *args, **kwargs):
    """Call the learner's ``fn``; an exception becomes a :class:`Fail` that shows it (their traceback, short)."""
    try:
        return fn(*args, **kwargs)
    except Fail:
        raise
    except Exception as err:
        raise Fail(tr("{ex}: your {fn}() raised an exception:\n{tb}", lang, ex=exercise,
                      fn=getattr(fn, "__name__", "function"), tb=short_traceback(err))) from None


@dataclass
class Result:
    """What :func:`course_lib.exercises.check` returns (a small table in a notebook)."""
    exercise: str
    passed: bool
    diagnosis: str
    seed: int
    seconds: float
    lang: str = "en"

    def table(self) -> pd.DataFrame:
        names = [tr(name, self.lang) for name in ("exercise", "result", "diagnosis", "seed (to reproduce)", "seconds")]
        values = [self.exercise, tr("pass" if self.passed else "fail", self.lang), self.diagnosis, self.seed,
                  round(self.seconds, 1)]
        return pd.DataFrame({"": values}, index=names)

    def _repr_html_(self) -> str:  # a traceback keeps its lines and indentation
        cell = "<div style='white-space:pre-wrap;text-align:left;font-family:monospace'>{}</div>"
        return self.table().map(lambda v: cell.format(html.escape(str(v)))).to_html(escape=False)

    def __repr__(self) -> str:
        head = "PASS" if self.passed else "FAIL"
        return f"{head} {self.exercise} (seed {self.seed}, {self.seconds:.1f} s)\n{self.diagnosis}"

    def __bool__(self) -> bool:
        return self.passed


@dataclass
class Exercise:
    id: str                      # "04.save": notebook 04, exercise "save"
    title: tuple[str, str]       # (English, Chinese): i18n.both("...")
    functions: tuple[str, ...]   # the names of the functions the learner writes, in check() order
    checker: Callable            # checker(funcs: dict, seed: int, lang: str) -> diagnosis
    hints: list[tuple[str, str]]  # each i18n.both("..."), the idea first, the shape of the code last
    solution: str = ""           # module of the reference solution; by default its notebook's (solutions.ex04 for 04.save)

    def __post_init__(self):
        self.solution = self.solution or f"course_lib.exercises.solutions.ex{self.id[:2]}"


EXERCISES: dict[str, Exercise] = {}


def register(exercise: Exercise) -> None:
    EXERCISES[exercise.id] = exercise


def run_check(ex: Exercise, funcs: tuple, seed: int | None, lang: str) -> Result:
    """Run ``ex``'s checker on the learner's ``funcs``; never raises for a wrong answer."""
    if len(funcs) != len(ex.functions) or not all(callable(f) for f in funcs):
        names = ", ".join(ex.functions)
        said = tr("check('{id}', ...) takes your functions {names}, in that order", lang, id=ex.id, names=names)
        return Result(ex.id, False, said, seed or 0, 0.0, lang)
    seed = random.SystemRandom().randrange(10**6) if seed is None else seed
    t0 = time.perf_counter()
    try:
        diagnosis, passed = ex.checker(dict(zip(ex.functions, funcs)), seed, lang), True
    except Fail as failure:
        diagnosis, passed = str(failure), False
    return Result(ex.id, passed, diagnosis, seed, time.perf_counter() - t0, lang)
