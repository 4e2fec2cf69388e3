"""torchrun elastic scale-down: seconds from a node's death to the first step of the shrunken
group, and whether the run ends bit-identical to the 2-rank run never disturbed.

    python bench/elastic_bench.py [--reps 3] [--train-limit 4000]
"""
import argparse
import statistics
import tempfile
from pathlib import Path

from common import write
from course_lib.compare import compare_runs
from course_lib.config import TrainConfig
from course_lib.elastic import lose_a_node
from course_lib.launch import launch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--train-limit", type=int, default=4000)
    a = ap.parse_args()
    base = TrainConfig(run_dir="unused", reduction="invariant", train_limit=a.train_limit, epochs=1, embed_dim=8,
                       save_every_steps=10, log_every=10_000, eval_limit=200, warmup_steps=5, threads_per_rank=1,
                       timeout_s=30)
    runs = []
    with tempfile.TemporaryDirectory() as work:
        ref = Path(work) / "reference"
        launch(base.replace(run_dir=str(ref)), quiet=True)
        for rep in range(a.reps):
            run = Path(work) / f"lose-{rep}"
            r = lose_a_node(base.replace(run_dir=str(run)), after_step=15 + 5 * rep)
            runs.append({"after_step": 15 + 5 * rep, "exit_code": r["exit_code"], "world_size_at_end": r["world_size_at_end"],
                         "identical": compare_runs(ref, run)["identical"],
                         "seconds_to_first_step_after": round(r["seconds_to_first_step_after"], 2)})
    write("elastic", {"runs": runs, "identical": sum(r["identical"] for r in runs),
                      "seconds_to_first_step_median": statistics.median(r["seconds_to_first_step_after"] for r in runs)})


if __name__ == "__main__":
    main()
