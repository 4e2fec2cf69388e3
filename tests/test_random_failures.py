"""The random-failure check's arithmetic: the model replayed on a run's own failure times, the
luck-corrected comparison, and a killed process group counted as gone once it is dead."""
import itertools
import math
import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

from course_lib.beyond.advisor import Costs, expected_wall, replay_wall
from course_lib.beyond.random_failures import _reap_group, exponential_gaps, summarize


def costs(**kw) -> Costs:
    base = dict(step_seconds=0.5, save_blocking_seconds=1.0, save_write_seconds=1.0, restart_seconds=3.0,
                finish_seconds=0.5, steps=40, save_every_steps=10, async_save=False, sources={})
    return Costs(**{**base, **kw})


def test_replay_counts_every_cost_once():
    c = costs()
    never = itertools.repeat(math.inf)
    assert replay_wall(10, c, never) == pytest.approx(3.0 + 40 * 0.5 + 4 * 1.0 + 0.5)  # start, work, 4 saves, finish
    # failure 2 s into the second segment (t = 3 + 6 + 2 = 11): 2 s lost, a restart, the segment again
    once = iter([11.0, math.inf])
    assert replay_wall(10, c, once) == pytest.approx(replay_wall(10, c, iter([math.inf])) + 2.0 + 3.0)
    during_start = iter([1.0, math.inf])  # a failure in the first start costs the time spent and a restart
    assert replay_wall(10, c, during_start) == pytest.approx(1.0 + replay_wall(10, c, iter([math.inf])))


def test_the_check_takes_the_luck_out(monkeypatch):
    """Runs that behave exactly as the model says give zero error and the model's own optimum,
    however lucky their draws were; a run that pays an extra second per failure shows up."""
    c, mtbf = costs(steps=200), 20.0
    runs = {k: [{"wall_seconds": replay_wall(k, c, exponential_gaps(mtbf, seed=s)), "failures": 1, "steps_redone": 0,
                 "gap_seed": s} for s in (0, 2)] for k in (2, 8, 32, 128)}
    study = summarize(c, {"optimum_steps": 8}, runs, mtbf)
    assert study["max_abs_error"] < 1e-3 and study["all_within_20pct"]
    best = min((2, 8, 32, 128), key=lambda k: float(expected_wall(k, c, mtbf)))
    assert study["best_measured_steps"] == best
    slow = {k: [{**r, "wall_seconds": r["wall_seconds"] * 1.3} for r in rs] for k, rs in runs.items()}
    assert not summarize(c, {"optimum_steps": 8}, slow, mtbf)["all_within_20pct"]


def test_a_run_that_would_not_finish_is_unfinished_in_the_model_too():
    """Restarts of 8 s against a failure every 0.5 s on average (a busy machine's restarts in notebook 04's
    small drill): the model's run almost never finishes, so the replay stops, as the drill does, after
    MAX_FAILURES failures: ``inf``, said as None (no prediction to compare), in well under a second."""
    c, mtbf = costs(restart_seconds=8.0, steps=40), 0.5
    assert replay_wall(40, c, exponential_gaps(mtbf, seed=0)) == math.inf
    assert replay_wall(40, c, iter([math.inf])) < math.inf  # no failure: it finishes
    t0 = time.perf_counter()
    warnings.simplefilter("error")  # a notebook shows a warning to the learner: none may come of it
    run = {"wall_seconds": 6.0, "finished": False, "failures": 12, "steps_redone": 0, "gap_seed": 0, "steps": 0}
    study = summarize(c, {"optimum_steps": 40}, {40: [run]}, mtbf)
    assert time.perf_counter() - t0 < 5
    point = study["points"][0]
    assert point["predicted_median_wall_seconds"] is None and point["predicted_quartiles"] == [None, None]
    assert point["error"] is None
    assert study["best_measured_steps"] is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_group_is_gone_once_dead_not_once_reaped():
    code = ("import subprocess, sys, time; [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']) "
            "for _ in range(2)]; time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    time.sleep(0.5)
    t0 = time.perf_counter()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _reap_group(proc.pid)
    assert time.perf_counter() - t0 < 1.0  # zombies waiting for PID 1 hold no lock and cost no wall time


@pytest.mark.slow
def test_a_drill_that_cannot_finish_in_its_budget_stops_says_so_and_shows_what_it_measured(tmp_path, capsys):
    """Notebook 04's drill once ran 15 minutes on a busy machine (saving only at the end, failures
    every 15 s) and then raised, leaving a NameError in the cell below. With a budget, a run that
    cannot finish in its share stops there: it says so, the study returns what it measured (how
    far it got, how many failures), and the explorer draws it. Failures every 0.5 s (this seed's
    longest gap: 2.0 s) leave no start time to reach its first step: it can never finish."""
    from helpers import small_cfg

    from course_lib.beyond.random_failures import interval_study
    from course_lib.lab.widgets import SaveIntervalExplorer

    cfg = small_cfg(tmp_path / "unused", max_steps=40, epochs=20, async_save=False, keep_last=2)
    calibration = {"costs": costs(step_seconds=0.02, save_blocking_seconds=0.05, save_write_seconds=0.05,
                                  restart_seconds=0.3, steps=40, save_every_steps=40), "steps_per_epoch": 18}
    t0 = time.perf_counter()
    study = interval_study(tmp_path, cfg, [40], 0.5, repeats=1, calibration=calibration, budget_seconds=6)
    assert time.perf_counter() - t0 < 6 + 4  # the budget, plus one kill and its reaping
    point = study["points"][0]
    assert point["finished"] == [False] and point["failures"][0] >= 3 and 5.5 < point["walls"][0] < 8, point
    assert point["mean_wall_seconds"] is None and study["best_measured_steps"] is None  # nothing to rank
    said = capsys.readouterr().out
    assert "every 40 steps: stopped after" in said and "not finished" in said, said
    explorer = SaveIntervalExplorer(study, lang="en")
    assert "not finished" in explorer.answer.value and explorer.figure is not None
