"""One rank's training loop with DDP: one step, one save, one resume, read top to bottom.

The PyTorch DDP tutorial's ``Trainer``: ``__init__`` builds everything for this rank's place in
the group and wraps the model in ``DistributedDataParallel``; :meth:`Trainer.train` runs the
epochs, :meth:`Trainer._run_epoch` their steps, :meth:`Trainer._run_batch` one optimizer step,
:meth:`Trainer._save_checkpoint` and :meth:`Trainer.resume` move the whole state to disk and
back. The state (:meth:`Trainer.stateful`) is model, optimizer, LR scheduler, the loop's
position and every rank's RNG. The data order is a pure function of (seed, epoch, step)
(:mod:`course_lib.ddp.sampling`), so a resumed run is bit-identical to one never interrupted.

An extension plugs in through two arguments of the constructor, never by overriding a method:
``gradients`` computes the global batch's gradient instead of DDP (:class:`~course_lib.ddp.sync.GradientSync`),
``agreement`` adds votes to what the ranks agree on at each step's end (:class:`Agreement`).
The kit's extensions are in ``course_lib.beyond``; this module never imports them.
"""
from __future__ import annotations

import contextlib
import enum
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from course_lib.checkpoint import resume as resuming
from course_lib.checkpoint import store as ckpt
from course_lib.checkpoint.faults import EXIT_PREEMPTED, FaultInjector, GracefulStop
from course_lib.config import TrainConfig
from course_lib.data.prepare import TokenSplit, prepared_for_rank
from course_lib.ddp.consistency import check_ranks_agree
from course_lib.ddp.evaluation import held_out_metrics
from course_lib.ddp.models import build_model
from course_lib.ddp.sampling import ResumableDistributedSampler, sample_digest
from course_lib.ddp.sync import GradientSync
from course_lib.watch.monitor import Ledger, TensorBoardLogger, next_attempt


class Outcome(enum.Enum):
    """Why :meth:`Trainer.train` returned; the value is the exit code a scheduler reads."""
    DONE = 0                  # every planned step trained, the final checkpoint saved, the summary written
    PREEMPTED = EXIT_PREEMPTED  # SIGTERM (or SIGINT): this step saved; continue with --resume auto
    PEER_LOST = 75            # EX_TEMPFAIL: a peer died; this rank saved the last finished step (an extension's)
    REGROUP = -1              # the group must re-form to go on (an extension's): never an exit code


class Agreement(Protocol):
    """What an extension adds to the ranks' agreement at a step's end (an elastic group: "a node
    waits to join"). Both methods run on every rank, in the same order."""

    def votes(self) -> dict[str, float]:
        """This rank's votes, by name; the trainer sums them over the ranks with its own."""

    def decide(self, votes: dict[str, float]) -> Outcome | None:
        """The summed votes: an outcome that ends the epoch here, or ``None`` to go on."""


@dataclass
class StepResult:
    """What one optimizer step gives the loop."""
    loss: float          # this rank's loss
    global_loss: float   # the global batch's
    lr: float            # the learning rate the step used
    grad_norm: float
    votes: dict[str, float]  # summed over the ranks: "stop" (a SIGTERM somewhere), and an extension's


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at step ``total``."""
    warm = max(1, warmup)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1.0 - s / total))


@dataclass
class Training:
    """What a rank trains, whatever its place in the group: the data, the model, its optimizer and
    schedule, the loop's position, the SIGTERM flag, the background checkpoint writer. The
    trainers of a group that re-forms in one process share one (:class:`Trainer`'s ``training``)."""
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
        model = build_model(cfg.model, data.info["tokenizer"]["vocab_size"], cfg.max_length,
                            **({"dim": cfg.embed_dim} if cfg.model == "bag" else {}), dropout=cfg.dropout).to(device)
        fused = {"fused": True} if cfg.fused_adamw and device.type in ("cpu", "cuda") else {}
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, **fused)
        steps_per_epoch = len(data.train) // cfg.global_batch_size  # the sampler's, on any world size
        scheduler = linear_schedule(optimizer, cfg.warmup_steps, cfg.schedule_length(steps_per_epoch))
        resuming.seed_rngs(cfg.seed, rank)  # each rank's own RNG (dropout), saved in its checkpoints
        return cls(data.train, data.test, data.info, model, optimizer, scheduler, resuming.TrainState(), GracefulStop(),
                   ckpt.BackgroundWriter())


class Trainer:
    """One rank's training, built for its place (``rank`` of ``world_size``) in a formed process
    group. ``__init__`` runs collectives (DDP's broadcast, a barrier): every rank builds its
    trainer at the same point. ``gradients(model)`` builds an extension's gradient sync instead
    of DDP; ``agreement`` adds to the step's end; ``training`` is what an earlier trainer of this
    process trained (an elastic group that re-formed: it goes on here), else it is built."""

    def __init__(self, cfg: TrainConfig, rank: int, world_size: int, device: torch.device, report,
                 data_file: str | None = None, gradients: Callable[[torch.nn.Module], GradientSync] | None = None,
                 agreement: Agreement | None = None, training: Training | None = None, about: dict | None = None):
        self.cfg, self.rank, self.world_size, self.device, self.report = cfg, rank, world_size, device, report
        self.run_dir = Path(cfg.run_dir)
        fresh = training is None
        self.training = t = training or Training.build(cfg, rank, device, data_file)
        self.train_data, self.test_data, self.data_info, self.model = t.train_data, t.test_data, t.data_info, t.model
        self.optimizer, self.scheduler, self.state = t.optimizer, t.scheduler, t.state
        self.stop, self.writer = t.stop, t.writer
        self.pad_id = self.data_info["tokenizer"]["pad_id"]
        self.gradients = gradients(self.model) if gradients else None
        # DDP wraps the model here, as in the tutorial (gradient_as_bucket_view: no copy into the buckets and back)
        self.ddp = None if self.gradients else DDP(self.model, device_ids=[device.index] if device.type == "cuda" else None,
                                                   gradient_as_bucket_view=cfg.grad_bucket_view)
        self.agreement = agreement
        self.rank_rng = self.gradients.rank_rng if self.gradients else True  # DDP: each rank's dropout stream
        self.invariant = self.gradients.invariant if self.gradients else False  # DDP sums in a world-size order
        self.sampler = ResumableDistributedSampler(len(self.train_data), cfg.global_batch_size, world_size, rank, cfg.seed,
                                                   contiguous=self.gradients.contiguous if self.gradients else False)
        self.total_steps = cfg.planned_steps(self.sampler.steps_per_epoch)
        self.state.config = {**cfg.to_dict(), "world_size": world_size}
        self.attempt = next_attempt(self.run_dir, rank, **(about or {}))  # a barrier: every rank reads the same count
        self.faults = FaultInjector(cfg, rank, self.attempt)
        self.ledger = Ledger(self.run_dir, rank)
        self.tb = TensorBoardLogger(self.run_dir, enabled=rank == 0, hparams=cfg.to_dict())
        # the newest step saved or resumed from (the same on every rank: it decides who enters a save's
        # collectives), and on rank 0 the newest one whose commit went through; a carried training is saved
        self.saved_step = self.committed_step = None if fresh else self.state.global_step
        self.resumed_from: int | None = None
        if rank == 0:  # the run says how it was made, whatever started it
            ckpt.write_atomic(self.run_dir / "config.json", json.dumps(self.state.config, indent=2, sort_keys=True).encode())

    # ------------------------------------------------------------------ the loop
    def train(self) -> Outcome:
        """Train from where the state stands to the planned end; returns why it stopped. On
        :attr:`Outcome.DONE` the final checkpoint is saved and ``final/summary.json`` written.
        A collective: every rank calls it."""
        t0 = time.perf_counter()
        with self.writer:  # a background save in flight lands before this returns or raises
            for line in self.faults.explain(self.state.global_step, self.total_steps) if self.rank == 0 else []:
                self.report.line(line)
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
        return Outcome.DONE

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
            self.close()
            return Outcome.PREEMPTED
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
        if self.rank_rng:
            parts[f"rng-rank{self.rank}.pt"] = resuming.RankRNG()
        return parts

    def _save_checkpoint(self, wait: bool = False) -> None:
        """The commit protocol of :mod:`course_lib.checkpoint.store` (a collective): each rank
        writes its own part, the ranks agree that every part is written, rank 0 writes the
        shared state and commits. With ``--async-save`` rank 0 serialises the shared state (the
        snapshot) and a thread writes and commits it while training goes on. ``wait``: the save
        of the run's end or of a preemption, which must not trust an earlier background commit."""
        step, t0 = self.state.global_step, time.perf_counter()
        if step == self.saved_step and (not wait or self._committed(step)):  # one save per step
            return
        self.saved_step = step
        tmp = ckpt.tmp_dir(self.run_dir, step, self.attempt)
        write = self.faults.writer(step)  # store.write_part, or one that a planned kill cuts half-way
        if not self._all_wrote(tmp, step, self._write_own_part(tmp, step, write)):
            return
        if self.rank == 0:
            self._write_and_commit(tmp, step, write, background=self.cfg.async_save and not wait)
            self.tb.scalars(step, **{"checkpoint/blocking_seconds": time.perf_counter() - t0})

    def _write_own_part(self, tmp: Path, step: int, write) -> bool:
        """This rank's own part (its RNG) into the save's folder; ``False`` if the disk refused it."""
        own = {name: obj for name, obj in self.stateful().items() if name.startswith("rng-rank")}
        try:
            for name, obj in own.items():
                write(tmp, name, obj.state_dict())
            if not own:  # nothing of its own to write: a kill planned for this save strikes as it begins
                self.faults.save_begins(step)
        except OSError as err:  # disk full, permissions...: this save fails, the run goes on
            self.report.line(f"Rank {self.rank}: checkpoint at step {step} NOT saved ({err}); previous one kept")
            return False
        return True

    def _all_wrote(self, tmp: Path, step: int, ok: bool) -> bool:
        """Did every rank write its part? (An all-reduce that doubles as the protocol's barrier.)
        If not, no rank goes on with this save, and a later save of this step may try again."""
        agree = torch.tensor([1.0 if ok else 0.0], device=self.device)
        dist.all_reduce(agree, op=dist.ReduceOp.MIN)
        if agree.item() == 1:
            return True
        self.saved_step = None
        if self.rank == 0:  # only this save's folder: an earlier save may still be writing its own
            shutil.rmtree(tmp, ignore_errors=True)
        dist.barrier()  # gone before any rank writes a retry of this step into it
        return False

    def _write_and_commit(self, tmp: Path, step: int, write, background: bool) -> None:
        """Rank 0: the shared state into ``tmp``, then the commit (in the background writer's
        thread with ``--async-save``: its bytes are serialised here, the snapshot)."""
        parts = {name: obj.state_dict() for name, obj in self.stateful().items() if not name.startswith("rng-rank")}
        if background:  # training will change the live tensors
            parts = {name: ckpt.serialize(obj) for name, obj in parts.items()}
        meta = {"epoch": self.state.epoch, "world_size": self.world_size, "config_hash": self.cfg.shape_hash(),
                "attempt": self.attempt, "rank_rng": self.rank_rng}

        def job() -> None:
            t0 = time.perf_counter()
            try:
                hashes = {name: write(tmp, name, obj) for name, obj in parts.items()}
                path = ckpt.commit(self.run_dir, step, meta, known=hashes, attempt=self.attempt)
            except (OSError, ckpt.CheckpointError) as err:
                self.report.line(f"Rank 0: checkpoint at step {step} NOT saved ({err}); previous one kept")
                shutil.rmtree(tmp, ignore_errors=True)  # only its own folder: the ranks may be writing the next save's
                return
            self.committed_step = step
            ckpt.purge(self.run_dir, self.cfg.keep_last, newest_valid=path)
            size = sum(p.stat().st_size for p in path.iterdir())
            self.tb.scalars(step, **{"checkpoint/save_seconds": time.perf_counter() - t0,
                                     "checkpoint/size_mb": size / 2**20})
        self.writer.submit(job, background)

    def _committed(self, step: int) -> bool:
        """Did rank 0 commit ``step``? Its background write may have failed after every rank counted
        the step as saved; a final or preemption save must not trust that (a collective)."""
        self.writer.wait()
        done = torch.tensor([float(self.committed_step == step)], device=self.device)
        dist.broadcast(done, src=0)
        return done.item() > 0

    def resume(self) -> int | None:
        """``--resume``: nothing, the newest valid checkpoint (``auto``) or a named one; returns its
        step. Rank 0 chooses and tells the others (a collective): every rank resumes the same one."""
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
        resuming.check_fits(saved, self.cfg, self.world_size, source, invariant=self.invariant)
        resuming.restore(self.stateful(), read, mode)
        if mode == "epoch-start":  # the textbook's resume: the partial epoch is repeated (the step count and
            self.state.step_in_epoch = 0  # the schedule go on, so the run's planned end cuts its last epoch short)
        else:
            self.saved_step = self.committed_step = self.state.global_step  # on disk: never saved twice
        step = self.resumed_from = self.state.global_step
        self.tb.scalars(step, **{"events/resume_from_step": step})
        self.tb.event("events/resume", f"attempt {self.attempt} resumed from {source} (mode {mode})", step)
        if self.rank == 0:
            self.report.line(f"Resumed from {source}: epoch {self.state.epoch + 1}, step {step}, mode {mode}, "
                             f"last loss {self.state.last_loss:.4f}")
            if saved["world_size"] != self.world_size:  # only a world-size-invariant reduction gets here (check_fits)
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

    def close(self) -> None:
        """Close this rank's ledger and TensorBoard file (a trainer of a group that re-forms)."""
        self.tb.close()
        self.ledger.close()

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
            final.mkdir(parents=True, exist_ok=True)
            # each file replaced in one rename: a crash here leaves the previous final files whole
            ckpt.write_atomic(final / "model.pt", ckpt.serialize(self.model.state_dict()))
            ckpt.write_atomic(final / "summary.json", json.dumps(summary, indent=2, default=str).encode())
            self.tb.hparams({k: v for k, v in self.cfg.to_dict().items() if k not in ("run_dir", "cache_dir")},
                            {"hparam/val_accuracy": metrics["val_accuracy"]})
            self.report.line(f"Held-out accuracy {metrics['val_accuracy']:.2%} on {metrics['val_count']} reviews "
                             f"({self.cfg.reduction}); parameters identical on all {self.world_size} ranks ({digest[:12]})")
        self.close()
