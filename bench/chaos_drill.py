"""Chaos drill: N real kills at random steps, modes and ranks on 2-rank runs killed 1, 2 or 3
times each, resumed automatically after every kill and compared bit for bit with the
uninterrupted run.

Run once with DDP's all-reduce and once with the invariant reduction, whose surviving ranks
save the last finished step when a peer dies (so a single-rank SIGKILL should cost no step).

    python bench/chaos_drill.py [--kills 20] [--train-limit 1200]
"""
import argparse
import statistics
import tempfile

from common import write

from course_lib.config import TrainConfig
from course_lib.lab.drills import chaos_drill


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--train-limit", type=int, default=1200)
    a = ap.parse_args()
    base = TrainConfig(run_dir="unused", train_limit=a.train_limit, epochs=2, save_every_steps=5, log_every=10_000,
                       eval_limit=200, warmup_steps=5)
    out = {}
    for reduction in ("ddp", "invariant"):
        with tempfile.TemporaryDirectory() as work:
            rows = chaos_drill(work, base.replace(reduction=reduction), kills=a.kills)
        kills = sum(r["kills"] for r in rows)
        per_kill = [k for r in rows for k in r["redone_per_kill"]]
        out[reduction] = {
            "kills": kills, "runs_total": len(rows), "runs_identical": sum(r["identical"] for r in rows),
            "runs_by_kills": {n: sum(r["kills"] == n for r in rows) for n in sorted({r["kills"] for r in rows})},
            "steps_redone_per_kill": sum(r["steps_redone"] for r in rows) / kills,
            "steps_redone_per_kill_by_mode": {m: statistics.mean([k["redone"] for k in per_kill if k["mode"] == m] or [0])
                                              for m in ("sigkill", "sigterm", "during-save")},
            "restart_to_first_step_seconds_median": statistics.median(
                r["restart_to_first_step_seconds"] for r in rows if r["restart_to_first_step_seconds"] is not None),
            "by_mode": {m: sum(mode == m for r in rows for mode in r["modes"])
                        for m in ("sigkill", "sigterm", "during-save")},
            "runs": rows,
        }
    write("chaos_drill", out)


if __name__ == "__main__":
    main()
