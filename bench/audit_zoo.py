"""The audit at its default settings on every script of the zoo (resume-audit/tests/zoo/) and its fixed twin
(``NAME (fixed)``: the script with the fix its finding gives, resume-audit/tests/twins.py), on the kit's
own trainer and on the kit's reconstruction of the chapter's loop: each one's verdict, the kinds it found, its faults and
how long the audit took on this machine. The correct scripts and the kit's trainer are audited
with 20 faults (in runs of 10), the rest with the defaults (8 faults, 2 a run). Writes
``bench/results/audit_zoo.json``.

    python bench/audit_zoo.py [--only NAME ...]   (--only: those again, the others kept)
"""
import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, write
from resume_audit import AuditError, audit

ZOO = Path(__file__).resolve().parents[1] / "resume-audit" / "tests" / "zoo"
sys.path.insert(0, str(ZOO.parent))
from twins import broken_scripts, fixed_twin  # noqa: E402 (the audit's tests' helper, not a package)

sys.path.insert(0, str(ZOO))
from hand_truth import FAMILIES  # noqa: E402 (what each broken script's truth by hand says it lacks)

FIXED = " (fixed)"
EXACT = {"correct_one_process", "correct_spawn_ddp", "correct_torchrun_ddp", "kit_trainer"}
SPECIAL = {
    "kit_trainer": [sys.executable, "-m", "course_lib", "train", "--run-dir", "{run}", "--world-size", "2",
                    "--train-limit", "512", "--epochs", "3", "--save-every-steps", "4", "--embed-dim", "8",
                    "--resume", "auto"],
    "chapter_loop": [sys.executable, "-m", "course_lib.textbook", "--run-dir", "{run}", "--epochs", "4",
                     "--save-interval", "1", "--train-reviews", "256", "--embed-dim", "8", "--resume", "auto"],
}


def command(name: str, twins: Path) -> list[str]:
    if name in SPECIAL:
        return SPECIAL[name]
    path = str(fixed_twin(ZOO / f"{name.removesuffix(FIXED)}.py", twins) if name.endswith(FIXED) else ZOO / f"{name}.py")
    if "torchrun" in name:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", path,
                "--out", "{run}"]
    return [sys.executable, path, "--out", "{run}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+")
    a = ap.parse_args()
    names = sorted(p.stem for p in ZOO.glob("*.py") if p.stem not in ("zoo_common", "hand_truth"))
    names += [p.stem + FIXED for p in broken_scripts()] + list(SPECIAL)
    saved = RESULTS / "audit_zoo.json"  # --only audits those again and keeps the others' results
    out = json.loads(saved.read_text())["scripts"] if a.only and saved.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.only or names:
            settings = {"faults": 20, "per_run": 10} if name in EXACT else {}  # a twin: the defaults, like its script
            t0 = time.perf_counter()
            try:
                report = audit(command(name, Path(tmp) / "twins"), out=Path(tmp) / name, progress=False, **settings)
            except AuditError as err:
                out[name] = {"error": str(err)}
                continue
            first = next((f.kind for f in report.findings if f.kind_class != "note"), None)
            expected = FAMILIES[name][0] if name in FAMILIES else "exact" if name != "chapter_loop" else None
            out[name] = {"verdict": report.verdict, "case": report.verdict_case()[0], "exit_code": report.exit_code,
                         "expected": expected, "first_kind": first,
                         "faults": report.faults,
                         "findings": [f.kind for f in report.findings if f.defect],
                         "notes": [f.kind for f in report.findings if not f.defect],
                         "lost_steps": report.lost,
                         "first": report.findings[0].line if report.findings else None,
                         "seconds": round(time.perf_counter() - t0, 1), "settings": settings or "default"}
            print(f"{name}: {out[name]['verdict']} {out[name]['findings']} {out[name]['seconds']} s", flush=True)
            write("audit_zoo", {"scripts": out})  # after each script: an audit that fails keeps the others


if __name__ == "__main__":
    main()
