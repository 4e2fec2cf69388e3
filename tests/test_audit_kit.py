"""The kit's own trainer, audited like any script: exact over real faults (its command line,
unchanged). The kit's reconstruction of the chapter's loop is audited by notebook 05's section 5, and tests/test_notebooks.py
checks that it names the three losses the notebook says it has."""
import sys

import pytest
from resume_audit import audit

pytestmark = pytest.mark.slow


SAVES = [sys.executable, "-m", "course_lib", "train", "--run-dir", "{run}", "--train-limit", "320", "--epochs", "1",
         "--save-every-steps", "2", "--keep-last", "1", "--embed-dim", "8", "--resume", "auto"]


@pytest.mark.parametrize("how", [pytest.param(["--world-size", "1"], id="1-rank", marks=pytest.mark.exhaustive),
                                 pytest.param(["--world-size", "2", "--async-save"], id="2-ranks-background")])
def test_the_kits_trainer_is_exact_and_durable_over_faults_and_at_the_crash_points_of_its_saves(tmp_path, how,
                                                                                                exact_faults):
    """Real faults at steps (``--audit-faults``, 20 unless told; .ci/run gives 4, one of each kind:
    bench/results/audit_zoo.json has 20), and crash points drawn from the file events under
    ``checkpoints/`` (one of each kind: a part torn half-way, a kill just before an event, a power cut
    that loses what was not fsynced, one that undoes the names whose folder was not fsynced): every
    resume exact, nothing lost, nothing unseen, after one run never interrupted (``references=1``:
    a nondeterministic trainer would fail the comparison too). Every crash point of both settings,
    and of the other two: bench/kit_crashpoints.py."""
    report = audit(SAVES + how, out=tmp_path / "audit", faults=exact_faults, per_run=min(10, exact_faults), seed=2,
                   events=4, events_under="checkpoints", progress=False, references=1)
    assert report.verdict_case()[0] == "exact" and report.exit_code == 0, report.text()
    assert report.faults >= exact_faults + 4
    kinds = {row.fault.kind for run in report.runs for row in run.rows}
    assert kinds == {"sigkill", "sigterm", "during-save", "after-save", "torn", "before", "power-data", "power-names"}
    preempted = [row for run in report.runs for row in run.rows if row.fault.kind == "sigterm" and row.delivered]
    went_on = [row for row in preempted if row.resumed_from is not None]  # (a SIGTERM at the last step: nothing left)
    assert all(row.redone == 0 for row in went_on), "a SIGTERM is saved at once: no step is trained again"
