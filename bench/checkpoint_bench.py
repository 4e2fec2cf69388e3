"""Checkpoint cost: the pipeline's training with its default save interval (synchronous and
asynchronous) against the same run without periodic checkpoints, side by side in one
process; plus save time and size of the full state. (The final checkpoint is written in all
three runs.)

    python bench/checkpoint_bench.py [--train-limit 0]
"""
import argparse
import tempfile
import time
from pathlib import Path

from common import write
from course_lib.launch import launch
from course_lib.monitor import read_scalars
from course_lib.pipeline import pipeline_config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-limit", type=int, default=0)
    a = ap.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as work:
        for name, changes in (("no_checkpoints", {"save_every_steps": 0}), ("default_interval", {}),
                              ("default_interval_async", {"async_save": True})):
            cfg = pipeline_config(str(Path(work) / name), **({"train_limit": a.train_limit} if a.train_limit else {}))
            cfg = cfg.replace(**changes)
            t0 = time.perf_counter()
            launch(cfg, quiet=True)
            scalars = read_scalars(cfg.run_dir)
            out[name] = {"wall_seconds": round(time.perf_counter() - t0, 2), "save_every_steps": cfg.save_every_steps,
                         "saves": len(scalars.get("checkpoint/save_seconds", [])),
                         "save_seconds_mean": sum(v for _, v in scalars.get("checkpoint/save_seconds", [])) /
                         max(1, len(scalars.get("checkpoint/save_seconds", []))),
                         "size_mb": scalars.get("checkpoint/size_mb", [(0, 0)])[-1][1]}
    base = out["no_checkpoints"]["wall_seconds"]
    out["overhead_ratio"] = out["default_interval"]["wall_seconds"] / base - 1
    out["overhead_ratio_async"] = out["default_interval_async"]["wall_seconds"] / base - 1
    write("checkpoint", out)


if __name__ == "__main__":
    main()
