"""The platform decisions, in one place: what a learner's macOS or Windows laptop needs that the
Linux machines the kit is tested on do not. ``launch``, ``faults``, ``train``, the checkpoint
store and the ledger ask here; nothing else looks at ``sys.platform``.

Tested on Linux only; macOS and Windows are expected from the libraries' own documentation and
issues (macOS: gloo must be told ``lo0``; Windows: no libuv, no POSIX signals, no forkserver). What
each platform gets, and why, is the table of docs/platforms.md.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import sys
from pathlib import Path

from course_lib.config import KILL_MODES, ConfigError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def system() -> str:
    """``"windows"``, ``"macos"`` or ``"linux"`` (any other POSIX counts as Linux here), read
    from ``sys.platform`` at each call (CPython says ``win32`` on every Windows)."""
    if sys.platform == "win32":
        return "windows"
    return "macos" if sys.platform == "darwin" else "linux"


# --------------------------------------------------------------------------- process groups
def process_group_env(master_addr: str = "127.0.0.1") -> dict[str, str]:
    """The environment variables this platform needs before a process group forms, less those
    already set (a setting of yours wins)."""
    want = {}
    if system() == "macos" and master_addr in LOOPBACK:
        want["GLOO_SOCKET_IFNAME"] = "lo0"
    if system() == "windows":
        want["USE_LIBUV"] = "0"
    return {k: v for k, v in want.items() if k not in os.environ}


def apply_process_group_env(master_addr: str = "127.0.0.1") -> None:
    """Set :func:`process_group_env` in this process (spawned ranks inherit it)."""
    os.environ.update(process_group_env(master_addr))


def tcpstore_uses_libuv() -> bool:
    """What to pass as ``use_libuv`` to a ``TCPStore`` built by hand (torch's default is True)."""
    return system() != "windows" and os.environ.get("USE_LIBUV", "1") != "0"


def nice_is_per_thread() -> bool:
    """Linux applies ``setpriority`` to one thread (the background checkpoint writer);
    elsewhere it would renice the whole process, training included."""
    return system() == "linux"


def fsync_dir(path: str | Path) -> None:
    """Make what changed in the folder ``path`` durable: a file created, renamed or removed there.
    After a power cut, such a change may be undone until its folder is fsynced (POSIX's worst case;
    ext4 and XFS as documented), even when the file's own data was. Windows cannot open a folder
    with ``os.open``: nothing is done there (its file systems journal their entries; untested)."""
    if system() == "windows":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- signals
def kill_modes() -> tuple[str, ...]:
    """The ``--kill-mode`` values this platform can carry out."""
    return tuple(m for m in KILL_MODES if m != "sigterm") if system() == "windows" else KILL_MODES


def check_kill_modes(modes: list[str]) -> None:
    """One line naming the modes that work here, for a mode this platform lacks."""
    missing = [m for m in dict.fromkeys(modes) if m in KILL_MODES and m not in kill_modes()]
    if missing:
        raise ConfigError(f"--kill-mode {' '.join(missing)} needs POSIX signals, which {system()} does not have "
                          f"(a process there is ended at once, no handler runs); use --kill-mode "
                          f"{' or '.join(kill_modes())}")


def hard_kill_signal() -> int:
    """SIGKILL; on Windows, where it does not exist, SIGTERM, which ``os.kill`` turns into
    ``TerminateProcess``: the same hard, handler-less end."""
    return getattr(signal, "SIGKILL", signal.SIGTERM)


def killed_hard(exitcode: int | None) -> bool:
    """Did a process with this exit code die by :func:`hard_kill_signal`? (POSIX reports the
    signal negated; ``TerminateProcess`` makes the signal number the exit code.)"""
    sig = hard_kill_signal()
    return exitcode == (sig if system() == "windows" else -sig)


# --------------------------------------------------------------------------- ports and spawn
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def choose_port() -> int:
    """``MASTER_PORT`` if set and free, a free port if it is not set, one line if it is busy."""
    if "MASTER_PORT" not in os.environ:
        return free_port()
    port = os.environ["MASTER_PORT"]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", int(port)))
        except ValueError:
            raise ConfigError(f"MASTER_PORT={port!r} is not a port number; unset it and a free port is picked") from None
        except OSError:
            raise ConfigError(f"MASTER_PORT={port} is already taken on this machine (a run still alive, or one a "
                              "crashed cell left behind); unset MASTER_PORT to let launch() pick a free port, "
                              "or choose another") from None
    return int(port)


def check_spawn_safe() -> None:
    """Refuse to start ranks that could not start: every rank re-imports ``__main__`` by its
    path, so a launch at import time would recurse, and a program read from stdin
    (``python - < script.py``) has no path to import: each rank died with exit code 1 before
    its first step, its traceback in the terminal and not in the error."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise ConfigError("launch() ran while a spawned rank was importing your script: spawn re-imports __main__ "
                          "in every rank (on every OS); put the launch under  if __name__ == \"__main__\":")
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if main is not None and not os.path.isfile(main):
        raise ConfigError(f"this program's main script is {main!r}, not a file: every rank re-imports it by its path "
                          "(spawn and forkserver alike); save the program to a file and run  python FILE.py")


def start_method(requested: str = "auto") -> str:
    """The start method ``launch`` uses for its ranks: ``requested``, or for ``"auto"``
    ``forkserver`` where this platform has it, else ``spawn``.

    Why not always spawn, the chapter's way: a spawned rank is a fresh interpreter that imports
    torch and, through ``torch.optim``, ``torch._dynamo`` before its first step, so a small run
    spends most of its time starting (``bench/results/start_method.json``). A forkserver imports them once and
    forks every rank from that clean process (never from a notebook's kernel, whose threads a
    plain fork would copy mid-flight). The rank still re-imports ``__main__``, as under spawn."""
    have = multiprocessing.get_all_start_methods()
    if requested == "auto":
        return "forkserver" if "forkserver" in have else "spawn"
    if requested not in have:
        raise ConfigError(f"--start-method {requested} does not exist on {system()}; use one of "
                          f"{', '.join(m for m in ('forkserver', 'spawn') if m in have)} (or auto)")
    return requested
