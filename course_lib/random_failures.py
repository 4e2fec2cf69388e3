"""Training through failures that arrive at random: the check of :mod:`course_lib.advisor`.

A supervisor (this module) starts ``python -m course_lib train ... --resume auto`` in a fresh
process group, draws the time to the next failure from an exponential distribution (mean
``mtbf``, the memoryless clock of the textbook models), and when that time comes sends SIGKILL
to the whole group: launcher and every rank die at once, like a machine that loses power. It
starts the same command again at once, and the failure clock keeps running through start-up,
so failures can strike restarts too, as in Daly's model. The wall time until the run finishes
is what the advisor predicts.

``interval_study`` measures it at several save intervals, interleaved, after a calibration run
(killed once by its own ``--kill-at-step``) gives the advisor the costs it needs.
"""
from __future__ import annotations

import itertools
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import numpy as np

from .advisor import advise, expected_wall, measure_costs, simulate_walls
from .config import ConfigError, TrainConfig
from .faults import EXIT_INTERRUPTED
from .monitor import read_ledger

MAX_FAILURES = 200  # a supervisor that never finishes is a bug: stop and say so


def exponential_gaps(mtbf: float, seed: int) -> Iterator[float]:
    rng = random.Random(seed)
    while True:
        yield rng.expovariate(1.0 / mtbf)


def train_through_failures(cfg: TrainConfig, gaps: Iterator[float]) -> dict:
    """Train ``cfg`` from scratch, killing the whole job after each gap of ``gaps`` (seconds of
    wall time) and starting it again with ``--resume auto``, until it finishes. The job's own
    output goes to ``DIR/supervisor.log``."""
    shutil.rmtree(cfg.run_dir, ignore_errors=True)
    Path(cfg.run_dir).mkdir(parents=True)
    log = Path(cfg.run_dir) / "supervisor.log"
    cmd = [sys.executable, "-m", "course_lib", "train", *cfg.replace(resume="auto").to_args()]
    env = {**os.environ, "TQDM_DISABLE": "1"}
    t0, started_at = time.perf_counter(), time.time()
    next_failure = t0 + next(gaps)
    failures = []
    with open(log, "a") as out:
        while True:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            try:
                proc.wait(timeout=max(next_failure - time.perf_counter(), 0))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the launcher and all its ranks, at once
                proc.wait()
                _reap_group(proc.pid)
                failures.append(round(time.perf_counter() - t0, 3))
                if len(failures) > MAX_FAILURES:
                    raise RuntimeError(f"{cfg.run_dir}: {len(failures)} failures and not finished; "
                                       "the mean time between failures is too short for this run") from None
                next_failure = time.perf_counter() + next(gaps)
                continue
            if proc.returncode == EXIT_INTERRUPTED:  # a kill the run planned itself (--kill-at-step)
                failures.append(round(time.perf_counter() - t0, 3))
                continue
            if proc.returncode != 0:
                raise RuntimeError(f"{cfg.run_dir}: train exited with {proc.returncode} without a drill kill; see {log}")
            break
    wall = time.perf_counter() - t0
    rows = read_ledger(cfg.run_dir, 0, last_attempt=False)
    return {"wall_seconds": round(wall, 3), "started_at": started_at, "failures": len(failures), "failure_times": failures,
            "steps": max(r["step"] for r in rows), "steps_redone": len(rows) - len({r["step"] for r in rows})}


def _reap_group(pgid: int, timeout: float = 5.0) -> None:
    """Wait until no process of the killed group is left (a rank that outlived the kill would
    hold the run directory's lock)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    raise RuntimeError(f"process group {pgid} still alive {timeout} s after SIGKILL")


def interval_study(workdir: str | Path, base: TrainConfig, intervals: list[int] | None, mtbf: float,
                   repeats: int = 3, factors=(1 / 8, 1 / 2, 1, 2, 4), seed: int = 0, progress: bool = True) -> dict:
    """Calibrate (one run, SIGKILLed once halfway by its own ``--kill-at-step``), predict the
    wall time at each interval with the advisor, then measure it ``repeats`` times per interval,
    interleaved, under random failures. ``intervals=None`` takes the predicted optimum times
    ``factors``: too often, about right, too rarely. Within one repetition every interval meets
    the same failure times (common random numbers), so the intervals are compared under the
    same luck; repetitions draw new times."""
    from tqdm.auto import tqdm

    if not base.max_steps:
        raise ConfigError("interval_study needs a run length: set max_steps in the base config")
    workdir = Path(workdir)
    calib = base.replace(run_dir=str(workdir / "calibration"),
                         save_every_steps=intervals[len(intervals) // 2] if intervals else base.max_steps // 16,
                         kill_at_step=max(base.max_steps // 2, 2), kill_rank=base.world_size - 1, kill_mode="sigkill")
    train_through_failures(calib, itertools.repeat(math.inf))  # only its own planned kill
    costs = measure_costs(calib.run_dir)
    advice = advise(costs, mtbf)
    if not intervals:
        intervals = sorted({min(max(round(advice["optimum_steps"] * f), 1), base.max_steps) for f in factors})
    runs = {k: [] for k in intervals}
    order = [(rep, k) for rep in range(repeats) for k in random.Random(seed + rep).sample(intervals, len(intervals))]
    for rep, k in tqdm(order, desc="runs through random failures", disable=not progress):
        cfg = base.replace(run_dir=str(workdir / f"every-{k}-rep{rep}"), save_every_steps=k)
        runs[k].append(train_through_failures(cfg, exponential_gaps(mtbf, seed=seed * 1_000_003 + rep)))
    study = summarize(costs, advice, runs, mtbf)
    study["steps_per_epoch"] = sum(r["epoch"] == 0 for r in read_ledger(calib.run_dir))  # the textbook's unit
    return study


def summarize(costs, advice: dict, runs: dict, mtbf: float) -> dict:
    """Measured runs beside the predictions, and the two targets of the check. The model's
    median (simulated, :func:`course_lib.advisor.simulate_walls`) is compared with the measured
    median, its expectation with the measured mean: with a few failures per run the wall time
    is skewed, and a median is not a mean."""
    points = []
    for k, rs in runs.items():
        walls = [r["wall_seconds"] for r in rs]
        sim = simulate_walls(k, costs, mtbf)
        median, mean = statistics.median(walls), statistics.mean(walls)
        predicted_median = float(np.median(sim))
        points.append({"every_steps": k, "walls": walls, "failures": [r["failures"] for r in rs],
                       "steps_redone": [r["steps_redone"] for r in rs],
                       "median_wall_seconds": median, "mean_wall_seconds": round(mean, 3),
                       "predicted_median_wall_seconds": round(predicted_median, 2),
                       "predicted_wall_seconds": round(float(expected_wall(k, costs, mtbf)), 2),
                       "predicted_quartiles": [round(float(q), 2) for q in np.percentile(sim, [25, 75])],
                       "error": round(predicted_median / median - 1, 4),
                       "mean_error": round(float(expected_wall(k, costs, mtbf)) / mean - 1, 4)})
    best = min(points, key=lambda p: p["median_wall_seconds"])["every_steps"]
    best_mean = min(points, key=lambda p: p["mean_wall_seconds"])["every_steps"]
    ratio = best / advice["optimum_steps"]
    return {"mtbf_seconds": mtbf, "advice": advice, "points": points, "best_measured_steps": best,
            "best_vs_optimum": round(ratio, 3), "best_within_2x": 0.5 <= ratio <= 2.0,
            "best_by_mean_steps": best_mean,
            "max_abs_error": max(abs(p["error"]) for p in points),
            "all_within_20pct": all(abs(p["error"]) <= 0.2 for p in points)}
