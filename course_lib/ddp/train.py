"""The per-rank training loop with DDP: one step, one save, one resume, read top to bottom.

The PyTorch DDP tutorial's ``Trainer``: ``__init__`` builds everything from the config and wraps
the model in ``DistributedDataParallel``; ``train`` runs epochs, ``_run_epoch`` steps,
``_run_batch`` is one optimizer step, ``_save_checkpoint`` and ``_resume`` move the whole state to
disk and back. That state (:meth:`Trainer.stateful`) is model, optimizer, LR scheduler, the
loop's position and every rank's RNG: objects with ``state_dict`` / ``load_state_dict`` that save
and resume iterate over. The data order is a pure function of (seed, epoch, step)
(:mod:`course_lib.ddp.sampling`), so a resumed run is bit-identical to one never interrupted.

Extensions subclass :class:`Trainer` for a ``--reduction`` (:func:`register`; the kit's are in
:mod:`course_lib.beyond`, which this module never imports) and fill in the hooks its class
docstring lists.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist

from course_lib.checkpoint import resume
from course_lib.checkpoint import store as ckpt
from course_lib.checkpoint.faults import EXIT_PREEMPTED, FaultInjector, GracefulStop
from course_lib.config import ConfigError, TrainConfig
from course_lib.data.prepare import prepared_for_rank
from course_lib.ddp.consistency import check_ranks_agree
from course_lib.ddp.evaluation import held_out_metrics
from course_lib.ddp.models import build_model
from course_lib.ddp.sampling import ResumableDistributedSampler, sample_digest
from course_lib.ddp.sync import DDPSync, GradientSync
from course_lib.watch.monitor import Ledger, TensorBoardLogger, next_attempt

TRAINERS: dict[str, type[Trainer]] = {}  # --reduction -> the Trainer that does it (extensions register theirs)


def register(reduction: str) -> Callable[[type], type]:
    """Class decorator: ``--reduction reduction`` is trained by this class."""
    def add(cls: type) -> type:
        TRAINERS[reduction] = cls
        return cls
    return add


def trainer_for(reduction: str) -> type[Trainer]:
    """The class that trains ``--reduction reduction`` (one line when no extension provides it)."""
    if reduction not in TRAINERS:
        raise ConfigError(f"--reduction {reduction} is an extension in course_lib.beyond: import course_lib.beyond "
                          "before launching (python -m course_lib does)")
    return TRAINERS[reduction]


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at step ``total``."""
    warm = max(1, warmup)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1.0 - s / total))


@register("ddp")
class Trainer:
    """One rank's training loop (``train``), built from the config for this rank's place in the
    group. The hooks an extension overrides, and who does: ``gradient_sync`` (the invariant
    reduction), ``threads_per_rank`` and ``check`` (asked before any rank starts), ``_run_epoch``
    (what a lost peer raises: the survivors' save), ``_votes`` / ``_after_votes`` (what the ranks
    agree on at a step's end: a node waiting to join), ``_take_place``, ``_join``, ``_resume``
    (an elastic group: its own ranks, re-formed in-process, the state from a live peer)."""

    def __init__(self, cfg: TrainConfig, rank: int, world_size: int, device: torch.device, report,
                 data_file: str | None = None):
        self.cfg, self.device, self.report = cfg, device, report
        self.run_dir = Path(cfg.run_dir)
        self.stop = GracefulStop()
        data = prepared_for_rank(cfg, rank, data_file)
        self.train_data, self.test_data, self.data_info = data.train, data.test, data.info
        self.pad_id = data.info["tokenizer"]["pad_id"]
        if len(set(self.train_data.labels.tolist())) < 2:
            raise ValueError("the training slice holds a single class: use a larger --train-limit")

        torch.manual_seed(cfg.seed)  # identical initial weights on every rank (DDP also broadcasts them)
        self.model = build_model(cfg.model, data.info["tokenizer"]["vocab_size"], cfg.max_length,
                                 **({"dim": cfg.embed_dim} if cfg.model == "bag" else {}), dropout=cfg.dropout).to(device)
        # fused AdamW updates each tensor in one pass over memory (minilm, one CPU thread: 0.03 s
        # instead of 0.14 s); every rank updates its whole copy, a cost DDP does not divide
        fused = {"fused": True} if cfg.fused_adamw and device.type in ("cpu", "cuda") else {}
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, **fused)
        steps_per_epoch = len(self.train_data) // cfg.global_batch_size  # the sampler's, on any world size
        self.scheduler = linear_schedule(self.optimizer, cfg.warmup_steps, cfg.schedule_length(steps_per_epoch))
        self.state = resume.TrainState()
        # the newest step this attempt saved or resumed from (the same on every rank: it decides who
        # enters a save's collectives), and on rank 0 the newest one whose commit went through
        self.saved_step: int | None = None
        self.committed_step: int | None = None
        self.writer = ckpt.BackgroundWriter()
        self.ledger = self.tb = None
        self._join(*self._take_place(rank, world_size))  # DDP wraps the model here (DDPSync)
        resume.seed_rngs(cfg.seed, self.rank)  # each rank's own RNG (dropout), saved in its checkpoints
        if self.rank == 0:  # the run says how it was made, whatever started it
            ckpt.write_atomic(self.run_dir / "config.json", json.dumps(self.state.config, indent=2, sort_keys=True).encode())
        self.resumed_from = self._resume()
        if self.rank == 0:
            for line in self.faults.explain(self.state.global_step, self.total_steps):
                report.line(line)

    # ------------------------------------------------------------------ the group
    def _take_place(self, rank: int, world_size: int) -> tuple[int, int]:
        """This rank's place in the group: the launcher's (an elastic group decides its own)."""
        return rank, world_size

    def _join(self, rank: int, world_size: int, about: dict | None = None) -> None:
        """Everything that depends on this rank's place in the group (a collective: every rank
        calls it). ``about`` goes into ``attempts.jsonl``."""
        self.rank, self.world_size, cfg = rank, world_size, self.cfg
        self.state.config = {**cfg.to_dict(), "world_size": world_size}
        self.attempt = next_attempt(self.run_dir, rank, **(about or {}))
        self.faults = FaultInjector(cfg, rank, self.attempt)
        self.sync = self.gradient_sync()
        self.sampler = ResumableDistributedSampler(len(self.train_data), cfg.global_batch_size, world_size, rank, cfg.seed,
                                                   contiguous=self.sync.contiguous)
        self.total_steps = cfg.planned_steps(self.sampler.steps_per_epoch)
        self.ledger = Ledger(self.run_dir, rank)
        self.tb = TensorBoardLogger(self.run_dir, enabled=rank == 0, hparams=cfg.to_dict())

    def gradient_sync(self) -> GradientSync:
        """DDP, as the chapter has it (extensions return their own :class:`GradientSync`)."""
        return DDPSync(self.model, self.device, self.cfg.micro_batch, self.cfg.grad_bucket_view, self.cfg.skip_grad_sync)

    @classmethod
    def threads_per_rank(cls, cfg: TrainConfig, local_world_size: int) -> int:
        """Intra-op threads of a rank: the cores shared out (two ranks of two threads on two cores
        run slower than one rank)."""
        return cfg.threads_per_rank or max(1, (os.cpu_count() or 1) // local_world_size)

    @classmethod
    def check(cls, cfg: TrainConfig) -> str | None:
        """Why ``cfg`` cannot be trained by this class, or ``None`` (asked before any rank starts)."""
        return None

    # ------------------------------------------------------------------ the loop
    def train(self) -> dict:
        t_start = time.perf_counter()
        try:
            while self.state.epoch < self.cfg.epochs and self.state.global_step < self.total_steps:
                self._run_epoch()
                if self.state.step_in_epoch >= self.sampler.steps_per_epoch:
                    self.state.epoch += 1
                    self.state.step_in_epoch = 0
                    if self.cfg.save_every_epochs and self.state.epoch % self.cfg.save_every_epochs == 0:
                        self._save_checkpoint()
        except BaseException:  # a peer lost, a stop: a background save in flight still lands first
            with contextlib.suppress(Exception):
                self.writer.wait()
            raise
        self._save_checkpoint(wait=True)
        self.writer.wait()
        metrics = self.evaluate()
        return self._finish(metrics, time.perf_counter() - t_start)

    def _run_epoch(self) -> None:
        """The steps of the current epoch from where the loop stands (its start, or the step a
        resume restored): no batch is replayed, none is skipped."""
        if not self.cfg.skip_set_epoch:  # the classic bug, reproduced on request in notebook 03
            self.sampler.set_epoch(self.state.epoch)
        self.sampler.set_position(self.state.step_in_epoch)
        self.sync.model.train()
        for chunk in self.sampler.global_batches():
            if self.state.global_step >= self.total_steps:
                return
            indices = self.sampler.share(chunk)
            self.faults.before_step(self.state.global_step + 1)
            t0 = time.perf_counter()
            lr = self.optimizer.param_groups[0]["lr"]  # the rate this step uses
            loss, global_loss, grad_norm, votes = self._run_batch(indices)
            self.state.global_step += 1
            self.state.step_in_epoch += 1
            self.state.last_loss = global_loss
            self._log_step(chunk, indices, loss, global_loss, lr, grad_norm, time.perf_counter() - t0)
            if self.cfg.save_every_steps and self.state.global_step % self.cfg.save_every_steps == 0:
                self._save_checkpoint()
            if self._after_votes(votes):
                return
            if self.cfg.eval_every_steps and self.state.global_step % self.cfg.eval_every_steps == 0:
                self.evaluate()
                self.sync.model.train()

    def _batch(self, indices: list[int]) -> dict[str, torch.Tensor]:
        batch = self.train_data.batch(indices, self.pad_id)
        if self.rank == self.cfg.corrupt_rank:  # teaching only (notebook 03): the rank whose loss line goes astray
            labels = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + indices[0])
            batch["label"] = torch.randint(0, 2, batch["label"].shape, generator=labels)
        return {k: v.to(self.device) for k, v in batch.items()}

    def _autocast(self):
        """bf16 autocast when ``--precision bf16`` (weights and optimizer stay fp32)."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cfg.precision == "bf16")

    def _run_batch(self, indices: list[int]) -> tuple[float, float, float, list[float]]:
        """One optimizer step over this rank's ``indices``: the global batch's gradients (the
        gradient sync), then one small all-reduce, clipping, AdamW, the schedule."""
        self.optimizer.zero_grad(set_to_none=True)
        loss, global_loss = self.sync.run(self.state.global_step + 1, indices, self._batch, self._autocast)
        # the step's last collective: the global mean loss and what the ranks want (_votes). Nothing
        # after it can fail for a lost peer, so a rank that notices one holds the last finished step
        flags = torch.tensor([loss, *self._votes()], dtype=torch.float64, device=self.device)
        dist.all_reduce(flags)
        global_loss = flags[0].item() / self.world_size if global_loss is None else global_loss
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        return loss, global_loss, float(grad_norm), flags[1:].tolist()

    def _votes(self) -> list[float]:
        """What this rank tells the others at a step's end, summed over the ranks: does it want
        to stop (SIGTERM)? Extensions append theirs."""
        return [1.0 if self.stop.requested else 0.0]

    def _after_votes(self, votes: list[float]) -> bool:
        """Act on the summed votes: any rank asked to stop -> save this step and leave. Returns
        True when the rest of the epoch must start again (an extension re-formed the group)."""
        if votes[0]:
            self._preempted()
        return False

    def _log_step(self, chunk, indices, loss, global_loss, lr, grad_norm, seconds) -> None:
        s = self.state
        sample_ids, batch_ids = self.train_data.ids[indices].tolist(), self.train_data.ids[chunk].tolist()
        self.ledger.write({"step": s.global_step, "epoch": s.epoch, "loss": loss, "global_loss": global_loss,
                           "lr": lr, "grad_norm": grad_norm,  # samples, batch_ids: the whole step's, on any world size
                           "samples": sample_digest(batch_ids), "sample_ids": sample_ids, "batch_ids": batch_ids,
                           "attempt": self.attempt, "time": time.time()})
        self.tb.scalars(s.global_step, **{"train/loss": global_loss, "train/lr": lr, "train/grad_norm": grad_norm,
                                          "train/samples_per_s": self.cfg.global_batch_size / max(seconds, 1e-9)})
        if s.global_step == 1 or s.global_step % self.cfg.log_every == 0 or s.global_step == self.total_steps:
            self.report.line(f"Rank {self.rank}, Epoch [{s.epoch + 1}/{self.cfg.epochs}], "
                             f"Step [{s.step_in_epoch}/{self.sampler.steps_per_epoch}], Loss: {loss:.4f}")
        self.report.progress(s.global_step, self.total_steps)

    # ------------------------------------------------------------------ checkpoints
    def stateful(self) -> dict:
        """Every object a checkpoint holds, by file name: rank 0 writes the shared ones, each rank
        its own RNG (DDP: dropout draws from each rank's generators)."""
        parts = {"model.pt": self.model, "optimizer.pt": self.optimizer, "scheduler.pt": self.scheduler,
                 "trainer.pt": self.state}
        if self.sync.rank_rng:
            parts[f"rng-rank{self.rank}.pt"] = resume.RankRNG()
        return parts

    def _save_checkpoint(self, wait: bool = False) -> None:
        """Each rank writes its own part; after the all-reduce that doubles as a barrier, rank 0
        writes the shared state and commits (:mod:`course_lib.checkpoint.store`). With
        ``--async-save`` rank 0 serialises the state in memory (the snapshot) and a thread
        writes it while training goes on."""
        step, t0 = self.state.global_step, time.perf_counter()
        if step == self.saved_step and (not wait or self._committed(step)):  # one save per step
            return
        self.saved_step = step
        tmp = ckpt.tmp_dir(self.run_dir, step, self.attempt)
        fault = self.faults.during_save(step)
        shared = {name: obj for name, obj in self.stateful().items() if not name.startswith("rng-rank")}
        own = {name: obj for name, obj in self.stateful().items() if name not in shared}
        ok = 1.0
        try:
            for name, obj in own.items():
                ckpt.write_part(tmp, name, obj.state_dict(), fault if self.rank else None)
            if fault and self.rank and not own:  # nothing of its own to write: it dies as the save begins
                fault()
        except OSError as err:  # disk full, permissions...: this save fails, the run goes on
            self.report.line(f"Rank {self.rank}: checkpoint at step {step} NOT saved ({err}); previous one kept")
            ok = 0.0
        agree = torch.tensor([ok], device=self.device)
        dist.all_reduce(agree, op=dist.ReduceOp.MIN)
        if agree.item() < 1:
            self.saved_step = None  # every rank knows (all-reduced): a later save of this step may try again
            if self.rank == 0:  # only this save's folder: an earlier save may still be writing its own
                shutil.rmtree(tmp, ignore_errors=True)
            dist.barrier()  # gone before any rank writes a retry of this step into it
            return
        if self.rank != 0:
            return
        parts = {name: obj.state_dict() for name, obj in shared.items()}
        background = self.cfg.async_save and not wait
        if background:  # the bytes are the snapshot: training will change the live tensors
            parts = {name: ckpt.serialize(obj) for name, obj in parts.items()}
        meta = {"epoch": self.state.epoch, "world_size": self.world_size, "config_hash": self.cfg.shape_hash(),
                "attempt": self.attempt, "rank_rng": self.sync.rank_rng}
        self.writer.submit(lambda: self._write_and_commit(step, parts, meta, fault), background)
        # what the loop waited for (with --async-save: the serialisation, not the writing)
        self.tb.scalars(step, **{"checkpoint/blocking_seconds": time.perf_counter() - t0})

    def _committed(self, step: int) -> bool:
        """Did rank 0 commit ``step``? Its background write may have failed after every rank counted
        the step as saved; a final or preemption save must not trust that (a collective)."""
        self.writer.wait()
        done = torch.tensor([float(self.committed_step == step)], device=self.device)
        dist.broadcast(done, src=0)
        return done.item() > 0

    def _write_and_commit(self, step: int, parts: dict, meta: dict, fault) -> None:
        t0 = time.perf_counter()
        tmp = ckpt.tmp_dir(self.run_dir, step, self.attempt)
        try:
            hashes = {name: ckpt.write_part(tmp, name, obj, fault if name == "model.pt" else None)
                      for name, obj in parts.items()}
            path = ckpt.commit(self.run_dir, step, meta, known=hashes, attempt=self.attempt)
        except (OSError, ckpt.CheckpointError) as err:
            self.report.line(f"Rank 0: checkpoint at step {step} NOT saved ({err}); previous one kept")
            shutil.rmtree(tmp, ignore_errors=True)  # only its own folder: the ranks may be writing the next save's
            return
        self.committed_step = step
        ckpt.purge(self.run_dir, self.cfg.keep_last, newest_valid=path)
        size = sum(p.stat().st_size for p in path.iterdir())
        self.tb.scalars(step, **{"checkpoint/save_seconds": time.perf_counter() - t0, "checkpoint/size_mb": size / 2**20})

    def _resume(self) -> int | None:
        """``--resume``: nothing, the newest valid checkpoint (``auto``) or a named one; returns its
        step. Rank 0 chooses and tells the others (a collective): every rank resumes the same one."""
        where = [None]
        if self.rank == 0:
            ckpt.remove_stale_tmp(self.run_dir)  # leftovers of a crash mid-save, before anyone saves
            path = resume.find_checkpoint(self.cfg, log=self.report.line)
            where = [str(path) if path else None]
        dist.broadcast_object_list(where, src=0)
        if where[0] is None:
            return None
        path = Path(where[0])
        return self._restore(path.name, lambda name: ckpt.load_part(path, name))

    def _restore(self, source: str, read: Callable[[str], object], mode: str | None = None) -> int:
        """Put back the state that ``read(part name)`` gives, from checkpoint folder ``source`` (or
        an extension's live peer), after checking that it fits this run."""
        mode = mode or self.cfg.resume_mode
        saved = resume.saved_config(read("trainer.pt"))
        resume.check_fits(saved, self.cfg, self.world_size, source)
        resume.restore(self.stateful(), read, mode)
        if mode == "epoch-start":  # the textbook's resume: the partial epoch is repeated (the step count and
            self.state.step_in_epoch = 0  # the schedule go on, so the run's planned end cuts its last epoch short)
        else:
            self.saved_step = self.committed_step = self.state.global_step  # on disk: never saved twice
        step = self.state.global_step
        self.tb.scalars(step, **{"events/resume_from_step": step})
        self.tb.event("events/resume", f"attempt {self.attempt} resumed from {source} (mode {mode})", step)
        if self.rank == 0:
            self.report.line(f"Resumed from {source}: epoch {self.state.epoch + 1}, step {step}, mode {mode}, "
                             f"last loss {self.state.last_loss:.4f}")
            if saved["world_size"] != self.world_size:  # only the invariant reduction gets here (check_fits)
                self.report.line(f"NOTE: a {saved['world_size']}-rank checkpoint resumed on {self.world_size} rank(s) with "
                                 "the invariant reduction: the run continues bit-identically.")
        if mode != "weights-only":  # weights-only starts a fresh schedule anyway
            note = resume.extend_schedule(self.optimizer, self.scheduler, TrainConfig.from_dict(saved), self.cfg,
                                   self.sampler.steps_per_epoch)
            if note and self.rank == 0:
                self.report.line(note)
        return step

    def _preempted(self) -> None:
        """SIGTERM (a scheduler's preemption) or SIGINT: this step is saved, then the rank leaves with 143."""
        self._save_checkpoint(wait=True)
        self.writer.wait()
        if self.rank == 0:
            self.report.line(f"Stop requested ({self.stop.requested or 'by another rank'}): saved step "
                             f"{self.state.global_step}, exiting for a later --resume auto")
        self.tb.close()
        raise SystemExit(EXIT_PREEMPTED)

    # ------------------------------------------------------------------ the end
    def evaluate(self) -> dict:
        """Held-out loss and accuracy (:mod:`course_lib.ddp.evaluation`), logged to TensorBoard."""
        metrics = held_out_metrics(self.model, self.test_data, self.pad_id, self.rank, self.world_size, self.device,
                                   self.cfg.eval_limit, self._autocast)
        self.tb.scalars(self.state.global_step, **{"val/loss": metrics["val_loss"], "val/accuracy": metrics["val_accuracy"]})
        return metrics

    def _finish(self, metrics: dict, seconds: float) -> dict:
        digest = check_ranks_agree(self.model, self.world_size, self.run_dir, self.rank)
        summary = {**metrics, "steps": self.state.global_step, "epochs": self.cfg.epochs,
                   "attempt": self.attempt, "resumes": self.attempt - 1, "resumed_from": self.resumed_from,
                   "world_size": self.world_size, "reduction": self.cfg.reduction, "parameter_sha256": digest,
                   "train_seconds_this_attempt": seconds, "train_samples": len(self.train_data),
                   "test_samples": metrics["val_count"],
                   "data": {k: self.data_info.get(k) for k in ("provenance", "near_dup", "tokenizer")}}
        if self.rank == 0:
            final = self.run_dir / "final"
            final.mkdir(parents=True, exist_ok=True)
            # each file replaced in one rename: a crash here leaves the previous final files whole
            ckpt.write_atomic(final / "model.pt", ckpt.serialize(self.model.state_dict()))
            ckpt.write_atomic(final / "summary.json", json.dumps(summary, indent=2, default=str).encode())
            self.tb.hparams({k: v for k, v in self.cfg.to_dict().items() if k not in ("run_dir", "cache_dir")},
                            {"hparam/val_accuracy": metrics["val_accuracy"]})
            self.report.line(f"Held-out accuracy {metrics['val_accuracy']:.2%} on {metrics['val_count']} reviews "
                             f"({self.cfg.reduction}); parameters identical on all {self.world_size} ranks ({digest[:12]})")
        self.tb.close()
        self.ledger.close()
        return summary
