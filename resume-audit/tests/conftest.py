"""The audit's own tests: `pytest` in this folder (the zoo and the process-level tests are
marked slow: `pytest -m ""` runs them too). The zoo's scripts are started with this Python, which
must have torch."""
import pytest


def pytest_addoption(parser):
    parser.addoption("--audit-faults", metavar="N", type=int, default=20,
                     help="real faults for the audits that must come out exact (the zoo's correct scripts and fixed "
                          "twins; default 20); a CI short on time gives fewer")


@pytest.fixture
def exact_faults(request) -> int:
    return request.config.getoption("--audit-faults")


# seconds each took in .ci/run on two workers (--durations, 2026-12-07): started first, they leave the
# short ones to fill the end of both workers' queues (--dist loadgroup hands out tests in this order), so
# no worker ends alone on a long one (most are in test_zoo.py, collected last)
LONGEST = {"test_ci_example.py::": 60, "correct_spawn_ddp]": 56, "test_install.py::": 49, "test_the_racy_save": 31,
           "test_a_teacher_audits": 28, "test_a_compiled_model": 26, "test_ci_reads_junit": 25,
           "starts_torchrun_from_a_shell": 25}


def pytest_collection_modifyitems(config, items):
    def weight(item) -> int:
        return max((s for key, s in LONGEST.items() if key in item.nodeid), default=0)

    items.sort(key=weight, reverse=True)  # stable: the rest keep their order
