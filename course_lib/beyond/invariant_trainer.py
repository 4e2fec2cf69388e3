"""``--reduction invariant``: the core's trainer with the world-size-invariant gradient sum, and
the survivors' save it makes possible. :data:`INVARIANT` is its
:class:`~course_lib.ddp.launch.Reduction`: what ``launch(cfg, reduction=INVARIANT)`` runs.

Three things differ from DDP, each passed in or wrapped around, none overriding the core:

* the gradient sync of a step is :class:`~course_lib.beyond.invariant.InvariantStep` (the
  trainer's ``gradients``): the same bits on any number of ranks, so a checkpoint resumes
  exactly on another world size and an elastic group can shrink and grow
  (:mod:`course_lib.beyond.elastic`);
* one intra-op thread per rank, whatever the world size: a CPU kernel may sum in another order
  with more threads;
* **the survivors' save** (docs/invariant.md): a survivor of a peer's death saves the last
  finished step and leaves with :data:`PEER_LOST` (exit code 75), within the window torch's
  launchers leave it (``launch``: SIGTERM after 10 s; torchrun's agent: at once, SIGKILL 30 s later).
"""
from __future__ import annotations

import functools
import os
import shutil
from datetime import timedelta
from pathlib import Path

import torch.distributed as dist

from course_lib.beyond.invariant import INVARIANT_TRAITS, InvariantStep, check_layout
from course_lib.checkpoint import store as ckpt
from course_lib.config import TrainConfig
from course_lib.ddp.launch import Reduction, faults_for, resume_and_train
from course_lib.ddp.outcome import Outcome
from course_lib.ddp.seams import Seams
from course_lib.ddp.train import Trainer

PEER_LOST = Outcome("peer-lost", 75)  # EX_TEMPFAIL: a peer died; this rank saved the last finished step
# gloo's words (a plain RuntimeError): a peer gone, or one that never answered within the run's timeout (gloo
# can miss a peer's death: once in ~30 drills). A timeout says "Timed out waiting" for the operation that timed
# out and "Application timeout caused pair closure" for every other one pending in the context then
PEER_LOST_WORDS = ("Connection closed by peer", "Connection reset by peer", "Timed out waiting",
                   "Application timeout caused pair closure")


def peer_lost(err: BaseException) -> bool:
    """Did this collective fail because a peer is gone (or never answered within the timeout)?"""
    return isinstance(err, dist.DistError) or any(m in str(err) for m in PEER_LOST_WORDS)


def invariant_gradients(cfg: TrainConfig, rank: int, world_size: int):
    """The trainer's ``gradients``: a factory of this rank's :class:`InvariantStep`."""
    return functools.partial(InvariantStep, global_batch_size=cfg.global_batch_size, micro_batch=cfg.micro_batch,
                             world_size=world_size, rank=rank, seed=cfg.seed, precision=cfg.precision,
                             timeout=timedelta(seconds=cfg.timeout_s))  # the world group's (launch.rank_setup)


def train_invariant(cfg: TrainConfig, rank: int, world_size: int, device, report, data_file: str | None = None) -> Outcome:
    """One rank's run with the invariant reduction; a lost peer ends it with the survivors' save."""
    trainer = Trainer(cfg, rank, world_size, device, report, data_file,
                      seams=Seams(gradients=invariant_gradients(cfg, rank, world_size)), faults=faults_for(cfg, rank))
    try:
        return resume_and_train(trainer)
    except RuntimeError as err:
        if not peer_lost(err):
            raise
        error = " ".join(str(err).split())[:120]
    # outside the except clause: its traceback, which holds the old groups, is gone
    path = emergency_save(trainer, snapshot(trainer), background=False)
    report.line(f"Rank {rank}: a peer is gone ({error}); emergency checkpoint {path.name} of the last finished step saved, "
                "exiting for --resume auto")
    return PEER_LOST


def snapshot(trainer: Trainer) -> dict:
    """The state of the last finished step, part by part (the same on every survivor)."""
    return {name: obj.state_dict() for name, obj in trainer.stateful().items()}


def emergency_save(trainer: Trainer, parts: dict, background: bool) -> Path:
    """Save ``parts`` (the last finished step) outside the periodic schedule, alone (the peers
    are gone), in a folder of this rank's own, committed unless another survivor or the periodic
    save committed that step first (any of them will do). In the background its bytes are the
    snapshot. Returns the step's checkpoint folder."""
    step = trainer.state.global_step
    trainer.writer.wait()  # a periodic save in flight finishes first
    folder = ckpt.checkpoint_root(trainer.run_dir) / ckpt.step_dir_name(step)
    if folder.exists():
        return folder
    meta = {"epoch": trainer.state.epoch, "world_size": trainer.world_size, "config_hash": trainer.cfg.shape_hash(),
            "attempt": trainer.attempt, "rank_rng": False, "emergency": True, "saved_by_rank": trainer.rank}
    if background:
        parts = {name: ckpt.serialize(obj) for name, obj in parts.items()}
    trainer.saves.saved = step
    run_dir, tmp = trainer.run_dir, ckpt.tmp_dir(trainer.run_dir, step, trainer.attempt)
    tmp = tmp.with_name(f"{tmp.name}-rank{trainer.rank}")

    def save() -> None:
        hashes = {name: ckpt.write_part(tmp, name, obj) for name, obj in parts.items()}
        ckpt.write_manifest(tmp, step, meta, known=hashes)
        try:
            os.rename(tmp, folder)  # fails if another survivor got there first: its copy is the same
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            return
        ckpt.write_latest(run_dir, folder)
    trainer.writer.submit(save, background)
    return folder


def _layout_problem(cfg: TrainConfig) -> str | None:  # a named function: the Reduction is pickled to each rank
    return check_layout(cfg.global_batch_size, cfg.micro_batch, cfg.world_size)


INVARIANT = Reduction("invariant", train_invariant, traits=INVARIANT_TRAITS, check=_layout_problem)
