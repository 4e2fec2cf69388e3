"""The chaos drill in small: real kills at random steps, automatic resumes, exact comparisons,
and the time from restart to the first resumed step read from the ledgers."""
import pytest
from helpers import small_cfg

from bench.chaos_drill import chaos_drill


@pytest.mark.slow
@pytest.mark.parametrize("reduction", ["ddp", "invariant"])
def test_chaos_drill_resumes_identically_and_times_the_restart(tmp_path, reduction):
    rows = chaos_drill(tmp_path, small_cfg(tmp_path / "unused", max_steps=12, reduction=reduction), kills=2, seed=3)
    assert [r["identical"] for r in rows] == [True, True], rows
    for r in rows:
        # work lost is bounded by the checkpoint interval (small_cfg saves every 5 steps)
        assert 0 <= r["steps_redone"] <= 5
        if r["restart_to_first_step_seconds"] is not None:  # None: killed after the last step
            assert 0 < r["restart_to_first_step_seconds"] < r["resume_call_seconds"]
