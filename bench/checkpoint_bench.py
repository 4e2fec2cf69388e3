"""Checkpoint cost: the pipeline's training with its default save interval against the same
run without periodic checkpoints, side by side in one process; plus save time and size of
the full state.

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
        for name, every in (("no_checkpoints", 0), ("default_interval", None)):
            cfg = pipeline_config(str(Path(work) / name), train_limit=a.train_limit)
            if every is not None:
                cfg = cfg.replace(save_every_steps=every)
            t0 = time.perf_counter()
            launch(cfg, quiet=True)
            scalars = read_scalars(cfg.run_dir)
            out[name] = {"wall_seconds": round(time.perf_counter() - t0, 2), "save_every_steps": cfg.save_every_steps,
                         "saves": len(scalars.get("checkpoint/save_seconds", [])),
                         "save_seconds_mean": sum(v for _, v in scalars.get("checkpoint/save_seconds", [])) /
                         max(1, len(scalars.get("checkpoint/save_seconds", []))),
                         "size_mb": scalars.get("checkpoint/size_mb", [(0, 0)])[-1][1]}
    out["overhead_ratio"] = out["default_interval"]["wall_seconds"] / out["no_checkpoints"]["wall_seconds"] - 1
    write("checkpoint", out)


if __name__ == "__main__":
    main()
