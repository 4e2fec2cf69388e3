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


def test_transformers_is_the_version_ci_runs():
    """transformers changes what a tokenizer call leaves behind from one minor version to the next
    (5.25 left padding on after the chapter's call, and notebook 02 taught 0.0 % padding), so the kit
    accepts only the version its CI installs and tests: a pin, the same in pyproject.toml and
    environment.yml, and the one installed here."""
    from importlib.metadata import version

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d for d in deps if _name(d) == "transformers"]
    assert len(pins) == 1 and re.fullmatch(r"transformers==[\d.]+", pins[0].replace(" ", "")), pins
    pinned = pins[0].split("==")[1].strip()
    assert f"transformers=={pinned}" in (ROOT / "environment.yml").read_text().replace(" ", "")
    assert version("transformers") == pinned, f"installed {version('transformers')}, pinned {pinned}: run kit.py again"
