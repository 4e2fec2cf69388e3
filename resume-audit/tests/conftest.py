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
