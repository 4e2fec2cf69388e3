"""The command line: ``resume-audit [options] -- COMMAND ...`` (also ``python -m resume_audit``).

The options are defined here once (:func:`add_arguments`): a program that offers the audit as
one of its own subcommands (the teaching kit's ``python -m course_lib audit``) adds them to its
parser and hands the parsed arguments to :func:`run`. Exit codes: :mod:`resume_audit.report`.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
import tempfile
from pathlib import Path

from resume_audit.auditor import AuditError, Settings, audit
from resume_audit.ci import junit, markdown
from resume_audit.plan import KINDS
from resume_audit.report import BAD_INPUT, EXIT_CODES

EPILOG = """examples:
  resume-audit -- python train.py --out {run}
  resume-audit -- torchrun --standalone --nproc-per-node 2 train.py --out {run}
  resume-audit --resume-command "python train.py --out {run} --resume" -- python train.py --out {run}
  resume-audit --each submissions/ --faults 4 -- python {script} --out {run}

exit codes:
""" + "\n".join(f"  {code}  {meaning}" for code, meaning in EXIT_CODES.items())


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The audit's options, with their defaults (:class:`~resume_audit.auditor.Settings`)."""
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="how you start training, after --; {run} stands for a fresh folder per run (its checkpoints)")
    p.add_argument("--resume-command", metavar="'COMMAND ...'",
                   help="the command that resumes, quoted as one argument, when it is not the same command "
                        "(default: the same command)")
    p.add_argument("--out", help="the audit's folder: its runs, the probe's records, report.json (default: a new "
                                 "folder in the system's temporary directory, named at the end)")
    p.add_argument("--faults", type=int, default=Settings.faults, help="real faults to deliver at steps")
    p.add_argument("--events", type=int, default=Settings.events, metavar="N",
                   help="crash points at the file events of saves, beside them: a torn write, a kill before an event, "
                        "a power cut (data not fsynced lost; names not fsynced undone); 0: none")
    p.add_argument("--every-event", action="store_true",
                   help="strike every crash point of the run (each file event, in each way it allows), not a sample")
    p.add_argument("--events-under", metavar="FOLDER",
                   help="crash points only at the file events under this folder of {run} (where the checkpoints go)")
    p.add_argument("--fault", action="append", metavar="KIND@STEP[:RANK]|KIND@eN[:WHO]",
                   help="deliver this fault instead of seeded ones (repeatable), e.g. sigkill@14:1 or torn@e12:rank0 "
                        "to see again one a report showed")
    p.add_argument("--per-run", type=int, default=Settings.per_run,
                   help="faults that strike one run in turn (it resumes after each)")
    p.add_argument("--seed", type=int, default=Settings.seed, help="chooses the faults' kinds, steps and ranks")
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(Settings.kinds),
                   help="the kinds of fault to choose from (during-commit: only when named)")
    p.add_argument("--every", type=int, default=Settings.every, metavar="K",
                   help="digest parameters, gradients and optimizer state every K steps (big models)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="the longest one attempt may run (default: 4x the run never interrupted + 30 s, at least "
                        "60 s; the first run never interrupted: 3600 s)")
    p.add_argument("--grace", type=float, default=Settings.grace, metavar="SECONDS",
                   help="after SIGTERM, how long the script has to save and leave (a scheduler's warning time)")
    p.add_argument("--budget", type=float, metavar="SECONDS", help="no new interrupted run starts after this long")
    p.add_argument("--strict", action="store_true",
                   help="lost work and not durable fail too (exit 1): steps trained again that a checkpoint held, or a "
                        "SIGTERM could have saved; a checkpoint a power cut takes back")
    p.add_argument("--references", type=int, choices=(1, 2), default=Settings.references,
                   help="runs never interrupted before the faults: 2 check that the command is deterministic, 1 "
                        "trusts an earlier audit that found it so (one start fewer)")
    p.add_argument("--each", metavar="FOLDER|PATTERN",
                   help="a teacher's audit: every script of a folder (or a glob), {script} in the command")
    p.add_argument("--junit", metavar="FILE", help="also write the result as JUnit XML (one test case per fault)")
    p.add_argument("--summary", metavar="FILE",
                   help="also write a Markdown summary (default: $GITHUB_STEP_SUMMARY when it is set)")


def run(args: argparse.Namespace) -> int:
    """Audit what ``args`` (parsed by a parser :func:`add_arguments` filled) ask for; print the
    report; return the exit code. Raises :class:`~resume_audit.auditor.AuditError` for a command
    that cannot be audited."""
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    resume = shlex.split(args.resume_command) if args.resume_command else None
    options = {f.name: getattr(args, f.name) for f in dataclasses.fields(Settings)}
    options.update(faults=args.fault or args.faults, kinds=tuple(args.kinds))
    if args.each:
        from resume_audit.classroom import audit_each, classroom_text

        out = args.out or tempfile.mkdtemp(prefix="resume-audit-class-")
        rows = audit_each(args.each, command, resume, out=out, **options)
        print(classroom_text(rows))
        print(f"table: {Path(out).resolve() / 'classroom.json'}")
        return 0 if all(r["exit_code"] == 0 for r in rows) else 1
    report = audit(command, resume, out=args.out, **options)
    print(report.text())
    print(f"report: {report.out / 'report.json'}")
    summary = args.summary or os.environ.get("GITHUB_STEP_SUMMARY")
    if args.junit:
        Path(args.junit).write_text(junit(report), encoding="utf-8")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(markdown(report))
    return report.exit_code


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="resume-audit", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Kill a training script for real, let it resume its own way, and check that the resumed run "
                    "is bit-identical to one never interrupted; name what is missing when it is not.")
    add_arguments(p)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        return run(build_parser().parse_args(argv))
    except AuditError as err:
        print(f"resume-audit: error: {err}", file=sys.stderr)
        return BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
