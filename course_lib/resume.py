"""Where a rank's state comes back from: a checkpoint folder (``--resume``) or a live peer's memory.

A mixin of :class:`course_lib.train.Trainer` (its model, optimizer, scheduler, ``state``): the
state is read part by part (``model.pt``, ``optimizer.pt``, ``scheduler.pt``, ``trainer.pt`` and,
for the ``ddp`` reduction, this rank's RNG file) whatever holds it, and checked against the config
of the run before anything is loaded.
"""
from __future__ import annotations

import json
from pathlib import Path

from . import checkpoint as ckpt
from .config import SHAPE_KEYS, TrainConfig
from .rng import set_rng_state


class Resuming:
    def _maybe_resume(self) -> int | None:
        """``--resume``: nothing, the newest valid checkpoint (``auto``) or a named one; returns the step."""
        if self.rank == 0:
            ckpt.remove_stale_tmp(self.run_dir)
        if self.cfg.resume == "none":
            return None
        if self.cfg.resume == "auto":
            path = ckpt.latest_valid(self.run_dir, log=self.report.line if self.rank == 0 else None)
            if path is None:
                self.report.line(f"Rank {self.rank}: no valid checkpoint in {self.run_dir}, starting fresh")
                return None
        else:
            path = Path(self.cfg.resume)
            ok, reason = ckpt.verify(path)
            if not ok:
                raise ckpt.CheckpointError(f"cannot resume from {path}: {reason}")
        return self._restore(path.name, lambda name: ckpt.load_part(path, name) if (path / name).exists() else None,
                             self.cfg.resume_mode)

    def _restore(self, source: str, read, mode: str) -> int:
        """Load the state that ``read(part name)`` returns (``None`` for a part the source lacks),
        from checkpoint folder ``source`` or a live peer's memory (:mod:`course_lib.regroup`)."""
        trainer = read("trainer.pt")
        saved_cfg = json.loads(trainer["config"])
        diff = ckpt.config_differences(saved_cfg, self.cfg.to_dict(), SHAPE_KEYS)
        if diff:
            raise ckpt.CheckpointError(
                f"checkpoint {source} does not fit this config; differing keys: "
                + ", ".join(f"{k} (checkpoint {a!r}, now {b!r})" for k, (a, b) in diff.items()))
        self.model.load_state_dict(read("model.pt"))
        self.state = type(self.state)(**trainer["state"])  # a TrainState
        if mode != "weights-only":
            self.optimizer.load_state_dict(read("optimizer.pt"))
            self.scheduler.load_state_dict(read("scheduler.pt"))
        same_world = saved_cfg["world_size"] == self.world_size
        rng = read(f"rng-rank{self.rank}.pt") if mode != "no-rng" and same_world else None
        if rng is not None:  # the invariant reduction needs none (emergency saves and peers have none)
            set_rng_state(rng)
        exact = self.invariant is not None and saved_cfg.get("reduction") == "invariant"
        if not same_world and self.rank == 0 and exact:
            self.report.line(f"NOTE: resuming a {saved_cfg['world_size']}-rank checkpoint on {self.world_size} rank(s) "
                             "with the invariant reduction: the run continues bit-identically.")
        elif not same_world and self.rank == 0:
            self.report.line(
                f"NOTE: resuming a {saved_cfg['world_size']}-rank checkpoint on {self.world_size} rank(s). The global "
                "order of samples is preserved, but gradients are now summed in a different order and the per-rank "
                "RNG streams differ: the run continues closely, not bit-identically.")
        if mode == "epoch-start":
            self.state.step_in_epoch = 0  # the textbook's resume: the partial epoch is repeated
        else:
            self.saved_step = self.state.global_step  # already on disk: a final save here would save it twice
        step = self.state.global_step
        self.tb.scalars(step, **{"events/resume_from_step": step})
        self.tb.event("events/resume", f"attempt {self.attempt} resumed from {source} (mode {mode})", step)
        if self.rank == 0:
            self.report.line(f"Resumed from {source}: epoch {self.state.epoch + 1}, step {step}, mode {mode}, "
                             f"last loss {self.state.last_loss:.4f}")
        if mode != "weights-only":  # weights-only starts a fresh schedule anyway
            self._extend_schedule(TrainConfig.from_dict(saved_cfg))
        return step

    def _extend_schedule(self, saved: TrainConfig) -> None:
        """Extending a run ("ten more epochs") changes the length its LR decay was planned for.
        The linear decay is then stretched to the new end, as Hugging Face's Trainer does: the
        steps already done are unchanged, the next ones follow the new line. Said, not hidden."""
        spe = self.sampler.steps_per_epoch
        before, now = saved.schedule_length(spe), self.cfg.schedule_length(spe)
        if before == now:
            return
        sched, planned = self.scheduler, self.optimizer.param_groups[0]["lr"]
        for group, base, fn in zip(self.optimizer.param_groups, sched.base_lrs, sched.lr_lambdas):
            group["lr"] = base * fn(sched.last_epoch)  # the rate of the next step, on the new line
        if self.rank == 0:
            self.report.line(
                f"NOTE: the learning-rate schedule was planned for {before} steps and now runs to {now}: its linear "
                f"decay is stretched to end at step {now}, so step {self.state.global_step + 1} uses lr "
                f"{self.optimizer.param_groups[0]['lr']:.3g} (as planned: {planned:.3g}). Steps up to the checkpoint "
                "are unchanged. To extend bit-identically to a run planned that long, give both the same --schedule-steps.")
