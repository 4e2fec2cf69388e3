"""What starting the ranks costs: the same small 2-rank run (bag, 30 steps) launched with
``start_method="spawn"`` (a fresh interpreter per rank, the chapter's way) and ``"forkserver"``
(each rank a fork of a server that imported torch once: the kit's default where the OS has
one), taking turns in one process. The forkserver's first launch, which starts the server,
is recorded apart; the bits are checked to be the same.

    python bench/start_method_bench.py [--rounds 5]
"""
import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import write

from course_lib.config import TrainConfig
from course_lib.ddp.launch import launch
from course_lib.watch.compare import compare_runs


def small(run_dir: Path, method: str) -> TrainConfig:
    return TrainConfig(run_dir=str(run_dir), train_limit=1200, epochs=2, global_batch_size=64, save_every_steps=5,
                       embed_dim=8, log_every=1000, eval_limit=200, warmup_steps=5, start_method=method)


def timed(run_dir: Path, method: str) -> float:
    t0 = time.perf_counter()
    launch(small(run_dir, method), quiet=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5, help="launches of each method, taking turns")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        timed(work / "warm-cache", "spawn")  # tokenised data cached before anything is timed
        first = timed(work / "forkserver-first", "forkserver")
        times = {"spawn": [], "forkserver": []}
        for i in range(a.rounds):
            for method in times:
                times[method].append(timed(work / f"{method}-{i}", method))
        same = compare_runs(work / "spawn-0", work / "forkserver-0")["identical"]
    med = {m: statistics.median(t) for m, t in times.items()}
    write("start_method", {"launch_seconds": times, "median_seconds": med, "forkserver_first_launch_seconds": first,
                           "forkserver_vs_spawn": med["forkserver"] / med["spawn"], "rounds": a.rounds,
                           "bit_identical": same, "run": "bag, 2 ranks, 30 steps, 6 checkpoints"})
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
