"""``audit(command)``: the kit's guarantee applied to any training script, by real faults.

Two runs never interrupted (one with ``references=1``), faults planned from the first
(:mod:`resume_audit.plan`), each interrupted run set beside it by content
(:mod:`resume_audit.verdict`), the findings merged into one :class:`Report`; each run in a
fresh ``{run}`` folder, resumed there by ``resume_command`` (else the command). The steps, and
why: docs/audit.md ("What it does").

The script is run as the user runs it: not edited, not imported. A command that cannot be
audited raises :class:`AuditError` (the command line's exit code 2).
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from resume_audit import crashpoints, disk
from resume_audit.attempt import Attempt, run_attempt
from resume_audit.diagnosis import reference_findings
from resume_audit.findings import Finding
from resume_audit.judge import Reference
from resume_audit.plan import DRAWN, KINDS, POWER_KINDS, Fault, given, parse_fault, plan
from resume_audit.power import cut_power
from resume_audit.progress import progress_bar
from resume_audit.report import Report
from resume_audit.verdict import judge_run, passed_over

MARKER = "audit.json"  # an audit folder says so: a later audit may clear it


class AuditError(ValueError):
    """A command that cannot be audited, with what to do (one line on the command line, exit code 2)."""


@dataclass
class Settings:
    """How an audit strikes: the command line's options, their names and defaults
    (``resume-audit --help``). ``faults``: how many at steps, or the list of them by hand
    (:class:`~resume_audit.plan.Fault` or ``"KIND@STEP[:RANK]"``, e.g. ``"sigkill@7:1"``, or at a
    file event ``"KIND@eN[:WHO]"``, e.g. ``"torn@e12:rank0"``: then those only); ``events``: how
    many crash points at file events beside them, drawn by the seed; ``every_event``: all of them;
    ``events_under``: only the events of files under this folder of ``{run}`` (the checkpoints')."""
    faults: int | list[Fault | str] = 8
    events: int = 4
    every_event: bool = False
    events_under: str | None = None
    per_run: int = 2
    seed: int = 0
    kinds: tuple[str, ...] = DRAWN
    every: int = 1
    timeout: float | None = None
    grace: float = 30.0
    budget: float | None = None
    strict: bool = False
    references: int = 2

    def __post_init__(self):
        if isinstance(self.faults, list):
            try:
                self.faults = [f if isinstance(f, Fault) else parse_fault(f) for f in self.faults]
            except ValueError as err:
                raise AuditError(str(err)) from None
        unknown = sorted(set(self.kinds) - set(KINDS))
        if unknown or not self.kinds:
            raise AuditError(f"unknown fault kind(s) {unknown}; choose from {', '.join(KINDS)}")
        if isinstance(self.faults, int) and self.faults < 0 or self.per_run < 1 or self.every < 1:
            raise AuditError("--faults must be 0 or more, --per-run and --every at least 1")
        if self.events < 0:
            raise AuditError("--events must be 0 or more")
        if self.faults == 0 and not (self.events or self.every_event):
            raise AuditError("nothing to strike: give --faults or --events (or --every-event) more than 0")
        if self.references not in (1, 2):
            raise AuditError(f"--references is 1 or 2 (got {self.references}): 2 checks that the command is "
                             "deterministic, 1 trusts it to be")


def audit(command: list[str], resume_command: list[str] | None = None, out: str | Path | None = None,
          progress: bool = True, **settings) -> Report:
    """Audit ``command`` (a list of arguments, ``{run}`` where the run's folder goes); the
    keyword settings are :class:`Settings`'. Writes ``out/report.json`` and ``out/report.txt``
    (``out`` ``None``: a new folder in the system's temporary directory, ``Report.out``);
    returns the :class:`Report`. Raises :class:`AuditError` for a command that cannot be audited.
    Linux only (the process boundary: :mod:`resume_audit.supervisor`)."""
    check_platform()
    folder = Path(tempfile.mkdtemp(prefix="resume-audit-")) if out is None else Path(out)
    auditor = _Audit(_checked(command, "command"), _checked(resume_command, "--resume-command"),
                     _fresh(folder), Settings(**settings))
    with progress_bar(total=2, desc="audit", unit="run", disable=not progress) as bar:
        return auditor.run(bar)


class _Audit:
    def __init__(self, command: list[str], resume: list[str] | None, out: Path, settings: Settings):
        self.command, self.resume, self.out, self.s = command, resume, out, settings
        (out / MARKER).write_text(json.dumps({"command": command, "resume_command": resume, "seed": settings.seed}))
        self.t0 = time.monotonic()

    def run(self, bar) -> Report:
        first = self._reference("reference-1", self.s.timeout or 3600)
        bar.update()
        ref = Reference(first.processes)
        ref.finals = disk.final_paths(first.processes, first.run)
        table = self.out / "reference.json"
        table.write_text(json.dumps(ref.table))
        timeout = self.s.timeout or max(60.0, 4 * first.seconds + 30)
        second = self._reference("reference-2", timeout) if self.s.references == 2 else first
        bar.update()
        steps = ref.length(ref.ranks[0])
        info = {"steps": steps, "ranks": ref.ranks, "seconds": round((first.seconds + second.seconds) / 2, 2),
                "saves": sum(ref.saves().values()), "file_events": sum(len(p.of_type("file")) for p in first.processes),
                "crash_points": len(crashpoints.every(first.processes)),
                "determinism_checked": self.s.references == 2}
        unseen = disk.unseen(first.disk, first.processes)
        found = reference_findings(first.processes, second.processes)
        if unseen:
            found.append(Finding("unseen-write", {"files": ", ".join(unseen[:5]) + (" ..." if len(unseen) > 5 else "")}))
        report = Report(self.command, self.resume, self.out, self.s.seed, info, found, strict=self.s.strict)
        if not report.nondeterminism:
            runs = self._plan(ref, first, steps)
            report.planned_runs = len(runs)
            bar.total += sum(len(r) + 1 for r in runs)
            bar.refresh()
            self._strike(report, ref, runs, table, timeout, bar)
        report.seconds = time.monotonic() - self.t0
        report.save()
        return report

    def _plan(self, ref: Reference, first: Attempt, steps: int) -> list[list[Fault]]:
        """The runs to strike: the step faults in runs of ``per_run``, then one run per crash point."""
        s = self.s
        if isinstance(s.faults, list):
            runs = given(s.faults, s.per_run)
            return [[crashpoints.resolve(r[0], first.processes) or r[0]] if r[0].event else r for r in runs]
        runs = plan(steps, ref.ranks, ref.saves(), s.faults, s.seed, tuple(s.kinds), s.per_run)
        events = crashpoints.every(first.processes, s.events_under) if s.every_event else \
            crashpoints.sampled(first.processes, s.events, s.seed, s.events_under)
        return runs + [[f] for f in events]

    def _strike(self, report: Report, ref: Reference, runs: list[list[Fault]], table: Path, timeout: float,
                bar) -> None:
        """Each run struck by its faults and judged; faults an exact run went past are dealt again, once."""
        missed: list[Fault] = []
        j = 0
        while j < len(runs):
            if self.s.budget is not None and time.monotonic() - self.t0 > self.s.budget:
                break
            faults, j = runs[j], j + 1
            report.runs.append(judge_run(ref, faults, self._interrupted(j, faults, table, timeout, bar)))
            missed += passed_over(report.runs[-1], faults)
            if j == len(runs) and missed and not report.carried and all(r.exact for r in report.runs):
                runs += given(missed, self.s.per_run)  # once: the faults a run went past strike a fresh run
                report.carried = len(missed)
                bar.total += len(missed) + len(runs) - j

    def _attempt(self, argv: list[str], run: str, i: int, **kw) -> Attempt:
        run_dir = (self.out / "runs" / run).resolve()
        run_dir.mkdir(parents=True, exist_ok=True)
        argv = [a.replace("{run}", str(run_dir)) for a in argv]  # absolute: a command may cd
        attempt = run_attempt(argv, self.out / "records" / run / f"attempt-{i}",
                              self.out / "logs" / f"{run}-{i}.log", every=self.s.every, run=run_dir, **kw)
        attempt.disk = disk.scan(run_dir)
        fault = kw.get("fault")
        if fault and fault["mode"] in POWER_KINDS and any(p.fault for p in attempt.processes):
            attempt.crash_disk = attempt.disk  # the machine came back up: what the page cache held may be gone
            attempt.power = cut_power(fault["mode"], attempt.processes, run_dir)
            attempt.disk = disk.scan(run_dir)
        return attempt

    def _reference(self, name: str, timeout: float) -> Attempt:
        """One uninterrupted run, which must end well and take optimizer steps."""
        attempt = self._attempt(self.command, name, 1, timeout=timeout)
        if attempt.timed_out:
            raise AuditError(f"the command did not finish within {timeout:.0f} s; give --timeout SECONDS, or a "
                             "shorter run")
        if attempt.exit_code != 0:
            hint = (f"; its Python has no torch: run it with the Python that trains (e.g. {sys.executable})"
                    if "No module named 'torch'" in attempt.tail() else
                    "; fix the command until it trains to its end on its own")
            raise AuditError(f"the command failed ({attempt.how}: {attempt.last_line}){hint}; its output: {attempt.log}")
        if not attempt.steps:
            raise AuditError("the command ran but took no optimizer step the audit could see (torch.optim's step, in a "
                             "Python started without -I, -E or -S, which would skip the audit's PYTHONPATH)")
        run_dir = (self.out / "runs" / name).resolve()
        outside = sorted({e["target"] for p in attempt.processes for e in p.of_type("save")  # after a step: a checkpoint
                          if e["local_step"] > 0 and e["target"].startswith("/")
                          and not Path(e["target"]).resolve().is_relative_to(run_dir)})
        if outside:
            raise AuditError(f"the script saves to {outside[0]}, outside its {{run}} folder: runs would share "
                             "checkpoints; give the folder it saves into as {run}")
        return attempt

    def _interrupted(self, j: int, faults: list[Fault], table: Path, timeout: float, bar) -> list[Attempt]:
        """One run struck by ``faults`` in turn, each restart by the resume command, the last one undisturbed."""
        attempts, reached = [], None
        for i, fault in enumerate([*faults, None]):
            attempt = self._attempt(self.command if i == 0 else self.resume or self.command, f"faults-{j}", i + 1,
                                    fault=fault.for_probe() if fault else None, reference=table, hint=reached,
                                    timeout=timeout, grace=self.s.grace)
            attempts.append(attempt)
            bar.update()
            reached = max((s["step"] for p in attempt.processes for s in p.steps if s.get("step") is not None),
                          default=reached)
            ended = fault is not None and not any(p.fault for p in attempt.processes) and attempt.exit_code == 0
            stuck = i > 0 and not attempt.steps and attempt.exit_code != 0  # a restart that failed before its first step
            if ended or stuck:  # the run ended before the fault could strike, or cannot go on: nothing to resume
                bar.update(len(faults) - i)
                break
        return attempts


def _checked(argv, what: str) -> list[str] | None:
    if argv is None:
        return None
    if isinstance(argv, str) or not argv:
        raise AuditError(f"the {what} must be a list of arguments (got {argv!r}); on the command line: "
                         "resume-audit -- python train.py --out {run}")
    if not any("{run}" in a for a in argv):
        raise AuditError(f"the {what} has no {{run}}: put {{run}} where the script's run folder (its checkpoints) goes, "
                         "e.g. python train.py --out {run}; each run of the audit gets a fresh one")
    return [str(a) for a in argv]


def check_platform(platform: str = sys.platform) -> None:
    """The audit keeps every process of the command under a subreaper and reads ``/proc``: Linux."""
    if not platform.startswith("linux"):
        raise AuditError(f"the audit runs on Linux only (this is {platform}): it keeps every process of the command "
                         "under a Linux subreaper; on macOS or Windows, audit inside a Linux container or WSL 2")


def _fresh(out: Path) -> Path:
    """``out`` (made absolute) empty, or an earlier audit's folder (cleared); anything else is refused."""
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise AuditError(f"--out {out} is a file; give a folder for the audit's runs and report")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise AuditError(f"--out {out} holds files of something other than an audit; give an empty or new folder")
        shutil.rmtree(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    return out
