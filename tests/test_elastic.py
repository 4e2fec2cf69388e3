"""torchrun's elastic scale-down, for real: two agents on loopback, one node killed whole in the
middle of the run; the other re-forms the group alone and finishes bit-identically."""
import sys

import pytest

from course_lib.compare import compare_runs
from course_lib.elastic import lose_a_node
from course_lib.launch import launch

from helpers import small_cfg

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kills a node's processes through /proc")


def test_a_nodes_worker_is_found_through_proc():
    """What "kill the node whole" relies on: the agent's children, read from /proc."""
    import os
    import signal
    import subprocess
    import time

    from course_lib.elastic import _children

    agent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)"])
    try:
        deadline = time.time() + 10
        while not _children(agent.pid) and time.time() < deadline:
            time.sleep(0.05)
        (worker,) = _children(agent.pid)
        assert worker != agent.pid and _children(worker) == []
    finally:
        for pid in _children(agent.pid):
            os.kill(pid, signal.SIGKILL)
        agent.kill()
        agent.wait()


@pytest.mark.slow
def test_losing_a_node_costs_no_step_and_no_bit(tmp_path):
    cfg = small_cfg(tmp_path / "elastic", reduction="invariant", train_limit=4000, epochs=1, threads_per_rank=1,
                    timeout_s=30)
    launch(cfg.replace(run_dir=str(tmp_path / "reference")), quiet=True)
    result = lose_a_node(cfg, after_step=15)
    assert result["exit_code"] == 0 and result["world_size_at_end"] == 1, result["log"][-3000:]
    assert "emergency checkpoint" in result["log"] and "continues bit-identically" in result["log"]
    assert 0 < result["seconds_to_first_step_after"] < 120
    comparison = compare_runs(tmp_path / "reference", tmp_path / "elastic")
    assert comparison["identical"], comparison
    assert comparison["skipped_samples"] == comparison["repeated_samples"] == 0
