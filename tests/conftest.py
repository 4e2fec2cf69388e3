"""Shared fixtures. The token cache lives in a per-session temp folder (COURSE_LIB_CACHE is
inherited by spawned ranks), so tests never touch ~/.cache and never reuse stale tokens."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _cache(tmp_path_factory):
    os.environ["COURSE_LIB_CACHE"] = str(tmp_path_factory.mktemp("course_lib_cache"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    yield


@pytest.fixture(scope="session")
def imdb_texts():
    """The real offline IMDB reviews (raw), read once per session."""
    from types import SimpleNamespace

    from course_lib.data.sources import raw_reviews

    texts, labels = raw_reviews("offline")
    return SimpleNamespace(texts=texts, labels=labels)


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory, _cache):
    """One finished, never-interrupted 2-rank run of ``helpers.small_cfg``, shared by every test
    that compares against it or needs a real run directory (copy it before changing it)."""
    from helpers import small_cfg

    from course_lib.ddp.launch import launch

    run = tmp_path_factory.mktemp("reference") / "run"
    launch(small_cfg(run), quiet=True)
    return run


# ---------------------------------------------------------------- grading learners' exercises
def pytest_addoption(parser):
    group = parser.getgroup("exercises", "grading learners' exercise submissions (docs/exercises.md)")
    group.addoption("--exercises", metavar="DIR", default=None,
                    help="grade every learner's submissions in DIR: one test per learner and exercise")
    group.addoption("--exercises-json", metavar="PATH", default="exercises-summary.json",
                    help="where the JSON summary of the grading goes (default: ./exercises-summary.json)")
    group.addoption("--exercises-seed", metavar="N", type=int, default=0,
                    help="the grader's seed: every learner meets the same kills (default 0)")


    parser.addoption("--audit-faults", metavar="N", type=int, default=20,
                     help="real faults for the audits that must come out exact (the correct zoo scripts, the kit's "
                          "trainer; default 20). .ci/run gives 4 to keep within its 12 minutes; "
                          "python bench/audit_zoo.py audits every one with 20")


@pytest.fixture
def exact_faults(request) -> int:
    return request.config.getoption("--audit-faults")


def pytest_configure(config):
    config.exercise_rows = []


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    rows = getattr(config, "exercise_rows", [])
    if not config.getoption("--exercises") or not rows:
        return
    from grading import write_summary

    terminalreporter.section("exercises")
    for r in rows:
        first = r["diagnosis"].splitlines()[0] if r["diagnosis"] else ""
        terminalreporter.line(f"{r['learner']:<16} {r['exercise']:<11} {'PASS' if r['passed'] else 'FAIL'}  {first}")
    path = write_summary(rows, config.getoption("--exercises-json"))
    terminalreporter.line(f"summary: {path}")


# ---------------------------------------------------------------- the longest tests first
# seconds each took in .ci/run's kit suite on two workers (--durations, 2026-12-08 02:20, a slow hour: `import torch`
# 1.9-2.4 s; a notebook's pair of editions, -m exhaustive only, alone, 2026-12-07): started first, they leave the
# short ones to fill the end of both workers' queues (--dist loadgroup hands out tests in this order, after the
# xdist groups), so no worker ends alone on a long one
LONGEST = {"teaches_its_lesson[05": 183, "test_browser.py::": 274, "in_one_folder_teaches_its_lesson[0": 115,
           "test_audit_kit.py::": 157, "once_teaches_its_lesson[04": 97, "once_teaches_its_lesson[03": 89,
           "test_elastic.py::": 58, "once_teaches_its_lesson[02": 24, "once_teaches_its_lesson[01": 17}


def pytest_collection_modifyitems(config, items):
    def weight(item) -> int:
        return max((s for key, s in LONGEST.items() if key in item.nodeid), default=0)

    items.sort(key=weight, reverse=True)  # stable: the rest keep their order
