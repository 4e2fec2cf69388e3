"""Checkpoint cost: the pipeline's training with its default save interval (synchronous and
asynchronous) against the same run without periodic checkpoints, side by side in one
process, plus save time and size of the full state. Two measures: the wall-time ratio (on a
noisy 2-core machine its spread is several percent) and the share of the run the training
loop spent waiting inside periodic saves (``checkpoint/blocking_seconds``), which is precise.

    python bench/checkpoint_bench.py [--train-limit 0] [--reps 10]
"""
import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import write

from course_lib.data.prepare import prepare_for
from course_lib.ddp.launch import launch
from course_lib.pipeline import pipeline_config
from course_lib.watch.monitor import read_scalars


def state_io(model_name: str, work: Path) -> dict:
    """Save (write + fsync + manifest + commit) and load (verify + weights_only load) of a full
    model + AdamW state, outside training."""
    import torch

    from course_lib.checkpoint import store as ckpt
    from course_lib.checkpoint.resume import rng_state
    from course_lib.ddp.models import build_model

    model = build_model(model_name, 30522)
    opt = torch.optim.AdamW(model.parameters())
    ids = torch.ones(2, 16, dtype=torch.long)
    model(ids, torch.ones_like(ids)).sum().backward()
    opt.step()
    t0 = time.perf_counter()
    tmp = ckpt.tmp_dir(work, 1)
    parts = {"model.pt": model.state_dict(), "optimizer.pt": opt.state_dict(), "scheduler.pt": {"last_epoch": 1},
             "trainer.pt": {"state": {"global_step": 1}}, "rng-rank0.pt": rng_state()}  # what a 1-rank run saves
    hashes = {name: ckpt.write_part(tmp, name, obj) for name, obj in parts.items()}
    path = ckpt.commit(work, 1, {"world_size": 1}, known=hashes)
    save = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert ckpt.verify(path)[0]
    model.load_state_dict(ckpt.load_part(path, "model.pt"))
    opt.load_state_dict(ckpt.load_part(path, "optimizer.pt"))
    load = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in path.iterdir())
    return {"save_seconds": round(save, 3), "verify_and_load_seconds": round(load, 3), "size_mb": round(size / 2**20, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-limit", type=int, default=0)
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    out = {}
    # warm cache: time training only
    prepare_for(pipeline_config(**({"train_limit": a.train_limit} if a.train_limit else {})), progress=False)
    configs = (("no_checkpoints", {"save_every_steps": 0}), ("default_interval_sync", {"async_save": False}),
               ("default_interval_async", {"async_save": True}))
    with tempfile.TemporaryDirectory() as work:
        for rep in range(a.reps):  # interleaved: each run is paired with the no-checkpoint run next to it
            for name, changes in configs:
                cfg = pipeline_config(str(Path(work) / f"{name}-{rep}"),
                                      **({"train_limit": a.train_limit} if a.train_limit else {}))
                cfg = cfg.replace(**changes)
                t0 = time.perf_counter()
                launch(cfg, quiet=True)
                wall = time.perf_counter() - t0
                scalars = read_scalars(cfg.run_dir)
                saves = [v for _, v in scalars.get("checkpoint/save_seconds", [])]
                # the loop's wait at periodic saves (the final save waits for its writer in every run)
                blocking = sum(v for _, v in scalars.get("checkpoint/blocking_seconds", [])[:-1])
                prev = out.get(name, {"wall_seconds": [], "save_seconds": [], "blocking_share": []})
                out[name] = {"wall_seconds": prev["wall_seconds"] + [round(wall, 2)],
                             "save_every_steps": cfg.save_every_steps,
                             "save_seconds": prev["save_seconds"] + saves, "saves_per_run": len(saves),
                             "blocking_share": prev["blocking_share"] + [blocking / wall]}
        out["state_io"] = {m: state_io(m, Path(work) / f"io-{m}") for m in ("bag", "minilm")}
    base = min(out["no_checkpoints"]["wall_seconds"])
    for name in ("default_interval_sync", "default_interval_async"):
        out[name]["wall_overhead"] = min(out[name]["wall_seconds"]) / base - 1
        # each repetition against the no-checkpoint run next to it: the median of these is the headline
        out[name]["paired_overheads"] = [w / b - 1 for w, b in zip(out[name]["wall_seconds"],
                                                                   out["no_checkpoints"]["wall_seconds"])]
        out[name]["loop_blocked_share"] = statistics.mean(out[name]["blocking_share"])
    write("checkpoint", out)


if __name__ == "__main__":
    main()
