"""A teacher's audit: every script of a folder, the same command for each, one table.

    resume-audit --each submissions/ -- python {script} --out {run}

``{script}`` stands for each file in turn (a folder means its ``*.py`` files, otherwise a glob
pattern). Each script gets its own audit folder and report under ``out``; the table says, per
script, its verdict and the first finding to fix. A script that cannot be audited (it fails
before training, never steps an optimizer) gets its reason, and the others go on.
"""
from __future__ import annotations

import glob
import json
import tempfile
from pathlib import Path

from resume_audit.auditor import AuditError, audit
from resume_audit.report import BAD_INPUT


def audit_each(pattern: str, command: list[str], resume_command: list[str] | None = None, out: str | Path | None = None,
               **options) -> list[dict]:
    """Audit every script of ``pattern`` with ``command`` (``{script}`` replaced); returns one row
    per script (``script``, ``exit_code``, ``verdict``, ``first finding``, ``fix``) and writes them to
    ``out/classroom.json`` (``out`` ``None``: a new folder in the system's temporary directory).
    Options as for :func:`resume_audit.audit`."""
    if not any("{script}" in a for a in command):
        raise AuditError("with --each the command needs {script} where each script goes, e.g. "
                         "resume-audit --each submissions/ -- python {script} --out {run}")
    path = Path(pattern)
    found = sorted(path.glob("*.py")) if path.is_dir() else sorted(Path(p) for p in glob.glob(pattern))
    scripts = [p for p in found if p.is_file() and not p.name.startswith("_")]
    if not scripts:
        raise AuditError(f"--each {pattern} names no script: give a folder of .py files or a pattern like "
                         "'submissions/*.py'")
    out = Path(tempfile.mkdtemp(prefix="resume-audit-class-")) if out is None else Path(out)
    rows = []
    for script in scripts:
        argv = [a.replace("{script}", str(script)) for a in command]
        again = [a.replace("{script}", str(script)) for a in resume_command] if resume_command else None
        try:
            report = audit(argv, again, out=out / script.stem, progress=False, **options)
        except AuditError as err:
            rows.append({"script": script.name, "exit_code": BAD_INPUT, "verdict": f"cannot audit: {err}",
                         "first finding": "-", "fix": "-"})
            continue
        first = next((f for f in report.findings if f.defect), None)
        rows.append({"script": script.name, "exit_code": report.exit_code, "verdict": report.verdict.split(":")[0],
                     "first finding": first.line if first else "-", "fix": first.fix if first else "-"})
    (out / "classroom.json").write_text(json.dumps(rows, indent=1))
    return rows


def classroom_text(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        lines.append(f"{r['script']}: {r['verdict']}")
        if r["first finding"] != "-":
            lines += [f"    {r['first finding']}", f"    fix: {r['fix']}"]
    exact = sum(r["exit_code"] == 0 for r in rows)
    lines.append(f"{exact} of {len(rows)} scripts resume exactly")
    return "\n".join(lines)
