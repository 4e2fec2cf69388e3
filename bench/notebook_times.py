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

    python bench/notebook_times.py [--lang en zh] [--notebooks 01 03] [--warm]
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lang", nargs="+", default=list(edition.LANGS))
    ap.add_argument("--notebooks", nargs="+")
    ap.add_argument("--warm", action="store_true", help="keep the machine's kit cache (default: an empty one per edition)")
    a = ap.parse_args()
    old = json.loads((RESULTS / "notebook_times.json").read_text()).get("notebooks", {}) \
        if (RESULTS / "notebook_times.json").exists() else {}
    result = {lang: dict(old.get(lang, {})) for lang in edition.LANGS}
    work, failed = RESULTS / "tmp" / "notebooks", []
    caches = {}
    for lang, path in edition.notebook_paths(a.lang, a.notebooks):
        if not a.warm and lang not in caches:  # the kernels inherit it
            caches[lang] = os.environ["COURSE_LIB_CACHE"] = tempfile.mkdtemp(prefix=f"course-lib-cache-{lang}-")
        cwd = work / lang / path.stem  # a folder per notebook (its runs); "zh" in the path keeps the widgets Chinese
        shutil.rmtree(cwd, ignore_errors=True)
        t0 = time.perf_counter()
        try:
            nb = edition.execute(path, cwd=cwd)
        except CellExecutionError as err:  # the others still get timed; this one is reported, not timed
            nbformat.write(err.notebook, str(cwd / path.name))
            failed.append(f"{lang}/{path.name}: {str(err).strip().splitlines()[-1][:200]}")
            continue
        nbformat.write(nb, str(cwd / path.name))  # the executed copy, to read what each cell printed
        parts = [{**p, "read_seconds": round(read_seconds(p), 1), "run_seconds": round(p["run_seconds"], 1)}
                 for p in sections(nb)]
        result[lang][path.name] = {"parts": parts, "wall_seconds": round(time.perf_counter() - t0, 1)}
        print(f"{lang}/{path.name}: {result[lang][path.name]['wall_seconds']} s", flush=True)
    method = " ".join(read_seconds.__doc__.split())  # the whole sentence, not its first line
    for folder in caches.values():
        shutil.rmtree(folder, ignore_errors=True)
    write("notebook_times", {"notebooks": result, "method": method, "cache": "warm" if a.warm else "cold"})
    if failed:
        raise SystemExit("failed (not timed): " + "; ".join(failed))


if __name__ == "__main__":
    main()
