"""One attempt of an audited run: the user's command, run as they run it, watched by the probe.

:func:`run_attempt` hands the command to the :mod:`~resume_audit.supervisor` (the process
boundary) with the probe's folder first on ``PYTHONPATH`` and its instructions in
``$RESUME_AUDIT``; only once no process of the attempt is left may the next attempt use the
run folder. Every path handed to the command is absolute: a command that changes folder
(``cd {run} && ...``) finds them all.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from resume_audit.probe.resume_audit_probe import ENV
from resume_audit.records import Process, read_processes

PROBE_DIR = Path(__file__).resolve().parent / "probe"
SUPERVISOR = Path(__file__).resolve().parent / "supervisor.py"


@dataclass
class Attempt:
    """How one attempt ended and what its processes recorded."""
    exit_code: int | None    # negative: ended by that signal
    seconds: float
    timed_out: bool
    log: Path
    processes: list[Process]
    records: Path | None = None  # the probe's folder (its records, the shadows of a power cut's attempt)
    run: Path | None = None      # the run's folder
    disk: dict | None = None     # the run's folder as the next attempt finds it (disk.scan)
    crash_disk: dict | None = None  # ... as the crash left it, before a power cut took anything back
    power: list[str] | None = None  # what a power cut took back (None: none struck)

    def tail(self) -> str:
        """The last 12 lines of what the command printed (stdout and stderr together)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.rstrip().splitlines()[-12:])

    @property
    def last_line(self) -> str:
        """The last line it printed that is not blank, or how it ended."""
        return self.said("") or self.how

    def said(self, words: str) -> str | None:
        """The last of :meth:`tail`'s lines that holds ``words`` and is not blank, or ``None``."""
        return next((ln.strip()[:200] for ln in reversed(self.tail().splitlines()) if words in ln and ln.strip()), None)

    @property
    def steps(self) -> int:
        return sum(len(p.steps) for p in self.processes)

    @property
    def how(self) -> str:
        if self.timed_out:
            return f"still running after {self.seconds:.0f} s (killed)"
        if self.exit_code is not None and self.exit_code < 0:
            return f"killed by {signal.Signals(-self.exit_code).name}"
        return f"exit code {self.exit_code}"


def probe_env(out: Path, fault: dict | None, every: int, reference: Path | None, hint: int | None,
              run: Path | None = None) -> dict:
    """The environment of an audited command: the caller's, the probe first on ``PYTHONPATH``,
    every path in the probe's instructions absolute (``run``: the folder whose file events it records)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PROBE_DIR), *filter(None, [env.get("PYTHONPATH")])])
    env[ENV] = json.dumps({"out": str(Path(out).resolve()), "fault": fault, "every": every,
                           "reference": str(Path(reference).resolve()) if reference else None, "hint": hint,
                           "run": str(Path(run).resolve()) if run else None})
    return env


def run_attempt(argv: list[str], out: Path, log: Path, fault: dict | None = None, every: int = 1,
                reference: Path | None = None, hint: int | None = None, timeout: float = 600.0,
                grace: float = 30.0, run: Path | None = None) -> Attempt:
    """Run ``argv`` once (its ``{run}`` already substituted) under the supervisor and return how
    it ended. ``timeout`` bounds the whole attempt; after a ``sigterm`` fault the command has
    ``grace`` seconds (a scheduler's warning time) to save and leave before it is killed; a power
    cut ends every process of it at once. ``run``: the run's folder, whose file events the probe
    records (``None``: none)."""
    out, log = Path(out).resolve(), Path(log).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="audit-attempt-") as tmp:
        config, result = Path(tmp) / "config.json", Path(tmp) / "result.json"
        config.write_text(json.dumps({
            "argv": argv, "env": probe_env(out, fault, every, reference, hint, run), "log": str(log), "timeout": timeout,
            "grace": grace, "sigterm_fault": bool(fault and fault["mode"] == "sigterm"),
            "fault_file": str(out / "FAULT"), "result": str(result)}))
        supervisor = subprocess.Popen([sys.executable, str(SUPERVISOR), str(config)], stdin=subprocess.DEVNULL)
        try:
            supervisor.wait()
        except BaseException:  # an interrupted notebook or test: the supervisor ends the command first
            supervisor.send_signal(signal.SIGTERM)
            supervisor.wait()
            raise
        if not result.exists():
            raise RuntimeError(f"the audit's supervisor ended without a result (exit code {supervisor.returncode})")
        ended = json.loads(result.read_text())
    return Attempt(ended["exit_code"], ended["seconds"], ended["timed_out"], log, read_processes(out), out,
                   Path(run).resolve() if run else None)
