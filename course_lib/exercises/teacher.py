"""The teacher's edition: each notebook of the executed HTML edition ends with its exercises'
reference solutions, in a section labelled as such (``python -m course_lib edition --teacher``).

The learners' edition never shows a solution: the notebooks only name the call that reveals one
(``solution(id, reveal=True)``). A teacher preparing a class wants them next to the notebook, in
its language; :func:`solutions_section` is the appendix :func:`course_lib.lab.edition.build_edition`
adds to each page (the edition lives below the exercises and cannot import them).
"""
from __future__ import annotations

from course_lib.exercises import EXERCISES, solution
from course_lib.lab.i18n import LANGS, both, tr

HEADING = dict(zip(LANGS, both("Teacher's edition: reference solutions")))  # each edition's


def solutions_section(nb, lang: str, notebook: str) -> int:
    """Teacher's edition: every notebook ends with its exercises' reference solutions.

    Appends to ``nb`` (an executed notebook of edition ``lang``; ``notebook``: its file name, whose
    first two characters are the exercises' prefix, "04" for ``04_monitoring_checkpoints.ipynb``) a
    section headed :data:`HEADING` with each exercise's revealed solution; returns how many."""
    import nbformat

    ids = sorted(e for e in EXERCISES if e.split(".")[0] == notebook[:2])
    if not ids:
        return 0
    intro = tr("Not part of the learners' edition. Each solution runs through the same check as a learner's answer: "
               "`check(id, *solution_of(id))`; a learner sees it with `solution(id, reveal=True)`.", lang)
    cells = [nbformat.v4.new_markdown_cell(f"## {HEADING[lang]}\n{intro}")]
    for exercise_id in ids:
        title = EXERCISES[exercise_id].title[1 if lang == "zh" else 0]
        code = solution(exercise_id, reveal=True, lang=lang).shown
        cells.append(nbformat.v4.new_markdown_cell(f"### {exercise_id} · {title}\n\n```python\n{code}\n```"))
    nb.cells.extend(cells)
    return len(ids)
