"""The audit beside the field's crash-consistency tester, ckpt-chaos (PyPI, MIT), on the same
scripts: the scorecard's (the field's frameworks as their docs teach them), the zoo's that save
(defects planted, and their fixed twins' correct kin), and the kit's own trainer. For each: the
truth (settled by hand before either tool ran: bench/scorecard/README.md, resume-audit/tests/zoo/
README.md and truth.json; the kit's trainer by its crash-point sweep, bench/kit_crashpoints.py),
each tool's verdict at its defaults, the crash points it tried, its seconds. Writes
``bench/results/peer_ckpt_chaos.json``; BENCHMARKS.md and resume-audit/README.md give the table.

    pip install -e ".[peer,frameworks]"     # ckpt-chaos==0.1.8, and the scorecard's frameworks
    python bench/peer_ckpt_chaos.py [--only NAME ...] [--chaos-modes before,torn,term,unsynced] [--chaos-points 12]

Both tools run each script's command as its user types it. ckpt-chaos needs a file whose bytes
must match the fault-free run's: every script is started with ``ZOO_FINAL={out}/final.pt`` (the
zoo's scripts write their final state there) or compared on the ``final-params`` line it prints
(the scorecard's) or on its summary's parameter digest (the kit's). A tool's verdict on a script
is its worst over the crash points it tried: *not exact* (a resume that fails or ends elsewhere
after a process kill), *not durable* (only a power cut's state fails), *lost work*, *exact*.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, write
from resume_audit import AuditError, audit

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "resume-audit" / "tests" / "zoo"
CARD = ROOT / "bench" / "scorecard"
PY = sys.executable
KIT = f"{PY} -m course_lib train --run-dir {{out}} --train-limit 384 --epochs 2 --save-every-steps 3 --embed-dim 8 " \
      "--resume auto"
DIGEST = f"{PY} -c \"import json,sys; print(json.load(open(sys.argv[1]))['parameter_sha256'])\" {{out}}/final/summary.json"
TORCHRUN = f"{PY} -m torch.distributed.run --standalone --nproc-per-node 2"

# name -> (the command, with {out}; how ckpt-chaos compares results; the truth, settled by hand; where)
SCRIPTS = {
    **{name: (f"sh -c 'ZOO_FINAL={{out}}/final.pt exec {PY} {ZOO}/{name}.py --out {{out}} --epochs 2'",
              ("--result-file", "{out}/final.pt"), truth, "resume-audit/tests/zoo/README.md")
       for name, truth in {"non_atomic_save": "not exact", "pickle_in_place": "not exact",
                           "numpy_in_place": "not exact", "background_save_live": "not exact",
                           "no_rng_state": "not exact", "no_fsync": "not durable", "no_dir_fsync": "not durable",
                           "newest_by_string_sort": "lost work", "sigterm_save_ignored": "lost work",
                           "no_sigterm_save": "lost work", "correct_one_process": "exact",
                           "correct_spawn_ddp": "exact"}.items()},
    **{name: (f"sh -c 'RESULT_FILE={{out}}/final.txt exec {TORCHRUN if name == 'dcp_loop' else PY} {CARD}/{name}.py "
              f"--out {{out}}'", ("--result-file", "{out}/final.txt"), truth, "bench/scorecard/README.md")
       for name, truth in {"hf_trainer": "not exact", "accelerate_loop": "not exact", "lightning_fit": "not exact",
                           # dcp, compile and workers save as the zoo's no_dir_fsync does (each file
                           # fsynced, never its folder), whose power cut by hand lost its checkpoint
                           "dcp_loop": "not durable", "compile_loop": "not durable",
                           "dataloader_workers": "not durable"}.items()},
    "kit_trainer_1_rank": (f"{KIT} --world-size 1", ("--result-cmd", DIGEST), "exact", "bench/kit_crashpoints.py"),
    "kit_trainer_2_ranks": (f"{KIT} --world-size 2", ("--result-cmd", DIGEST), "exact", "bench/kit_crashpoints.py"),
}
CHAOS_BAD = {"HARD_FAIL", "SILENT_DIVERGENCE", "CONTROL_FAIL"}
CHAOS = Path(sys.executable).parent / "ckpt-chaos"  # the venv's, whether or not it is activated


def audit_verdict(report) -> str:
    case = report.verdict_case()[0]
    return {"exact": "exact", "lost": "lost work", "durable": "not durable", "inconclusive": "inconclusive"}.get(
        case, "not exact")


def run_audit(command: str, out: Path) -> dict:
    t0 = time.perf_counter()
    try:
        report = audit([a.replace("{out}", "{run}") for a in _split(command)], out=out, progress=False)
    except AuditError as err:
        return {"verdict": "could not audit", "error": str(err)[:300], "seconds": round(time.perf_counter() - t0, 1)}
    verdict = audit_verdict(report)
    # the finding that decides the verdict (a defect for not exact, a power cut's for not durable), then the others
    deciding = {"not exact": "defect", "not durable": "not durable", "lost work": "lost work"}.get(verdict)
    named = [f for f in report.findings if f.kind_class == deciding] + \
        [f for f in report.findings if f.kind_class not in ("note", deciding)]
    return {"verdict": verdict, "first": named[0].kind if named else None,
            "line": named[0].line[:300] if named else None, "findings": [f.kind for f in named],
            "crash_points": report.faults, "file_events": report.reference.get("file_events"),
            "seconds": round(time.perf_counter() - t0, 1)}


def run_chaos(command: str, result: tuple, work: Path, modes: str, points: int) -> dict:
    t0 = time.perf_counter()
    argv = [str(CHAOS), "run", "--work", str(work), *result, "--modes", modes, "--max-points", str(points), "--",
            *_split(command)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=7200)
    rows = [json.loads(p.read_text()) for p in sorted(work.glob("pt_*/result.json"))]
    verdicts = _verdicts(work)
    bad = {v for label, v in verdicts.items() if v in CHAOS_BAD and "[unsynced]" not in label}
    power = {v for label, v in verdicts.items() if v in CHAOS_BAD and "[unsynced]" in label}
    verdict = ("no verdict" if done.returncode not in (0, 1) else "nothing tested" if len(rows) < 2 else
               "not exact" if bad else "not durable" if power else
               "lost work" if "LOST_WORK" in verdicts.values() else "exact")  # rows: its control run and each point
    by_mode: dict[str, list[str]] = {}  # a label ends with its mode: "... [torn]"
    for label, v in verdicts.items():
        if "[" in label:
            by_mode.setdefault(label.rsplit("[", 1)[-1].rstrip("]"), []).append(v)
    return {"verdict": verdict, "counts": {v: list(verdicts.values()).count(v) for v in sorted(set(verdicts.values()))},
            "by_mode": {m: {v: vs.count(v) for v in sorted(set(vs))} for m, vs in by_mode.items()},
            "crash_points": max(0, len(rows) - 1), "exit_code": done.returncode,
            "said": (done.stdout + done.stderr).strip().splitlines()[-1][:300] if done.stdout + done.stderr else "",
            "seconds": round(time.perf_counter() - t0, 1)}


def _verdicts(work: Path) -> dict:
    """ckpt-chaos's own judgement of each crash point (its ``judge`` rules), by label."""
    from ckpt_chaos.runner import rejudge

    try:
        return {r.label: r.verdict for r in rejudge(work)}
    except (OSError, ValueError, KeyError):
        return {}


def _split(command: str) -> list[str]:
    import shlex

    return shlex.split(command)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", choices=list(SCRIPTS))
    ap.add_argument("--chaos-modes", default="before,torn,term,unsynced",
                    help="ckpt-chaos's modes (its default is before,torn; unsynced is its power cut)")
    ap.add_argument("--chaos-points", type=int, default=12, help="ckpt-chaos's --max-points")
    a = ap.parse_args()
    if not CHAOS.exists():
        sys.exit('ckpt-chaos is not installed beside this Python: pip install -e ".[peer]"')
    saved = RESULTS / "peer_ckpt_chaos.json"
    out = json.loads(saved.read_text())["scripts"] if a.only and saved.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.only or SCRIPTS:
            command, result, truth, where = SCRIPTS[name]
            row = {"truth": truth, "truth_from": where, "command": command,
                   "audit": run_audit(command, Path(tmp) / name / "audit"),
                   "ckpt_chaos": run_chaos(command, result, Path(tmp) / name / "chaos", a.chaos_modes, a.chaos_points)}
            row["audit_right"] = row["audit"]["verdict"] == truth
            row["ckpt_chaos_right"] = row["ckpt_chaos"]["verdict"] == truth
            out[name] = row
            print(f"{name}: truth {truth}; audit {row['audit']['verdict']} ({row['audit'].get('first')}); ckpt-chaos "
                  f"{row['ckpt_chaos']['verdict']} {row['ckpt_chaos']['counts']}", flush=True)
            write("peer_ckpt_chaos", {"ckpt_chaos": _version(), "chaos_settings": {"modes": a.chaos_modes,
                                                                                    "max_points": a.chaos_points},
                                      "audit_settings": "defaults: 8 faults at steps, 4 crash points at file events, "
                                                        "seed 0", "scripts": out})  # after each: a long run keeps its rows


def _version() -> str:
    from importlib.metadata import version

    return version("ckpt-chaos")


if __name__ == "__main__":
    main()
