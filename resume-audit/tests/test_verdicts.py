"""What a verdict may claim, and how a CI job reads it: never exact about what was not seen or
not delivered (inconclusive, exit 3); JUnit XML and a Markdown summary a test reads back; each
finding's command, run alone, shows it again."""
import json
import shlex
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from resume_audit import audit, cli
from resume_audit.report import EXIT_CODES, INCONCLUSIVE, NOT_EXACT

pytestmark = pytest.mark.slow
ZOO = Path(__file__).parent / "zoo"
FAST = {"references": 1, "progress": False}

COPIES = '''import os, subprocess, sys, torch
torch.manual_seed(0)
out = sys.argv[sys.argv.index("--out") + 1]
os.makedirs(out, exist_ok=True)
net = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
path, start = os.path.join(out, "ck.pt"), 0
if os.path.exists(path):
    saved = torch.load(path, weights_only=True)
    net.load_state_dict(saved["net"])
    start = saved["step"]
for step in range(start, 12):
    opt.zero_grad(); net(torch.full((3, 4), float(step))).sum().backward(); opt.step()
    torch.save({"net": net.state_dict(), "step": step + 1}, path + ".tmp")
    subprocess.run(["cp", path + ".tmp", os.path.join(out, "mirror.pt")], check=True)  # a writer no probe sees
    os.replace(path + ".tmp", path)
'''


def test_a_file_the_audit_did_not_see_written_makes_it_inconclusive_never_exact(tmp_path):
    script = tmp_path / "copies.py"
    script.write_text(COPIES)
    report = audit([sys.executable, str(script), "--out", "{run}"], out=tmp_path / "a", faults=1, kinds=("sigkill",),
                   events=0, **FAST)
    assert report.exit_code == INCONCLUSIVE and report.verdict.startswith("INCONCLUSIVE"), report.text()
    [unseen] = report.unseen
    assert unseen.kind == "unseen-write" and "mirror.pt" in unseen.line
    assert "EXACT" not in report.verdict.split(":")[0]


def test_a_fault_that_could_not_be_delivered_is_inconclusive(tmp_path):
    """``--fault during-save@16`` on a script whose saves reach no file the audit can cut: no
    fault struck, so nothing can be claimed (once this said 'EXACT: every one of 0 faults')."""
    never_saves = tmp_path / "never.py"
    never_saves.write_text(COPIES.replace("    torch.save(", "    pass  # torch.save(").replace(
        "    subprocess.run(", "    pass  # ").replace("    os.replace(", "    pass  # "))
    report = audit([sys.executable, str(never_saves), "--out", "{run}"], out=tmp_path / "a",
                   faults=["during-save@6"], **FAST)
    assert report.faults == 0 and report.exit_code == INCONCLUSIVE, report.text()
    assert [f.kind for f in report.unseen] == ["undelivered-no-save"]
    assert "faults delivered" in report.verdict and not report.verdict.startswith("EXACT")


def test_ci_reads_junit_and_the_summary_and_each_finding_reproduces_alone(tmp_path, monkeypatch, capsys):
    """The command line on a broken script: exit 1, its report printed and written (exit 0 when
    exact: tests/test_ci_example.py, the installed command on a correct script), the JUnit file
    and the summary a CI reads, and the finding's own command showing it again."""
    summary, junit = tmp_path / "summary.md", tmp_path / "audit.xml"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    command = [sys.executable, str(ZOO / "no_optimizer_state.py"), "--out", "{run}"]
    code = cli.main(["--out", str(tmp_path / "a"), "--fault", "sigkill@14", "--fault", "sigterm@25",
                     "--references", "1", "--junit", str(junit), "--", *command])
    text = capsys.readouterr().out
    assert code == NOT_EXACT and "[optimizer]" in text and "fix: save optimizer.state_dict()" in text
    assert (tmp_path / "a" / "report.json").exists() and (tmp_path / "a" / "report.txt").exists()
    suite = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert suite.get("tests") == str(len(cases)) and int(suite.get("failures")) >= 1
    failure = cases["SIGKILL rank 0 at step 14"].find("failure")
    assert failure is not None and "optimizer state" in failure.get("message") and "--fault sigkill@14:0" in failure.text
    assert cases["the run never interrupted is deterministic"].find("failure") is None
    text = summary.read_text()
    assert text.startswith("### resume-audit: NOT EXACT") and "| 1 | **optimizer** (defect)" in text
    first = json.loads((tmp_path / "a" / "report.json").read_text())["findings"][0]
    again = shlex.split(first["again"])
    assert again[0] == "resume-audit" and again[again.index("--fault") + 1] == "sigkill@14:0"
    code = cli.main(["--out", str(tmp_path / "again"), *again[1:]])
    shown = json.loads((tmp_path / "again" / "report.json").read_text())
    assert code == NOT_EXACT and shown["faults_delivered"] == 1 and shown["findings"][0]["kind"] == first["kind"]
    assert set(EXIT_CODES) == {0, 1, 2, 3}
