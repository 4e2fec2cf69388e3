"""What bit-identity on any world size costs: samples/s of 2 ranks x 1 thread with DDP's
all-reduce and with the invariant reduction (fixed micro-batches, seeds per micro-batch, one
fixed summation tree), for `bag` and the pretrained `minilm`, in interleaved rounds.

    python bench/reduction_bench.py [--rounds 3] [--minilm-steps 8]
"""
import argparse
import tempfile
from pathlib import Path

from common import write

from course_lib.lab.scaling import reduction_cost


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
