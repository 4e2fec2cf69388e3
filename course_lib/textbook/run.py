"""Starting the book's code (the reconstruction in :mod:`.book`): two real processes (spawn's API,
from the kit's forkserver where the OS has one: :mod:`course_lib._runtime.rank_start`), gloo on loopback.

:func:`run_book` is what a notebook cell calls. The chapter's run, as its output shows it, is the
default: 2 ranks, 10 epochs, 16 steps per rank per epoch (here 1,024 training reviews, 32 per rank
per step), the three-item checkpoint every 10 epochs. The ranks' lines appear in the cell as they are printed
(each rank writes ``DIR/logs/rank{R}.log``, the parent prints new lines), and a planned fault
is a real SIGKILL.
"""
from __future__ import annotations

import importlib
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from course_lib._runtime.portability import free_port
from course_lib._runtime.processes import join_ranks
from course_lib._runtime.rank_output import RankOutput, log_to
from course_lib._runtime.rank_start import run_then_exit, start_ranks
from course_lib.config import TrainConfig
from course_lib.data.prepare import prepare_imdb
from course_lib.ddp.launch import RankFailed
from course_lib.lab import i18n
from course_lib.watch.monitor import read_ledger, read_summary

if TYPE_CHECKING:  # pandas only for a notebook's tables: each rank this module starts imports it, and pandas costs 0.4 s
    import pandas as pd

DATA_LIMIT = 1280  # reviews taken from IMDB: 1,024 train (the chapter's 16 steps x 32 x 2 ranks), 256 held out
EMBED_DIM = TrainConfig.embed_dim  # the bag model's width: the kit's default (8 trains about 3x faster a step)


@dataclass(frozen=True)
class BookSettings:
    """Everything the book's ``train(rank, world_size, settings)`` reads (picklable: it
    travels to the spawned ranks)."""
    run_dir: str
    data_file: str
    epochs: int = 10
    save_interval: int = 10
    train_reviews: int = 1024
    batch_size: int = 32
    lr: float = 5e-3
    dropout: float = 0.1
    embed_dim: int = EMBED_DIM
    seed: int = 0
    resume: str | None = None
    kill_at_step: list = field(default_factory=list)  # the kit's fault plan (see course_lib.checkpoint.faults)
    kill_rank: list = field(default_factory=lambda: [1])
    kill_mode: list = field(default_factory=lambda: ["sigkill"])
    worker: str = "course_lib.textbook.book:train"  # the function each rank runs: "package.module:function"
    learner: str | None = None  # a module file of a learner's functions, for a kit worker that uses them


@dataclass
class BookRun:
    """What one call of :func:`run_book` did. Shown in a notebook as a small table."""
    run_dir: str
    attempt: int
    steps: int
    planned_steps: int
    interrupted: str | None
    checkpoints: dict          # file name -> size in bytes
    test_accuracy: float | None  # the chapter's "Test Accuracy" line, on the kit's held-out split
    seconds: float
    reviews: int = 0           # training reviews of one epoch, all ranks together
    world_size: int = 2
    batch_size: int = 32       # reviews per rank and step

    def table(self, lang: str | None = None) -> pd.DataFrame:
        from course_lib.lab.tables import facts

        files = ", ".join(f"{name} ({size / 1024:.0f} kB)" for name, size in self.checkpoints.items()) or "-"
        return facts({"run directory": self.run_dir, "attempt": self.attempt,
                      "steps done": f"{self.steps} / {self.planned_steps}",
                      "interrupted": self.interrupted or "no", "checkpoints on disk": files,
                      "held-out accuracy (the chapter's Test Accuracy line)": "-" if self.test_accuracy is None
                      else f"{self.test_accuracy:.2%}", "seconds": round(self.seconds, 1)}, lang)

    def _repr_html_(self) -> str:
        return self.table().to_html()

    def __repr__(self) -> str:
        return self.table().to_string()


class _BookTail(RankOutput):
    """The ranks' lines as they come; with ``show="epochs"`` the chapter's own excerpt, shortened:
    the first and last step of the run's first epoch and of the plan's last one, one line saying
    where the others are, and every line that is not a step line."""

    def __init__(self, log_dir: Path, world_size: int, show: str, steps_per_epoch: int, epochs: int):
        super().__init__(log_dir, world_size, quiet=show == "none")
        self.show, self.log_dir, self.first = show, log_dir, None
        self.keep = (f"Step [1/{steps_per_epoch}]", f"Step [{steps_per_epoch}/{steps_per_epoch}]")
        self.last = f"Epoch [{epochs}/{epochs}]"
        self.left_out, self.said = 0, False

    def _show(self, line: str) -> None:
        epoch = re.search(r"Epoch \[\d+/", line)
        if self.show == "all" or "Step [" not in line or not epoch:
            return super()._show(line)
        self.first = self.first or epoch.group(0)
        if not any(k in line for k in self.keep):
            return None
        if epoch.group(0) == self.first:
            return super()._show(line)
        if self.last in line:
            if self.left_out and not self.said:  # once, where the lines left out end
                super()._show(f"... (the epochs between: every line in {self.log_dir}/rank*.log)")
                self.said = True
            return super()._show(line)
        self.left_out += 1
        return None


def _spawned(rank: int, world_size: int, settings: BookSettings, port: int, threads: int | None = None) -> None:
    """The kit's entry point of a spawned rank: loopback address, the rank's log file; then
    :func:`script_rank`. (A function defined in a notebook cannot be spawned.)"""
    log_to(Path(settings.run_dir) / "logs", rank)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    script_rank(rank, world_size, settings, threads or max(1, (os.cpu_count() or 1) // world_size))


def script_rank(rank: int, world_size: int, settings: BookSettings, threads: int) -> None:
    """A rank of ``python -m course_lib.textbook`` (and, through :func:`_spawned`, of the notebooks):
    its share of the cores (CONTRIBUTING: "Two ranks of two threads on two cores"), then the function
    ``settings.worker`` names (the book's ``train`` by default), left as every rank leaves
    (:func:`run_then_exit`)."""
    torch.set_num_threads(threads)
    module, name = settings.worker.split(":")
    worker = getattr(importlib.import_module(module), name)
    run_then_exit(lambda: worker(rank, world_size, settings))


def _exited(run_dir: Path, rank: int, code: int, step: int, lang: str) -> RankFailed:
    """A rank that left with a non-zero code, not killed: its error is the end of its log (its
    stderr), or, if it failed before the log was open (re-importing ``__main__``), the terminal's."""
    log = run_dir / "logs" / f"rank{rank}.log"
    last = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-12:] if log.is_file() else []
    said = i18n.tr("rank {rank} exited with code {code} after step {step}", lang, rank=rank, code=code, step=step)
    where = (i18n.tr("; it was not killed: the end of {log}:", lang, log=log) + "\n" + "\n".join(last)) if last else \
        i18n.tr("; it was not killed, and failed before its log was open: its error is on the terminal (or the "
                "Jupyter server's log)", lang)
    return RankFailed(rank, said + where)


def _clear(run_dir: Path) -> None:
    """A fresh run: remove what an earlier run left in ``run_dir`` (only the files a book run writes)."""
    import shutil

    for name in ("metrics", "logs", "tb", "final"):
        shutil.rmtree(run_dir / name, ignore_errors=True)
    for name in ("attempts.jsonl", "faults.jsonl", *(p.name for p in run_dir.glob("model_epoch_*.pth"))):
        (run_dir / name).unlink(missing_ok=True)


def checkpoints(run_dir: str | Path) -> dict:
    """The book's checkpoint files in ``run_dir``, in epoch order (not string order:
    ``model_epoch_10`` sorts before ``model_epoch_2`` as a string). Used in notebook 05 (§1)."""
    files = sorted(Path(run_dir).glob("model_epoch_*.pth"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    return {p.name: p.stat().st_size for p in files}


def checkpoint_contents(path: str | Path, lang: str | None = None) -> pd.DataFrame:
    """What one of the book's ``model_epoch_N.pth`` files holds, key by key (loaded as data,
    ``weights_only=True``): the epoch, the model's tensors, the optimizer's state, the loss.
    Used in notebook 04 (§1)."""
    import pandas as pd

    ckpt = torch.load(path, weights_only=True)
    rows = {}
    for key, value in ckpt.items():
        if key == "model_state_dict":
            mb = sum(t.numel() * t.element_size() for t in value.values()) / 2**20
            rows[key] = i18n.tr("{n} tensors, {mb:.1f} MB", lang, n=len(value), mb=mb)
        elif key == "optimizer_state_dict":
            names = sorted({k for st in value["state"].values() for k in st})
            rows[key] = i18n.tr("{names} of {n} parameter tensors; lr {lr:g}", lang, names=", ".join(names),
                                n=len(value["state"]), lr=value["param_groups"][0]["lr"])
        else:
            rows[key] = round(value, 4) if isinstance(value, float) else value
    return pd.DataFrame({i18n.tr("holds", lang): list(rows.values())}, index=pd.Index(list(rows), name=i18n.tr("key", lang)))


def run_book(run_dir: str | Path, epochs: int = 10, save_interval: int = 10, kill_at_step: int | None = None,  # noqa: PLR0913 (a notebook's call: keyword knobs, each with a default)
             kill_during_save: int | None = None, resume: str | None = None, dropout: float = 0.1,
             world_size: int = 2, show: str = "epochs",
             threads_per_rank: int | None = None, embed_dim: int = EMBED_DIM) -> BookRun:
    """Run the chapter's code (:func:`course_lib.textbook.book.train`) on ``world_size`` spawned ranks.

    ``kill_at_step=K``: rank 1 is SIGKILLed as global step K begins (16 steps an epoch: K = 185 is
    step 9 of epoch 12). ``kill_during_save=N``: rank 0 is SIGKILLed half-way through writing
    ``model_epoch_N.pth``. ``resume``: a checkpoint (a name in ``run_dir`` or a path) for the book's
    ``resume_training``, continuing in ``run_dir``; without it ``run_dir`` starts afresh. ``show``:
    ``"epochs"`` (:class:`_BookTail`), ``"all"`` or ``"none"``; every line is in ``DIR/logs/rank{R}.log``.
    ``threads_per_rank``: default the cores shared out (1 makes a rank one "card"). ``embed_dim``: the
    bag model's width (8: a third of the time a step, the tests' size).

    Returns what happened (a table in a notebook). A rank that was killed is reported, not raised; a
    rank that raised (the book's resume from a half-written file), or exited non-zero by itself,
    raises :class:`RankFailed`. Used in notebook 03 (§2), notebook 04 (§1) and notebook 05 (§1).
    """
    if show not in ("epochs", "all", "none"):
        raise ValueError(f"show must be 'epochs', 'all' or 'none', got {show!r}")
    t0 = time.perf_counter()
    run_dir = Path(run_dir)
    if resume is None:
        _clear(run_dir)
    else:
        resume = str(resume if Path(resume).is_absolute() or Path(resume).exists() else run_dir / resume)
        if not Path(resume).exists():
            raise FileNotFoundError(f"no checkpoint {resume}; the run's checkpoints: {list(checkpoints(run_dir)) or 'none'}")
    data = prepare_imdb(limit=DATA_LIMIT, progress=False)
    reviews = min(BookSettings.train_reviews, len(data.train))
    steps_per_epoch = math.ceil(reviews / world_size / BookSettings.batch_size)
    kills = ([(kill_at_step, 1, "sigkill")] if kill_at_step else []) + \
        ([(kill_during_save * steps_per_epoch, 0, "during-save")] if kill_during_save else [])
    settings = BookSettings(run_dir=str(run_dir), data_file=str(data.path), epochs=epochs, save_interval=save_interval,
                            dropout=dropout, embed_dim=embed_dim, resume=resume,
                            kill_at_step=[k[0] for k in kills],
                            kill_rank=[k[1] for k in kills] or [1], kill_mode=[k[2] for k in kills] or ["sigkill"])
    interrupted = run_ranks(settings, world_size, show, steps_per_epoch, threads_per_rank=threads_per_rank)
    rows = read_ledger(run_dir, 0, last_attempt=False)
    summary = read_summary(run_dir)
    accuracy = summary["test_accuracy"] if interrupted is None and summary else None
    return BookRun(str(run_dir), max((r["attempt"] for r in rows), default=1), max((r["step"] for r in rows), default=0),
                   epochs * steps_per_epoch, interrupted, checkpoints(run_dir), accuracy, time.perf_counter() - t0,
                   reviews, world_size, BookSettings.batch_size)


def run_ranks(settings: BookSettings, world_size: int, show: str = "none", steps_per_epoch: int = 16,
              timeout: float | None = None, threads_per_rank: int | None = None) -> str | None:
    """Start ``world_size`` ranks of the worker (from the kit's forkserver where the OS has one:
    :mod:`course_lib._runtime.rank_start`), print their lines as they come, wait. Returns
    ``None``, or how a killed rank ended ("rank 1 killed by SIGKILL after step 184"); a rank that
    raised or exited non-zero by itself raises :class:`RankFailed`; ranks still running after ``timeout`` s are ended and
    :class:`TimeoutError` raised."""
    run_dir = Path(settings.run_dir)
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    tail = _BookTail(run_dir / "logs", world_size, show, steps_per_epoch, settings.epochs)
    ctx = start_ranks(_spawned, (world_size, settings, free_port(), threads_per_rank), world_size)
    try:
        end = join_ranks(ctx, tail.poll, timeout=timeout)
    finally:
        tail.close()
    if end is None:
        return None
    if end.error is not None:
        raise RankFailed(end.rank, end.error)
    done = max((r["step"] for r in read_ledger(run_dir, end.rank, last_attempt=False)), default=0)
    lang = i18n.resolve(None)
    if end.signal is None:  # the book's ranks never exit non-zero on purpose: this one failed
        raise _exited(run_dir, end.rank, end.exit_code, done, lang)
    return i18n.tr("rank {rank} killed by {signal} after step {step}", lang, rank=end.rank, signal=end.signal, step=done)
