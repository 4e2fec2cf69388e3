"""The kit's observer inside the book's loop: it watches, it never steers.

To *judge* the book's run with ``compare_runs``, the kit needs the records its own trainer writes:
a ledger row per optimizer step (``DIR/metrics/rank{R}.jsonl``) and ``DIR/final/summary.json`` with
``parameter_sha256``. It also carries out the planned faults (the kit's
:class:`~course_lib.checkpoint.faults.FaultInjector`: real SIGKILLs, each fired once per run).

What it costs the run: one small ``all_gather_object`` per step (each rank's loss and sample
ids, so every row holds the whole step's batch, as the kit's rows do). It changes no number the
book's code computes: no RNG is drawn, no tensor of the model is touched.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch.distributed as dist

from course_lib._runtime.rank_start import hold_process_group
from course_lib.checkpoint.faults import FaultInjector, write_half
from course_lib.checkpoint.store import write_atomic
from course_lib.config import TrainConfig
from course_lib.ddp.consistency import check_ranks_agree
from course_lib.ddp.sampling import sample_digest
from course_lib.watch.monitor import Ledger, next_attempt


class Observer:
    """Used in notebook 03 (exercises)."""
    def __init__(self, settings, rank: int, world_size: int, steps_per_epoch: int):
        self.settings, self.rank, self.world_size, self.steps_per_epoch = settings, rank, world_size, steps_per_epoch
        hold_process_group()  # the book's group outlives its train(): no destructor, no deadlock at its end
        self.run_dir = Path(settings.run_dir)
        self.attempt = next_attempt(self.run_dir, rank)
        self.ledger = Ledger(self.run_dir, rank)
        plan = TrainConfig(run_dir=str(self.run_dir), world_size=world_size, kill_at_step=settings.kill_at_step,
                           kill_rank=settings.kill_rank, kill_mode=settings.kill_mode)
        self.faults = FaultInjector(plan, rank)
        self.first_step: int | None = None
        self.step = 0

    def record(self, epoch: int, step_in_epoch: int, loss: float, batch: dict) -> None:
        """One ledger row for the step just finished; then, if a SIGKILL is planned for the
        next step on this rank, it fires (the kit's kill "at step K" strikes as step K begins)."""
        self.step = epoch * self.steps_per_epoch + step_in_epoch + 1
        self.first_step = self.step if self.first_step is None else self.first_step
        shares = [None] * self.world_size
        dist.all_gather_object(shares, (loss, batch["id"].tolist()))
        batch_ids = [i for _, ids in shares for i in ids]
        self.ledger.write({"step": self.step, "epoch": epoch, "loss": loss,
                           "global_loss": sum(loss for loss, _ in shares) / self.world_size,
                           "samples": sample_digest(batch_ids), "sample_ids": batch["id"].tolist(),
                           "grad_norm": None,  # the book's loop computes none (consistency reads the key)
                           "batch_ids": batch_ids, "attempt": self.attempt, "time": time.time()})
        self.faults.before_step(self.step + 1)

    def before_save(self, checkpoint: dict, path: str) -> None:
        """A ``during-save`` kill planned at or before this step: write the first half of the
        file's bytes to ``path`` itself (what ``torch.save`` leaves when its process dies half-way),
        then SIGKILL this process. Otherwise nothing."""
        kill = self.faults.due(self.step, ("during-save",), at_or_after=True)
        if kill is not None:
            write_half(checkpoint, path, then=lambda: self.faults.fire(kill))

    def finish(self, model, test_accuracy: float | None) -> None:
        """Every rank checks that all ranks hold the same parameters; rank 0 writes the summary."""
        digest = check_ranks_agree(model, self.world_size, self.run_dir, self.rank)
        self.ledger.close()
        if self.rank != 0:
            return
        resumed = self.settings.resume and self.first_step is not None
        summary = {"book": True, "parameter_sha256": digest, "steps": self.step, "epochs": self.settings.epochs,
                   "steps_per_epoch": self.steps_per_epoch, "attempt": self.attempt, "resumes": self.attempt - 1,
                   "resumed_from": self.first_step - 1 if resumed else None, "world_size": self.world_size,
                   "test_accuracy": test_accuracy}
        write_atomic(self.run_dir / "final" / "summary.json", json.dumps(summary, indent=2).encode())
