"""One attempt of an audited run: the user's command, run as they run it, watched by the probe.

:func:`run_attempt` starts the command in a session of its own with the probe's folder first on
``PYTHONPATH`` and its instructions in ``$COURSE_LIB_AUDIT`` (where to write, which fault to
deliver, the reference's states to find a resume in). It waits for the command to end, at most
``timeout`` seconds, and leaves no process of the attempt behind: launchers such as torchrun
start workers in sessions of their own, so every descendant seen while the attempt ran, and
every process that wrote records, is killed once the command has ended. Only then may the next
attempt use the same run folder.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from course_lib.audit.records import Process, read_processes

PROBE_DIR = Path(__file__).resolve().parent / "probe"
ENV = "COURSE_LIB_AUDIT"
TAIL_LINES = 12


@dataclass
class Attempt:
    """How one attempt ended and what its processes recorded."""
    argv: list[str]
    exit_code: int | None    # negative: ended by that signal
    seconds: float
    timed_out: bool
    log: Path
    processes: list[Process]

    def tail(self, lines: int = TAIL_LINES) -> str:
        """The last lines of what the command printed (stdout and stderr together)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.rstrip().splitlines()[-lines:])

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


def substitute(argv: list[str], run_dir: str | Path) -> list[str]:
    """``{run}`` in each argument -> this run's folder."""
    return [a.replace("{run}", str(run_dir)) for a in argv]


def probe_env(out: Path, fault: dict | None, every: int, reference: Path | None, hint: int | None) -> dict:
    """The environment of an audited command: the caller's, the probe first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PROBE_DIR), *filter(None, [env.get("PYTHONPATH")])])
    env[ENV] = json.dumps({"out": str(out), "fault": fault, "every": every,
                           "reference": str(reference) if reference else None, "hint": hint})
    return env


def run_attempt(argv: list[str], out: Path, log: Path, fault: dict | None = None, every: int = 1,
                reference: Path | None = None, hint: int | None = None, timeout: float = 600.0,
                grace: float = 30.0) -> Attempt:
    """Run ``argv`` once (its ``{run}`` already substituted) and return how it ended.

    ``timeout`` bounds the whole attempt; after a ``sigterm`` fault the command has ``grace``
    seconds (a scheduler's warning time) to save and leave before it is killed."""
    out.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(log, "wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=probe_env(out, fault, every, reference, hint), start_new_session=True)
        seen: set[int] = set()
        deadline, timed_out, signalled = t0 + timeout, False, False
        while proc.poll() is None:
            seen |= _descendants(proc.pid)
            if fault and fault["mode"] == "sigterm" and not signalled and (out / "FAULT").exists():
                signalled, deadline = True, min(deadline, time.monotonic() + grace)
            if time.monotonic() > deadline:
                timed_out = True
                _kill(proc.pid, seen | _recorded_pids(out))
                proc.wait()
                break
            time.sleep(0.05)
    _kill(None, seen | _recorded_pids(out))  # what the command left running (torchrun's workers, orphans)
    return Attempt(argv, proc.returncode, time.monotonic() - t0, timed_out, log, read_processes(out))


def _recorded_pids(out: Path) -> set[int]:
    pids = set()
    for path in out.glob("*.jsonl"):
        try:
            pids.add(int(path.name.split("-")[0]))
        except ValueError:
            continue
    return pids


def _descendants(root: int) -> set[int]:
    """Every process below ``root`` (Linux's /proc; elsewhere none: the session and the probe's
    records still name the processes to end)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(entry.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def _kill(session: int | None, pids: set[int]) -> None:
    """SIGKILL the command's session and ``pids``, then wait until they are gone (at most 5 s)."""
    if session is not None:
        try:
            os.killpg(session, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    alive = set(pids) - {os.getpid()}
    for pid in list(alive):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            alive.discard(pid)
    end = time.monotonic() + 5
    while alive and time.monotonic() < end:
        alive = {pid for pid in alive if _alive(pid)}
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:  # a zombie (dead, not yet reaped by its parent) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
