"""Grading a folder of learners' work (a teacher's command line: ``pytest --exercises DIR``); a test
helper, since only ``conftest.py`` and the tests use it.

The layout (docs/exercises.md)::

    DIR/<learner>/<exercise-id>.py     e.g. DIR/ana/04.save.py defining save_checkpoint and load_checkpoint
    DIR/<learner>/*.ipynb              or notebooks: code cells tagged "exercise" whose metadata holds
                                       {"exercise": "04.save"}; all cells of one id form its module

A learner's module is imported from its file (so its functions have their source, which the
checks of 03/04/05 carry to the spawned processes). Each (learner, exercise) is checked with the
same seed, so every learner meets the same kills.
"""
from __future__ import annotations

import json
from pathlib import Path

from course_lib.exercises.base import EXERCISES, Result, run_check
from course_lib.exercises.carry import load_module


def _notebook_cells(path: Path) -> dict[str, str]:
    """Exercise id -> the source of the notebook's code cells tagged ``exercise`` with that id."""
    cells: dict[str, list[str]] = {}
    for cell in json.loads(path.read_text()).get("cells", []):
        meta = cell.get("metadata", {})
        if cell.get("cell_type") == "code" and "exercise" in meta.get("tags", []) and meta.get("exercise"):
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            cells.setdefault(meta["exercise"], []).append(source)
    return {ex: "\n\n".join(parts) for ex, parts in cells.items()}


def find_submissions(folder: str | Path) -> dict[str, dict[str, Path]]:
    """``{learner: {exercise id: module file}}``; notebook cells are written out as module files
    (in ``DIR/<learner>/.extracted/``) so that they import like any other."""
    found: dict[str, dict[str, Path]] = {}
    for learner in sorted(p for p in Path(folder).iterdir() if p.is_dir() and not p.name.startswith(".")):
        mine: dict[str, Path] = {}
        for nb in sorted(learner.glob("*.ipynb")):
            for ex, source in _notebook_cells(nb).items():
                out = learner / ".extracted" / f"{ex.replace('.', '_')}.py"
                out.parent.mkdir(exist_ok=True)
                out.write_text(source + "\n")
                mine[ex] = out
        for py in sorted(learner.glob("*.py")):
            if py.stem in EXERCISES:
                mine[py.stem] = py
        found[learner.name] = mine
    return found


def grade_one(learner: str, exercise: str, path: Path | None, seed: int = 0, lang: str = "en") -> dict:
    """One row: learner, exercise, passed, diagnosis, seconds."""
    row = {"learner": learner, "exercise": exercise}
    if path is None:
        return {**row, "passed": False, "diagnosis": "no submission", "seconds": 0.0}
    try:
        module = load_module(path)
        missing = [name for name in EXERCISES[exercise].functions if not hasattr(module, name)]
        if missing:
            return {**row, "passed": False, "seconds": 0.0,
                    "diagnosis": f"{path.name} defines no {', '.join(missing)}"}
        result: Result = run_check(EXERCISES[exercise], tuple(getattr(module, n) for n in EXERCISES[exercise].functions),
                                   seed, lang)
    except Exception as err:  # a submission that does not even import
        return {**row, "passed": False, "seconds": 0.0, "diagnosis": f"{path.name} does not import: "
                f"{type(err).__name__}: {err}"}
    return {**row, "passed": result.passed, "diagnosis": result.diagnosis, "seconds": round(result.seconds, 1)}


def write_summary(rows: list[dict], path: str | Path) -> Path:
    """The JSON summary: every row, and per learner the exercises passed."""
    learners = sorted({r["learner"] for r in rows})
    summary = {"rows": rows, "learners": {name: {"passed": sum(r["passed"] for r in rows if r["learner"] == name),
                                                 "checked": sum(r["learner"] == name for r in rows)} for name in learners}}
    Path(path).write_text(json.dumps(summary, indent=2, ensure_ascii=False))
    return Path(path)
