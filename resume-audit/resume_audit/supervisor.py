"""The process boundary of one attempt: a small supervisor that starts the audited command and
answers for every process it starts, and for none other (Linux; stdlib only).

Run by :func:`resume_audit.attempt.run_attempt` as ``python supervisor.py CONFIG.json``; it
writes ``{"exit_code", "seconds", "timed_out"}`` to the config's ``result``. How (a child
subreaper, pidfds, ``PR_SET_PDEATHSIG``) and why: docs/audit.md ("The process boundary").
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
PARENT = "RESUME_AUDIT_PARENT"  # the probe's name for it (resume_audit_probe.PARENT): run as a script, no import
POLL_S = 0.05
CLEAN_UP_S = 10.0


def descendants(root: int) -> set[int]:
    """The live (not zombie) processes below ``root``, from ``/proc``."""
    parents, zombies = {}, set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat(int(entry.name))
        if fields is not None:
            parents[int(entry.name)] = int(fields[1])
            if fields[0] == "Z":
                zombies.add(int(entry.name))
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found - zombies


def _stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name: state, ppid, ... (``None``: gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def kill_descendant(pid: int, ours: set[int]) -> None:
    """SIGKILL ``pid`` if, once a pidfd holds it, it is still a child of this supervisor or of
    one of ``ours``: the pidfd names that very process, so a reused PID cannot be hit."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        fields = _stat(pid)
        if fields is not None and int(fields[1]) in ours | {os.getpid()}:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        os.close(fd)


def end_all() -> None:
    """SIGKILL every live descendant until none is left, reaping each (the orphans are ours)."""
    end = time.monotonic() + CLEAN_UP_S
    while time.monotonic() < end:
        alive = descendants(os.getpid())
        _reap()
        if not alive:
            return
        for pid in alive:
            kill_descendant(pid, alive)
        time.sleep(POLL_S)


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):  # none left
        while os.waitpid(-1, os.WNOHANG)[0]:  # 0: none has ended yet
            pass


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def main(config_path: str) -> int:
    with open(config_path) as f:
        cfg = json.load(f)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    t0 = time.monotonic()
    deadline, timed_out, signalled = t0 + cfg["timeout"], False, False
    env = {**cfg["env"], PARENT: str(os.getpid())}  # the probe tells the command's own process by its parent
    with open(cfg["log"], "wb") as sink:
        proc = subprocess.Popen(cfg["argv"], stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    while proc.poll() is None and not stop:
        struck = _read(cfg["fault_file"])
        if " power" in struck:  # the machine went down: every process of the command at once (reaped below)
            alive = descendants(os.getpid())
            for pid in alive:
                kill_descendant(pid, alive)
            break
        if cfg["sigterm_fault"] and not signalled and struck:
            signalled, deadline = True, min(deadline, time.monotonic() + cfg["grace"])
        if time.monotonic() > deadline:
            timed_out = True
            break
        time.sleep(POLL_S)
    if proc.poll() is None:  # timed out, or the auditor has gone: the command first, for its exit code
        proc.kill()
        proc.wait()
    end_all()  # what of the command still lives: torchrun's workers, orphans, the rest of a hung run
    result = {"exit_code": proc.returncode, "seconds": time.monotonic() - t0, "timed_out": timed_out or bool(stop)}
    with open(cfg["result"], "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
