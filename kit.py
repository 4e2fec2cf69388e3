"""The kit in two commands, the same on Linux, macOS and Windows (there: `py kit.py ...`).

    python3 kit.py [--quick ...]     set up .venv if needed, then run the main job
                                     (`python -m course_lib pipeline`, options passed on)
    python3 kit.py test [ARGS ...]   set up .venv if needed, then run the tests
                                     (`python -m pytest`, ARGS passed on: `-m ""` is the full suite)
    python3 kit.py setup             only set up

Setting up makes `.venv` in this folder and installs torch, then the kit with its notebook and
test tools and the audit it depends on (`-e ./resume-audit -e ".[dev]"`: the audit is a
distribution of its own, in this repository). It runs once: a stamp in `.venv` remembers a hash
of both pyproject.toml files and the torch build, and a later run with the same ones goes
straight to its job.

Why a script and not one pip line: which torch is a decision, and each wrong answer cost this
project time (CONTRIBUTING, "Things that cost us time"):
- Linux without an NVIDIA GPU needs PyTorch's CPU index: PyPI's Linux torch is the CUDA build,
  several GB the machine cannot use. Where that index does not resolve (offline CI), pip would
  retry it 5 times per package, so it is added only where it resolves, and then only a `+cpu`
  wheel pip already knows of (its configured find-links) is accepted.
- With an NVIDIA GPU (`nvidia-smi` runs), the default build. macOS and Windows wheels on PyPI
  are CPU builds already.
- torch is installed with pip (uv does not read pip's configuration, so it would miss a local
  CPU wheel and take a CUDA one), its bytecode compiled on every core afterwards; the rest with uv
  where it installs, 3x faster than pip, with bytecode compiled (PYTHONDONTWRITEBYTECODE=1
  machines would otherwise compile at every import).
- Afterwards, without a GPU, a CUDA build of torch is an error, not a surprise later.
Only the standard library, so it runs before anything is installed. The steps by hand:
docs/install.md.
"""

import hashlib
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / "kit-installed.txt"
TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
AUDIT = "resume-audit"  # the audit's own distribution, a folder of this repository; the kit depends on it
KIT = ["-e", f"./{AUDIT}", "-e", ".[dev]"]  # in one install, so that the kit's dependency is met by the folder
MIN_PYTHON = (3, 10)


def say(message: str) -> None:
    print(f"kit: {message}", flush=True)


def fail(message: str) -> None:
    raise SystemExit(f"kit: {message}")


def python_problem(version: tuple, executable: str) -> str:
    """Why this Python cannot set up the kit, in one line ("" when it can)."""
    if version >= MIN_PYTHON:
        return ""
    return (f"the kit needs Python >= 3.10; this is {'.'.join(map(str, version))} ({executable}): "
            "run this file with a newer one, e.g. python3.12 kit.py")


def parse(argv: list) -> tuple:
    """(what to do, the arguments passed on): "pipeline" (the default), "test", "setup" or "help"."""
    first = argv[0] if argv else ""
    if first in ("test", "pipeline", "setup"):
        return first, list(argv[1:])
    if first in ("-h", "--help", "help"):
        return "help", []
    return "pipeline", list(argv)


def job(what: str, python: str, args: list) -> list:
    """The command line of the job, run with the environment's Python."""
    if what == "test":
        return [python, "-m", "pytest", *args]
    return [python, "-m", "course_lib", "pipeline", *args]


def torch_pip_args(system: str, gpu: bool, index_resolves: bool) -> list:
    """pip's arguments for torch: the default build with a GPU, else the CPU build."""
    if gpu or system != "Linux":  # macOS and Windows wheels on PyPI are CPU builds
        return [TORCH]
    if index_resolves:
        return [TORCH, "--extra-index-url", CPU_INDEX]
    return [TORCH + "+cpu"]  # a local CPU wheel or nothing: never a CUDA download


def stamp_key(pyproject: bytes, gpu: bool) -> str:
    """What an install depends on: the pyproject.toml files (joined) and the torch build."""
    build = f"{TORCH} {'default' if gpu else 'cpu'}"
    return hashlib.sha256(pyproject + b"\0" + build.encode()).hexdigest()


def is_set_up(stamp: Path, key: str, python: Path) -> bool:
    return python.exists() and stamp.exists() and stamp.read_text().split("\n", 1)[0] == key


def venv_python(venv: Path = VENV) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def has_nvidia_gpu() -> bool:
    if not shutil.which("nvidia-smi"):
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def resolves(host: str) -> bool:
    try:
        socket.getaddrinfo(host, 443)
        return True
    except OSError:
        return False


def succeeds(cmd: list) -> bool:
    return subprocess.run(cmd, cwd=ROOT).returncode == 0


def run(cmd: list, what: str) -> None:
    if not succeeds(cmd):
        fail(f"{what} failed (its message is above); fix that and run the same command again")


def set_up(gpu: bool, key: str) -> None:
    start = time.monotonic()
    python = venv_python()
    if not python.exists():
        say(f"creating {VENV.name} with Python {platform.python_version()}")
        if subprocess.run([sys.executable, "-m", "venv", str(VENV)]).returncode != 0:
            shutil.rmtree(VENV, ignore_errors=True)
            fail("could not create .venv (Debian/Ubuntu: sudo apt-get install python3-venv)")
    py = str(python)
    run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], "upgrading pip")
    system = platform.system()
    args = torch_pip_args(system, gpu, system == "Linux" and not gpu and resolves("download.pytorch.org"))
    kind = "the default build (NVIDIA GPU found)" if gpu else "the CPU build, about 200 MB"
    say(f"installing torch, {kind}: pip install {' '.join(args)}")
    # pip compiles one file at a time; compileall on every core writes the same .pyc files in two thirds of the
    # time (torch: 24 s -> 16 s on 2 cores). Its exit code is not read: like pip, it skips the few files that
    # only a newer Python parses (torch/testing/_internal/py312_intrinsics.py)
    run([py, "-m", "pip", "install", "-q", "--no-compile", *args], "installing torch")
    subprocess.run([py, "-c", "import compileall, sysconfig; "
                    "compileall.compile_dir(sysconfig.get_paths()['purelib'], quiet=2, workers=0)"], cwd=ROOT)
    say(f'installing the kit with its notebook and test tools, and the audit: {" ".join(KIT)}')
    uv_install = [py, "-m", "uv", "pip", "install", "-q", "--compile-bytecode", "--python", py, *KIT]
    if not (succeeds([py, "-m", "pip", "install", "-q", "uv"]) and succeeds(uv_install)):
        say("uv did not do it; pip instead (slower)")
        run([py, "-m", "pip", "install", "-q", *KIT], f"installing {' '.join(KIT)}")
    found = subprocess.run([py, "-c", "import torch; print(torch.__version__, torch.version.cuda or '')"],
                           capture_output=True, text=True, cwd=ROOT)
    if found.returncode != 0:
        fail("torch does not import: " + (found.stderr.strip().splitlines() or ["no message"])[-1])
    version, _, cuda = found.stdout.strip().partition(" ")
    if cuda and not gpu:
        fail(f"a CUDA build of torch ({version}, CUDA {cuda}) came in on a machine without an NVIDIA GPU: "
             "delete .venv and see docs/install.md for the CPU build")
    if gpu and not cuda:
        say(f"note: torch {version} is a CPU build although there is a GPU (a CUDA build: docs/gpus.md)")
    STAMP.write_text(f"{key}\n{version} {'CUDA ' + cuda if cuda else 'CPU'}; delete this file to install again\n")
    say(f"set up in {time.monotonic() - start:.0f} s (torch {version})")


def main(argv: list) -> int:
    problem = python_problem(sys.version_info[:3], sys.executable)
    if problem:
        fail(problem)
    what, args = parse(argv)
    if what == "help":
        print(__doc__)
        return 0
    if what == "setup" and args:
        fail(f"setup takes no arguments, got {' '.join(args)}")
    gpu = has_nvidia_gpu()
    key = stamp_key((ROOT / "pyproject.toml").read_bytes() + (ROOT / AUDIT / "pyproject.toml").read_bytes(), gpu)
    if is_set_up(STAMP, key, venv_python()):
        say(f"{VENV.name} is set up (delete {STAMP.relative_to(ROOT)} to install again)")
    else:
        set_up(gpu, key)
    if what == "setup":
        return 0
    cmd = job(what, str(venv_python()), args)
    say("running " + " ".join([os.path.relpath(cmd[0], ROOT), *(a or '""' for a in cmd[1:])]))
    return subprocess.run(cmd, cwd=ROOT).returncode


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit("kit: interrupted")
