"""What one rank trains, built once (:class:`Training`), its learning-rate schedule, and
:class:`GracefulStop`, which turns a preemption into a flag the loop reads.
"""
from __future__ import annotations

import signal
from dataclasses import dataclass

import torch

from course_lib.checkpoint import resume as resuming
from course_lib.checkpoint import store as ckpt
from course_lib.config import TrainConfig
from course_lib.data.prepare import TokenSplit, prepared_for_rank
from course_lib.ddp.models import model_for


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at step ``total``."""
    warm = max(1, warmup)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1.0 - s / total))


class GracefulStop:
    """SIGTERM (and SIGINT) set a flag instead of killing: the loop checks it after each step,
    and every rank saves that step and leaves (a scheduler's preemption: Slurm, Kubernetes, spot
    instances). Installed only in the main thread of a worker process."""

    def __init__(self):
        self.requested: str | None = None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handler)

    def _handler(self, signum, _frame) -> None:
        self.requested = signal.Signals(signum).name


@dataclass
class Training:
    """What a rank trains, whatever its place in the group: the data, the model, its optimizer and
    schedule, the loop's position, the SIGTERM flag, the background checkpoint writer. The
    trainers of a group that re-forms in one process share one (:class:`~course_lib.ddp.seams.Seams`)."""
    train_data: TokenSplit
    test_data: TokenSplit
    data_info: dict
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    state: resuming.TrainState
    stop: GracefulStop
    writer: ckpt.BackgroundWriter

    @classmethod
    def build(cls, cfg: TrainConfig, rank: int, device: torch.device, data_file: str | None = None) -> Training:
        """Everything built from ``cfg`` for ``rank`` (a collective only without ``data_file``: rank 0
        prepares the data). The initial weights are seeded, identical everywhere; then each rank's RNG."""
        data = prepared_for_rank(cfg, rank, data_file)
        if len(set(data.train.labels.tolist())) < 2:
            raise ValueError("the training slice holds a single class: use a larger --train-limit")
        torch.manual_seed(cfg.seed)
        model = model_for(cfg, data.info["tokenizer"]["vocab_size"]).to(device)
        fused = {"fused": True} if cfg.fused_adamw and device.type in ("cpu", "cuda") else {}
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, **fused)
        steps_per_epoch = len(data.train) // cfg.global_batch_size  # the sampler's, on any world size
        scheduler = linear_schedule(optimizer, cfg.warmup_steps, cfg.schedule_length(steps_per_epoch))
        resuming.seed_rngs(cfg.seed, rank)  # each rank's own RNG (dropout), saved in its checkpoints
        return cls(data.train, data.test, data.info, model, optimizer, scheduler, resuming.TrainState(), GracefulStop(),
                   ckpt.BackgroundWriter())
