"""TensorBoard beside a notebook, started the way the learner started Jupyter.

The README starts ``.venv/bin/jupyter lab`` without activating the venv, so ``tensorboard`` is
not on the kernel's ``PATH``, and the ``%tensorboard`` magic, which runs whatever ``tensorboard``
``PATH`` finds, printed "ERROR: Could not find `tensorboard`" (notebook 04, both editions). The
kit starts the ``tensorboard`` installed beside the kernel's own interpreter (by its absolute
path, through ``TENSORBOARD_BINARY``, which the magic reads too) and lets TensorBoard pick a free
port from 6006 up.

TensorBoard's panel in a notebook is a frame on the kernel's machine's ``localhost``: on a remote
JupyterHub the learner's browser cannot reach it. There, with ``jupyter-server-proxy`` installed,
the frame goes through the hub's proxy path; without it the same event files are drawn in the
notebook, redrawn every few seconds while a run writes them (:class:`LiveCurves`).
"""
from __future__ import annotations

import importlib.util
import os
import shlex
import sys
import threading
import time
from pathlib import Path

import ipywidgets as W
from IPython.display import display

from course_lib.lab import plots
from course_lib.lab.i18n import resolve, tr
from course_lib.lab.widgets import show_figure

TAGS = ("train/loss", "train/lr", "train/grad_norm", "val/accuracy")
EVERY = 5.0  # seconds between two looks at the event files


def tensorboard_binary() -> Path | None:
    """The ``tensorboard`` command installed beside this interpreter (a venv's ``bin/``, or
    ``Scripts\\`` on Windows), found without ``PATH``; ``None`` if there is none."""
    folder = Path(sys.executable).parent
    for name in ("tensorboard", "tensorboard.exe"):
        for candidate in (folder / name, folder / "Scripts" / name):
            if candidate.is_file():
                return candidate
    return None


def where() -> str:
    """How a browser reaches a server beside this kernel: ``"local"`` (``localhost`` is the
    learner's machine), ``"proxy"`` (a JupyterHub with ``jupyter-server-proxy``: the hub's
    ``/proxy/PORT/`` path) or ``"remote"`` (a JupyterHub without it: nothing on this machine's
    ports reaches the learner's browser). A hub sets ``JUPYTERHUB_SERVICE_PREFIX`` for its kernels."""
    if not os.environ.get("JUPYTERHUB_SERVICE_PREFIX"):
        return "local"
    return "proxy" if importlib.util.find_spec("jupyter_server_proxy") else "remote"


def show(logdir: str | Path, run: str | Path | None = None, lang: str | None = None):
    """Show TensorBoard on ``logdir`` in the notebook, started as :mod:`this module <course_lib.lab.board>`
    says (no ``PATH`` needed; on a JupyterHub through its proxy); where the learner's browser
    cannot reach it (a hub without ``jupyter-server-proxy``), a :class:`LiveCurves` panel of
    ``run`` (default: the newest run under ``logdir``) instead, with a line saying why. It shows
    what it shows itself (so a cell may call it under an ``if``) and returns that panel, else
    ``None``. Used in notebook 04 (§2)."""
    lang = resolve(lang)
    reach = where()
    if reach == "remote":
        print(tr("TensorBoard's page would be on this server's localhost, which your browser cannot reach "
                 "(JupyterHub without jupyter-server-proxy): the same event files, drawn here every few seconds "
                 "while the run trains", lang))
        panel = LiveCurves(logdir, run, lang=lang)
        display(panel)
        return panel
    from tensorboard import notebook

    binary = tensorboard_binary()
    if binary is not None:
        os.environ.setdefault("TENSORBOARD_BINARY", str(binary))  # the %tensorboard magic finds it too
    if reach == "proxy":
        prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"].rstrip("/")
        os.environ.setdefault("TENSORBOARD_PROXY_URL", f"{prefix}/proxy/%PORT%/")
    notebook.start(f"--logdir {shlex.quote(str(Path(logdir).resolve()))}")  # no --port: 6006 or the next free one
    return None


def newest_run(logdir: str | Path) -> Path | None:
    """The run folder under ``logdir`` (or ``logdir`` itself) whose TensorBoard event file was
    written last: the run that trains now."""
    files = list(Path(logdir).glob("**/tb/**/events.out.tfevents.*"))
    if not files:
        return None
    newest = max(files, key=lambda f: f.stat().st_mtime)
    return next(p for p in newest.parents if p.name == "tb").parent


class LiveCurves:
    """TensorBoard's main curves of a run, read from its event files
    (:func:`course_lib.watch.monitor.read_scalars`, TensorBoard's own reader) and redrawn every
    ``every`` seconds (:data:`EVERY`) while they change, from a background thread, so they move while another
    cell trains; it stops once nothing changed for ``quiet`` seconds after the run finished
    (``final/summary.json`` written since the panel began: a run left by an earlier Run All does
    not count), or after ``limit`` seconds. ``run``: the run to draw (default: the newest under
    ``logdir``). The fallback of :func:`show` where a browser cannot reach TensorBoard (what
    notebook 04's section 2 shows on such a hub)."""

    def __init__(self, logdir: str | Path, run: str | Path | None = None, tags=TAGS, every: float | None = None,
                 quiet: float = 15.0, limit: float = 3600.0, lang: str | None = None):
        self.logdir, self.run, self.tags, self.lang = Path(logdir), Path(run) if run else None, tags, resolve(lang)
        self.every, self.quiet, self.limit = every or EVERY, quiet, limit
        self.note, self.output = W.HTML(), W.Output()
        self.widget = W.VBox([self.note, self.output])
        self.drawn: tuple | None = None  # (run, newest event file's size and time) of the figure shown
        self.figure = None
        self.refresh()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _ipython_display_(self):
        display(self.widget)

    def _state(self) -> tuple | None:
        run = self.run or newest_run(self.logdir)
        if run is None:
            return None
        files = list((run / "tb").glob("**/events.out.tfevents.*"))
        return (str(run), sum(f.stat().st_size for f in files), max((f.stat().st_mtime for f in files), default=0))

    def refresh(self) -> bool:
        """Draw the curves again if the event files changed since the last drawing; True if it drew."""
        state = self._state()
        if state is None:
            self.note.value = tr("no event files under {path} yet: the curves appear here once a run writes them",
                                 self.lang, path=self.logdir)
            return False
        if state == self.drawn:
            return False
        self.figure = plots.scalar_panels(state[0], self.tags, lang=self.lang)
        show_figure(self.output, self.figure)
        self.note.value = tr("{run}, drawn at {time}", self.lang, run=Path(state[0]).name, time=time.strftime("%H:%M:%S"))
        self.drawn = state
        return True

    def stop(self) -> None:
        self._stop.set()

    def _follow(self) -> None:
        started = last_change = time.monotonic()
        since = time.time()
        while not self._stop.wait(self.every) and time.monotonic() - started < self.limit:
            try:
                if self.refresh():
                    last_change = time.monotonic()
            except Exception as err:  # a file half-written as it was read: try again at the next tick
                self.note.value = f"{type(err).__name__}: {err}"
                continue
            summary = Path(self.drawn[0]) / "final" / "summary.json" if self.drawn else None
            finished = summary is not None and summary.exists() and summary.stat().st_mtime > since
            if finished and time.monotonic() - last_change > self.quiet:
                return
