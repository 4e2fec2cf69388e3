"""What bit-identity on any world size costs: samples/s of 2 ranks x 1 thread with DDP's
all-reduce and with the invariant reduction (fixed micro-batches, seeds per micro-batch, one
fixed summation tree), for `bag` and the pretrained `minilm`, in interleaved rounds.

    python bench/reduction_bench.py [--rounds 3] [--minilm-steps 8]
"""
import argparse
import statistics
import tempfile
from pathlib import Path

from common import write

from course_lib.beyond import launch
from course_lib.config import TrainConfig
from course_lib.lab.scaling import samples_per_s


def reduction_cost(workdir: str | Path = "runs/reduction", model: str = "bag", steps: int = 30, rounds: int = 2,
                   train_limit: int = 4000, global_batch_size: int = 64, skip: int = 3, **overrides) -> dict:
    """samples/s of 2 ranks x 1 thread with DDP's all-reduce and with the invariant reduction,
    in turns (``rounds`` times each), and their ratio: what bit-identity on any world size costs."""
    base = dict(model=model, max_steps=steps, train_limit=train_limit, save_every_steps=0, log_every=10_000,
                eval_limit=64, epochs=1, world_size=2, threads_per_rank=1, global_batch_size=global_batch_size,
                **overrides)
    rates: dict[str, list[float]] = {"ddp": [], "invariant": []}
    for r in range(rounds):
        for reduction in rates:
            run_dir = Path(workdir) / f"round-{r + 1}" / reduction
            launch(TrainConfig(run_dir=str(run_dir), reduction=reduction, **base), quiet=True)
            rates[reduction] += samples_per_s(run_dir, skip)
    out = {k: statistics.median(v) for k, v in rates.items()}
    return {"samples_per_s": out, "invariant_vs_ddp": out["invariant"] / out["ddp"], "rounds": rounds, "steps": steps,
            "model": model, "global_batch_size": global_batch_size}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3, help="times each setting runs, taking turns with the other")
    ap.add_argument("--bag-steps", type=int, default=40)
    ap.add_argument("--minilm-steps", type=int, default=8)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        out = {"bag": reduction_cost(Path(work) / "bag", "bag", steps=a.bag_steps, rounds=a.rounds),
               "minilm": reduction_cost(Path(work) / "minilm", "minilm", steps=a.minilm_steps, rounds=a.rounds,
                                        train_limit=2000, global_batch_size=16, max_length=256, lr=3e-5, skip=2)}
    write("reduction", out)


if __name__ == "__main__":
    main()
