"""The platform decisions, checked here by faking the platform (``portability`` reads
``sys.platform`` at each call): what macOS and Windows laptops get, and that Linux gets nothing extra."""
import multiprocessing
import os
import signal
import socket
import sys

import pytest

from course_lib._runtime import portability as port
from course_lib.config import ConfigError, TrainConfig


@pytest.fixture
def on(monkeypatch):
    """``on("windows")`` makes this process look like that platform to :mod:`portability`."""
    for var in ("GLOO_SOCKET_IFNAME", "USE_LIBUV", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)

    def fake(name: str):
        monkeypatch.setattr(sys, "platform", {"windows": "win32", "macos": "darwin", "linux": "linux"}[name])
        assert port.system() == name
    return fake


def test_linux_needs_nothing_extra(on):
    on("linux")
    assert port.process_group_env() == {} and port.tcpstore_uses_libuv()
    assert port.kill_modes() == ("sigkill", "sigterm", "during-save")
    port.check_kill_modes(["sigterm", "during-save"])
    assert port.hard_kill_signal() == signal.SIGKILL and port.killed_hard(-signal.SIGKILL) and not port.killed_hard(1)
    assert port.nice_is_per_thread()


def test_macos_gets_gloo_on_lo0_for_a_run_on_one_machine(on, monkeypatch):
    on("macos")
    assert port.process_group_env("127.0.0.1") == {"GLOO_SOCKET_IFNAME": "lo0"}
    assert port.process_group_env("10.0.0.7") == {}  # several machines: gloo's own choice
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "en0")
    assert port.process_group_env() == {}  # yours wins
    monkeypatch.delenv("GLOO_SOCKET_IFNAME")
    port.apply_process_group_env()
    assert os.environ["GLOO_SOCKET_IFNAME"] == "lo0"


def test_windows_gets_no_libuv_and_refuses_sigterm_in_one_line(on, monkeypatch):
    on("windows")
    assert port.process_group_env() == {"USE_LIBUV": "0"} and not port.tcpstore_uses_libuv()
    assert port.kill_modes() == ("sigkill", "during-save") and not port.nice_is_per_thread()
    with pytest.raises(ConfigError) as err:
        port.check_kill_modes(["sigkill", "sigterm"])
    line = str(err.value)
    assert "\n" not in line and "--kill-mode sigterm" in line and "sigkill or during-save" in line
    monkeypatch.delattr(signal, "SIGKILL")  # as on Windows: TerminateProcess through os.kill(pid, SIGTERM)
    assert port.hard_kill_signal() == signal.SIGTERM and port.killed_hard(signal.SIGTERM)


def test_a_kill_mode_the_platform_lacks_is_refused_before_anything_starts(on, tmp_path):
    import course_lib.checkpoint.store  # noqa: E401,F401 - imported as Linux (datasets)
    from course_lib.ddp.launch import check_before_start

    on("windows")
    with pytest.raises(ConfigError, match="use --kill-mode sigkill or during-save"):
        check_before_start(TrainConfig(run_dir=str(tmp_path), kill_at_step=[5], kill_mode=["sigterm"]))
    check_before_start(TrainConfig(run_dir=str(tmp_path), kill_at_step=[5], kill_mode=["during-save"]))


def test_a_busy_master_port_is_one_line_and_none_picks_a_free_one(on, monkeypatch):
    on("linux")
    free = port.choose_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", free))  # a port is free once its socket is closed: bind proves it
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        monkeypatch.setenv("MASTER_PORT", str(s.getsockname()[1]))  # what a crashed cell's run leaves behind
        with pytest.raises(ConfigError, match="already taken.*unset MASTER_PORT") as err:
            port.choose_port()
        assert "\n" not in str(err.value)
    monkeypatch.setenv("MASTER_PORT", str(free))
    assert port.choose_port() == free
    monkeypatch.setenv("MASTER_PORT", "http")
    with pytest.raises(ConfigError, match="not a port number"):
        port.choose_port()


def test_ranks_start_from_a_forkserver_where_the_os_has_one(on, monkeypatch):
    on("linux")
    assert port.start_method() == "forkserver" and port.start_method("spawn") == "spawn"
    on("windows")
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])  # what Windows offers
    assert port.start_method("auto") == "spawn"
    with pytest.raises(ConfigError, match="--start-method forkserver does not exist on windows; use one of spawn") as err:
        port.start_method("forkserver")
    assert "\n" not in str(err.value)


def test_launching_while_spawn_imports_the_script_says_what_to_write(monkeypatch, tmp_path):
    from course_lib.ddp.launch import launch

    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    with pytest.raises(ConfigError, match='if __name__ == "__main__"'):
        launch(TrainConfig(run_dir=str(tmp_path)), quiet=True)
    assert not (tmp_path / "logs").exists()


def test_a_program_read_from_stdin_is_refused_before_any_rank_starts(monkeypatch):
    """Every rank re-imports ``__main__`` by its path: ``python - < script.py`` has none, and
    each rank used to die with exit code 1 before its first step."""
    import sys

    from course_lib._runtime.rank_start import start_ranks

    monkeypatch.setattr(sys.modules["__main__"], "__file__", "<stdin>", raising=False)
    with pytest.raises(ConfigError, match=r"main script is '<stdin>', not a file.*save the program to a file") as err:
        start_ranks(print, (), nprocs=1)
    assert "\n" not in str(err.value)


def test_only_portability_reads_the_platform():
    """The platform decisions stay in one module (tests and the Linux-only bench tools aside)."""
    from pathlib import Path

    pkg = Path(port.__file__).parent
    readers = sorted(p.name for p in pkg.glob("*.py") if "sys.platform" in p.read_text() or "os.name" in p.read_text())
    assert readers == ["portability.py"], readers
