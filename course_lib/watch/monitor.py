"""Watching a run: TensorBoard event files (rank 0) and the per-step ledger (every rank).

The ledger ``DIR/metrics/rank{R}.jsonl`` is the run's memory: one JSON line per optimizer
step with the loss, learning rate, gradient norm, a digest of the samples of that step and
the *attempt* that produced it. Work lost in a crash keeps its lines (attempt 1), the resumed
run writes the same steps again (attempt 2), and readers take the last attempt per step. That
is what lets ``compare`` prove that no sample was skipped or repeated.

A power cut loses what was never fsynced. So each rank fsyncs its ledger as every save begins,
before the commit (:meth:`Ledger.sync`: a line per step would cost an fsync per step), and
``attempts.jsonl`` as each row is appended: a committed checkpoint's steps are in the ledgers,
and every start that reached its process group is counted.
"""
from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

from course_lib._runtime.portability import fsync_dir

LAUNCHED_ENV = "COURSE_LIB_LAUNCHED"  # when the launcher of this attempt started (seconds since the epoch)


class Ledger:
    """Rank ``rank``'s ledger ``DIR/metrics/rank{R}.jsonl``, open for appending JSON lines, each flushed:
    a SIGKILL loses at most the line being written (a line an earlier crash cut is ended first). A
    new ledger's entry (and its folder's) is fsynced as it is created; its lines at :meth:`sync`."""

    def __init__(self, run_dir: str | Path, rank: int):
        path = Path(run_dir) / "metrics" / f"rank{rank}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        new = not path.exists()
        torn = not new and path.stat().st_size > 0 and _last_byte(path) != b"\n"
        self._f = open(path, "a", buffering=1)
        if new:  # a power cut must not undo the file, or the folder, once a commit counts on their lines
            fsync_dir(path.parent)
            fsync_dir(path.parent.parent)
        if torn:  # a line cut by a crash: end it, or this attempt's first line would be glued to it
            self._f.write("\n")

    def write(self, record: dict) -> None:
        self._f.write(json.dumps(record, sort_keys=True) + "\n")

    def sync(self) -> None:
        """Every line written so far on disk (fsynced): each rank calls it as a save begins, so a
        commit never holds a step that a power cut could take from the ledger."""
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        """Synced (:meth:`sync`: the run's last lines, or those before a survivor's save), then closed."""
        self.sync()
        self._f.close()


def _last_byte(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.seek(-1, 2)
        return f.read(1)


def read_jsonl(path: str | Path) -> list[dict]:
    """The JSON objects of a JSON-lines file, in order (``[]`` if it does not exist); a line cut by a
    crash, or still being written, is skipped."""
    path, rows = Path(path), []
    for line in path.read_text(encoding="utf-8", errors="replace").split("\n") if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a torn line; a blank one too
            continue
    return rows


def append_jsonl(path: str | Path, row: dict, sync: bool = False) -> None:
    """One JSON line appended to ``path`` (the format :func:`read_jsonl` reads); ``sync``: flushed
    and fsynced before it returns (a new file's folder too), for a record a signal or a power cut
    may follow at once."""
    new = sync and not Path(path).exists()
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
        if sync:
            f.flush()
            os.fsync(f.fileno())
    if new:
        fsync_dir(Path(path).parent)


def read_summary(run_dir: str | Path) -> dict | None:
    """``DIR/final/summary.json``, what a run writes when it finishes, or ``None`` if it has not."""
    path = Path(run_dir) / "final" / "summary.json"
    return json.loads(path.read_text()) if path.exists() else None


def read_ledger(run_dir: str | Path, rank: int = 0, last_attempt: bool = True) -> list[dict]:
    """Rank ``rank``'s ledger rows sorted by step, each step once as its latest attempt wrote it (what
    the final model saw); with ``last_attempt=False``, every row as written."""
    rows = read_jsonl(Path(run_dir) / "metrics" / f"rank{rank}.jsonl")
    return latest_attempt(rows) if last_attempt else rows


def latest_attempt(rows) -> list[dict]:
    """Ledger ``rows`` (of one rank or several) sorted by step, each step once: the row of its latest attempt."""
    by_step = {r["step"]: r for r in sorted(rows, key=lambda r: r["attempt"])}  # a stable sort: ties keep the later row
    return [by_step[s] for s in sorted(by_step)]


def next_attempt(run_dir: Path, rank: int, **about) -> int:
    """This start's attempt number (1 = the first), from ``DIR/attempts.jsonl``; a collective (a barrier)
    that every rank calls as it starts, after rank 0 appended the start's row, fsynced (when its
    launcher began, for the restart cost, its world size, and ``about``: e.g. an elastic group's generation)."""
    import torch.distributed as dist

    path = run_dir / "attempts.jsonl"
    if rank == 0:
        run_dir.mkdir(parents=True, exist_ok=True)
        launched = os.environ.get(LAUNCHED_ENV)  # set by launch(); absent under torchrun
        append_jsonl(path, {"started": time.time(), "pid": os.getpid(), "world_size": dist.get_world_size(),
                            "launched": float(launched) if launched else None, **about}, sync=True)
    dist.barrier()
    return len(read_attempts(run_dir))


def ledger_ranks(run_dir: str | Path) -> list[int]:
    """The ranks that have a ledger in ``DIR/metrics``, sorted."""
    return sorted(int(p.stem[4:]) for p in (Path(run_dir) / "metrics").glob("rank*.jsonl"))


class TensorBoardLogger:
    """Rank 0's TensorBoard writer of ``DIR/tb``; with ``enabled=False`` (the other ranks) every call
    is a no-op, so the loop needs no ``if rank == 0`` around each scalar."""

    def __init__(self, run_dir: str | Path, enabled: bool, hparams: dict | None = None):
        self.writer = None
        if enabled:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(Path(run_dir) / "tb"))
            if hparams:
                text = "\n".join(f"| {k} | {v} |" for k, v in sorted(hparams.items()))
                self.writer.add_text("config", "| key | value |\n|---|---|\n" + text, 0)

    def scalars(self, step: int, **values: float) -> None:
        if self.writer:
            for name, value in values.items():
                if value is not None:
                    self.writer.add_scalar(name, value, step)

    def event(self, tag: str, text: str, step: int) -> None:
        if self.writer:
            self.writer.add_text(tag, text, step)

    def hparams(self, hparams: dict, metrics: dict) -> None:
        if self.writer:
            clean = {k: v for k, v in hparams.items() if isinstance(v, (int, float, str, bool))}
            self.writer.add_hparams(clean, metrics, run_name=".")

    def close(self) -> None:
        if self.writer:
            self.writer.close()


def read_scalars(run_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of every scalar in ``DIR/tb`` (not ``DIR``), read with
    TensorBoard's own reader (what its UI shows); at a step two attempts wrote, the later one's."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    latest: dict[str, dict[int, float]] = defaultdict(dict)
    tb = Path(run_dir) / "tb"
    for folder in sorted({p.parent for p in tb.rglob("events.out.tfevents.*")}):
        acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
        acc.Reload()  # files in time order: a resumed attempt overwrites the lost one's steps
        for tag in acc.Tags()["scalars"]:
            for e in acc.Scalars(tag):
                latest[tag][e.step] = e.value
    return {tag: sorted(v.items()) for tag, v in latest.items()}


def read_attempts(run_dir: str | Path) -> list[dict]:
    """``DIR/attempts.jsonl``: one row per start that reached the process group, in order."""
    return read_jsonl(Path(run_dir) / "attempts.jsonl")
