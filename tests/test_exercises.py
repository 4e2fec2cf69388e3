"""Exercises a learner can check: every check passes its reference solution and fails the typical
wrong answers with the right diagnosis; the 04/05 checks kill the learner's training for real."""
import importlib
import json
import subprocess
import sys

import pytest

from course_lib._runtime.rank_start import load_module
from course_lib.exercises import EXERCISES, check, hint, quiz, solution, solution_of
from course_lib.exercises.carry import CannotCarry, write_module
from course_lib.exercises.grading import find_submissions, grade_one
from course_lib.exercises.quiz import QUESTIONS

SPAWNING = {ex for ex, e in EXERCISES.items() if e.spawns}
FAST = sorted(set(EXERCISES) - SPAWNING)


def _wrong(exercise):
    module = importlib.import_module(f"tests.exercise_answers.wrong{exercise[:2]}")
    return [pytest.param(exercise, funcs, expected, id=f"{exercise}-{label}")
            for label, funcs, expected in module.WRONG[exercise]]


def test_every_notebook_has_two_code_exercises_with_hints_and_a_solution():
    for nb in ("01", "02", "03", "04", "05"):
        mine = [e for e in EXERCISES.values() if e.id.startswith(nb)]
        assert len(mine) >= 2 and nb in QUESTIONS and 3 <= len(QUESTIONS[nb]) <= 5
        for e in mine:
            assert len(e.hints) >= 2 and solution_of(e.id)


@pytest.mark.parametrize("exercise", FAST)
def test_the_reference_solution_passes(exercise):
    result = check(exercise, *solution_of(exercise), seed=11, lang="en")
    assert result.passed, result.diagnosis


@pytest.mark.parametrize("exercise,funcs,expected", [p for ex in FAST for p in _wrong(ex)])
def test_a_wrong_answer_fails_with_its_diagnosis(exercise, funcs, expected):
    result = check(exercise, *funcs, seed=11, lang="en")
    assert not result.passed and expected in result.diagnosis, result.diagnosis


@pytest.mark.slow
@pytest.mark.parametrize("exercise", sorted(SPAWNING))
def test_the_reference_solution_passes_in_real_processes(exercise):
    result = check(exercise, *solution_of(exercise), seed=11, lang="en")
    assert result.passed, result.diagnosis


@pytest.mark.slow
@pytest.mark.parametrize("exercise,funcs,expected", [p for ex in sorted(SPAWNING) for p in _wrong(ex)])
def test_a_wrong_answer_fails_in_real_processes(exercise, funcs, expected):
    result = check(exercise, *funcs, seed=11, lang="en")
    assert not result.passed and expected in result.diagnosis, result.diagnosis


def test_a_learners_exception_is_their_traceback_with_the_exercise_named():
    def chunk_words(text, size, overlap):
        return text.split()[10 ** 6]

    result = check("01.chunk", chunk_words, seed=1, lang="en")
    assert not result.passed and result.diagnosis.startswith("01.chunk: your chunk_words() raised")
    assert "IndexError" in result.diagnosis and "course_lib" not in result.diagnosis


def test_a_diagnosis_speaks_the_notebooks_language():
    from tests.exercise_answers.wrong01 import no_overlap

    assert "相邻两块" in check("01.chunk", no_overlap, seed=1, lang="zh").diagnosis


def test_the_seed_is_printed_and_repeats_the_attempt():
    a, b = (check("02.group", *solution_of("02.group"), seed=5, lang="en") for _ in range(2))
    assert a.seed == 5 and a.diagnosis == b.diagnosis
    assert check("02.group", *solution_of("02.group"), lang="en").seed >= 0


def test_hints_come_one_at_a_time_and_the_solution_says_where_it_lives(capsys):
    first, second = hint("01.dedup", lang="en"), hint("01.dedup", lang="en")
    assert first.startswith("Hint 1 of 3") and second.startswith("Hint 2 of 3")
    text = solution("04.save", lang="zh")
    assert "solutions/ex04.py" in text and "def save_checkpoint" in text and "原子" in text


def test_wrong_arguments_are_said_plainly():
    result = check("04.save", print, lang="en")
    assert not result.passed and "save_checkpoint, load_checkpoint" in result.diagnosis


# ------------------------------------------------------------ carrying notebook code to spawned ranks
def test_carry_takes_the_helpers_a_function_uses(tmp_path):
    from tests.exercise_answers import wrong04

    path = write_module({"save_checkpoint": wrong04.no_rng_save}, tmp_path / "m.py")
    module = load_module(path)
    assert module.save_checkpoint.__name__ == "no_rng_save" and hasattr(module, "_save")


def test_carry_says_what_it_cannot_carry(tmp_path):
    with pytest.raises(CannotCarry, match="lambda"):
        write_module({"f": lambda x: x}, tmp_path / "a.py")

    def outer():
        k = 1

        def inner(x):
            return x + k
        return inner
    with pytest.raises(CannotCarry, match="inside another function"):
        write_module({"f": outer()}, tmp_path / "b.py")
    namespace = {}
    exec("def f(x):\n    return x\n", namespace)
    with pytest.raises(CannotCarry, match="source of f cannot be found"):
        write_module({"f": namespace["f"]}, tmp_path / "c.py")


# ------------------------------------------------------------ quizzes, driven like ipywidgets' own tests
@pytest.mark.parametrize("notebook", sorted(QUESTIONS))
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_quiz_explains_every_wrong_answer(notebook, lang):
    q = quiz(notebook, lang=lang)
    for item, (_, answers) in zip(q.items, QUESTIONS[notebook]):
        item.button.click()
        assert item.feedback.value in ("Choose an answer first.", "先选一个答案。")
        for option, (_, why) in zip(item.choice.options, answers):
            item.choice.value = option
            item.button.click()
            if why is None:
                assert item.correct and ("Right." in item.feedback.value or "正确" in item.feedback.value)
            else:
                assert not item.correct and why[1 if lang == "zh" else 0] in item.feedback.value


# ------------------------------------------------------------ grading a folder
def _submissions(root):
    from tests.exercise_answers.wrong05 import newest_as_string

    good, bad = root / "good", root / "bad"
    good.mkdir(parents=True)
    bad.mkdir()
    (good / "01.chunk.py").write_text(solution("01.chunk", lang="en"))
    (good / "05.newest.py").write_text(solution("05.newest", lang="en"))
    (bad / "01.chunk.py").write_text("def chunk_words(text, size, overlap):\n    w = text.split()\n"
                                     "    return [' '.join(w[i:i + size]) for i in range(0, len(w), size)]\n")
    import inspect

    cell = {"cell_type": "code", "metadata": {"tags": ["exercise"], "exercise": "05.newest"}, "outputs": [],
            "execution_count": None, "source": "import os\n\n" + inspect.getsource(newest_as_string).replace(
                "newest_as_string", "newest_checkpoint")}
    (bad / "05_interruption_resume.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                                  "nbformat_minor": 5}))
    return root


def test_grading_a_folder_with_a_good_and_a_bad_learner(tmp_path):
    found = find_submissions(_submissions(tmp_path))
    assert sorted(found) == ["bad", "good"] and sorted(found["bad"]) == ["01.chunk", "05.newest"]
    rows = {(learner, ex): grade_one(learner, ex, path) for learner, subs in found.items() for ex, path in subs.items()}
    assert rows["good", "01.chunk"]["passed"] and rows["good", "05.newest"]["passed"]
    assert "share exactly" in rows["bad", "01.chunk"]["diagnosis"]
    assert "as a string" in rows["bad", "05.newest"]["diagnosis"]


@pytest.mark.slow
def test_pytest_grades_a_folder_from_the_command_line(tmp_path):
    folder = _submissions(tmp_path / "class")
    summary = tmp_path / "summary.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_grade_submissions.py", "--exercises", str(folder),
                           "--exercises-json", str(summary), "-p", "no:cacheprovider", "-q"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "good             01.chunk    PASS" in proc.stdout and "bad              05.newest   FAIL" in proc.stdout
    data = json.loads(summary.read_text())
    assert data["learners"] == {"bad": {"passed": 0, "checked": 2}, "good": {"passed": 2, "checked": 2}}


def test_carry_takes_a_function_defined_in_an_ipython_cell(tmp_path):
    """The real path: functions typed into notebook cells (IPython keeps their source)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("import re as regex\nSIZE = 3\ndef helper(t):\n    return regex.sub('a', 'b', t)\n")
    shell.run_cell("def chunk_words(text, size, overlap):\n    return [helper(text)] * SIZE\n")
    module = load_module(write_module({"chunk_words": shell.user_ns["chunk_words"]}, tmp_path / "cell.py"))
    assert module.chunk_words("banana", 1, 0) == ["bbnbnb"] * 3


def test_the_notebooks_unfilled_scaffolds_are_found_and_fail_with_a_diagnosis(tmp_path):
    """The notebooks as a learner receives them, graded: every exercise cell is found by its tag,
    and an unfilled scaffold gets a diagnosis, not a crash of the check."""
    import shutil

    from tests.conftest import REPO

    learner = tmp_path / "class" / "new-learner"
    learner.mkdir(parents=True)
    for nb in (REPO / "notebooks").glob("0*.ipynb"):
        shutil.copy(nb, learner)
    found = find_submissions(tmp_path / "class")["new-learner"]
    assert sorted(found) == sorted(EXERCISES)
    for exercise in FAST:
        row = grade_one("new-learner", exercise, found[exercise])
        assert not row["passed"] and row["diagnosis"] and "Traceback" not in row["diagnosis"], row


def test_carry_finds_a_module_used_only_inside_a_comprehension(tmp_path):
    from tests.exercise_answers.wrong05 import resume_no_fallback

    text = write_module({"resume_training": resume_no_fallback}, tmp_path / "m.py").read_text()
    assert "import re" in text and "def _by_number" in text
