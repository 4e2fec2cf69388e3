"""What the ranks of a run say, and how the parent shows it in a notebook cell or a terminal.

A rank prints its lines (the chapter's ``Rank 0, Epoch [..], Step [..], Loss: ..``) and, from
rank 0, progress markers; its stdout and stderr go to ``DIR/logs/rank{R}.log`` (which survives
a crash). The parent reads the logs as they grow, prints complete new lines, and turns the
markers into one ``tqdm`` bar. Both sides of that small protocol live here.

The logs are written in English. Where a person reads them in another language (the Chinese
edition's notebooks), the parent shows each line through the view set by :func:`set_line_view`
(the notebooks' translations: ``course_lib.lab.i18n.tr_line``); the core itself knows no language.
The core's other lines for a person (a skipped checkpoint, ``verify``'s and ``advise``'s
reports) go through the same view: :func:`say`.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

_PROGRESS = "@@progress "
_view: Callable[[str], str] = str  # how the parent shows a rank's line (identity: as written)


def set_line_view(view: Callable[[str], str] | None) -> None:
    """Show every rank's line as ``view(line)`` from now on in this process (``None``: as written)."""
    global _view
    _view = view or str


def shown(text: str) -> str:
    """``text`` as a person reads it: through the view (as written unless a notebook set one)."""
    return _view(text)


def say(line: str) -> None:
    """Print a line for a person, through the view."""
    print(_view(line))


def log_to(log_dir: str | Path, rank: int) -> None:
    """This rank's stdout and stderr into ``log_dir/rank{R}.log`` (the rank's side of the protocol),
    at the file-descriptor level: tracebacks and C++ warnings land in the log too."""
    log = open(Path(log_dir) / f"rank{rank}.log", "a", buffering=1)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log


class Reporter:
    """How a rank talks to a person: lines always; progress only from rank 0 (the parent
    turns progress lines into one tqdm bar; under torchrun they are not printed)."""

    def __init__(self, rank: int, progress: bool):
        self._progress = progress and rank == 0

    def line(self, text: str) -> None:
        print(text, flush=True)

    def progress(self, step: int, total: int) -> None:
        if self._progress:
            print(f"{_PROGRESS}{step} {total}", flush=True)


class RankOutput:
    """Prints complete new lines of each rank's log; turns progress lines into a bar."""

    def __init__(self, log_dir: Path, world_size: int, quiet: bool):
        self.files = [open(log_dir / f"rank{r}.log", "a+") for r in range(world_size)]
        for f in self.files:
            f.seek(0, os.SEEK_END)
        self.partial = [""] * world_size
        self.quiet, self.bar = quiet, None

    def poll(self) -> None:
        for r, f in enumerate(self.files):
            chunk = f.read()
            if not chunk:
                continue
            lines = (self.partial[r] + chunk).split("\n")
            self.partial[r] = lines.pop()
            for line in lines:
                self._show(line)

    def _show(self, line: str) -> None:
        if line.startswith(_PROGRESS):
            step, total = map(int, line[len(_PROGRESS):].split())
            if self.bar is None and not self.quiet:
                self.bar = tqdm(total=total, desc=_view("training steps"), initial=step - 1)
            if self.bar is not None:
                self.bar.update(step - self.bar.n)
        elif not self.quiet and self.bar is not None:
            self.bar.write(_view(line))
        elif not self.quiet:
            say(line)

    def close(self) -> None:
        self.poll()
        for p in self.partial:
            if p and not p.startswith(_PROGRESS) and not self.quiet:
                say(p)
        if self.bar is not None:
            self.bar.close()
        for f in self.files:
            f.close()
