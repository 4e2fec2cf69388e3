"""How long each notebook takes, read and run, with its committed defaults (both editions).

Each notebook is executed top to bottom in a fresh kernel (``course_lib.lab.edition.execute``, the
same as the HTML edition), cut at its ``##`` headings, and each part gets its measured run
time and an estimated reading time (:func:`read_seconds`: prose at 180 English
words or 300 Chinese characters a minute, 3 s a line of code or of printed text, 20 s a table or
figure). Writes
``bench/results/notebook_times.json``; ``python tools/chapter_map.py`` puts the numbers into
the notebooks' headers and the READMEs' tables.

Cold, as a class meets them: each edition starts from an empty kit cache (a fresh
``COURSE_LIB_CACHE``: the reviews are prepared and tokenized again where a notebook first needs
them) and runs its notebooks in order; ``--warm`` keeps the machine's cache.

``--busy`` runs one busy-loop process beside the notebooks for the whole measurement, as on a
class server where someone else computes too (two cores, one of them taken): the times the
notebooks state are measured so (issue 63). ``--twice`` runs each notebook a second time in the
same folder, as Restart & Run All before a class does, records that run's time beside the first,
and checks that both runs show the notebook's lesson, the same one (``tests/notebook_lessons.py``,
the notebook tests' own checks, here on the committed defaults).

    python bench/notebook_times.py [--lang en zh] [--notebooks 01 03] [--warm] [--busy] [--twice]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient.exceptions import CellExecutionError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, write  # noqa: E402

from course_lib.lab import edition  # noqa: E402


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _seconds(cell) -> float:
    """A cell's run time, from the timestamps nbclient records in its metadata."""
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    return (_when(end) - _when(start)).total_seconds() if start and end else 0.0


SECTION = re.compile(r"^##\s+(.*)$", re.M)
FOLDED = re.compile(r"<details>.*?</details>", re.S)
PROGRESS = re.compile(r"\d+%\|")  # tqdm's bar, as a widget's text
OPTIONAL = ("Optional deep-dive", "选读")


def printed_lines(cell) -> int:
    """Lines a code cell printed (its stdout: printed source, a run's log lines), which the learner
    reads like code; progress bars (stderr) and pictures are not lines."""
    text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")
    return len([line for line in text.splitlines() if line.strip()])


def sections(nb) -> list[dict]:
    """The notebook cut at its ``##`` headings: each part's title, whether it is optional, its
    run time (seconds, from the executed cells) and what there is to read (prose words or
    Chinese characters, code lines and printed lines, pictures and tables shown)."""
    parts = [{"title": "(opening)", "optional": False, "run_seconds": 0.0, "words": 0, "cjk": 0, "code_lines": 0,
              "printed_lines": 0, "outputs": 0}]
    for cell in nb.cells:
        text = "".join(cell.source) if isinstance(cell.source, list) else cell.source
        if cell.cell_type == "markdown":
            text = FOLDED.sub("", text)  # read only by whoever opens it, as an optional section
            m = SECTION.search(text)
            if m:
                title = m.group(1).strip()
                parts.append({"title": title, "optional": title.startswith(OPTIONAL), "run_seconds": 0.0,
                              "words": 0, "cjk": 0, "code_lines": 0, "printed_lines": 0, "outputs": 0})
            cjk = sum("\u4e00" <= ch <= "\u9fff" for ch in text)
            parts[-1]["cjk"] += cjk
            parts[-1]["words"] += len(re.sub(r"[\u4e00-\u9fff]", " ", text).split())
        else:
            parts[-1]["run_seconds"] += _seconds(cell)
            parts[-1]["code_lines"] += len([line for line in text.splitlines() if line.strip()])
            parts[-1]["printed_lines"] += printed_lines(cell)
            parts[-1]["outputs"] += sum(o.get("output_type") in ("display_data", "execute_result")
                                        and not PROGRESS.search(o.get("data", {}).get("text/plain", ""))
                                        for o in cell.get("outputs", []))  # a progress bar is no table or figure
    return parts


# reading pace used for the headers' times: prose, code, and a look at each table or figure
WORDS_PER_MINUTE, CJK_PER_MINUTE, SECONDS_PER_CODE_LINE, SECONDS_PER_OUTPUT = 180, 300, 3, 20


def read_seconds(part: dict) -> float:
    """Estimated reading time of a part: prose at 180 English words or 300 Chinese characters a
    minute (folded text, a <details> block, not counted: it is read by whoever opens it), 3 s per
    line of code or of printed text, 20 s to look at each table or figure it shows (a progress bar is neither)."""
    return (60 * part["words"] / WORDS_PER_MINUTE + 60 * part["cjk"] / CJK_PER_MINUTE
            + SECONDS_PER_CODE_LINE * (part["code_lines"] + part["printed_lines"])
            + SECONDS_PER_OUTPUT * part["outputs"])


def with_lesson_recorder(path: Path, folder: Path, run: int) -> tuple[Path, Path]:
    """A copy of the notebook at ``path`` in ``folder`` that writes what its lesson rests on after its
    last cell (the notebook tests' recorder, ``tests/notebook_lessons.py``), and that file's path."""
    from notebook_lessons import RECORDER, VALUES

    nb = nbformat.read(str(path), as_version=4)
    recorded = folder / f"lesson-{run}.json"
    nb.cells.append(nbformat.v4.new_code_cell(RECORDER.format(values=VALUES[path.name[:2]], path=str(recorded))))
    copy = folder / "notebook" / path.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(copy))
    return copy, recorded


def run_once(lang: str, path: Path, cwd: Path, run: int, lessons: bool) -> dict:
    """One Run All of ``path`` in ``cwd``: its parts' times, its wall time, and (``lessons``) whether it
    showed its lesson (what it showed, or why not). A notebook that stops at an error is reported."""
    source, recorded = with_lesson_recorder(path, cwd.parent / f"{cwd.name}-recorder", run) if lessons else (path, None)
    t0 = time.perf_counter()
    try:
        nb = edition.execute(source, cwd=cwd)
    except CellExecutionError as err:  # the others still get timed; this one is reported, not timed
        nbformat.write(err.notebook, str(cwd / f"{path.stem}-run{run}.ipynb"))
        return {"failed": f"{lang}/{path.name} run {run}: {str(err).strip().splitlines()[-1][:200]}"}
    wall = round(time.perf_counter() - t0, 1)
    if lessons:
        nb.cells = nb.cells[:-1]  # the recorder is not the notebook's: neither read nor timed
    nbformat.write(nb, str(cwd / f"{path.stem}-run{run}.ipynb"))  # the executed copy, to read what each cell printed
    parts = [{**p, "read_seconds": round(read_seconds(p), 1), "run_seconds": round(p["run_seconds"], 1)}
             for p in sections(nb)]
    out = {"parts": parts, "wall_seconds": wall}
    if lessons:
        from notebook_lessons import check_lesson

        try:
            out["lesson"] = check_lesson(path.name, json.loads(recorded.read_text(encoding="utf-8")), nb, lang)
        except Exception:  # noqa: BLE001 - what it showed instead is the finding
            out["lesson_failed"] = traceback.format_exc(limit=1)[-1500:]
    return out


def busy_loop() -> subprocess.Popen:
    """Another program computing on one of the cores: a Python busy loop in a session of its own."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)


def main() -> None:  # noqa: PLR0915 - one measurement, step by step
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lang", nargs="+", default=list(edition.LANGS))
    ap.add_argument("--notebooks", nargs="+")
    ap.add_argument("--warm", action="store_true", help="keep the machine's kit cache (default: an empty one per edition)")
    ap.add_argument("--busy", action="store_true", help="one busy-loop process beside the notebooks, the whole time")
    ap.add_argument("--twice", action="store_true", help="run each notebook twice in its folder; check both lessons")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the lessons' checks
    recorded = RESULTS / "notebook_times.json"
    old = json.loads(recorded.read_text()).get("notebooks", {}) if recorded.exists() else {}
    result = {lang: dict(old.get(lang, {})) for lang in edition.LANGS}
    work, failed = RESULTS / "tmp" / "notebooks", []
    caches = {}
    busy = busy_loop() if a.busy else None
    t_all = time.perf_counter()
    try:
        for lang, path in edition.notebook_paths(a.lang, a.notebooks):
            if not a.warm and lang not in caches:  # the kernels inherit it
                caches[lang] = os.environ["COURSE_LIB_CACHE"] = tempfile.mkdtemp(prefix=f"course-lib-cache-{lang}-")
            cwd = work / lang / path.stem  # a folder per notebook (its runs); "zh" in the path keeps the widgets Chinese
            shutil.rmtree(cwd, ignore_errors=True)
            runs = [run_once(lang, path, cwd, run, a.twice) for run in range(1, 3 if a.twice else 2)]
            failed += [r["failed"] for r in runs if "failed" in r]
            failed += [f"{lang}/{path.name} run {i}: lesson not shown: {r['lesson_failed']}"
                       for i, r in enumerate(runs, 1) if "lesson_failed" in r]
            if "failed" in runs[0]:
                continue
            entry = {**runs[0], "stated_before": _stated(old, lang, path.name)}
            if a.twice and "failed" not in runs[1]:
                entry["second_run"] = {"wall_seconds": runs[1]["wall_seconds"],
                                       "run_seconds": [p["run_seconds"] for p in runs[1]["parts"]]}
                if "lesson" in runs[0] and "lesson" in runs[1] and runs[0]["lesson"] != runs[1]["lesson"]:
                    failed.append(f"{lang}/{path.name}: the second Run All showed another lesson")
                entry["same_lesson"] = runs[0].get("lesson") == runs[1].get("lesson") and "lesson" in runs[0]
            entry.pop("lesson", None)
            result[lang][path.name] = entry
            print(f"{lang}/{path.name}: {entry['wall_seconds']} s"
                  + (f", again {entry['second_run']['wall_seconds']} s" if "second_run" in entry else ""), flush=True)
    finally:
        if busy is not None:
            os.killpg(busy.pid, signal.SIGKILL)
            busy.wait()
    method = " ".join(read_seconds.__doc__.split())  # the whole sentence, not its first line
    for folder in caches.values():
        shutil.rmtree(folder, ignore_errors=True)
    write("notebook_times", {"notebooks": result, "method": method, "cache": "warm" if a.warm else "cold",
                             "busy": a.busy, "twice": a.twice, "seconds": round(time.perf_counter() - t_all),
                             "failed": failed})
    if failed:
        raise SystemExit("failed: " + "; ".join(failed))


def _stated(old: dict, lang: str, name: str) -> dict | None:
    """The run time a notebook stated before this measurement (core path, each optional part), for
    the comparison "within 2 x its stated time"."""
    parts = old.get(lang, {}).get(name, {}).get("parts")
    return {p["title"]: p["run_seconds"] for p in parts} if parts else None


if __name__ == "__main__":
    main()
