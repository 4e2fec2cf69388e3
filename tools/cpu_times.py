"""A pytest plugin: the CPU-seconds each test costs, the most first, at the end of the run.

    PYTHONPATH=tools python -m pytest -p cpu_times --cpu-times 25 -m "not exhaustive" -n 2 --dist loadgroup
    cd resume-audit && PYTHONPATH=../tools ../.venv/bin/python -m pytest -p cpu_times --cpu-times 25 ...

(not in .ci/run: its PYTHONPATH would reach every process the tests start, the audited scripts too)

Why not only ``--durations``: CI is bound by its 2 cores (CONTRIBUTING, "CI is bound by the
CPU"), so a test's wall time there is its share of the cores, not its work (notebook 04's pair
took 281 s in one run and 379 s in the next). What a cut of CI's time saves is CPU. This counts,
per test (set-up, call and tear-down), the CPU time of the pytest process and of every process
it started. Where this process may make a cgroup (cgroup v1's ``cpuacct``, as root), each pytest
process moves into one of its own and reads its counter: every descendant counts, reaped or not
(a notebook's kernel reaps its forkserver late or never: CONTRIBUTING, "tools/cpu_times.py does
not see what nobody reaps"). Elsewhere it counts what ``getrusage`` sees: its own time and its
reaped children's. A process a test leaves running is counted against the tests after it. Under
pytest-xdist each worker measures its own tests and the figure travels home in the tear-down's
report (``user_properties``).
"""
from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

import pytest

KEY = "cpu_seconds"


def pytest_addoption(parser):
    parser.addoption("--cpu-times", metavar="N", type=int, default=0,
                     help="list the N tests that cost the most CPU-seconds (theirs and their processes')")


def pytest_configure(config):
    if config.getoption("--cpu-times"):
        config.pluginmanager.register(CpuTimes(config.getoption("--cpu-times")), "cpu_times_report")


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _own_cgroup() -> Path | None:
    """A cpuacct cgroup holding this process (and so whatever it starts from now on), or ``None``."""
    for stale in CPUACCT.glob("cpu_times-*"):  # an earlier run's, whose pytest process is gone
        if not Path("/proc", stale.name.removeprefix("cpu_times-")).exists():
            with contextlib.suppress(OSError):
                stale.rmdir()  # a group something still runs in refuses
    group = CPUACCT / f"cpu_times-{os.getpid()}"
    try:
        group.mkdir(exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        return group
    except OSError:
        return None


class CpuTimes:
    def __init__(self, top: int):
        self.top, self.started, self.seconds = top, {}, {}
        self.group = _own_cgroup()

    def _cpu(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.started[item.nodeid] = self._cpu()
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when == "teardown" and item.nodeid in self.started:
            spent = self._cpu() - self.started.pop(item.nodeid)
            outcome.get_result().user_properties.append((KEY, round(spent, 1)))

    def pytest_runtest_logreport(self, report):
        for key, value in report.user_properties if report.when == "teardown" else ():
            if key == KEY:
                self.seconds[report.nodeid] = value

    def pytest_unconfigure(self, config):
        if self.group is not None:  # back to the root group; the group goes once what it holds has ended
            with contextlib.suppress(OSError):
                (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
                self.group.rmdir()

    def pytest_terminal_summary(self, terminalreporter):
        if not self.seconds:
            return
        how = "cgroup" if self.group is not None else "getrusage: reaped processes only"
        terminalreporter.section(f"CPU-seconds ({how}): the {self.top} costliest tests (of {sum(self.seconds.values()):.0f} "
                                 f"in all, {len(self.seconds)} tests)")
        for nodeid, spent in sorted(self.seconds.items(), key=lambda kv: -kv[1])[:self.top]:
            terminalreporter.line(f"{spent:8.1f}  {nodeid}")
