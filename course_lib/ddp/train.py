"""One rank's training loop with DDP: one step, one save, one resume, read top to bottom.

The PyTorch DDP tutorial's ``Trainer``: ``__init__`` wraps the model in ``DistributedDataParallel``
(what a rank trains is built in :mod:`course_lib.ddp.training`); :meth:`Trainer._run_batch` is one
optimizer step, :meth:`Trainer._save_checkpoint` and :meth:`Trainer.resume` move the whole state to
disk and back. Its state (:meth:`Trainer.stateful`) is model, optimizer, LR scheduler, the loop's
position and every rank's RNG; the data order is a pure function of (seed, epoch, step)
(:mod:`course_lib.ddp.sampling`), so a resumed run is bit-identical to one never interrupted. An
extension plugs in through the :class:`~course_lib.ddp.seams.Seams` it passes, never by overriding a
method; a fault is a :class:`~course_lib.ddp.seams.FaultHook` passed only when one is asked for. This
module names no extension and no fault.
"""
from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from course_lib.checkpoint import resume as resuming
from course_lib.checkpoint import store as ckpt
from course_lib.config import TrainConfig
from course_lib.ddp.consistency import check_ranks_agree
from course_lib.ddp.evaluation import held_out_metrics
from course_lib.ddp.outcome import DONE, PREEMPTED, Outcome
from course_lib.ddp.sampling import ResumableDistributedSampler, sample_digest
from course_lib.ddp.seams import DDP_TRAITS, FaultHook, Seams, Writer
from course_lib.ddp.training import Training
from course_lib.watch.monitor import Ledger, TensorBoardLogger, next_attempt


@dataclass
class StepResult:
    """What one optimizer step gives the loop."""
    loss: float          # this rank's loss
    global_loss: float   # the global batch's
    lr: float            # the learning rate the step used
    grad_norm: float
    votes: dict[str, float]  # summed over the ranks: "stop" (a SIGTERM somewhere), and an extension's


class Trainer:
    """One rank's training, built for its place (``rank`` of ``world_size``) in a formed process
    group. ``__init__`` runs collectives (DDP's broadcast, a barrier): every rank builds its
    trainer at the same point. ``seams``: an extension's gradient sync and votes, or the training
    an earlier trainer of this process trained (a group that re-formed: it goes on here).
    ``faults``: told as each step and each save begins (the kit's real kills), or ``None``."""

    def __init__(self, cfg: TrainConfig, rank: int, world_size: int, device: torch.device, report,
                 data_file: str | None = None, seams: Seams | None = None, faults: FaultHook | None = None):
        self.cfg, self.rank, self.world_size, self.device, self.report = cfg, rank, world_size, device, report
        self.run_dir = Path(cfg.run_dir)
        seams = seams or Seams()
        self.training = t = seams.training or Training.build(cfg, rank, device, data_file)
        self.train_data, self.test_data, self.data_info, self.model = t.train_data, t.test_data, t.data_info, t.model
        self.optimizer, self.scheduler, self.state = t.optimizer, t.scheduler, t.state
        self.stop, self.writer = t.stop, t.writer
        self.pad_id = self.data_info["tokenizer"]["pad_id"]
        self.gradients = seams.gradients(self.model) if seams.gradients else None
        self.traits = self.gradients.traits if self.gradients else DDP_TRAITS
        # DDP wraps the model here, as in the tutorial (gradient_as_bucket_view: no copy into the buckets and back)
        self.ddp = None if self.gradients else DDP(self.model, device_ids=[device.index] if device.type == "cuda" else None,
                                                   gradient_as_bucket_view=cfg.grad_bucket_view)
        self.agreement, self.faults = seams.agreement, faults
        self.sampler = ResumableDistributedSampler(len(self.train_data), cfg.global_batch_size, world_size, rank, cfg.seed,
                                                   contiguous=self.traits.contiguous)
        self.total_steps = cfg.planned_steps(self.sampler.steps_per_epoch)
        self.state.config = {**cfg.to_dict(), "world_size": world_size}
        if rank == 0:  # before the ranks meet: no rank's save then makes it, and who saves first changes nothing on disk
            ckpt.checkpoint_root(self.run_dir).mkdir(parents=True, exist_ok=True)
        self.attempt = next_attempt(self.run_dir, rank, **(seams.about or {}))  # a barrier: every rank reads one count
        self.ledger = Ledger(self.run_dir, rank)
        self.tb = TensorBoardLogger(self.run_dir, enabled=rank == 0, hparams=cfg.to_dict())
        self.saves = ckpt.SaveLedger()  # which step is on disk: a carried training's is
        if seams.training is not None:
            self.saves.on_disk(self.state.global_step)
        self.resumed_from: int | None = None
        if rank == 0:  # the run says how it was made, whatever started it
            ckpt.write_atomic(self.run_dir / "config.json", json.dumps(self.state.config, indent=2, sort_keys=True).encode())

    # ------------------------------------------------------------------ the loop
    def train(self) -> Outcome:
        """Train from where the state stands to the planned end; returns why it stopped. On
        :data:`~course_lib.ddp.outcome.DONE` the final checkpoint is saved and ``final/summary.json`` written.
        A collective: every rank calls it. However it ends, this rank's ledger and TensorBoard
        file are closed."""
        t0 = time.perf_counter()
        try:
            with self.writer:  # a background save in flight lands before this returns or raises
                while self.state.epoch < self.cfg.epochs and self.state.global_step < self.total_steps:
                    outcome = self._run_epoch()
                    if outcome is not None:
                        return outcome
                    if self.state.step_in_epoch >= self.sampler.steps_per_epoch:
                        self.state.epoch, self.state.step_in_epoch = self.state.epoch + 1, 0
                        if self.cfg.save_every_epochs and self.state.epoch % self.cfg.save_every_epochs == 0:
                            self._save_checkpoint()
                self._save_checkpoint(wait=True)
            self._finish(self.evaluate(), time.perf_counter() - t0)
            return DONE
        finally:
            self.tb.close()
            self.ledger.close()

    def _run_epoch(self) -> Outcome | None:
        """The steps of the current epoch from where the loop stands (its start, or the step a
        resume restored): none replayed, none skipped. Returns an outcome that ends training
        here (preempted; an extension's), or ``None`` at the epoch's (or the run's) end."""
        if not self.cfg.skip_set_epoch:  # teaching switch (notebook 03): the classic "same order every epoch" bug
            self.sampler.set_epoch(self.state.epoch)
        self.sampler.set_position(self.state.step_in_epoch)
        (self.ddp or self.model).train()
        for chunk in self.sampler.global_batches():
            if self.state.global_step >= self.total_steps:
                return None
            if self.faults:
                self.faults.before_step(self.state.global_step + 1)
            t0 = time.perf_counter()
            indices = self.sampler.share(chunk)
            result = self._run_batch(indices)
            self.state.global_step += 1
            self.state.step_in_epoch += 1
            self.state.last_loss = result.global_loss
            self._log_step(chunk, indices, result, time.perf_counter() - t0)
            if self.cfg.save_every_steps and self.state.global_step % self.cfg.save_every_steps == 0:
                self._save_checkpoint()
            outcome = self._decide(result.votes)
            if outcome is not None:
                return outcome
            if self.cfg.eval_every_steps and self.state.global_step % self.cfg.eval_every_steps == 0:
                self.evaluate()
                (self.ddp or self.model).train()
        return None

    def _run_batch(self, indices: list[int]) -> StepResult:
        """One optimizer step over this rank's ``indices`` (a collective): the gradients of the
        global batch (DDP averages them in the last backward), the step's last collective (the
        loss and the votes), clipping, AdamW, the schedule."""
        self.optimizer.zero_grad(set_to_none=True)
        lr = self.optimizer.param_groups[0]["lr"]  # the rate this step uses
        if self.gradients is not None:  # an extension's gradient sync: it is given the batches it asks for
            batches = [self._batch(part) for part in self.gradients.parts(indices)]
            loss, global_loss = self.gradients.compute(self.state.global_step + 1, batches)
        else:
            assert self.ddp is not None  # built in __init__ whenever there is no extension's gradient sync
            size = self.cfg.micro_batch or len(indices)
            parts = [indices[i:i + size] for i in range(0, len(indices), size)]
            loss, global_loss = 0.0, None
            for i, part in enumerate(parts):  # micro-batches accumulate locally; the last backward all-reduces
                synced = i == len(parts) - 1 and not self.cfg.skip_grad_sync  # teaching switch: never all-reduce
                batch = self._batch(part)
                with contextlib.nullcontext() if synced else self.ddp.no_sync(), self._autocast():
                    logits = self.ddp(batch["input_ids"], batch["attention_mask"])
                    part_loss = F.cross_entropy(logits.float(), batch["label"]) * (len(part) / len(indices))
                    part_loss.backward()
                loss += part_loss.item()
        # the step's last collective: nothing after it can fail for a lost peer, so a rank that
        # notices one holds the last finished step
        votes = self._agree(loss)
        global_loss = votes.pop("loss") / self.world_size if global_loss is None else global_loss
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        return StepResult(loss, global_loss, lr, float(grad_norm), votes)

    def _agree(self, loss: float) -> dict[str, float]:
        """All-reduce (sum) this rank's loss and votes with every rank's: a SIGTERM seen by any
        rank stops them all after the same step."""
        mine = {"loss": loss, "stop": 1.0 if self.stop.requested else 0.0,
                **(self.agreement.votes() if self.agreement else {})}
        names = sorted(mine)
        summed = torch.tensor([mine[n] for n in names], dtype=torch.float64, device=self.device)
        dist.all_reduce(summed)
        return dict(zip(names, summed.tolist()))

    def _decide(self, votes: dict[str, float]) -> Outcome | None:
        """Any rank asked to stop: save this step and leave preempted; else the extension's call."""
        if votes["stop"]:
            self._save_checkpoint(wait=True)
            self.writer.wait()
            if self.rank == 0:
                self.report.line(f"Stop requested ({self.stop.requested or 'by another rank'}): saved step "
                                 f"{self.state.global_step}, exiting for a later --resume auto")
            return PREEMPTED
        return self.agreement.decide(votes) if self.agreement else None

    def _batch(self, indices: list[int]) -> dict[str, torch.Tensor]:
        """The padded batch of ``indices``, on this rank's device."""
        batch = self.train_data.batch(indices, self.pad_id)
        if self.rank == self.cfg.corrupt_rank:  # teaching switch (notebook 03): this rank's labels are noise
            labels = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + indices[0])
            batch["label"] = torch.randint(0, 2, batch["label"].shape, generator=labels)
        return {k: v.to(self.device) for k, v in batch.items()}

    def _autocast(self):
        """bf16 autocast when ``--precision bf16`` (weights and optimizer stay fp32)."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cfg.precision == "bf16")

    def _log_step(self, chunk: list[int], indices: list[int], result: StepResult, seconds: float) -> None:
        s = self.state
        sample_ids, batch_ids = self.train_data.ids[indices].tolist(), self.train_data.ids[chunk].tolist()
        self.ledger.write({"step": s.global_step, "epoch": s.epoch, "loss": result.loss, "global_loss": result.global_loss,
                           "lr": result.lr, "grad_norm": result.grad_norm,  # samples, batch_ids: the whole step's
                           "samples": sample_digest(batch_ids), "sample_ids": sample_ids, "batch_ids": batch_ids,
                           "attempt": self.attempt, "time": time.time()})
        self.tb.scalars(s.global_step, **{"train/loss": result.global_loss, "train/lr": result.lr,
                                          "train/grad_norm": result.grad_norm,
                                          "train/samples_per_s": self.cfg.global_batch_size / max(seconds, 1e-9)})
        if s.global_step == 1 or s.global_step % self.cfg.log_every == 0 or s.global_step == self.total_steps:
            self.report.line(f"Rank {self.rank}, Epoch [{s.epoch + 1}/{self.cfg.epochs}], "
                             f"Step [{s.step_in_epoch}/{self.sampler.steps_per_epoch}], Loss: {result.loss:.4f}")
        self.report.progress(s.global_step, self.total_steps)

    # ------------------------------------------------------------------ checkpoints
    def stateful(self) -> dict:
        """Every object a checkpoint holds, by file name: the shared ones (rank 0 writes them) and
        this rank's RNG (dropout draws from each rank's generators under DDP)."""
        parts = {"model.pt": self.model, "optimizer.pt": self.optimizer, "scheduler.pt": self.scheduler,
                 "trainer.pt": self.state}
        if self.traits.rank_rng:
            parts[ckpt.rank_part(self.rank)] = resuming.RankRNG()
        return parts

    def _save_checkpoint(self, wait: bool = False) -> None:
        """The commit protocol of :mod:`course_lib.checkpoint.store` (a collective): each rank
        fsyncs its ledger (the commit's steps survive a power cut there too) and writes its own
        part, the ranks agree that every part is written, rank 0 writes the shared state and
        commits. With ``--async-save`` rank 0 serialises the shared state (the snapshot) and a
        thread writes and commits it while training goes on. ``wait``: the save of the run's end
        or of a preemption, which must not trust an earlier background commit."""
        step, t0 = self.state.global_step, time.perf_counter()
        if self.saves.saved == step:  # one save per step...
            if not wait or self._committed(step):  # ...unless a final save finds that its commit failed
                return
        self.saves.saved = step
        tmp = ckpt.tmp_dir(self.run_dir, step, self.attempt)
        parts = {name: obj for name, obj in self.stateful().items() if ckpt.written_by_rank(name) == self.rank}
        mine = [*parts, *(() if self.rank else [n for n in self.stateful() if ckpt.written_by_rank(n) is None])]
        write = self.faults.writer(step, mine) if self.faults else ckpt.write_part  # a planned kill may cut it
        if not self._all_wrote(tmp, self._write_own_part(tmp, step, parts, write)):
            return
        if self.rank == 0:
            self._write_and_commit(tmp, step, write, background=self.cfg.async_save and not wait)
            self.tb.scalars(step, **{"checkpoint/blocking_seconds": time.perf_counter() - t0})

    def _write_own_part(self, tmp: Path, step: int, parts: dict, write: Writer) -> bool:
        """This rank's ledger fsynced and its own parts (its RNG) written into the save's folder;
        ``False`` if the disk refused them."""
        try:
            self.ledger.sync()
            for name, obj in parts.items():
                write(tmp, name, obj.state_dict())
        except OSError as err:  # disk full, permissions...: this save fails, the run goes on
            self.report.line(f"Rank {self.rank}: checkpoint at step {step} NOT saved ({err}); previous one kept")
            return False
        return True

    def _all_wrote(self, tmp: Path, ok: bool) -> bool:
        """Did every rank write its part? (An all-reduce that doubles as the protocol's barrier.)
        If not, no rank goes on with this save, and a later save of this step may try again."""
        agree = torch.tensor([1.0 if ok else 0.0], device=self.device)
        dist.all_reduce(agree, op=dist.ReduceOp.MIN)
        if agree.item() == 1:
            return True
        self.saves.saved = None
        if self.rank == 0:  # only this save's folder: an earlier save may still be writing its own
            shutil.rmtree(tmp, ignore_errors=True)
        dist.barrier()  # gone before any rank writes a retry of this step into it
        return False

    def _write_and_commit(self, tmp: Path, step: int, write: Writer, background: bool) -> None:
        """Rank 0: the shared state into ``tmp``, then the commit (in the background writer's
        thread with ``--async-save``: its bytes are serialised here, the snapshot)."""
        parts = {name: obj.state_dict() for name, obj in self.stateful().items() if ckpt.written_by_rank(name) is None}
        if background:  # training will change the live tensors
            parts = {name: ckpt.serialize(obj) for name, obj in parts.items()}
        meta = {"epoch": self.state.epoch, "world_size": self.world_size, "config_hash": self.cfg.shape_hash(),
                "attempt": self.attempt, "rank_rng": self.traits.rank_rng}

        def job() -> None:
            t0 = time.perf_counter()
            try:
                hashes = {name: write(tmp, name, obj) for name, obj in parts.items()}
                path = ckpt.commit(self.run_dir, step, meta, known=hashes, attempt=self.attempt)
            except (OSError, ckpt.CheckpointError) as err:
                self.report.line(f"Rank 0: checkpoint at step {step} NOT saved ({err}); previous one kept")
                shutil.rmtree(tmp, ignore_errors=True)  # only its own folder: the ranks may be writing the next save's
                return
            self.saves.committed = step
            ckpt.purge(self.run_dir, self.cfg.keep_last, newest_valid=path)
            size = sum(p.stat().st_size for p in path.iterdir())
            self.tb.scalars(step, **{"checkpoint/save_seconds": time.perf_counter() - t0,
                                     "checkpoint/size_mb": size / 2**20})
        self.writer.submit(job, background)

    def _committed(self, step: int) -> bool:
        """Did rank 0 commit ``step``? Its background write may have failed after every rank counted
        the step as saved; a final or preemption save must not trust that (a collective)."""
        self.writer.wait()
        done = torch.tensor([float(self.saves.committed == step)], device=self.device)
        dist.broadcast(done, src=0)
        return done.item() > 0

    def resume(self) -> int | None:
        """``--resume``: nothing, the newest valid checkpoint (``auto``) or a named one; returns its
        step. Rank 0 chooses, verifying every file's sha256 (the only time a resume hashes them; a
        damaged newest checkpoint is skipped for the one before), and tells the others (a
        collective): every rank resumes the same one."""
        where: list[str | None] = [None]
        if self.rank == 0:
            ckpt.remove_stale_tmp(self.run_dir)  # leftovers of a crash mid-save, before anyone saves
            path = resuming.find_checkpoint(self.cfg, log=self.report.line)
            where = [str(path) if path else None]
        dist.broadcast_object_list(where, src=0)
        if where[0] is None:
            return None
        path = Path(where[0])
        return self.restore(path.name, lambda name: ckpt.load_part(path, name))

    def restore(self, source: str, read: Callable[[str], dict], mode: str | None = None) -> int:
        """Put back the state that ``read(part name)`` gives (a checkpoint folder named ``source``,
        or an extension's live peer), after checking that it fits this run; returns its step."""
        mode = mode or self.cfg.resume_mode
        saved = resuming.saved_config(read("trainer.pt"))
        resuming.check_fits(saved, self.cfg, self.world_size, source, any_world_size=self.traits.any_world_size)
        resuming.restore(self.stateful(), read, mode)
        if mode == "epoch-start":  # the textbook's resume: the partial epoch is repeated (the step count and
            self.state.step_in_epoch = 0  # the schedule go on, so the run's planned end cuts its last epoch short)
        else:
            self.saves.on_disk(self.state.global_step)  # never saved twice
        step = self.resumed_from = self.state.global_step
        self.tb.scalars(step, **{"events/resume_from_step": step})
        self.tb.event("events/resume", f"attempt {self.attempt} resumed from {source} (mode {mode})", step)
        if self.rank == 0:
            self.report.line(f"Resumed from {source}: epoch {self.state.epoch + 1}, step {step}, mode {mode}, "
                             f"last loss {self.state.last_loss:.4f}")
            if saved["world_size"] != self.world_size:  # only a sync for any world size gets here (check_fits)
                self.report.line(f"NOTE: a {saved['world_size']}-rank checkpoint resumed on {self.world_size} rank(s) "
                                 f"with the {self.cfg.reduction} reduction: the run continues bit-identically.")
        if mode != "weights-only":  # weights-only starts a fresh schedule anyway
            note = resuming.extend_schedule(self.optimizer, self.scheduler, TrainConfig.from_dict(saved, strict=False),
                                            self.cfg, self.sampler.steps_per_epoch)
            if note and self.rank == 0:
                self.report.line(note)
        return step

    # ------------------------------------------------------------------ the end
    def evaluate(self) -> dict:
        """Held-out loss and accuracy (a collective; :mod:`course_lib.ddp.evaluation`), logged to TensorBoard."""
        metrics = held_out_metrics(self.model, self.test_data, self.pad_id, self.rank, self.world_size, self.device,
                                   self.cfg.eval_limit, self._autocast)
        self.tb.scalars(self.state.global_step, **{"val/loss": metrics["val_loss"], "val/accuracy": metrics["val_accuracy"]})
        return metrics

    def _finish(self, metrics: dict, seconds: float) -> None:
        """Check that every rank holds the same parameters (a collective); rank 0 writes ``final/``."""
        digest = check_ranks_agree(self.model, self.world_size, self.run_dir, self.rank)
        summary = {**metrics, "steps": self.state.global_step, "epochs": self.cfg.epochs,
                   "attempt": self.attempt, "resumes": self.attempt - 1, "resumed_from": self.resumed_from,
                   "world_size": self.world_size, "reduction": self.cfg.reduction, "parameter_sha256": digest,
                   "train_seconds_this_attempt": seconds, "train_samples": len(self.train_data),
                   "test_samples": metrics["val_count"],
                   "data": {k: self.data_info.get(k) for k in ("provenance", "near_dup", "tokenizer")}}
        if self.rank == 0:
            final = self.run_dir / "final"
            # each file replaced in one rename, durably: a crash here leaves the previous final files whole
            ckpt.write_atomic(final / "model.pt", ckpt.serialize(self.model.state_dict()))
            ckpt.write_atomic(final / "summary.json", json.dumps(summary, indent=2, default=str).encode())
            self.tb.hparams({k: v for k, v in self.cfg.to_dict().items() if k not in ("run_dir", "cache_dir")},
                            {"hparam/val_accuracy": metrics["val_accuracy"]})
            self.report.line(f"Held-out accuracy {metrics['val_accuracy']:.2%} on {metrics['val_count']} reviews "
                             f"({self.cfg.reduction}); parameters identical on all {self.world_size} ranks ({digest[:12]})")
