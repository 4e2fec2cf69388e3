"""docs/audit.md's CI example, run as it is written: its audit line, on a correct script of the
zoo as ``train.py`` in a fresh folder, exits 0 and leaves the JUnit file and the report it names.
It is also CI's audit of that correct script over every kind of fault and crash point (with
``--audit-faults`` faults: tests/test_zoo.py, under ``-m exhaustive``)."""
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parents[1]


def test_the_ci_example_in_the_docs_runs_as_written(tmp_path):
    doc = (HERE / "docs" / "audit.md").read_text()
    [line] = re.findall(r"^\s*- run: (resume-audit .+)$", doc, re.M)
    argv = [sys.executable if a == "python" else a for a in shlex.split(line)]
    for name, target in (("correct_one_process.py", "train.py"), ("zoo_common.py", "zoo_common.py")):
        shutil.copyfile(HERE / "tests" / "zoo" / name, tmp_path / target)
    done = subprocess.run([str(Path(sys.executable).parent / "resume-audit"), *argv[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    suite = ET.parse(tmp_path / "audit.xml").getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests")) >= 4
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    assert report["exact"] and "EXACT" in done.stdout and report["faults_delivered"] >= 8, report["verdict"]
    kinds = {f["kind"] for run in report["runs"] for f in run["faults"] if f["delivered"]}
    assert kinds == {"sigkill", "sigterm", "during-save", "after-save", "torn", "before", "power-data",
                     "power-names"}, kinds
    assert all(run["exact"] for run in report["runs"]) and not [f for f in report["findings"] if f["defect"]]
