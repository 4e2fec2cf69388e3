"""``--reduction invariant``: the core's trainer with the world-size-invariant gradient sum, and
the survivors' save it makes possible.

Three changes to :class:`course_lib.ddp.train.Trainer`, each through one of its hooks:

* the gradient sync of a step is :class:`~course_lib.beyond.invariant.InvariantStep` instead of
  DDP: the same bits on any number of ranks, so a checkpoint resumes exactly on another world
  size, and an elastic group can shrink and grow (:mod:`course_lib.beyond.elastic`);
* one intra-op thread per rank, whatever the world size: a CPU kernel may sum in another order
  with more threads;
* **the survivors' save.** When a peer dies mid-step, the next collective fails on every rank
  that is left (gloo: within milliseconds; NCCL usually hangs until its watchdog's timeout).
  Every collective of a step comes before its optimizer step, so each survivor holds the state
  of the last finished step, and no randomness belongs to the dead rank: a survivor saves it
  (same commit protocol) and leaves with :data:`EXIT_SURVIVED`, and ``--resume auto`` loses no
  step. torch's launchers SIGTERM the survivors soon after a rank fails (``launch``: after 10 s;
  torchrun's agent: at once, SIGKILL 30 s later), so the save has to fit in that window.
"""
from __future__ import annotations

from pathlib import Path

import torch.distributed as dist

from course_lib.beyond.invariant import InvariantStep, check_layout
from course_lib.checkpoint import store as ckpt
from course_lib.config import TrainConfig
from course_lib.ddp.train import Trainer, register

EXIT_SURVIVED = 75  # EX_TEMPFAIL: a peer died; this rank saved the last finished step and left
PEER_LOST = ("Connection closed by peer", "Connection reset by peer")  # gloo's words (a plain RuntimeError)


def peer_lost(err: BaseException) -> bool:
    """Did this collective fail because a peer is gone?"""
    return isinstance(err, dist.DistError) or any(m in str(err) for m in PEER_LOST)


@register("invariant")
class InvariantTrainer(Trainer):
    def gradient_sync(self) -> InvariantStep:
        cfg = self.cfg
        return InvariantStep(self.model, cfg.global_batch_size, cfg.micro_batch, self.world_size, self.rank, cfg.seed)

    @classmethod
    def threads_per_rank(cls, cfg: TrainConfig, local_world_size: int) -> int:
        return cfg.threads_per_rank or 1

    @classmethod
    def check(cls, cfg: TrainConfig) -> str | None:
        return check_layout(cfg.global_batch_size, cfg.micro_batch, cfg.world_size)

    def _run_epoch(self) -> None:
        try:
            super()._run_epoch()
            return
        except RuntimeError as err:
            if not peer_lost(err):
                raise
            why = f"a peer is gone ({' '.join(str(err).split())[:120]})"
        self._peer_lost(why)  # outside the except clause: its traceback no longer holds the old groups

    def _peer_lost(self, why: str) -> None:
        """Save the last finished step, then leave for ``--resume auto``."""
        path = self._emergency_save(self._snapshot(), background=False)
        self.report.line(f"Rank {self.rank}: {why}; emergency checkpoint {path.name} of the last finished step "
                         "saved, exiting for --resume auto")
        self.tb.close()
        raise SystemExit(EXIT_SURVIVED)

    def _snapshot(self) -> dict:
        """The state of the last finished step, part by part (the same on every survivor)."""
        return {name: obj.state_dict() for name, obj in self.stateful().items()}

    def _emergency_save(self, parts: dict, background: bool) -> Path:
        """Save ``parts`` (the last finished step) outside the periodic schedule, alone (the peers
        are gone), in a folder of this rank's own; committed unless another survivor or the
        periodic save committed that step first. In the background its bytes are the snapshot."""
        step = self.state.global_step
        self.writer.wait()  # a periodic save in flight finishes first
        folder = ckpt.checkpoint_root(self.run_dir) / ckpt.step_dir_name(step)
        if folder.exists():
            return folder
        meta = {"epoch": self.state.epoch, "world_size": self.world_size, "config_hash": self.cfg.shape_hash(),
                "attempt": self.attempt, "rank_rng": False, "emergency": True, "saved_by_rank": self.rank}
        if background:
            parts = {name: ckpt.serialize(obj) for name, obj in parts.items()}
        self.saved_step = step
        run_dir, tmp = self.run_dir, ckpt.tmp_dir(self.run_dir, step, self.attempt)
        tmp = tmp.with_name(f"{tmp.name}-rank{self.rank}")

        def save() -> None:
            hashes = {name: ckpt.write_part(tmp, name, obj) for name, obj in parts.items()}
            ckpt.commit(run_dir, step, meta, known=hashes, tmp=tmp, replace=False)
        self.writer.submit(save, background)
        return folder
