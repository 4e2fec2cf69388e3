"""Executed editions: every notebook run top to bottom, offline, and written out as HTML with
its outputs and figures, so a learner on a phone or a teacher preparing slides can read what
each cell produces without running anything. ``bench/notebook_times.py`` times the notebooks
through the same :func:`execute` (the per-section times the notebooks' headers quote).

``python -m course_lib edition --out editions`` runs both editions with the committed defaults
(the real thing: about half an hour on 2 cores); ``--small`` runs the tests' small parameters
(a few minutes). The edition holds no reference solution (a notebook only names the call that
reveals one); ``--teacher`` appends them (:func:`build_edition`'s ``appendix``).

Execution uses ``nbclient`` (what ``jupyter nbconvert --execute`` uses) and papermill's
convention: parameters are injected in a cell right after the cell tagged ``parameters``.
"""
from __future__ import annotations

import contextlib
import html
import os
import re
import time
from pathlib import Path

from course_lib.config import ConfigError
from course_lib.lab.i18n import LANGS, tr

# small parameters: the same real work, shrunk (the notebook tests use them)
SMALL = {
    "01_data_cleaning_dedup.ipynb": {"LIMIT": 2000, "PLANTED": 50},
    "02_tokenization.ipynb": {"N_REVIEWS": 600, "OWN_VOCAB": 1000, "SMALL_VOCAB": 1000},
    "03_ddp_launch.ipynb": {"BOOK_EPOCHS": 2, "TRAIN_LIMIT": 1200, "EPOCHS": 1, "SCALING_STEPS": 6, "EMBED_DIM": 8},
    # the drill: failures every 0.5 s leave no start time to reach a step, so its one run stops at its budget
    "04_monitoring_checkpoints.ipynb": {"BOOK_EPOCHS": 4, "SAVE_INTERVAL": 2, "TRAIN_LIMIT": 1200, "SAVE_EVERY": 5,
                                        "DRILL_STEPS": 40, "DRILL_MTBF": 0.5, "EMBED_DIM": 8, "DRILL_INTERVALS": [40],
                                        "DRILL_BUDGET": 6},
    "05_interruption_resume.ipynb": {"BOOK_EPOCHS": 3, "BOOK_SAVE_INTERVAL": 2, "BOOK_KILL_AT": 40, "TRAIN_LIMIT": 1200,
                                     "KILL_AT": 12, "SAVE_EVERY": 5, "CAPSTONE_QUICK": True, "MODES": ["weights-only"],
                                     "ELASTIC_EPOCHS": 12, "EMBED_DIM": 8},
}


def notebook_paths(langs=LANGS, only: list[str] | None = None, root: Path | None = None) -> list[tuple[str, Path]]:
    """``(lang, path)`` of every notebook of the given editions (``only``: names or "01"-style prefixes), from
    ``root``, else the repository's ``notebooks/`` (the kit is installed from its checkout)."""
    root = root or Path(__file__).resolve().parents[2] / "notebooks"
    if not root.is_dir():
        raise ConfigError(f"no notebooks folder at {root}: run this from a checkout of the kit (git clone ...)")
    bad = [lang for lang in langs if lang not in LANGS]
    if bad:
        raise ConfigError(f"unknown edition {bad[0]!r}; choose from {', '.join(LANGS)}")
    names = sorted(p.name for p in root.glob("*.ipynb"))
    if only:
        chosen = [n for n in names if any(n == o or n.startswith(o) for o in only)]
        missing = [o for o in only if not any(n == o or n.startswith(o) for n in names)]
        if missing:
            raise ConfigError(f"no notebook {missing[0]!r}; the notebooks are {', '.join(n[:2] for n in names)}")
        names = chosen
    return [(lang, (root if lang == "en" else root / lang) / n) for lang in langs for n in names]


def execute(path: Path, parameters: dict | None = None, cwd: Path | None = None, timeout: int = 1800):
    """Run the notebook at ``path`` top to bottom in a fresh kernel started in ``cwd`` (where
    its runs go and where the widgets read their language) and return it with outputs and
    per-cell timings. A failing cell raises ``nbclient.exceptions.CellExecutionError``; the
    notebook object then holds every output up to it. A TensorBoard server the notebook started
    (notebook 04) on a folder in ``cwd`` or the parameters' ``RUN_DIR`` is stopped at the end: the
    kernel is gone, and it would serve on for nobody."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    if parameters:
        index = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
        source = "# injected parameters\n" + "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(source, metadata={"tags": ["injected-parameters"]}))
    cwd = Path(cwd or path.parent)
    cwd.mkdir(parents=True, exist_ok=True)
    backend = os.environ.pop("MPLBACKEND", None)  # an Agg backend would hide the figures
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    try:
        client.execute()
    except Exception as err:
        err.notebook = nb  # what ran up to the failing cell, for the reader to see where it stopped
        raise
    finally:
        if backend is not None:
            os.environ["MPLBACKEND"] = backend
        stop_servers([cwd, *([Path(parameters["RUN_DIR"])] if parameters and "RUN_DIR" in parameters else [])])
    return nb


def stop_servers(folders: list[Path]) -> list[int]:
    """SIGTERM every TensorBoard server of this machine whose log folder is in one of ``folders``
    (its record in TensorBoard's own list of running servers); returns their process ids."""
    import signal

    from tensorboard import manager

    roots = [Path(f).resolve() for f in folders]
    stopped = []
    for info in manager.get_all():
        logdir = Path(info.logdir).resolve() if info.logdir else None
        if logdir and any(logdir == r or r in logdir.parents for r in roots):
            with contextlib.suppress(ProcessLookupError):
                os.kill(info.pid, signal.SIGTERM)
                stopped.append(info.pid)
    return stopped


WIDGET = "application/vnd.jupyter.widget-view+json"
PROGRESS = re.compile(r"\d+%\|")
# what a page says in place of a widget, and of a live server's frame (their Chinese: lab/zh/views.py)
STATIC_NOTE = "(an interactive widget: open the notebook in JupyterLab to use it)"
LIVE_SERVER = re.compile(r"<iframe|localhost:\d+|window\.location", re.I)  # a frame of a server running beside the kernel
LIVE_NOTE = "(TensorBoard ran live here, beside the kernel; the panels below are the same curves, read back from the " \
            "run's event files)"


def make_static(nb, lang: str) -> None:
    """A file keeps a widget's first frame only: a progress bar would read "0%" forever and a
    lab would show its Python repr. Drop the bars; say what the other widgets are. A live
    server's frame (TensorBoard's) would show the reader's own localhost: say what was there."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET in data:
                if PROGRESS.search(data.get("text/plain", "")):
                    continue
                out["data"] = {"text/plain": tr(STATIC_NOTE, lang)}
            elif LIVE_SERVER.search(str(data.get("text/html", "")) + str(data.get("application/javascript", ""))):
                out["data"] = {"text/plain": tr(LIVE_NOTE, lang)}
            kept.append(out)
        cell["outputs"] = kept


def build_edition(out: str | Path, langs=LANGS, small: bool = False, only: list[str] | None = None,
                  progress=print, root: Path | None = None, appendix=None) -> Path:
    """Execute every chosen notebook (committed defaults, or ``small`` parameters) in
    ``out/work/<lang>/`` and write ``out/<lang>/<name>.html`` and ``out/index.html``.
    ``root``: another folder of notebooks laid out as ``notebooks/`` is (the tests' own).
    ``appendix(nb, lang, name)``: cells it appends to each page (not to the executed copy the
    timings read), the first line of its docstring on the index page; ``--teacher`` passes
    :func:`course_lib.exercises.teacher.solutions_section`, which this module cannot import."""
    import nbformat
    from nbclient.exceptions import CellExecutionError
    from nbconvert import HTMLExporter

    out = Path(out)
    rows, failed = [], []
    for lang, path in notebook_paths(langs, only, root):
        t0 = time.perf_counter()
        progress(f"running {lang}/{path.name} ...")
        try:
            nb = execute(path, SMALL.get(path.name) if small else None, cwd=out / "work" / lang)
        except CellExecutionError as err:  # keep what ran, say where it stopped, go on with the next one
            nb = err.notebook
            failed.append(f"{lang}/{path.name}: {str(err).strip().splitlines()[-1][:200]}")
        nbformat.write(nb, str(out / "work" / lang / path.name))
        make_static(nb, lang)
        if appendix is not None:
            appendix(nb, lang, path.name)
        target = out / lang / path.with_suffix(".html").name
        target.parent.mkdir(parents=True, exist_ok=True)
        page, _ = HTMLExporter(template_name="lab").from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
        target.write_text(page, encoding="utf-8")
        seconds = time.perf_counter() - t0
        rows.append((lang, target.relative_to(out).as_posix(), path.stem, seconds))
        progress(f"  wrote {target} ({seconds:.0f} s)")
    if failed:
        raise RuntimeError("these notebooks stopped at an error (their HTML shows where): " + "; ".join(failed))
    items = "\n".join(f'<li>[{lang}] <a href="{html.escape(href)}">{html.escape(name)}</a> ({s:.0f} s to run)</li>'
                      for lang, href, name, s in rows)
    kind = "small parameters" if small else "the committed defaults"
    said = (getattr(appendix, "__doc__", None) or "").strip().splitlines()
    note = f"<p>{html.escape(said[0])}</p>" if said else ""
    index = out / "index.html"
    index.write_text(f"<!doctype html><meta charset='utf-8'><title>Keeping long training runs alive</title>"
                     f"<h1>Keeping long training runs alive: executed edition</h1>"
                     f"<p>Every notebook run top to bottom offline with {kind}, {time.strftime('%Y-%m-%d')}.</p>{note}"
                     f"<ul>\n{items}\n</ul>\n", encoding="utf-8")
    return index
