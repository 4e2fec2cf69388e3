"""How throughput scales with ranks and threads, and what the all-reduce costs.

``measure_scaling`` trains a few short real runs with different (ranks, threads per rank) and
reads samples/s back from their step timings. It adds one run that does *one rank's share* of
the 2-rank work alone: the difference between that and the 2-rank step is the price of
talking (all-reduce, synchronisation), the rest is compute.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from .config import TrainConfig
from .launch import launch
from .models import build_model, parameter_count
from .monitor import read_ledger, read_scalars

LINKS_GBIT = {"1 GbE": 1, "10 GbE": 10, "100 Gb InfiniBand": 100, "NVLink (H100, ~900 GB/s)": 7200}


def allreduce_seconds(n_params: int, world_size: int, gbit_per_s: float, bytes_per_param: int = 4) -> float:
    """Ring all-reduce time: each rank sends and receives ``2 (W-1)/W`` of the gradient."""
    if world_size < 2:
        return 0.0
    return 2 * (world_size - 1) / world_size * n_params * bytes_per_param * 8 / (gbit_per_s * 1e9)


def allreduce_table(model: str = "bag", world_size: int = 2, vocab_size: int = 30522) -> dict:
    """Seconds per step spent in the gradient all-reduce over typical links."""
    n = parameter_count(build_model(model, vocab_size))
    return {"parameters": n, "gradient_mb": n * 4 / 2**20,
            "seconds": {link: allreduce_seconds(n, world_size, bw) for link, bw in LINKS_GBIT.items()}}


def _samples_per_s(run_dir: str, skip: int = 3) -> float:
    """Median samples/s over the steps after the first ``skip`` (warm-up)."""
    values = [v for s, v in read_scalars(run_dir)["train/samples_per_s"] if s > skip]
    return statistics.median(values)


def measure_scaling(workdir: str | Path = "runs/scaling", model: str = "bag", steps: int = 30,
                    train_limit: int = 4000, global_batch_size: int = 64, skip: int = 3, **overrides) -> dict:
    """samples/s for 1x1, 1x2 and 2x1 (ranks x threads), plus a compute/communication split."""
    base = dict(model=model, max_steps=steps, train_limit=train_limit, global_batch_size=global_batch_size,
                save_every_steps=0, log_every=10_000, eval_limit=64, epochs=1, **overrides)
    settings = {"1 rank x 1 thread": (1, 1, global_batch_size), "1 rank x 2 threads": (1, 2, global_batch_size),
                "2 ranks x 1 thread": (2, 1, global_batch_size), "1 rank, half batch": (1, 1, global_batch_size // 2)}
    out = {}
    for name, (ranks, threads, batch) in settings.items():
        run_dir = str(Path(workdir) / name.replace(" ", "_").replace(",", ""))
        launch(TrainConfig(run_dir=run_dir, world_size=ranks, threads_per_rank=threads,
                           **{**base, "global_batch_size": batch}), quiet=True)
        out[name] = _samples_per_s(run_dir, skip)
    step_2 = global_batch_size / out["2 ranks x 1 thread"]
    compute = (global_batch_size // 2) / out["1 rank, half batch"]
    return {"samples_per_s": {k: out[k] for k in list(settings)[:3]},
            "speedup_2x1_vs_1x1": out["2 ranks x 1 thread"] / out["1 rank x 1 thread"],
            "step_seconds_2_ranks": {"compute": compute, "communication + sync": max(0.0, step_2 - compute)},
            "steps": steps, "model": model, "ledger_rows": len(read_ledger(Path(workdir) / "2_ranks_x_1_thread", 0))}
