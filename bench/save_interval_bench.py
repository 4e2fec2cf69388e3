"""How often to save, checked against real random failures (issue #14).

A calibration run (one SIGKILL of the whole job) gives the advisor its costs; then the same
`bag` run is trained to the end at five save intervals around the predicted optimum (1/8x to 4x), from "too often" to "too rarely",
while real SIGKILLs arrive at exponentially distributed times (mean --mtbf seconds), each run
resumed automatically; repetitions are interleaved. Targets: the best measured interval within
2x of the predicted optimum, and at each interval the predicted wall time within 20% of the
measured median (the model's median, simulated; its mean is compared with the measured mean too).

    python bench/save_interval_bench.py [--mtbf 20] [--repeats 4] [--max-steps 1500]
"""
import argparse
import tempfile

from common import write
from course_lib.config import TrainConfig
from course_lib.random_failures import interval_study


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mtbf", type=float, default=20.0)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--max-steps", type=int, default=1500)
    ap.add_argument("--intervals", type=int, nargs="+", default=None,
                    help="save intervals to measure (default: the predicted optimum x 1/8, 1/2, 1, 2, 4)")
    a = ap.parse_args()
    base = TrainConfig(run_dir="unused", model="bag", world_size=2, train_limit=4000, epochs=30, max_steps=a.max_steps,
                       async_save=False, eval_limit=200, log_every=100_000, keep_last=2)
    with tempfile.TemporaryDirectory() as work:
        study = interval_study(work, base, a.intervals, a.mtbf, repeats=a.repeats)
    study["config"] = {"model": "bag", "world_size": 2, "train_limit": 4000, "max_steps": a.max_steps,
                       "async_save": False, "repeats": a.repeats}
    write("save_interval", study)


if __name__ == "__main__":
    main()
