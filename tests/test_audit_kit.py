"""The kit's own trainer, audited like any script: exact over real faults (its command line,
unchanged). The kit's reconstruction of the chapter's loop is audited by notebook 05's section 5, and tests/test_notebooks.py
checks that it names the three losses the notebook says it has."""
import sys

import pytest
from resume_audit import audit

pytestmark = pytest.mark.slow

KIT = [sys.executable, "-m", "course_lib", "train", "--run-dir", "{run}", "--world-size", "2", "--train-limit", "512",
       "--epochs", "3", "--save-every-steps", "4", "--embed-dim", "8", "--resume", "auto"]


def test_the_kits_trainer_resumes_exactly_over_every_fault(tmp_path, exact_faults):
    """20 faults (``--audit-faults``; .ci/run gives fewer; bench/results/audit_zoo.json has 20), after one
    run never interrupted (``references=1``: a run that goes on bit-identically with it after every fault
    is exact, and a nondeterministic trainer would fail that too; a second reference would only name
    the cause, which the unseeded zoo scripts' tests check)."""
    report = audit(KIT, out=tmp_path / "audit", faults=exact_faults, per_run=min(10, exact_faults), seed=2,
                   progress=False, references=1)
    assert report.exact and report.exit_code == 0, report.text()
    assert report.faults >= exact_faults and len(report.reference["ranks"]) == 2
    assert {row.fault.kind for run in report.runs for row in run.rows} == {"sigkill", "sigterm", "during-save",
                                                                          "after-save"}
    preempted = [row for run in report.runs for row in run.rows if row.fault.kind == "sigterm" and row.delivered]
    went_on = [row for row in preempted if row.resumed_from is not None]  # (a SIGTERM at the last step: nothing left)
    assert went_on and all(row.redone == 0 for row in went_on), "a SIGTERM is saved at once: no step is trained again"

