"""Carrying the learner's functions to spawned processes.

A function defined in a notebook cell lives in the kernel's ``__main__``: a spawned rank
re-imports ``__main__`` and finds nothing there, so the function cannot be pickled across
(the kit's own first lesson in notebook 03). The check therefore takes the function's *source*
(``inspect.getsource`` works for functions defined in IPython cells) and writes it into a
module file that the ranks import, under a fixed header of imports. What it references from
the notebook comes along: other functions of the notebook (their source), modules (an import
line), plain constants (their ``repr``). What cannot come along is said, with what to do.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import shutil
import textwrap
import types
from pathlib import Path

from course_lib.exercises.base import Fail
from course_lib.lab.i18n import tr

HEADER = '''"""Written by course_lib.exercises: the functions with what they need, a module spawned processes import."""
import math
import os
import random
import shutil
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler
'''
_IN_HEADER = {a.asname or a.name for node in ast.parse(HEADER).body if isinstance(node, (ast.Import, ast.ImportFrom))
              for a in node.names}  # the names the header binds
_LITERALS = (int, float, str, bytes, bool, type(None), tuple, list, dict)


class CannotCarry(ValueError):
    """The function cannot be sent to the spawned processes; the message says why and what to do."""


def _source(fn, lang: str) -> str:
    name = getattr(fn, "__name__", repr(fn))
    if not isinstance(fn, types.FunctionType):
        raise CannotCarry(tr("{name} is not a plain function (def ...): write it with def in a cell", lang, name=name))
    if name == "<lambda>":
        raise CannotCarry(tr("a lambda cannot be sent to the spawned processes: write it with def in a cell", lang,
                             name=name))
    if fn.__code__.co_freevars:
        raise CannotCarry(tr("{name} is defined inside another function (it uses {vars} from there): define it at the top "
                             "level of a cell", lang, name=name, vars=", ".join(fn.__code__.co_freevars)))
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        raise CannotCarry(tr("the source of {name} cannot be found (defined with exec, or the cell was deleted): run its "
                             "cell again, or put it in a .py file next to the notebook", lang, name=name)) from None


def _global_names(code: types.CodeType) -> set[str]:
    """Every name ``code`` may look up globally, nested code included: ``inspect.getclosurevars``
    misses a module used only inside a comprehension, a lambda or a nested function."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _is_literal(value) -> bool:
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError):
        return False


def _needs(fn, lang: str, done: set, out: list[str]) -> None:
    """``fn``'s source after everything it references from its module (depth first)."""
    done.add(fn.__name__)
    refs = {name: fn.__globals__[name] for name in sorted(_global_names(fn.__code__)) if name in fn.__globals__}
    for name, value in refs.items():
        if name in done or name in _IN_HEADER:
            continue
        if isinstance(value, types.ModuleType):
            out.append(f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}")
        elif isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            _needs(value, lang, done, out)
        elif callable(value) and getattr(value, "__module__", None) not in (None, "__main__") and hasattr(value, "__name__"):
            out.append(f"from {value.__module__} import {value.__name__}" +
                       ("" if value.__name__ == name else f" as {name}"))
        elif isinstance(value, _LITERALS) and _is_literal(value):
            out.append(f"{name} = {value!r}")
        else:
            raise CannotCarry(tr("{fn} uses {name} ({kind}) from your notebook, which cannot be sent to the spawned "
                                 "processes: create it inside {fn}, or pass it in", lang, fn=fn.__name__, name=name,
                                 kind=type(value).__name__))
        done.add(name)
    out.append(_source(fn, lang))


def write_module(functions: dict, path: str | Path, lang: str = "en") -> Path:
    """Write ``functions`` (name -> function, as the exercise names them) into the module
    ``path``; each is importable there under its exercise name."""
    body: list[str] = []
    done: set = set()
    for wanted, fn in functions.items():
        _source(fn, lang)  # the first problem, said plainly, before any reference is chased
        if fn.__name__ not in done:
            _needs(fn, lang, done, body)
        if fn.__name__ != wanted:
            body.append(f"{wanted} = {fn.__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + "\n\n" + "\n\n".join(body) + "\n")
    return path


def load_module(path: str | Path) -> types.ModuleType:
    """Import the module :func:`write_module` wrote (in a rank: the learner's functions that a
    notebook cell defined)."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    assert spec is not None and spec.loader is not None  # a .py file (all callers pass one) always has both
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def carry_for_check(exercise_id: str, functions: dict, lang: str) -> tuple[Path, str]:
    """A fresh work folder for one check of ``exercise_id`` and the module file of the learner's
    ``functions`` in it; what cannot be carried fails the check with the reason."""
    from course_lib.data.prepare import cache_root

    workdir = cache_root() / "exercises" / "work" / exercise_id
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        return workdir, str(write_module(functions, workdir / "learner.py", lang))
    except CannotCarry as err:
        raise Fail(str(err)) from None
