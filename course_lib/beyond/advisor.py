"""How often to save, answered from a run's own costs.

A save costs the loop ``C`` seconds every time; a failure costs the work since the last save
plus a restart ``R``. Saving often wastes time in saves, saving rarely wastes it in redone
work. With failures that arrive at random (exponential gaps, mean ``M``) three answers exist:

* Young (1974): the interval of compute between saves ``T = sqrt(2 C M)`` (first order).
* Daly (2006): a higher-order correction of Young's, ``sqrt(2CM)(1 + sqrt(C/2M)/3 + C/18M) - C``,
  and the *exact* expected wall time of a run of ``S`` seconds of work saved every ``T``:
  ``S/T * M * exp(R/M) * (exp((T + C)/M) - 1)`` (failures may strike saves and restarts too).
* CheckFreq (FAST '21) tunes the interval at run time from the measured costs; here the costs
  are measured after a run, from its records, and the exact expectation is minimised over the
  interval in whole steps.

Where each input comes from in the run directory, and ``covered`` (the share of failures the
survivors' save covers: a restart, no redone work): docs/cli.md, "How often to save: `advise`".
"""
from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from course_lib.config import ConfigError

UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | float) -> float:
    """``"6h"``, ``"30m"``, ``"90s"``, ``"2d"`` or a number of seconds."""
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(s|m|min|h|d)?\s*", str(text))
        if not m:
            raise ConfigError(f"{text!r} is not a duration; write it like 90s, 30m, 6h or 2d")
        seconds = float(m.group(1)) * UNITS[m.group(2) or "s"]
    if seconds <= 0:
        raise ConfigError(f"a duration must be positive, got {text!r}")
    return seconds


@dataclass
class Costs:
    """What one run measured, with where each number came from."""
    step_seconds: float
    save_blocking_seconds: float
    save_write_seconds: float
    restart_seconds: float
    finish_seconds: float
    steps: int
    save_every_steps: int
    async_save: bool
    sources: dict
    restart_from_first_start: bool = False  # never interrupted: the restart is estimated by the first start

    @property
    def effective_restart(self) -> float:
        """Restart plus, with background saves, the write that must end before a save protects."""
        return self.restart_seconds + (self.save_write_seconds if self.async_save else 0.0)


def expected_wall(every_steps, costs: Costs, mtbf: float, covered: float = 0.0) -> np.ndarray:
    """Daly's exact expectation of the wall time to finish ``costs.steps`` steps saving every
    ``every_steps`` (scalar or array), plus the run's start-up and finish. A share ``covered``
    of failures costs only a restart (the survivors saved the last finished step)."""
    k = np.asarray(every_steps, dtype=float)
    m_lost = mtbf / (1.0 - covered)  # failures that cost redone work
    r = costs.effective_restart
    segment = k * costs.step_seconds + costs.save_blocking_seconds
    work = costs.steps / k * m_lost * math.exp(r / m_lost) * np.expm1(segment / m_lost)
    work = work / (1.0 - covered * (r + costs.save_blocking_seconds) / mtbf)  # covered: restart + emergency save
    return costs.restart_seconds + work + costs.finish_seconds  # the first start looks like a restart


def failure_free_wall(costs: Costs) -> float:
    """The same run with no failure and no save: start-up, training, finish."""
    return costs.restart_seconds + costs.steps * costs.step_seconds + costs.finish_seconds


def lost_share(every_steps, costs: Costs, mtbf: float, covered: float = 0.0) -> np.ndarray:
    """Share of the expected wall time spent in saves, redone work and restarts."""
    return 1.0 - failure_free_wall(costs) / expected_wall(every_steps, costs, mtbf, covered)


MAX_FAILURES = 200  # a run that has failed this often is stopped as unfinished (the drill's and the model's)


def simulate_walls(every_steps: int, costs: Costs, mtbf: float) -> np.ndarray:
    """Wall times of 2,000 simulated runs (seed 0) under the same model (exponential failures that
    may strike start-up, work, saves and restarts; a failure loses the segment in progress).
    The expectation is :func:`expected_wall`; the simulation also gives the median and the
    spread, which is what a handful of real runs should be compared with: with few failures
    per run the distribution is skewed (a run that meets no failure is much faster than the mean).
    A simulated run that would meet more than :data:`MAX_FAILURES` failures is ``inf``: unfinished."""
    rng = np.random.default_rng(0)
    return np.array([replay_wall(every_steps, costs, iter(lambda: rng.exponential(mtbf), None)) for _ in range(2000)])


def replay_wall(every_steps: int, costs: Costs, gaps: Iterator[float], max_failures: int = MAX_FAILURES) -> float:
    """The model's wall time for one run whose failures come after these gaps (seconds, each
    from the failure before, the first from the start): the clock of
    :func:`course_lib.beyond.random_failures.train_through_failures`. Fed the gaps a real run met, it
    says what the model predicts for *that* run, so model and run are compared under the same luck.

    ``inf`` once the run meets ``max_failures`` failures, as the drill stops a real run there: where
    a restart takes longer than the time between failures, a run almost never finishes (Daly's
    expectation grows as ``exp(R/M)``), and replaying it to the end would not end either (a busy
    machine's restarts once made notebook 04's drill replay for half an hour)."""
    k = int(every_steps)
    segments = [k] * (costs.steps // k) + ([costs.steps % k] if costs.steps % k else [])
    lengths = [n * costs.step_seconds + costs.save_blocking_seconds for n in segments]
    t, j, next_failure, starting, restart = 0.0, 0, next(gaps), True, costs.restart_seconds
    failures = 0
    while j < len(lengths):  # the first start is a plain start; after a failure, the effective restart
        need = restart if starting else lengths[j]
        if t + need <= next_failure:
            t, j, starting = t + need, j if starting else j + 1, False
        else:
            failures += 1
            if failures >= max_failures:
                return math.inf
            t, starting, restart = next_failure, True, costs.effective_restart
            next_failure = t + next(gaps)
    return t + costs.finish_seconds


def young_seconds(save_seconds: float, mtbf: float) -> float:
    return math.sqrt(2 * save_seconds * mtbf)


def daly_seconds(save_seconds: float, mtbf: float) -> float:
    if save_seconds >= 2 * mtbf:
        return mtbf
    x = save_seconds / (2 * mtbf)
    return math.sqrt(2 * save_seconds * mtbf) * (1 + math.sqrt(x) / 3 + x / 9) - save_seconds


def advise(costs: Costs, mtbf: float, covered: float = 0.0) -> dict:
    """The interval by Young, by Daly and by minimising the exact expectation (whole steps)."""
    if not 0 <= covered < 1:
        raise ConfigError(f"covered is the share of failures the survivors' save covers: 0 <= covered < 1, got {covered}")
    m_lost = mtbf / (1.0 - covered)
    ks = np.arange(1, max(costs.steps, 1) + 1)
    walls = expected_wall(ks, costs, mtbf, covered)
    best = int(ks[np.argmin(walls)])
    tau = costs.step_seconds
    young, daly = young_seconds(costs.save_blocking_seconds, m_lost), daly_seconds(costs.save_blocking_seconds, m_lost)
    return {"mtbf_seconds": mtbf, "covered": covered, "costs": asdict(costs),
            "optimum_steps": best, "optimum_seconds": best * tau,
            "young_steps": young / tau, "daly_steps": daly / tau,
            "expected_wall_seconds": float(walls[best - 1]),
            "failure_free_seconds": failure_free_wall(costs),
            "expected_lost_share": float(lost_share(best, costs, mtbf, covered)),
            "run_interval_steps": costs.save_every_steps,
            "run_interval_lost_share": float(lost_share(costs.save_every_steps, costs, mtbf, covered))
            if costs.save_every_steps else None,
            "expected_failures": float(walls[best - 1] / mtbf)}


def measure_costs(run_dir: str | Path, restart_seconds: float | None = None,
                  save_seconds: float | None = None) -> Costs:
    """The costs a run recorded: the step time from the ledger's timestamps, the save's blocking
    time (``checkpoint/blocking_seconds``) and writing time (``checkpoint/save_seconds``) from
    TensorBoard, the restart from each resumed attempt's launch (``attempts.jsonl``) to its first
    step of work; a run never interrupted has its restart estimated from its first start
    (``restart_from_first_start`` says so). With ``async_save`` the loop pays only the
    serialisation and the write adds to the restart (``R + W``). ``restart_seconds`` /
    ``save_seconds`` override a measurement."""
    from course_lib.paths import read_config
    from course_lib.paths import run_dir as check_run_dir
    from course_lib.watch.monitor import read_ledger, read_scalars

    run_dir = check_run_dir(run_dir, "advise")
    cfg = read_config(run_dir).to_dict()
    rows = read_ledger(run_dir, 0, last_attempt=False)
    if len(rows) < 3:
        raise ConfigError(f"{run_dir} has fewer than 3 logged steps: train it (longer) first")
    final = read_ledger(run_dir, 0)
    every = cfg.get("save_every_steps") or cfg.get("save_every_epochs", 0) * sum(r["epoch"] == 0 for r in final)
    saved = {r["step"] for r in final if every and r["step"] % every == 0}
    gaps = [b["time"] - a["time"] for a, b in zip(rows, rows[1:])
            if a["attempt"] == b["attempt"] and b["step"] == a["step"] + 1 and a["step"] not in saved]
    tau = statistics.median(gaps)
    scalars = read_scalars(run_dir) if (run_dir / "tb").exists() else {}
    blocking = [v for _, v in scalars.get("checkpoint/blocking_seconds", [])]
    writes = [v for _, v in scalars.get("checkpoint/save_seconds", [])]
    if save_seconds is None and not blocking:
        raise ConfigError(f"{run_dir} saved no checkpoint, so no save was measured: train it with "
                          "--save-every-steps K (or pass --save-seconds S)")
    restart, restart_source, from_first_start = _restart_cost(run_dir, rows, tau, restart_seconds)
    summary = run_dir / "final" / "summary.json"
    finish = summary.stat().st_mtime - final[-1]["time"] if summary.exists() else 0.0
    return Costs(
        step_seconds=tau,
        save_blocking_seconds=save_seconds if save_seconds is not None else statistics.median(blocking),
        save_write_seconds=statistics.median(writes) if writes else (save_seconds or 0.0),
        restart_seconds=restart,
        finish_seconds=max(finish, 0.0), steps=final[-1]["step"], save_every_steps=int(every),
        async_save=bool(cfg.get("async_save")), restart_from_first_start=from_first_start,
        sources={"step_seconds": f"median of {len(gaps)} step-to-step gaps without a save (metrics/rank0.jsonl)",
                 "save_blocking_seconds": "given" if save_seconds is not None
                 else f"median of {_count(len(blocking), 'save')} (TensorBoard checkpoint/blocking_seconds)",
                 "save_write_seconds": f"median of {_count(len(writes), 'save')} (TensorBoard checkpoint/save_seconds)",
                 "restart_seconds": restart_source,
                 "finish_seconds": "last step -> final/summary.json (final save, evaluation)"})


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _restart_cost(run_dir: Path, rows: list[dict], tau: float, given: float | None) -> tuple[float, str, bool]:
    """(seconds, where they came from, estimated from the first start?). The restarts a run
    measured, else, for a run never interrupted, its first start: launch to first step is what
    a restart pays too, less loading a checkpoint (small next to starting the processes)."""
    if given is not None:
        return given, "given", False
    starts = _starts(run_dir, rows, tau)
    restarts = [v for a, v in starts.items() if a > 1]
    if restarts:
        return statistics.median(restarts), (f"median of {_count(len(restarts), 'restart')}: launch -> first step "
                                             "of work (add your scheduler's delay)"), False
    if 1 not in starts:
        raise ConfigError(f"{run_dir} was never interrupted and its start has no recorded launch time (torchrun), "
                          "so no restart was measured: pass --restart-seconds S")
    return starts[1], ("estimated from the first start (launch -> first step of work): the run was never "
                       "interrupted; add your scheduler's delay"), True


def _starts(run_dir: Path, rows: list[dict], tau: float) -> dict[int, float]:
    """Seconds from each attempt's launch to its first step of work (the first logged step,
    minus that step), by attempt. A restart without a recorded launch time (torchrun) falls
    back to the gap from the last step of the attempt before; a first start without one has none."""
    from course_lib.watch.monitor import read_attempts

    launched = {i: a.get("launched") for i, a in enumerate(read_attempts(run_dir), start=1)}
    last, first = {}, {}
    for r in rows:
        last[r["attempt"]] = max(last.get(r["attempt"], r["time"]), r["time"])
        first[r["attempt"]] = min(first.get(r["attempt"], r["time"]), r["time"])
    out = {}
    for a in sorted(first):
        if launched.get(a):
            out[a] = first[a] - tau - launched[a]
        elif a - 1 in last:
            out[a] = first[a] - tau - last[a - 1]
    return out


def format_advice(advice: dict, run_dir: str | Path) -> str:
    c, tau = advice["costs"], advice["costs"]["step_seconds"]
    src = c["sources"]
    lines = [f"How often to save {run_dir}, if failures come every {_human(advice['mtbf_seconds'])} on average"]
    if advice["covered"]:
        lines.append(f"  the survivors' save covers {advice['covered']:.0%} of them")
    lines += ["  inputs:",
              f"    step time            {tau:8.4f} s   {src['step_seconds']}",
              f"    save blocks the loop {c['save_blocking_seconds']:8.3f} s   {src['save_blocking_seconds']}",
              f"    save writes          {c['save_write_seconds']:8.3f} s   {src['save_write_seconds']}  "
              f"({'in the background' if c['async_save'] else 'inside the blocking time'})",
              f"    restart              {c['restart_seconds']:8.2f} s   {src['restart_seconds']}",
              f"    steps in the run     {c['steps']:8d}",
              f"  save every {advice['optimum_steps']:,} steps ({_human(advice['optimum_seconds'])} of training): "
              f"expected loss {advice['expected_lost_share']:.1%} of wall time, "
              f"{advice['expected_failures']:.1f} failures expected in {_human(advice['expected_wall_seconds'])}",
              f"    Young 1974 sqrt(2CM): every {advice['young_steps']:,.0f} steps;  Daly 2006: every "
              f"{advice['daly_steps']:,.0f} steps;  minimum of the exact expectation: "
              f"every {advice['optimum_steps']:,} steps"]
    if c.get("restart_from_first_start"):
        lines.append("  this run was never interrupted: its restart cost is estimated from its first start "
                     "(launch -> first step); --restart-seconds S overrides it")
    if advice["optimum_steps"] >= c["steps"]:
        lines.append(f"  the interval is as long as the run ({c['steps']:,} steps): save at the end only, "
                     "or plan a longer run with --steps")
    if advice["run_interval_steps"]:
        lines.append(f"  this run saved every {advice['run_interval_steps']:,} steps: expected loss "
                     f"{advice['run_interval_lost_share']:.1%}")
    return "\n".join(lines)


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"
