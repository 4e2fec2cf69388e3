"""The README's two commands and CI, as a new user and CI meet them: each on a fresh clone of
this checkout's HEAD, timed from outside, run twice (the first run sets up ``.venv``, the second
finds it and only runs the job). Then ``bash .ci/run`` on a third fresh clone: set-up, the quick
main job and the full suite on two workers, the 15-minute budget of CI.

    python bench/kit_commands.py [--no-ci]

The docs quote these runs rounded (docs/install.md, docs/testing.md); the precise ones are here,
in ``bench/results/kit_commands.json``.
"""
import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

from common import write

REPO = Path(__file__).resolve().parent.parent
CI_BUDGET_SECONDS = 15 * 60


def clone(work: Path, name: str) -> Path:
    target = work / name
    subprocess.run(["git", "clone", "-q", str(REPO), str(target)], check=True)
    return target


def timed(cwd: Path, argv: list[str]) -> dict:
    """One command in ``cwd``: its wall seconds, exit code and the lines a reader looks for."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    seconds = round(time.perf_counter() - t0, 1)
    out = proc.stdout + proc.stderr
    found = {"passed": re.findall(r"(\d+) passed", out)[-1:], "skipped": re.findall(r"(\d+) skipped", out)[-1:],
             "failed": re.findall(r"(\d+) failed", out)[-1:],
             "held_out_percent": re.findall(r"held-out accuracy (\d+\.\d+)%", out)[-1:],
             "tests_seconds": re.findall(r" in (\d+\.\d+)s", out)[-1:]}
    row = {"command": " ".join(argv), "seconds": seconds, "exit_code": proc.returncode,
           **{k: float(v[0]) if "." in v[0] else int(v[0]) for k, v in found.items() if v}}
    print(f"{row['command']}: {seconds} s, exit {proc.returncode}", flush=True)
    if proc.returncode:
        row["tail"] = out[-3000:]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-ci", action="store_true", help="skip `bash .ci/run` (the longest part: about 12 minutes)")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    out = {"commit": commit}
    with tempfile.TemporaryDirectory() as work:
        job, tests = clone(Path(work), "job"), clone(Path(work), "tests")
        out["command_1"] = [timed(job, ["python3", "kit.py"]) for _ in range(2)]
        out["command_2"] = [timed(tests, ["python3", "kit.py", "test"]) for _ in range(2)]
        if not args.no_ci:
            ci = timed(clone(Path(work), "ci"), ["bash", ".ci/run"])
            out["ci"] = {**ci, "budget_seconds": CI_BUDGET_SECONDS, "under_budget": ci["seconds"] < CI_BUDGET_SECONDS}
    write("kit_commands", out)
    failed = [r["command"] for r in [*out["command_1"], *out["command_2"], *([out["ci"]] if "ci" in out else [])]
              if r["exit_code"]]
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
