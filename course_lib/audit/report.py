"""An audit's result: a table a person reads in the terminal, ``report.json`` a program reads,
and the exit code a CI job reads (0: every fault resumed bit-identically; 1: not).

:class:`Report` holds the facts; :meth:`Report.text` is the terminal's table, the notebooks'
(translated) tables are :func:`course_lib.lab.tables.audit_table` and
:func:`course_lib.lab.tables.audit_findings`.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from course_lib.audit.findings import NOTES, Finding, merge
from course_lib.audit.verdict import STATE, RunVerdict

EXACT, NOT_EXACT, BAD_INPUT = 0, 1, 2
MARK = {True: "ok", False: "DIFF", None: "-"}


@dataclass
class Report:
    command: list[str]
    resume_command: list[str] | None
    out: Path
    seed: int
    reference: dict                      # steps, ranks, seconds, saves of the uninterrupted run
    deterministic: list[Finding]         # what makes two uninterrupted runs differ (empty: none)
    habits: list[Finding]                # what the uninterrupted run itself shows (set_epoch)
    runs: list[RunVerdict] = field(default_factory=list)
    planned_runs: int = 0
    carried: int = 0                     # faults a run went past, dealt again to a fresh run
    seconds: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        """Every finding, one per kind, in the order to fix them."""
        struck = [row.fault.for_report() for r in self.runs for row in r.rows if row.delivered]
        later = [f for r in self.runs for f in r.findings  # a note on a fault that struck in a later run is moot
                 if not (f.kind in NOTES and f.values.get("fault") in struck)]
        return merge([*self.deterministic, *self.habits, *later])

    @property
    def faults(self) -> int:
        return sum(sum(row.delivered for row in r.rows) for r in self.runs)

    @property
    def exact(self) -> bool:
        return not self.deterministic and bool(self.runs) and not any(f.defect for f in self.findings) \
            and all(r.exact for r in self.runs)

    @property
    def exit_code(self) -> int:
        return EXACT if self.exact else NOT_EXACT

    @property
    def verdict(self) -> str:
        if self.deterministic:
            return "NOT DETERMINISTIC: two runs never interrupted differ, so no resume can be exact (fix that first)"
        if self.exact:
            return f"EXACT: every one of {self.faults} faults resumed bit-identically"
        bad = sum(not r.exact for r in self.runs)
        if not bad:
            return "NOT EXACT: the run itself has a defect (above), although every fault resumed bit-identically"
        return f"NOT EXACT: {bad} of {len(self.runs)} interrupted runs fall short of the run never interrupted"

    def to_dict(self) -> dict:
        return {"command": self.command, "resume_command": self.resume_command, "seed": self.seed,
                "reference": self.reference, "exact": self.exact, "exit_code": self.exit_code, "verdict": self.verdict,
                "faults_delivered": self.faults, "runs_planned": self.planned_runs, "faults_dealt_again": self.carried,
                "seconds": round(self.seconds, 1),
                "findings": [f.to_dict() for f in self.findings],
                "runs": [{"exact": r.exact, "steps": r.steps, "reference_steps": r.reference_steps,
                          "final_identical": r.final_identical, "faults": [row.to_dict() for row in r.rows],
                          "findings": [f.to_dict() for f in r.findings]} for r in self.runs]}

    def save(self) -> Path:
        path = self.out / "report.json"
        path.write_text(json.dumps(self.to_dict(), indent=1))
        (self.out / "report.txt").write_text(self.text() + "\n")
        return path

    def rows(self) -> list[dict]:
        """One row per fault, as the tables show it."""
        out = []
        for j, run in enumerate(self.runs, 1):
            for row in run.rows:
                state = {c: "-" if row.after_parting else MARK[row.state.get(c) if c != "rng" else _rng_ok(row.state)]
                         for c in STATE}
                went = "-" if row.resumed_from is None else f"step {row.resumed_from}"
                out.append({"run": j, "fault": row.fault.describe(), "restarted": MARK[row.started],
                            "went on from": went, "redone": "-" if row.redone is None else row.redone, **state,
                            "parted": "(had parted)" if row.after_parting else row.parted or "-",
                            "run exact": "yes" if run.exact else "no"})
        return out

    def text(self) -> str:
        lines = [f"audit of: {shlex.join(self.command)}"]
        if self.resume_command:
            lines.append(f"resumed with: {shlex.join(self.resume_command)}")
        ref = self.reference
        lines.append(f"run never interrupted: {ref['steps']} steps on {len(ref['ranks'])} rank(s), "
                     f"{ref['seconds']:.1f} s; {ref['saves']} saves")
        rows = self.rows()
        if rows:
            again = f"; {self.carried} a run went past dealt again to a fresh one" if self.carried else ""
            lines.append(f"faults: {self.faults} delivered in {len(self.runs)} runs (seed {self.seed}{again})")
            cols = list(rows[0])
            widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
            lines.append("  ".join(c.ljust(widths[c]) for c in cols))
            lines += ["  ".join(str(r[c]).ljust(widths[c]) for c in cols) for r in rows]
        findings = self.findings
        if findings:
            lines.append("findings, in the order to fix them:")
            for i, f in enumerate(findings, 1):
                seen = f" ({f.count} faults)" if f.count > 1 else ""
                lines.append(f"{i}. [{f.kind}] {f.line}{seen}")
                if f.fix:
                    lines.append(f"   fix: {f.fix}")
        lines.append(self.verdict)
        if self.planned_runs > len(self.runs) and not self.deterministic:
            lines.append(f"(the time budget ran out: {len(self.runs)} of {self.planned_runs} planned runs audited)")
        return "\n".join(lines)


def _rng_ok(state: dict) -> bool | None:
    values = [ok for c, ok in state.items() if c.startswith("rng.")]
    return None if not values else all(values)
