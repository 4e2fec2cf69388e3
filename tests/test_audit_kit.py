"""The kit's own trainer and the chapter's loop, audited like any script: the kit's comes out
exact over 20 real faults (its command line, unchanged), the chapter's loses what notebook 05
says it loses, each loss named."""
import sys

import pytest

from course_lib.audit import audit

pytestmark = pytest.mark.slow

KIT = [sys.executable, "-m", "course_lib", "train", "--run-dir", "{run}", "--world-size", "2", "--train-limit", "512",
       "--epochs", "3", "--save-every-steps", "4", "--embed-dim", "8", "--resume", "auto"]
BOOK = [sys.executable, "-m", "course_lib.textbook", "--run-dir", "{run}", "--epochs", "4", "--save-interval", "1",
        "--train-reviews", "256", "--embed-dim", "8", "--resume", "auto"]


def test_the_kits_trainer_resumes_exactly_over_20_faults(tmp_path):
    report = audit(KIT, out=tmp_path / "audit", faults=20, per_run=10, seed=2, progress=False)
    assert report.exact and report.exit_code == 0, report.text()
    assert report.faults >= 20 and len(report.reference["ranks"]) == 2
    assert {row.fault.kind for run in report.runs for row in run.rows} == {"sigkill", "sigterm", "during-save",
                                                                          "after-save"}
    preempted = [row for run in report.runs for row in run.rows if row.fault.kind == "sigterm" and row.delivered]
    went_on = [row for row in preempted if row.resumed_from is not None]  # (a SIGTERM at the last step: nothing left)
    assert went_on and all(row.redone == 0 for row in went_on), "a SIGTERM is saved at once: no step is trained again"


def test_the_chapters_loop_loses_its_rng_its_atomic_save_and_its_preemptions(tmp_path):
    """Notebook 05's three faults (checkpoints at steps 4, 8, 12, 16): a kill after the first
    checkpoint, a preemption, a save cut half-way; one run each."""
    report = audit(BOOK, out=tmp_path / "audit", faults=["sigkill@7:1", "sigterm@10", "during-save@12"], per_run=1,
                   progress=False)
    kinds = [f.kind for f in report.findings if f.defect]
    assert kinds == ["not-atomic", "sigterm-no-save", "rng"], report.text()
    assert report.exit_code == 1
    assert not report.deterministic, "the chapter's loop is seeded: two runs never interrupted are the same run"
