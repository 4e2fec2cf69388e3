"""How throughput scales with ranks and threads, and what the all-reduce costs.

``measure_scaling`` trains a few short real runs with different (ranks, threads per rank) and
reads samples/s back from their step timings. It adds one run that does *one rank's share* of
the 2-rank work alone: the difference between that and the 2-rank step is the price of
talking (all-reduce, synchronisation), the rest is compute. ``step_anatomy`` splits one
step into its phases, the per-rank costs that more ranks do not divide included.
"""
from __future__ import annotations

import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from course_lib.beyond import launch
from course_lib.config import TrainConfig
from course_lib.data.prepare import prepare_for
from course_lib.ddp.models import build_model, parameter_count
from course_lib.lab.i18n import tr
from course_lib.watch.monitor import read_ledger, read_scalars

PHASES = ("forward", "backward", "clip", "AdamW step")

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


def samples_per_s(run_dir: str | Path, skip: int) -> list[float]:
    """samples/s of every step after the first ``skip`` (warm-up)."""
    return [v for s, v in read_scalars(run_dir)["train/samples_per_s"] if s > skip]


def _seconds(value: float) -> str:
    """Two significant digits, written out in full (0.000023 s, not 2.3e-05 s; 17 s, not 17.0 s)."""
    return np.format_float_positional(float(f"{value:.2g}"), trim="-") + " s"


def allreduce_frame(models=("bag", "minilm"), world_size: int = 2, lang: str | None = None):
    """The seconds one all-reduce of each model's gradient takes over each link (computed from the
    link's rate: :func:`allreduce_table`), a row a link, slowest first, with where such a link is.
    Used in notebook 03 (§6)."""
    tables = {model: allreduce_table(model, world_size) for model in models}
    rows = {link: {tr("where", lang): tr("inside one machine" if link.startswith("NVLink") else "between machines", lang),
                   **{f"{model} ({t['gradient_mb']:.1f} MB)": _seconds(t["seconds"][link]) for model, t in tables.items()}}
            for link in LINKS_GBIT}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = tr("link", lang)
    return frame


def ledger_samples_per_s(run_dir: str | Path, skip: int = 2) -> float:
    """Training samples per second from a run's own ledger (rank 0: each step's whole batch and
    its time stamp), after ``skip`` warm-up steps: start-up, data loading and the final
    evaluation do not count."""
    rows = read_ledger(run_dir, 0)[skip:]
    if len(rows) < 2:
        raise ValueError(f"{run_dir}: too few steps in the ledger to time ({len(rows)} after {skip} skipped)")
    return sum(len(r["batch_ids"]) for r in rows[1:]) / (rows[-1]["time"] - rows[0]["time"])


def throughput_table(runs: dict[str, str | Path], lang: str | None = None):
    """samples/s of each run and its ratio to the first: the chapter's "total throughput = one
    card x cards" measured, not assumed. Used in notebook 03 (optional deep-dive B)."""
    rates = {tr(name, lang): ledger_samples_per_s(d) for name, d in runs.items()}
    first = next(iter(rates.values()))
    return pd.DataFrame({tr("samples/s", lang): {k: round(v, 1) for k, v in rates.items()},
                         tr("vs the first", lang): {k: f"{v / first:.2f}x" for k, v in rates.items()}})


BUSY = 0.8  # 2 threads below this share of 1 thread's speed: the cores were busy (idle, 2 threads are 1.4x)


def measure_scaling(workdir: str | Path = "runs/scaling", model: str = "bag", steps: int = 30,
                    train_limit: int = 4000, global_batch_size: int = 64, skip: int = 3, rounds: int = 1,
                    **overrides) -> dict:
    """samples/s for 1x1, 1x2 and 2x1 (ranks x threads), plus a compute/communication split.

    The settings take turns, ``rounds`` times over (1x1, 1x2, 2x1, half, 1x1, ...): a shared
    machine whose speed drifts over minutes then drifts for every setting alike, instead of
    flattering whichever ran in a quiet minute. Each setting's figure is the median over the
    steps of all its rounds. A second thread that made one rank slower says the cores were busy
    with other work: then a line says so, and the result keeps it (``"busy"``). Used in notebook 03
    (optional deep-dive B)."""
    base = dict(model=model, max_steps=steps, train_limit=train_limit, save_every_steps=0, log_every=10_000,
                eval_limit=64, epochs=1, reduction="ddp", **overrides)  # DDP's all-reduce is what the lab splits off
    settings = {"1 rank x 1 thread": (1, 1, global_batch_size), "1 rank x 2 threads": (1, 2, global_batch_size),
                "2 ranks x 1 thread": (2, 1, global_batch_size), "1 rank, half batch": (1, 1, global_batch_size // 2)}
    rates: dict[str, list[float]] = {name: [] for name in settings}
    per_round: dict[str, list[float]] = {name: [] for name in settings}
    for r in range(rounds):
        for name, (ranks, threads, batch) in settings.items():
            run_dir = Path(workdir) / f"round-{r + 1}" / name.replace(" ", "_").replace(",", "")
            launch(TrainConfig(run_dir=str(run_dir), world_size=ranks, threads_per_rank=threads,
                               global_batch_size=batch, **base), quiet=True)
            mine = samples_per_s(run_dir, skip)
            rates[name] += mine
            per_round[name].append(statistics.median(mine))
    out = {name: statistics.median(v) for name, v in rates.items()}
    busy = out["1 rank x 2 threads"] < BUSY * out["1 rank x 1 thread"]
    if busy:
        print(tr("1 rank x 2 threads ran at {two:.0f} samples/s, 1 thread at {one:.0f}: on idle cores a second thread "
                 "makes a rank faster (bench/results/scaling.json: 1.4x), so another process held a core here and the "
                 "threads waited for it. Measure again on a quiet machine before reading these bars.",
                 None, two=out["1 rank x 2 threads"], one=out["1 rank x 1 thread"]))
    step_2 = global_batch_size / out["2 ranks x 1 thread"]
    compute = (global_batch_size // 2) / out["1 rank, half batch"]
    return {"samples_per_s": {k: out[k] for k in list(settings)[:3]},
            "speedup_2x1_vs_1x1": out["2 ranks x 1 thread"] / out["1 rank x 1 thread"],
            "step_seconds_2_ranks": {"compute": compute, "communication + sync": max(0.0, step_2 - compute)},
            "per_round_samples_per_s": per_round, "rounds": rounds, "steps": steps, "model": model, "busy": busy}


def step_anatomy(model: str = "bag", batch_size: int = 32, max_length: int = 256, threads: int = 1,
                 repeats: int = 5, train_limit: int = 2000) -> dict[str, dict[str, float]]:
    """Median seconds of each phase of one training step in one process, on real tokenized
    reviews, with the fused and with the foreach ("textbook") AdamW, taking turns.

    Why it matters for DDP: every rank clips and updates its *full* copy of the model, so the
    last two phases cost the same at any world size; halving the batch per rank halves only
    forward and backward. A cheap optimizer step is what lets 2 ranks approach 2x.
    Used in notebook 03 (optional deep-dive B)."""
    data = prepare_for(TrainConfig(model=model, train_limit=train_limit, max_length=max_length), progress=False)
    batch = data.train.batch(list(range(batch_size)), data.info["tokenizer"]["pad_id"])
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(0)
        net = build_model(model, data.info["tokenizer"]["vocab_size"], max_length).train()
        optimizers = {"fused AdamW": torch.optim.AdamW(net.parameters(), lr=1e-6, fused=True),
                      "foreach AdamW": torch.optim.AdamW(net.parameters(), lr=1e-6, foreach=True)}
        seconds = {name: defaultdict(list) for name in optimizers}
        for r in range(repeats + 1):  # round 0 warms up (allocations, optimizer state)
            for name, opt in optimizers.items():
                opt.zero_grad(set_to_none=True)
                t = [time.perf_counter()]
                loss = F.cross_entropy(net(batch["input_ids"], batch["attention_mask"]), batch["label"])
                t.append(time.perf_counter())
                loss.backward()
                t.append(time.perf_counter())
                torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
                t.append(time.perf_counter())
                opt.step()
                t.append(time.perf_counter())
                if r:
                    for phase, a, b in zip(PHASES, t, t[1:]):
                        seconds[name][phase].append(b - a)
    finally:
        torch.set_num_threads(before)
    return {name: {p: statistics.median(v) for p, v in phases.items()} for name, phases in seconds.items()}
