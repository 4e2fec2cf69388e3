"""What a practitioner does: a fresh virtual environment with only torch in it (the CPU build of
the torch running these tests), ``pip install`` of this folder, then the ``resume-audit`` command
on a zoo script, exactly as README.md's quick start says. Nothing of the teaching kit, no tqdm."""
import os
import subprocess
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parents[1]
ZOO = HERE / "tests" / "zoo"
WRITES_BYTECODE = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", "install", "-q", *args], capture_output=True, text=True,
                          timeout=600)


def test_a_venv_with_only_torch_audits_a_script_after_pip_install(tmp_path):
    torch = pytest.importorskip("torch")
    base = torch.__version__.split("+")[0]
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    # the CPU wheel by its local label: never a multi-GB CUDA download in place of it; --no-compile: its
    # thousands of modules are not byte-compiled ahead (CPU-seconds CI does not have), the ones imported are,
    # once, by the first start, as in a practitioner's shell (a PYTHONDONTWRITEBYTECODE around the tests, as
    # in this sandbox, would have every start compile them again: 7 CPU-seconds each)
    got = _pip(python, "--no-compile", f"torch=={base}+cpu")
    if got.returncode != 0:
        pytest.skip(f"no CPU wheel of torch {base} reachable here: {got.stderr.strip().splitlines()[-1:]}")
    installed = _pip(python, str(HERE))
    assert installed.returncode == 0, installed.stderr
    names = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True).stdout
    assert "resume-audit==" in names and "tqdm" not in names and "course" not in names.lower(), names
    out = subprocess.run([str(env / "bin" / "resume-audit"), "--out", str(tmp_path / "audit"), "--fault", "sigkill@14",
                          "--references", "1", "--", str(python), str(ZOO / "correct_one_process.py"), "--out", "{run}"],
                         capture_output=True, text=True, timeout=600, env=WRITES_BYTECODE)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "EXACT: every one of 1 faults resumed bit-identically" in out.stdout, out.stdout
    assert (tmp_path / "audit" / "report.json").exists()
