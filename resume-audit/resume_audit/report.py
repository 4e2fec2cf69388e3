"""An audit's result: a table a person reads in the terminal, ``report.json`` a program reads,
and the exit code a CI job reads (:data:`EXIT_CODES`, the one map: docs/audit.md, "The
verdicts"); each finding with the command that shows it again. A view in another language words
the same cases from :meth:`Report.verdict_case` and each finding's data.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from resume_audit.findings import DURABILITY, HABITS, UNSEEN, Finding, merge
from resume_audit.plan import EVENT_KINDS
from resume_audit.verdict import STATE, RunVerdict

EXACT, NOT_EXACT, BAD_INPUT, INCONCLUSIVE = 0, 1, 2, 3
EXIT_CODES = {EXACT: "exact: every fault delivered resumed bit-identically (lost work and a power cut's losses "
                     "reported; with --strict they fail)",
              NOT_EXACT: "not exact (or not deterministic): a resumed run is another run; with --strict also lost work "
                         "or not durable",
              BAD_INPUT: "the command cannot be audited (the error says why)",
              INCONCLUSIVE: "inconclusive: nothing failed, but the audit could not see or deliver all it needs"}
MARK = {True: "ok", False: "DIFF", None: "-"}


VERDICTS = {
    "deterministic": "NOT DETERMINISTIC: two runs never interrupted differ, so no resume can be exact (fix that first)",
    "inconclusive": "INCONCLUSIVE: the audit could not see or deliver everything (below); the {n} faults delivered "
                    "resumed bit-identically, which says nothing of the rest",
    "durable": "NOT DURABLE: every process kill resumed bit-identically, but a power cut loses a complete checkpoint "
               "(below){strict}",
    "lost": "EXACT, WITH LOST WORK: every one of {n} faults resumed bit-identically, but {lost} steps were trained "
            "again after {k} of them{strict}",
    "exact": "EXACT: every one of {n} faults resumed bit-identically",
    "habit": "NOT EXACT: the run itself has a defect (above), although every fault resumed bit-identically",
    "runs": "NOT EXACT: {bad} of {runs} interrupted runs fall short of the run never interrupted"}
STRICT = " (--strict: that fails)"  # a verdict's {strict} under --strict


@dataclass
class Report:
    command: list[str]
    resume_command: list[str] | None
    out: Path
    seed: int
    reference: dict                      # steps, ranks, seconds, saves of the uninterrupted run
    uninterrupted: list[Finding]         # what the runs never interrupted show: they differ, or HABITS of each
    runs: list[RunVerdict] = field(default_factory=list)
    planned_runs: int = 0
    carried: int = 0                     # faults a run went past, dealt again to a fresh run
    seconds: float = 0.0
    strict: bool = False                 # lost work fails too (exit code 1)

    @property
    def findings(self) -> list[Finding]:
        """Every finding, one per kind, in the order to fix them."""
        struck = [row.fault.for_report() for r in self.runs for row in r.rows if row.delivered]
        later = [f for r in self.runs for f in r.findings  # a note on a fault that struck in a later run is moot
                 if not (f.kind.startswith("undelivered") and f.values.get("fault") in struck)]
        return merge([*self.uninterrupted, *later])

    @property
    def nondeterminism(self) -> list[Finding]:
        """What makes two uninterrupted runs differ (empty: they are the same run)."""
        return [f for f in self.uninterrupted if f.kind not in HABITS + UNSEEN]

    @property
    def faults(self) -> int:
        return sum(sum(row.delivered for row in r.rows) for r in self.runs)

    @property
    def exact(self) -> bool:
        """After every fault the run went on bit-identically (lost work and a power cut's losses aside)."""
        return not self.nondeterminism and bool(self.runs) and not any(f.defect for f in self.findings) \
            and all(r.exact or r.power_only for r in self.runs)

    @property
    def unseen(self) -> list[Finding]:
        """What the audit could not see or deliver (a verdict of exact cannot claim it)."""
        return [f for f in self.findings if f.kind in UNSEEN]

    @property
    def not_durable(self) -> list[Finding]:
        return [f for f in self.findings if f.kind in DURABILITY]

    @property
    def lost(self) -> int:
        """Steps lost over every fault: trained again although a checkpoint held them, or a SIGTERM could have."""
        return sum(r.lost for r in self.runs)

    @property
    def exit_code(self) -> int:
        case = self.verdict_case()[0]
        if case in ("deterministic", "habit", "runs"):
            return NOT_EXACT
        if case == "inconclusive":
            return INCONCLUSIVE
        return NOT_EXACT if self.strict and (self.lost or self.not_durable) else EXACT

    def verdict_case(self) -> tuple[str, dict]:
        """Which verdict, a key of :data:`VERDICTS`, and its numbers: one order of the cases for
        every language (a view in another language words them from these). A defect found is
        proven whatever was not seen; exact is claimed only of what was."""
        bad = sum(not (r.exact or r.power_only) for r in self.runs)
        habit = any(f.defect for f in self.findings)  # (no run struck at all and nothing found: nothing tested)
        case = ("deterministic" if self.nondeterminism else "runs" if bad else "habit" if habit else
                "inconclusive" if self.unseen or not self.faults else "durable" if self.not_durable else
                "lost" if self.lost else "exact")
        k = sum(row.lost > 0 for r in self.runs for row in r.rows)  # faults that lost work
        return case, {"n": self.faults, "k": k, "lost": self.lost, "runs": len(self.runs), "bad": bad}

    @property
    def verdict(self) -> str:
        case, values = self.verdict_case()
        return VERDICTS[case].format(**values, strict=STRICT if self.strict else "")

    def to_dict(self) -> dict:
        return {"command": self.command, "resume_command": self.resume_command, "seed": self.seed,
                "reference": self.reference, "exact": self.exact, "lost_steps": self.lost, "strict": self.strict,
                "exit_code": self.exit_code, "verdict_case": self.verdict_case()[0], "verdict": self.verdict,
                "faults_delivered": self.faults, "runs_planned": self.planned_runs, "faults_dealt_again": self.carried,
                "seconds": round(self.seconds, 1),
                "findings": [{**f.to_dict(), "again": self.again(f)} for f in self.findings],
                "runs": [{"exact": r.exact, "lost_steps": r.lost, "steps": r.steps, "reference_steps": r.reference_steps,
                          "final_identical": r.final_identical, "faults": [row.to_dict() for row in r.rows],
                          "findings": [f.to_dict() for f in r.findings]} for r in self.runs]}

    def again(self, finding: Finding) -> str | None:
        """The one command that shows ``finding`` again: its fault, delivered alone."""
        fault = finding.values.get("fault")
        if not isinstance(fault, dict):
            return None
        spec = (f"{fault['kind']}@e{fault['n']}:{fault['who']}" if fault["kind"] in EVENT_KINDS else
                f"{fault['kind']}@{fault['at']}" + ("" if fault["rank"] is None else f":{fault['rank']}"))
        resume = ["--resume-command", shlex.join(self.resume_command)] if self.resume_command else []
        return shlex.join(["resume-audit", "--fault", spec, "--references", "1", *resume, "--", *self.command])

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
                rngs = [ok for c, ok in row.state.items() if c.startswith("rng.")]
                ok = {**row.state, "rng": all(rngs) if rngs else None}  # one column for every RNG
                state = {c: "-" if row.after_parting else MARK[ok.get(c)] for c in STATE}
                went = "-" if row.resumed_from is None else f"step {row.resumed_from}"
                out.append({"run": j, "fault": row.fault.describe(), "restarted": MARK[row.started],
                            "went on from": went, "redone": "-" if row.redone is None else row.redone,
                            "lost": row.lost if row.delivered and row.started else "-", **state,
                            "parted": "(had parted)" if row.after_parting else row.parted or "-",
                            "run exact": "yes" if run.exact else "no"})
        return out

    def text(self) -> str:
        lines = [f"audit of: {shlex.join(self.command)}"]
        if self.resume_command:
            lines.append(f"resumed with: {shlex.join(self.resume_command)}")
        ref = self.reference
        lines.append(f"run never interrupted: {ref['steps']} steps on {len(ref['ranks'])} rank(s), "
                     f"{ref['seconds']:.1f} s; {ref['saves']} saves, {ref.get('file_events', 0)} file events "
                     f"({ref.get('crash_points', 0)} crash points)"
                     + ("" if ref.get("determinism_checked", True) else "; run once: its determinism not checked"))
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
                seen = f" ({f.count} faults{f', {f.lost} steps lost in all' if f.count > 1 and f.lost else ''})" \
                    if f.count > 1 else ""
                label = f.kind if f.kind_class == "defect" else f"{f.kind}, {f.kind_class}"
                lines.append(f"{i}. [{label}] {f.line}{seen}")
                if f.fix:
                    lines.append(f"   fix: {f.fix}")
                again = self.again(f)
                if again:
                    lines.append(f"   again: {again}")
        lines.append(self.verdict)
        if self.planned_runs > len(self.runs) and not self.nondeterminism:
            lines.append(f"(the time budget ran out: {len(self.runs)} of {self.planned_runs} planned runs audited)")
        return "\n".join(lines)
