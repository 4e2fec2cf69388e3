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
    from course_lib.data import raw_reviews

    from types import SimpleNamespace

    texts, labels = raw_reviews("offline")
    return SimpleNamespace(texts=texts, labels=labels)


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory, _cache):
    """One finished, never-interrupted 2-rank run of ``helpers.small_cfg``, shared by every test
    that compares against it or needs a real run directory (copy it before changing it)."""
    from course_lib.launch import launch
    from helpers import small_cfg

    run = tmp_path_factory.mktemp("reference") / "run"
    launch(small_cfg(run), quiet=True)
    return run
