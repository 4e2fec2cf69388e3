"""environment.yml must offer everything pyproject.toml needs at run time."""
import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
CONDA_NAMES = {"torch": "pytorch-cpu"}  # conda-forge spells a few packages differently


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[;]", req.strip(), maxsplit=1)[0].lower()


def test_environment_covers_runtime_dependencies():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    env = (ROOT / "environment.yml").read_text().lower()
    listed = {_name(line.strip(" -")) for line in env.splitlines() if line.strip().startswith("- ")}
    listed |= {Path(line.split()[-1]).name for line in env.splitlines() if line.strip().startswith("- -e ./")}  # a folder
    missing = [d for d in map(_name, deps) if CONDA_NAMES.get(d, d) not in listed]
    assert not missing, f"environment.yml lacks {missing}"
