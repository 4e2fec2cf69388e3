"""DDP scaling on CPU: samples/s for 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x
1 thread, measured in one run, for `bag` and for the pretrained `minilm`: with the trainer's
defaults (fused AdamW, gradients as views of DDP's buckets), with the textbook's plain
AdamW + copying DDP (to show what the two options are worth), and with gradient
accumulation over micro-batches so one all-reduce serves more samples.

    python bench/scaling_bench.py [--minilm-steps 10] [--rounds 2]
"""
import argparse
import tempfile
from pathlib import Path

from common import write

from course_lib.lab.scaling import allreduce_table, measure_scaling


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bag-steps", type=int, default=40)
    ap.add_argument("--minilm-steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2, help="times each setting runs, taking turns with the others")
    a = ap.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as work:
        out["bag"] = measure_scaling(Path(work) / "bag", "bag", steps=a.bag_steps, rounds=a.rounds)
        minilm = dict(model="minilm", steps=a.minilm_steps, train_limit=2000, max_length=256, lr=3e-5, skip=2)
        out["minilm_16"] = measure_scaling(Path(work) / "m1", global_batch_size=16, rounds=a.rounds, **minilm)
        out["minilm_16_textbook"] = measure_scaling(Path(work) / "m0", global_batch_size=16, rounds=a.rounds,
                                                    fused_adamw=False, grad_bucket_view=False, **minilm)
        out["minilm_micro8_64"] = measure_scaling(Path(work) / "m2", global_batch_size=64, micro_batch=8, **minilm)
    out["allreduce"] = {m: allreduce_table(m) for m in ("bag", "minilm")}
    write("scaling", out)


if __name__ == "__main__":
    main()
