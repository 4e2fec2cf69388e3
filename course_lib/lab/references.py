"""Uninterrupted runs, trained once per settings and reused.

Every lesson judges an interrupted run against the same settings never interrupted. That run is
deterministic (the kit's guarantee: the same settings and code give the same bits), so training it
again buys nothing but waiting (a notebook's second edition, a teacher's second pass, a test after
a notebook). A finished reference is kept in ``$COURSE_LIB_CACHE/references`` under its :func:`key`
and copied whole into the run directory the lesson asked for, a run like any other (:func:`reuse`).

Only yardsticks go through here, never the experiment a cell shows: an interrupted run, a drill
or a measurement always runs. Change the code or any setting and the key changes: nothing stale
is ever reused. Delete the folder to start afresh.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import shutil
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from course_lib.data.prepare import cache_root

BUDGET = 2 * 2**30  # bytes of references kept (a notebook 05 reference with its checkpoints: up to 0.2 GB);
                    # beyond it the least recently used go first
FINISHED = Path("final") / "summary.json"  # what both the kit's runs and the book's write last


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of every source file of the kit: a change anywhere may change a run's bits."""
    h = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent  # course_lib/
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def key(settings: dict) -> str:
    """The cache key of a run of ``settings`` (JSON-able, without its run directory) on this
    machine and this code: intra-op threads default to the cores, and sums may differ with them."""
    whole = {"settings": settings, "torch": torch.__version__, "cores": os.cpu_count(),
             "machine": platform.machine(), "code": code_digest()}
    return hashlib.sha256(json.dumps(whole, sort_keys=True, default=str).encode()).hexdigest()[:24]


def reuse(run_dir: str | Path, settings: dict, train: Callable[[], object], root: str | Path | None = None) -> bool:
    """Make ``run_dir`` the finished run of ``settings``: copied from the cache if it holds one
    (returns True), else trained by ``train()`` (which writes ``run_dir``) and then cached."""
    run_dir = Path(run_dir)
    store = Path(root or cache_root()) / "references"
    entry = store / key(settings)
    if (entry / FINISHED).is_file():
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.copytree(entry, run_dir)
        os.utime(entry)  # recently used: kept longest
        return True
    shutil.rmtree(run_dir, ignore_errors=True)
    train()
    if (run_dir / FINISHED).is_file():
        try:
            _store(run_dir, entry)
        except OSError as err:  # a full disk or a read-only cache costs the next lesson time, not this one its run
            warnings.warn(f"could not keep the reference run in {store} ({err}); it will train again next time",
                          stacklevel=2)
    return False


def _store(run_dir: Path, entry: Path) -> None:
    """Copy a finished run into the cache whole or not at all (a crash leaves only a temp
    folder, ignored), then drop the least recently used beyond ``BUDGET`` (the newest stays)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.parent / f".tmp-{uuid.uuid4().hex}"
    shutil.copytree(run_dir, tmp, ignore=shutil.ignore_patterns(".lock"))
    try:
        tmp.rename(entry)
    except OSError:  # another process cached the same run first: the same bits
        shutil.rmtree(tmp, ignore_errors=True)
    entries = sorted((p for p in entry.parent.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)
    sizes = {p: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) for p in entries}
    total = sum(sizes.values())
    for old in entries[:-1]:
        if total <= BUDGET:
            break
        shutil.rmtree(old, ignore_errors=True)
        total -= sizes[old]
    for stale in entry.parent.glob(".tmp-*"):  # left by a crash over an hour ago
        if time.time() - stale.stat().st_mtime > 3600:
            shutil.rmtree(stale, ignore_errors=True)
