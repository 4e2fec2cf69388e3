"""How often to save, checked against real random failures (issues #14, #21), at three failure rates.

One calibration run (one SIGKILL of the whole job) gives the advisor its costs; then, for each
mean time between failures, the same `bag` run is trained to the end at five save intervals
around the predicted optimum (1/8x to 4x), from "too often" to "too rarely", while real
SIGKILLs arrive at exponentially distributed times, each run resumed automatically;
repetitions are interleaved and share their failure times across intervals (more of them where
failures are rarer: at 80 s a 50 s run meets none more often than not). Targets, at every
failure rate: the best measured interval (luck-corrected mean) within 2x of the predicted
optimum, and at each interval the model, replayed on each run's own failure times, within 20%
of the measured wall time (see course_lib.beyond.random_failures.summarize).

    python bench/save_interval_bench.py [--mtbf 20 40 80] [--repeats 5 5 8] [--max-steps 1500]
    python bench/save_interval_bench.py --mtbf 20 --reuse-calibration   # one failure rate again, same costs
"""
import argparse
import json
import tempfile
import time

from common import RESULTS, write

from course_lib.beyond.advisor import Costs
from course_lib.beyond.random_failures import calibrate, interval_study
from course_lib.config import TrainConfig


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mtbf", type=float, nargs="+", default=[20.0, 40.0, 80.0])
    ap.add_argument("--repeats", type=int, nargs="+", default=[5, 5, 8],
                    help="repetitions per interval, one for all failure rates or one per --mtbf (rarer failures need more)")
    ap.add_argument("--max-steps", type=int, default=1500)
    ap.add_argument("--intervals", type=int, nargs="+", default=None,
                    help="save intervals to measure (default: the predicted optimum x 1/8, 1/2, 1, 2, 4)")
    ap.add_argument("--reuse-calibration", action="store_true",
                    help="take the costs of the recorded results and replace only the failure rates given")
    a = ap.parse_args()
    old = json.loads((RESULTS / "save_interval.json").read_text()) if a.reuse_calibration else {}
    base = TrainConfig(run_dir="unused", model="bag", world_size=2, train_limit=4000, epochs=30, max_steps=a.max_steps,
                       async_save=False, eval_limit=200, log_every=100_000, keep_last=2, reduction="ddp")  # as recorded
    studies = [st for st in old.get("studies", []) if st["mtbf_seconds"] not in a.mtbf]
    seconds = {k: v for k, v in old.get("seconds", {}).items() if k not in {f"mtbf {m:g}" for m in a.mtbf}}
    with tempfile.TemporaryDirectory() as work:
        t0 = time.perf_counter()
        if old:
            calibration = {"costs": Costs(**old["studies"][0]["advice"]["costs"]),
                           "steps_per_epoch": old["studies"][0]["steps_per_epoch"]}
        else:
            calibration = calibrate(work, base)
            seconds["calibration"] = round(time.perf_counter() - t0)
        repeats = a.repeats * len(a.mtbf) if len(a.repeats) == 1 else a.repeats
        for mtbf, reps in zip(a.mtbf, repeats):  # each failure rate its own failure times (seed), one calibration for all
            t0 = time.perf_counter()
            studies.append(interval_study(f"{work}/mtbf-{mtbf:g}", base, a.intervals, mtbf, repeats=reps,
                                          seed=round(mtbf), calibration=calibration))
            seconds[f"mtbf {mtbf:g}"] = round(time.perf_counter() - t0)
    studies.sort(key=lambda st: st["mtbf_seconds"])
    write("save_interval", {"studies": studies, "seconds": seconds,
                            "config": {"model": "bag", "world_size": 2, "train_limit": 4000, "max_steps": a.max_steps,
                                       "async_save": False, "repeats": dict(zip(map(str, a.mtbf), repeats))}})


if __name__ == "__main__":
    main()
