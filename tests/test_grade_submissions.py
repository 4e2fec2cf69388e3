"""A teacher's grading run: ``pytest tests/test_grade_submissions.py --exercises DIR``.

One test per learner and exercise found in DIR (layout: docs/exercises.md); without
``--exercises`` the test is skipped."""
import pytest
from grading import find_submissions, grade_one


def pytest_generate_tests(metafunc):
    if "submission" not in metafunc.fixturenames:
        return
    folder = metafunc.config.getoption("--exercises")
    cases = [pytest.param((learner, ex, path), id=f"{learner}-{ex}")
             for learner, found in (find_submissions(folder).items() if folder else [])
             for ex, path in sorted(found.items())]
    metafunc.parametrize("submission", cases or [pytest.param(None, marks=pytest.mark.skip(
        reason="grading only: pytest tests/test_grade_submissions.py --exercises DIR"))])


def test_submission(submission, request):
    learner, exercise, path = submission
    row = grade_one(learner, exercise, path, seed=request.config.getoption("--exercises-seed"))
    request.config.exercise_rows.append(row)
    assert row["passed"], f"{learner} {exercise}: {row['diagnosis']}"
