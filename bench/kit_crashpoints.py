"""The kit's own trainer at every crash point of its saves: each file event under its run's
``checkpoints/`` (each part's write, its fsync, the manifest, the folder's rename, ``LATEST``,
keep-last-k's removals, every fsync of a folder), struck in each way the event allows: a kill
before it, the file torn half-way, a power cut that loses what was not fsynced, one that undoes
the names whose folder was not fsynced (resume_audit.crashpoints). One process and 2 ranks,
synchronous and background (``--async-save``) saves. Writes ``bench/results/kit_crashpoints.json``:
per setting, the crash points and the states tried, how many resumed exactly, the first that did
not (none, for the kit).

The run saves twice (4 steps, a save every 2, ``--keep-last 1``): a first save, and a second that
replaces it (its commit, ``LATEST``, then the first one removed). Those are every event the save
protocol makes, each once; a longer run repeats them (each state tried costs a fresh run of the
command and its resume: 8-9 s for one rank here, 179 states in 24 minutes; results/kit_crashpoints.json).

    python bench/kit_crashpoints.py [--only NAME ...]
"""
import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, write
from resume_audit import audit

KIT = [sys.executable, "-m", "course_lib", "train", "--run-dir", "{run}", "--train-limit", "256", "--epochs", "1",
       "--save-every-steps", "2", "--keep-last", "1", "--embed-dim", "8", "--resume", "auto"]
SETTINGS = {"1-rank": ["--world-size", "1"], "2-ranks": ["--world-size", "2"],
            "1-rank-async": ["--world-size", "1", "--async-save"], "2-ranks-async": ["--world-size", "2", "--async-save"]}


def at_planned_events(folder: Path) -> tuple[int, int]:
    """(crash points struck, of them at the very event planned): each fault's mark (its role, number,
    op and path) against the event of that role and number in the run never interrupted, a process's
    own id in a path (``LATEST.tmp-PID``) read as the same name."""
    def events(run: str):
        for f in (folder / "records" / run).glob("attempt-*/*.jsonl"):
            rows = [json.loads(line) for line in f.read_text().splitlines() if line]
            pid = str(rows[0]["pid"]) if rows and rows[0]["type"] == "start" else "?"
            for e in rows:
                yield {**e, "path": e.get("path", "").replace(pid, "{pid}"),
                       "target": str(e.get("target", "")).replace(pid, "{pid}")}

    planned = {(e["who"], e["n"]): (e["op"], e["path"]) for e in events("reference-1") if e["type"] == "file"}
    marks = [e for run in (folder / "records").glob("faults-*") for e in events(run.name)
             if e["type"] == "fault" and e.get("event")]
    same = 0
    for m in marks:
        op, path = planned.get(tuple(m["event"]), (None, None))
        torn = "op" not in m  # its target: "PATH (N bytes, cut to M)"
        same += str(path) in m["target"] if torn else (m["op"], m["target"]) == (op, path)
    return len(marks), same


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", choices=list(SETTINGS))
    a = ap.parse_args()
    saved = RESULTS / "kit_crashpoints.json"
    out = json.loads(saved.read_text())["settings"] if a.only and saved.exists() else {}
    for name in a.only or SETTINGS:
        folder = Path(tempfile.mkdtemp(prefix=f"kit-crashpoints-{name}-"))  # kept unless exact: what to look at
        t0 = time.perf_counter()
        report = audit(KIT + SETTINGS[name], out=folder, faults=0, every_event=True,
                       events_under="checkpoints", references=1, progress=False)
        rows = [row for run in report.runs for row in run.rows]  # a crash point a run went past: twice
        kinds = sorted({row.fault.kind for row in rows})
        struck = [run for run in report.runs if all(row.delivered for row in run.rows)]
        exact = sum(run.exact for run in struck)
        out[name] = {"verdict": report.verdict, "exit_code": report.exit_code,
                     "crash_points": len(rows) - report.carried, "delivered": report.faults,
                     "dealt_again": report.carried,
                     "by_kind": {k: sum(r.fault.kind == k and r.delivered for r in rows) for k in kinds},
                     "file_events": report.reference.get("file_events"), "runs_exact": exact,
                     "unrecoverable": len(struck) - exact,
                     "first_not_exact": next((f.line for f in report.findings if f.kind_class != "note"), None),
                     "seconds": round(time.perf_counter() - t0, 1)}
        out[name]["struck"], out[name]["at_the_planned_event"] = at_planned_events(folder)
        print(name, out[name]["verdict"], f"{exact}/{len(report.runs)} exact", out[name]["seconds"], "s", flush=True)
        if report.exit_code == 0:
            shutil.rmtree(folder)
        else:
            print(f"  kept for a look: {folder}", flush=True)
        write("kit_crashpoints", {"command": " ".join(KIT[1:]), "settings": out})  # after each setting


if __name__ == "__main__":
    main()
