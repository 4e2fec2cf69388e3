"""How long each notebook takes, read and run, with its committed defaults (both editions).

Each notebook is executed top to bottom in a fresh kernel (``course_lib.lab.edition.execute``, the
same as the HTML edition), cut at its ``##`` headings, and each part gets its measured run
time and an estimated reading time (``course_lib.lab.edition.read_seconds``: prose at 180 English
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
import shutil
import tempfile
import time

import nbformat
from common import RESULTS, write
from nbclient.exceptions import CellExecutionError

from course_lib.lab import edition


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
        parts = [{**p, "read_seconds": round(edition.read_seconds(p), 1), "run_seconds": round(p["run_seconds"], 1)}
                 for p in edition.sections(nb)]
        result[lang][path.name] = {"parts": parts, "wall_seconds": round(time.perf_counter() - t0, 1)}
        print(f"{lang}/{path.name}: {result[lang][path.name]['wall_seconds']} s", flush=True)
    method = " ".join(edition.read_seconds.__doc__.split())  # the whole sentence, not its first line
    for folder in caches.values():
        shutil.rmtree(folder, ignore_errors=True)
    write("notebook_times", {"notebooks": result, "method": method, "cache": "warm" if a.warm else "cold"})
    if failed:
        raise SystemExit("failed (not timed): " + "; ".join(failed))


if __name__ == "__main__":
    main()
