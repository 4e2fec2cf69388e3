"""Training through failures that arrive at random: the check of :mod:`course_lib.beyond.advisor`.

A supervisor (this module) starts ``python -m course_lib train ... --resume auto`` in a fresh
process group, draws the time to the next failure from an exponential distribution (mean
``mtbf``, the memoryless clock of the textbook models), and when that time comes sends SIGKILL
to the whole group: launcher and every rank die at once, like a machine that loses power. It
starts the same command again at once, and the failure clock keeps running through start-up,
so failures can strike restarts too, as in Daly's model. The wall time until the run finishes
is what the advisor predicts.

``interval_study`` measures it at several save intervals, interleaved, after a calibration run
(killed once by its own ``--kill-at-step``) gives the advisor the costs it needs. Given a budget,
it is bounded: a run that cannot finish in its share stops there, says so, and is reported as far
as it got (saving only at the end while failures come every few seconds may never finish: on a
busy machine notebook 04's drill once ran for 15 minutes and then raised).
"""
from __future__ import annotations

import contextlib
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
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from course_lib._runtime.rank_output import say, shown
from course_lib.beyond.advisor import MAX_FAILURES, advise, expected_wall, measure_costs, replay_wall, simulate_walls
from course_lib.config import ConfigError, TrainConfig
from course_lib.ddp.outcome import EXIT_INTERRUPTED
from course_lib.watch.monitor import read_ledger

# a run whose median step is this much slower than the calibration's met a busy machine (other
# work on the same cores), not the model's costs: it is measured again, with the same failure times
DISTURBED, DISTURBED_RETRIES = 1.15, 2


def exponential_gaps(mtbf: float, seed: int) -> Iterator[float]:
    rng = random.Random(seed)
    while True:
        yield rng.expovariate(1.0 / mtbf)


def train_through_failures(cfg: TrainConfig, gaps: Iterator[float], deadline: float | None = None) -> dict:
    """Train ``cfg`` from scratch, killing the whole job after each gap of ``gaps`` (seconds of
    wall time) and starting it again with ``--resume auto``, until it finishes, or until
    ``deadline`` (a ``time.perf_counter()`` value: the job is killed then) or :data:`MAX_FAILURES`
    failures stop it: then ``finished`` is False, ``stopped`` says which (``"budget"``,
    ``"failures"``), ``wall_seconds`` is how long it ran (the wall time to finish is longer) and
    ``steps`` the last step it reached. The job's own output goes to ``DIR/supervisor.log``."""
    shutil.rmtree(cfg.run_dir, ignore_errors=True)
    Path(cfg.run_dir).mkdir(parents=True)
    log = Path(cfg.run_dir) / "supervisor.log"
    cmd = [sys.executable, "-m", "course_lib", "train", *cfg.replace(resume="auto").to_args()]
    env = {**os.environ, "TQDM_DISABLE": "1"}
    t0, started_at = time.perf_counter(), time.time()
    next_failure = t0 + next(gaps)
    failures, stopped = [], None
    with open(log, "a") as out:
        while stopped is None:
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = "budget"
                break
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            until = next_failure if deadline is None else min(next_failure, deadline)
            try:
                proc.wait(timeout=max(until - time.perf_counter(), 0))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the launcher and all its ranks, at once
                failed_at = time.perf_counter()
                proc.wait()
                _reap_group(proc.pid)
                if until != next_failure:  # the budget ran out: no failure, the drill stops here
                    stopped = "budget"
                    break
                failures.append(round(failed_at - t0, 3))
                if len(failures) >= MAX_FAILURES:
                    stopped = "failures"
                next_failure = failed_at + next(gaps)  # the failure clock runs on from the kill
                continue
            if proc.returncode == EXIT_INTERRUPTED:  # a kill the run planned itself (--kill-at-step)
                failures.append(round(time.perf_counter() - t0, 3))
                continue
            if proc.returncode != 0:
                raise RuntimeError(f"{cfg.run_dir}: train exited with {proc.returncode} without a drill kill; see {log}")
            break
    wall = time.perf_counter() - t0
    rows = read_ledger(cfg.run_dir, 0, last_attempt=False)
    gaps_s = [b["time"] - a["time"] for a, b in zip(rows, rows[1:]) if a["attempt"] == b["attempt"]
              and b["step"] == a["step"] + 1]
    return {"wall_seconds": round(wall, 3), "started_at": started_at, "ended_at": started_at + wall,
            "finished": stopped is None, "stopped": stopped, "failures": len(failures), "failure_times": failures,
            "steps": max((r["step"] for r in rows), default=0),
            "steps_redone": len(rows) - len({r["step"] for r in rows}),
            "median_step_seconds": round(statistics.median(gaps_s), 5) if gaps_s else None}


def _reap_group(pgid: int, timeout: float = 5.0) -> None:
    """Wait until no process of the killed group is alive (a rank that outlived the kill would
    hold the run directory's lock). A dead process that is not yet reaped (a zombie) holds no
    lock: it counts as gone. That matters where PID 1 reaps orphans late (in this project's
    containers, 1.5-2 s after the kill), which the wall time would otherwise pay per failure."""
    deadline = time.monotonic() + timeout
    while _alive_in_group(pgid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process group {pgid} still alive {timeout} s after SIGKILL")
        time.sleep(0.01)


def _alive_in_group(pgid: int) -> bool:
    """Any live (not zombie) process in group ``pgid``? Linux reads ``/proc``; elsewhere a
    signal 0 to the group, which also finds zombies."""
    if not Path("/proc/self/stat").exists():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, 0)
            return True
        return False
    return any(int(fields[2]) == pgid and fields[0] != "Z" for _, fields in proc_stats())


def proc_stats() -> Iterator[tuple[int, list[str]]]:
    """``(pid, fields)`` of every process, ``fields`` being ``/proc/PID/stat`` after the command
    name: state, ppid, pgrp, ... (Linux; a process gone while we look is skipped)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            yield int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue


def calibrate(workdir: str | Path, base: TrainConfig, save_every: int | None = None) -> dict:
    """One run of ``base``, SIGKILLed once halfway by its own ``--kill-at-step``: the costs the
    advisor needs, measured (``costs``), and the textbook's unit (``steps_per_epoch``)."""
    if not base.max_steps:
        raise ConfigError("a save-interval study needs a run length: set max_steps in the base config")
    calib = base.replace(run_dir=str(Path(workdir) / "calibration"), save_every_steps=save_every or base.max_steps // 16,
                         kill_at_step=max(base.max_steps // 2, 2), kill_rank=base.world_size - 1, kill_mode="sigkill")
    run = train_through_failures(calib, itertools.repeat(math.inf))  # only its own planned kill
    costs, rows = measure_costs(calib.run_dir), read_ledger(calib.run_dir)
    # the supervisor's wall time ends when the process does, after the summary the run directory
    # records (tearing the ranks and the launcher down: ~0.3-1 s here): the finish counts that too
    costs.finish_seconds = max(run["ended_at"] - rows[-1]["time"], costs.finish_seconds)
    costs.sources["finish_seconds"] = "last step -> the process's exit (the supervisor's clock)"
    return {"costs": costs, "steps_per_epoch": sum(r["epoch"] == 0 for r in rows)}


def interval_study(workdir: str | Path, base: TrainConfig, intervals: list[int] | None, mtbf: float,
                   repeats: int = 3, seed: int = 0, calibration: dict | None = None,
                   budget_seconds: float | None = None) -> dict:
    """Calibrate (:func:`calibrate`, unless a ``calibration`` is given), predict the wall time at
    each interval with the advisor, then measure it ``repeats`` times per interval, interleaved,
    under random failures. ``intervals=None`` takes the predicted optimum times 1/8, 1/2, 1, 2
    and 4: too often, about right, too rarely. Within one repetition every interval meets the
    same failure times (common random numbers), so the intervals are compared under the same
    luck; repetitions draw new times.

    ``budget_seconds`` bounds the measured runs (the calibration comes first, outside it). The runs
    then go in the order of their predicted wall time, quickest first, each measured once, and each
    may use what is left of the budget but half an equal share for every run after it: the runs that
    can finish do, and the one that cannot (saving only at the end, say, on a busy machine) is the
    one cut short. A run that cannot finish in its time stops there and says so in one line; its
    point records how far it got and how long it ran (a lower bound), and it takes no part in the
    errors or the best interval. Used in notebook 04 (optional deep-dive A)."""
    from tqdm.auto import tqdm

    workdir = Path(workdir)
    calibration = calibration or calibrate(workdir, base, intervals[len(intervals) // 2] if intervals else None)
    costs = calibration["costs"]
    advice = advise(costs, mtbf)
    if not intervals:
        intervals = sorted({min(max(round(advice["optimum_steps"] * f), 1), base.max_steps)
                            for f in (1 / 8, 1 / 2, 1, 2, 4)})
    runs = {k: [] for k in intervals}
    order = [(rep, k) for rep in range(repeats) for k in random.Random(seed + rep).sample(intervals, len(intervals))]
    end = floor = None
    if budget_seconds is not None:  # the quickest first: the run cut short is the one that could not finish anyway
        predicted = {k: float(expected_wall(k, costs, mtbf)) for k in intervals}
        order = [(rep, k) for rep in range(repeats) for k in sorted(intervals, key=predicted.__getitem__)]
        end, floor = time.perf_counter() + budget_seconds, budget_seconds / (2 * len(order))
    for i, (rep, k) in enumerate(tqdm(order, desc=shown("runs through random failures"))):
        cfg = base.replace(run_dir=str(workdir / f"every-{k}-rep{rep}"), save_every_steps=k)
        gap_seed = seed * 1_000_003 + rep
        deadline = None if end is None else end - floor * (len(order) - i - 1)  # half a share kept for each run after
        kept = None
        for attempt in range(1 if end else 1 + DISTURBED_RETRIES):  # the same failure times again: only the load differs
            run = {**train_through_failures(cfg, exponential_gaps(mtbf, seed=gap_seed), deadline),
                   "gap_seed": gap_seed, "measured_again": attempt}
            kept = run if kept is None or run["finished"] else kept  # a retry cut by the budget keeps the first
            if not run["finished"] or run["median_step_seconds"] <= DISTURBED * costs.step_seconds:
                break
        runs[k].append(kept)
        if not kept["finished"]:
            say(f"every {k} steps: stopped after {kept['wall_seconds']:.0f} s at step {kept['steps']} of {base.max_steps}, "
                f"{kept['failures']} failures: not finished in its share of the drill's budget")
    return {**summarize(costs, advice, runs, mtbf), "steps_per_epoch": calibration["steps_per_epoch"],
            "budget_seconds": budget_seconds}


def _quartiles(sim: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # between two unfinished runs (inf - inf): nan, said as None
        return np.percentile(sim, [25, 75])


def _seconds(x: float) -> float | None:
    """Seconds for the record: ``None`` where the model says a run would not finish (``inf``, ``nan``)."""
    return round(x, 2) if math.isfinite(x) else None


def summarize(costs, advice: dict, runs: dict, mtbf: float) -> dict:
    """Measured runs beside the predictions, and the two targets of the check.

    A handful of runs with one or two failures each is ruled by luck (docs/benchmarks.md, "What
    was wrong with the check"). Two measures take it out, because the failure times each run met
    are known (its ``gap_seed``):

    * the model's error: the model *replayed* on each run's own failure times
      (:func:`course_lib.beyond.advisor.replay_wall`) against the measured wall time, as a ratio of
      means per interval: it tests the costs the model counts, not the draws;
    * the best measured interval: by the measured mean corrected for each run's luck (the
      measured minus the replayed wall, plus the model's expectation: a control variate), since
      the advisor minimises the *expected* wall time.

    The plain comparisons are kept beside them: the simulated median against the measured median
    (:func:`course_lib.beyond.advisor.simulate_walls`), the expectation against the measured mean.

    An interval with a run that did not finish (stopped by a budget) has only lower bounds: its
    measured figures are ``None`` and it is left out of the errors and the best interval (``None``
    when no interval finished). So is an interval whose model says a run would not finish (more
    than :data:`~course_lib.beyond.advisor.MAX_FAILURES` failures: a restart slower than the time
    between failures); its predicted figures are ``None``."""
    points = []
    for k, rs in runs.items():
        walls = [r["wall_seconds"] for r in rs]
        expected = float(expected_wall(k, costs, mtbf))
        sim = simulate_walls(k, costs, mtbf)  # inf: a simulated run that would not finish
        predicted_median = float(np.median(sim))
        point = {"every_steps": k, "walls": walls, "finished": [r.get("finished", True) for r in rs],
                 "steps_reached": [r.get("steps") for r in rs], "failures": [r["failures"] for r in rs],
                 "steps_redone": [r["steps_redone"] for r in rs],
                 "median_step_seconds": [r.get("median_step_seconds") for r in rs],
                 "measured_again": [r.get("measured_again", 0) for r in rs],
                 "predicted_median_wall_seconds": _seconds(predicted_median),
                 "predicted_wall_seconds": _seconds(expected),
                 "predicted_quartiles": [_seconds(float(q)) for q in _quartiles(sim)]}
        replayed = [replay_wall(k, costs, exponential_gaps(mtbf, seed=r["gap_seed"])) for r in rs]
        if all(point["finished"]) and all(map(math.isfinite, replayed + [predicted_median, expected])):
            median, mean = statistics.median(walls), statistics.mean(walls)
            point.update({"replayed_walls": [round(w, 2) for w in replayed],
                          "error": round(statistics.mean(replayed) / mean - 1, 4),
                          "luck_corrected_mean_seconds": round(mean - statistics.mean(replayed) + expected, 2),
                          "median_wall_seconds": median, "mean_wall_seconds": round(mean, 3),
                          "median_error": round(predicted_median / median - 1, 4),
                          "mean_error": round(expected / mean - 1, 4)})
        else:  # lower bounds only, or a model that says the run would not finish: nothing to compare
            point.update(dict.fromkeys(("replayed_walls", "error", "luck_corrected_mean_seconds", "median_wall_seconds",
                                        "mean_wall_seconds", "median_error", "mean_error")))
        points.append(point)
    done = [p for p in points if p["error"] is not None]
    by = lambda key: min(done, key=lambda p: p[key])["every_steps"] if done else None  # noqa: E731
    worst = lambda key: max(abs(p[key]) for p in done) if done else None  # noqa: E731
    best = by("luck_corrected_mean_seconds")
    ratio = None if best is None else best / advice["optimum_steps"]
    return {"mtbf_seconds": mtbf, "advice": advice, "points": points, "best_measured_steps": best,
            "best_vs_optimum": None if ratio is None else round(ratio, 3),
            "best_within_2x": ratio is not None and 0.5 <= ratio <= 2.0,
            "best_by_mean_steps": by("mean_wall_seconds"), "best_by_median_steps": by("median_wall_seconds"),
            "max_abs_error": worst("error"), "all_within_20pct": bool(done) and all(abs(p["error"]) <= 0.2 for p in done),
            "max_abs_median_error": worst("median_error"), "max_abs_mean_error": worst("mean_error")}
