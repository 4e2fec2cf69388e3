"""A power cut, POSIX's worst case: data never fsynced is lost, and a create or rename whose
folder was not fsynced afterwards may be undone (#66). The checkpoint's commit fsyncs every file
and folder it counts on; the ledgers are fsynced before each commit and the attempts log as each
row is appended, so a run resumed after a power cut keeps books that agree with what happened;
and ``compare`` tells a ledger that lost lines from a run that differs."""
import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest
import torch
from helpers import small_cfg

from course_lib.checkpoint import store as ckpt
from course_lib.checkpoint.resume import rng_state
from course_lib.ddp.launch import Reduction, RunInterrupted, launch, train_with_ddp
from course_lib.lab.tables import format_report
from course_lib.watch.compare import compare_runs
from course_lib.watch.monitor import Ledger, append_jsonl, read_summary


@pytest.fixture
def events(monkeypatch):
    """Every fsync (of the path its descriptor names, with the file's size then), rename and
    replace this process makes, in order."""
    seen: list[tuple] = []
    fsync, rename, replace = os.fsync, os.rename, os.replace

    def synced(fd):
        fsync(fd)
        seen.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_size))

    monkeypatch.setattr(os, "fsync", synced)
    monkeypatch.setattr(os, "rename", lambda a, b: (seen.append(("rename", str(a), str(b))), rename(a, b))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append(("replace", str(a), str(b))), replace(a, b))[1])
    return seen


def _fsynced(events, path) -> list[int]:
    """The positions in ``events`` at which ``path`` was fsynced."""
    return [i for i, e in enumerate(events) if e[0] == "fsync" and e[1] == str(path)]


def test_a_commit_fsyncs_every_file_and_folder_before_and_after_its_renames(tmp_path, events):
    run, step = tmp_path / "run", 10
    tmp = ckpt.tmp_dir(run, step)
    for name in ckpt.required_parts(2):  # a 2-rank checkpoint: the shared state and two RNG files
        ckpt.write_part(tmp, name, rng_state() if name.startswith("rng") else {"w": torch.ones(8), "step": step})
    final = ckpt.commit(run, step, {"world_size": 2})
    published = next(i for i, e in enumerate(events) if e[0] == "rename" and e[2] == str(final))
    latest = next(i for i, e in enumerate(events) if e[0] == "replace" and e[2].endswith("LATEST"))
    for f in sorted(final.iterdir()):  # every file, the manifest last, on disk before the rename publishes it
        assert any(i < published for i in _fsynced(events, tmp / f.name)), f.name
    manifest = _fsynced(events, tmp / "manifest.json")[-1]
    assert any(manifest < i < published for i in _fsynced(events, tmp)), "the folder's entries before its rename"
    assert any(i < latest for i in _fsynced(events, ckpt.checkpoint_root(run) / f"LATEST.tmp-{os.getpid()}"))
    for folder in (ckpt.checkpoint_root(run), run):  # the renames, and checkpoints/ itself (new at the first save)
        assert any(i > max(published, latest) for i in _fsynced(events, folder)), folder


def test_a_summary_is_replaced_whole_and_its_folder_fsynced(tmp_path, events):
    summary = tmp_path / "final" / "summary.json"
    ckpt.write_atomic(summary, b'{"resumes": 1}')
    replaced = next(i for i, e in enumerate(events) if e[0] == "replace" and e[2] == str(summary))
    assert _fsynced(events, events[replaced][1])[0] < replaced
    assert any(i > replaced for i in _fsynced(events, tmp_path / "final"))
    assert any(i > replaced for i in _fsynced(events, tmp_path)), "final/ is new: its entry too"


def test_the_ledger_and_the_attempts_log_are_fsynced_whole(tmp_path, events):
    ledger = Ledger(tmp_path, 0)
    assert _fsynced(events, tmp_path / "metrics") and _fsynced(events, tmp_path), "a new ledger's entries"
    for step in (1, 2, 3):
        ledger.write({"step": step, "attempt": 1})
    ledger.sync()
    path = tmp_path / "metrics" / "rank0.jsonl"
    assert events[_fsynced(events, path)[-1]][2] == path.stat().st_size  # every line written so far
    append_jsonl(tmp_path / "attempts.jsonl", {"started": 1.0}, sync=True)
    size = (tmp_path / "attempts.jsonl").stat().st_size
    assert events[_fsynced(events, tmp_path / "attempts.jsonl")[-1]][2] == size
    assert _fsynced(events, tmp_path)[-1] > _fsynced(events, tmp_path / "attempts.jsonl")[-1], "the new file's entry"


def fsyncs_recorded(cfg, rank, world_size, device, report, data_file):
    """A rank of the core's DDP run that writes, beside the run, each regular file it fsyncs with
    the file's size and the time then (``fsyncs-rank{R}.jsonl``): what of it a power cut at any
    later instant must leave, at the least."""
    journal = open(Path(cfg.run_dir).parent / f"fsyncs-rank{rank}.jsonl", "a", buffering=1)
    fsync = os.fsync

    def recorded(fd):
        fsync(fd)
        if stat.S_ISREG(os.fstat(fd).st_mode):
            journal.write(json.dumps([os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_size, time.time()]) + "\n")
    os.fsync = recorded
    try:
        return train_with_ddp(cfg, rank, world_size, device, report, data_file)
    finally:
        os.fsync = fsync


def power_cut(run: Path, journals: list[Path]) -> dict[str, int]:
    """What a power cut at the instant of the run's kill leaves of its books (attempts log, ledgers,
    kills): each file cut back to its size at its last fsync before the kill (the killer fsyncs
    ``faults.jsonl`` last; the other ranks, which went on a moment, get no more), or gone if it was
    not fsynced by then. Returns the sizes kept."""
    synced = [json.loads(line) for journal in journals for line in journal.read_text().splitlines()]
    cut = max(t for path, _, t in synced if path == str(run / "faults.jsonl"))
    kept: dict[str, int] = {}
    for path, size, t in synced:
        if t <= cut:
            kept[path] = max(kept.get(path, 0), size)
    for f in [run / "attempts.jsonl", run / "faults.jsonl", *(run / "metrics").glob("rank*.jsonl")]:
        if str(f) in kept:
            os.truncate(f, kept[str(f)])
        else:
            f.unlink()
    return kept


def test_after_a_power_cut_the_books_agree_with_what_happened(reference_run, tmp_path):
    """#66: a 2-rank run is SIGKILLed at step 13 and the machine loses power with it: each book
    keeps only what was fsynced. Resumed from step 10, the summary counts one resume, and
    ``compare`` finds every step in the ledgers: bit-identical, nothing unread. Without the fsyncs
    the summary read ``"resumes": 0`` beside ``"resumed_from": 10``, and the ledgers lost steps 1-10."""
    run = tmp_path / "run"
    with pytest.raises(RunInterrupted) as err:
        launch(small_cfg(run, kill_at_step=13, kill_rank=1), quiet=True, reduction=Reduction("ddp", fsyncs_recorded))
    assert err.value.checkpoint == "step-00000010"
    power_cut(run, sorted(tmp_path.glob("fsyncs-rank*.jsonl")))
    summary = launch(small_cfg(run, resume="auto"), quiet=True)
    assert summary["resumed_from"] == 10 and summary["resumes"] == 1 == read_summary(run)["resumes"]
    result = compare_runs(reference_run, run)
    assert result["identical"] and result["not_read"] == [], result


# ---------------------------------------------------------------- compare, when a ledger lost lines
def _ledgers_without(run: Path, lost) -> None:
    """Every ledger of ``run`` without the rows of the steps ``lost(step)`` says, as a crash
    before their fsync would have left them."""
    for path in (run / "metrics").glob("rank*.jsonl"):
        rows = [line for line in path.read_text().splitlines() if not lost(json.loads(line)["step"])]
        path.write_text("".join(f"{line}\n" for line in rows))


@pytest.fixture
def copy(reference_run, tmp_path):
    shutil.copytree(reference_run, tmp_path / "run")
    return tmp_path / "run"


@pytest.mark.parametrize("lost,gap", [(lambda s: s > 20, [21, 30]), (lambda s: s <= 20, [1, 20])])
def test_a_ledger_that_lost_lines_is_not_a_difference_and_is_said(reference_run, copy, lost, gap):
    """The tail lost (a power cut after step 20), or the first attempt's lines (the issue's run:
    "first divergent step: 1, samples skipped: 320" for two bit-identical runs)."""
    _ledgers_without(copy, lost)
    result = compare_runs(reference_run, copy)
    assert result["identical"] and result["first_divergent_step"] is None, result
    assert result["skipped_samples"] == result["repeated_samples"] == 0 and result["steps_b"] == 30
    assert result["not_read"] == [{"run": str(copy), "rank": 0, "first": gap[0], "last": gap[1]}]
    assert f"not read: steps {gap[0]}-{gap[1]} of {copy} are in no ledger" in format_report(result, "en")
    assert "未能读到" in format_report(result, "zh")


def test_a_run_that_differs_still_differs_when_a_ledger_lost_lines(reference_run, copy):
    _ledgers_without(copy, lambda s: s > 20)
    summary = json.loads((copy / "final" / "summary.json").read_text())
    (copy / "final" / "summary.json").write_text(json.dumps({**summary, "parameter_sha256": "0" * 64}))
    result = compare_runs(reference_run, copy)
    assert not result["identical"] and not result["final_params_identical"] and result["first_divergent_step"] is None
    path = copy / "metrics" / "rank0.jsonl"  # and a loss that differs at a step both ledgers hold
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[4]["global_loss"] += 1e-7
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (copy / "metrics" / "rank1.jsonl").unlink()
    assert compare_runs(reference_run, copy)["first_divergent_step"] == rows[4]["step"]


def test_a_run_that_took_fewer_steps_differs_after_them(reference_run, copy):
    _ledgers_without(copy, lambda s: s > 25)
    summary = json.loads((copy / "final" / "summary.json").read_text())
    (copy / "final" / "summary.json").write_text(json.dumps({**summary, "steps": 25}))
    result = compare_runs(reference_run, copy)
    assert not result["identical"] and result["first_divergent_step"] == 26 and result["not_read"] == []
