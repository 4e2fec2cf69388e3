"""Chaos drill: N real kills at random steps, modes and ranks on 2-rank runs killed 1, 2 or 3
times each, resumed automatically after every kill and compared bit for bit with the
uninterrupted run.

Run once with DDP's all-reduce and once with the invariant reduction, whose surviving ranks
save the last finished step when a peer dies (so a single-rank SIGKILL should cost no step).

    python bench/chaos_drill.py [--kills 20] [--train-limit 1200]
"""
import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write  # noqa: E402

from course_lib.checkpoint.faults import fired_kills  # noqa: E402
from course_lib.config import TrainConfig  # noqa: E402
from course_lib.lab.drills import ensure_reference, interrupt_and_resume  # noqa: E402
from course_lib.watch.compare import compare_runs  # noqa: E402
from course_lib.watch.monitor import read_ledger  # noqa: E402


def chaos_drill(workdir: str | Path, base: TrainConfig, kills: int = 20, seed: int = 0,
                kills_per_run: tuple[int, ...] = (1, 2, 3)) -> list[dict]:
    """``kills`` real kills at random steps, modes and ranks, spread over runs that are each
    killed 1, 2 or 3 times (``kills_per_run``, in turn), each resumed automatically after every
    kill and compared with the uninterrupted run."""
    rng = random.Random(seed)
    workdir = Path(workdir)
    ref = ensure_reference(base.replace(run_dir=str(workdir / "reference")))
    total = read_ledger(ref, 0)[-1]["step"]
    results, done, i = [], 0, 0
    while done < kills:
        n = min(kills_per_run[i % len(kills_per_run)], kills - done)
        steps = sorted(rng.sample(range(2, total + 1), n))
        modes = [rng.choice(("sigkill", "sigterm", "during-save")) for _ in steps]
        ranks = [rng.randrange(base.world_size) for _ in steps]
        cfg = base.replace(run_dir=str(workdir / f"run-{i:02d}"))
        t0 = time.perf_counter()
        r = interrupt_and_resume(cfg, steps, modes, kill_rank=ranks)
        c = compare_runs(ref, cfg.run_dir)
        first = r["restart_to_first_step_seconds"]
        fired = {k["attempt"]: k["mode"] for k in fired_kills(cfg.run_dir)}
        results.append({"run": i, "steps": steps, "modes": modes, "ranks": ranks, "kills": r["kills"],
                        "redone_per_kill": [{"mode": fired.get(a), "redone": n} for a, n in r["redone_by_attempt"].items()
                                            if a in fired],
                        "identical": c["identical"], "resumed_from": r["resumed_from"], "steps_redone": r["steps_redone"],
                        "resume_call_seconds": (None if r["resume_call_seconds"] is None
                                                else round(r["resume_call_seconds"], 2)),
                        "restart_to_first_step_seconds": None if first is None else round(first, 2),
                        "seconds": round(time.perf_counter() - t0, 1)})
        shutil.rmtree(cfg.run_dir, ignore_errors=True)
        done, i = done + n, i + 1
    return results


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
