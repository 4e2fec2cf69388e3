"""The per-rank training loop: the only place that steps the optimizer.

Read it top to bottom: ``Trainer.__init__`` builds everything from the config, ``train``
runs epochs, ``_run_epoch`` runs steps, ``_run_batch`` is one optimizer step, and
``_save_checkpoint`` / ``_restore`` move the *whole* state to disk and back.

The whole state of the loop is: model, optimizer, LR scheduler, ``TrainState`` (epoch, step in
epoch, global step, last loss) and every RNG of every rank. The data order is a pure function
of (seed, epoch, step) (:mod:`course_lib.sampling`), so restoring those objects puts the loop
exactly where it was: the resumed run is bit-identical to one never interrupted.

Run it under ``torchrun`` with ``torchrun ... -m course_lib train --run-dir DIR ...``, or from
Python / a notebook through :func:`course_lib.launch.launch`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from . import checkpoint as ckpt
from . import rng
from .async_save import BackgroundWriter
from .config import TrainConfig
from .faults import EXIT_PREEMPTED, EXIT_SURVIVED, FaultInjector, GracefulStop
from .invariant import InvariantStep
from .membership import ElasticGroup, GroupChange
from .regroup import Regrouping
from .resume import Resuming
from .consistency import check_ranks_agree
from .evaluation import held_out_metrics
from .models import build_model
from .monitor import Ledger, TensorBoardLogger, fill_ledger_gap, next_attempt
from .prepare import prepare_for, prepared_for_rank
from .sampling import ResumableDistributedSampler, sample_digest


PEER_LOST = ("Connection closed by peer", "Connection reset by peer")  # gloo's words (a plain RuntimeError)


@dataclass
class TrainState:
    epoch: int = 0            # 0-based epoch in progress
    step_in_epoch: int = 0    # steps of that epoch already done
    global_step: int = 0      # optimizer steps done since the run began
    last_loss: float = math.nan


class Trainer(Resuming, Regrouping):
    def __init__(self, cfg: TrainConfig, rank: int, world_size: int, device: torch.device, report,
                 data_file: str | None = None, group: ElasticGroup | None = None):
        self.cfg, self.device, self.report, self.group = cfg, device, report, group
        self.run_dir = Path(cfg.run_dir)
        self.stop = GracefulStop()
        if group is not None:  # elastic: the data file the group trains on, read before joining it
            data_file = group.data_file(lambda: str(prepare_for(cfg, progress=False).path))
        data = prepared_for_rank(cfg, rank, data_file)
        self.train_data, self.test_data, self.data_info = data.train, data.test, data.info
        self.pad_id = data.info["tokenizer"]["pad_id"]
        if len(set(self.train_data.labels.tolist())) < 2:
            raise ValueError("the training slice holds a single class: use a larger --train-limit")

        torch.manual_seed(cfg.seed)  # identical initial weights on every rank (DDP also broadcasts)
        model = build_model(cfg.model, data.info["tokenizer"]["vocab_size"], cfg.max_length,
                            **({"dim": cfg.embed_dim} if cfg.model == "bag" else {}), dropout=cfg.dropout)
        self.model = model.to(device)
        self.state = TrainState()
        self.saved_step: int | None = None  # newest step this attempt saved or resumed from: saved once
        self.writer = BackgroundWriter()
        self.ledger = self.tb = None
        self.optimizer, self.scheduler = self._fresh_optimizer()  # before joining: the first AdamW takes ~1 s
        decision = None
        if group is not None:  # a newcomer: ready to train, it now asks the running group (if any) to let it in
            decision = group.form(-1, holds_state=False, reason="a node starts", trigger=True)
            rank, world_size, formed = decision.members.index(group.id), decision.world_size, time.time()
        self._join(rank, world_size)
        rng.seed_rngs(cfg.seed, rank)  # per-rank RNG (dropout) owned by this run, saved in checkpoints
        if decision is not None and decision.needs_state:
            self.resumed_from = self._share_state(decision)  # from a live peer's memory
        else:
            self.resumed_from = self._maybe_resume()
        if decision is not None:
            self._record_generation(decision, started=group.started, asked=group.membership.asked, formed=formed)
        if rank == 0:
            for line in self.faults.explain(self.state.global_step, self.total_steps):
                report.line(line)

    def _join(self, rank: int, world_size: int) -> None:
        """Everything that depends on this rank's place in the group: built at the start, and
        again each time an elastic group re-forms (a collective: every rank calls it)."""
        previous = self.rank if self.ledger is not None else None  # this process's place before a re-formed group
        self.rank, self.world_size, cfg = rank, world_size, self.cfg
        self.attempt = next_attempt(self.run_dir, rank, **(self.group.describe() if self.group else {}))
        self.faults = FaultInjector(cfg, rank, self.attempt)
        self.invariant = None
        if cfg.reduction == "invariant":  # our own fixed-order sum instead of DDP's all-reduce
            self.invariant = InvariantStep(self.model, cfg.global_batch_size, cfg.micro_batch, world_size, rank, cfg.seed)
            self.ddp = self.model
        else:  # gradient_as_bucket_view: the gradients *are* views into DDP's all-reduce buckets, so a
            # step neither copies ~90 MB (minilm) into the buckets and back nor reallocates them
            self.ddp = DDP(self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None,
                           gradient_as_bucket_view=cfg.grad_bucket_view)
        self.sampler = ResumableDistributedSampler(len(self.train_data), cfg.global_batch_size, world_size, rank, cfg.seed,
                                                   contiguous=self.invariant is not None)
        self.total_steps = cfg.planned_steps(self.sampler.steps_per_epoch)
        if self.ledger is not None:
            self.ledger.close()
        if previous is not None and previous != rank:  # e.g. the survivor of a lost rank 0
            fill_ledger_gap(self.run_dir, previous, rank, self.state.global_step)
        self.ledger = Ledger(self.run_dir, rank)
        if self.tb is None or self.tb.enabled != (rank == 0):
            if self.tb is not None:
                self.tb.close()
            self.tb = TensorBoardLogger(self.run_dir, enabled=rank == 0, hparams=cfg.to_dict())

    # ------------------------------------------------------------------ state
    def _fresh_optimizer(self):
        # the fused AdamW updates each tensor in one pass over memory instead of one per operation:
        # on one CPU thread the minilm update takes 0.03 s instead of 0.14 s. Every rank pays
        # for the update on its full copy of the model, so this is a cost DDP does not divide.
        fused = self.cfg.fused_adamw and self.device.type in ("cpu", "cuda")
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay,
                                **({"fused": True} if fused else {}))
        steps_per_epoch = len(self.train_data) // self.cfg.global_batch_size  # the sampler's, on any world size
        warm, total = max(1, self.cfg.warmup_steps), self.cfg.schedule_length(steps_per_epoch)
        sched = torch.optim.lr_scheduler.LambdaLR(  # linear warm-up, then linear decay to 0
            opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1.0 - s / total))
        return opt, sched

    # ------------------------------------------------------------------ loop
    def train(self) -> dict:
        t_start = time.perf_counter()
        while self.state.epoch < self.cfg.epochs and self.state.global_step < self.total_steps:
            change = None
            try:
                self._run_epoch()
            except GroupChange as news:  # a node asks to join (elastic)
                change = str(news)
            except RuntimeError as err:  # a peer is gone? what it finished, we hold
                change = self._survive(err)
            if change:  # outside the except clause: its traceback no longer holds the old groups
                self._regroup(change)
            if self.state.step_in_epoch >= self.sampler.steps_per_epoch:
                self.state.epoch += 1
                self.state.step_in_epoch = 0
                if self.cfg.save_every_epochs and self.state.epoch % self.cfg.save_every_epochs == 0:
                    self._save_checkpoint()
        self._save_checkpoint(wait=True)
        self.writer.wait()
        metrics = self.evaluate()
        summary = self._finish(metrics, time.perf_counter() - t_start)
        if self.group is not None and self.rank == 0:
            self.group.finish()  # a node that arrives now is told the run is over
        return summary

    def _run_epoch(self) -> None:
        if not self.cfg.skip_set_epoch:  # the classic bug, reproduced on request in notebook 03
            self.sampler.set_epoch(self.state.epoch)
        self.sampler.set_position(self.state.step_in_epoch)
        self.ddp.train()
        for chunk in self.sampler.global_batches():
            if self.state.global_step >= self.total_steps:
                return
            indices = self.sampler.share(chunk)
            self.faults.before_step(self.state.global_step + 1)
            t0 = time.perf_counter()
            lr = self.optimizer.param_groups[0]["lr"]  # the rate this step uses
            loss, global_loss, grad_norm, stop, change = self._run_batch(indices)
            self.state.global_step += 1
            self.state.step_in_epoch += 1
            self.state.last_loss = global_loss
            self._log_step(chunk, indices, loss, global_loss, lr, grad_norm, time.perf_counter() - t0)
            if self.cfg.save_every_steps and self.state.global_step % self.cfg.save_every_steps == 0:
                self._save_checkpoint()
            if stop:
                self._preempted()
            if change:
                raise GroupChange("a node asks to join")
            if self.cfg.eval_every_steps and self.state.global_step % self.cfg.eval_every_steps == 0:
                self.evaluate()
                self.ddp.train()

    def _autocast(self):
        """bf16 autocast when ``precision == "bf16"`` (weights and optimizer stay fp32)."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cfg.precision == "bf16")

    def _batch(self, indices: list[int]) -> dict[str, torch.Tensor]:
        batch = self.train_data.batch(indices, self.pad_id)
        if self.rank == self.cfg.corrupt_rank:  # teaching only (notebook 03): the rank whose loss line goes astray
            labels = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + indices[0])
            batch["label"] = torch.randint(0, 2, batch["label"].shape, generator=labels)
        return {k: v.to(self.device) for k, v in batch.items()}

    def _run_batch(self, indices: list[int]) -> tuple[float, float, float, bool, bool]:
        """One optimizer step over this rank's ``indices``: the gradients of the global batch
        (DDP's all-reduce, or the invariant reduction's fixed-order sum), clipping, AdamW."""
        self.optimizer.zero_grad(set_to_none=True)
        if self.invariant is not None:
            loss, global_loss = self.invariant.run(self.state.global_step + 1, indices, self._batch, self._autocast)
        else:
            loss, global_loss = self._ddp_backward(indices), None
        # one small all-reduce: the global mean loss, "does any rank want to stop?" and "does a node
        # wait to join?" (elastic; rank 0 asks the store). It is the step's last collective: nothing
        # after it can fail for a lost peer, so a rank that notices a dead peer still holds the
        # state of the last finished step
        joining = self.group is not None and self.rank == 0 and self.group.change_wanted()
        flags = torch.tensor([loss, 1.0 if self.stop.requested else 0.0, float(joining)], dtype=torch.float64,
                             device=self.device)
        dist.all_reduce(flags)
        global_loss = flags[0].item() / self.world_size if global_loss is None else global_loss
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        return loss, global_loss, float(grad_norm), flags[1].item() > 0, flags[2].item() > 0

    def _ddp_backward(self, indices: list[int]) -> float:
        """This rank's share in micro-batches of ``cfg.micro_batch``: gradients accumulate
        locally (``no_sync``) and are all-reduced once, in the last backward pass."""
        size = self.cfg.micro_batch or len(indices)
        parts = [indices[i:i + size] for i in range(0, len(indices), size)]
        loss = 0.0
        for i, part in enumerate(parts):
            batch = self._batch(part)
            with self.ddp.no_sync() if i < len(parts) - 1 else contextlib.nullcontext(), self._autocast():
                logits = self.ddp(batch["input_ids"], batch["attention_mask"])
                part_loss = F.cross_entropy(logits.float(), batch["label"]) * (len(part) / len(indices))
                part_loss.backward()  # the last one all-reduces (averages) the gradients over ranks
            loss += part_loss.item()
        return loss

    def _log_step(self, chunk, indices, loss, global_loss, lr, grad_norm, seconds) -> None:
        s = self.state
        sample_ids, batch_ids = self.train_data.ids[indices].tolist(), self.train_data.ids[chunk].tolist()
        self.ledger.write({"step": s.global_step, "epoch": s.epoch, "loss": loss, "global_loss": global_loss,
                           "lr": lr, "grad_norm": grad_norm,  # samples, batch_ids: the whole step's, on any world size
                           "samples": sample_digest(batch_ids), "sample_ids": sample_ids, "batch_ids": batch_ids,
                           "attempt": self.attempt,
                           "time": time.time()})
        self.tb.scalars(s.global_step, **{"train/loss": global_loss, "train/lr": lr,
                                          "train/grad_norm": grad_norm,
                                          "train/samples_per_s": self.cfg.global_batch_size / max(seconds, 1e-9)})
        if s.global_step == 1 or s.global_step % self.cfg.log_every == 0 or s.global_step == self.total_steps:
            self.report.line(f"Rank {self.rank}, Epoch [{s.epoch + 1}/{self.cfg.epochs}], "
                             f"Step [{s.step_in_epoch}/{self.sampler.steps_per_epoch}], Loss: {loss:.4f}")
        self.report.progress(s.global_step, self.total_steps)

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self, wait: bool = False) -> None:
        """Every rank writes its RNG file; after the all-reduce that doubles as a barrier,
        rank 0 writes the shared state and commits. With ``async_save`` rank 0 serialises the
        state in memory (the snapshot) and writes it in a background thread while training goes on."""
        step, t0 = self.state.global_step, time.perf_counter()
        if step == self.saved_step:  # e.g. the last step is also a periodic save step: one save per step
            return
        self.saved_step = step
        tmp = ckpt.tmp_dir(self.run_dir, step, self.attempt)
        fault = self.faults.during_save(step)
        ok = 1.0
        try:
            ckpt.write_part(tmp, f"rng-rank{self.rank}.pt", rng.rng_state(), None if self.rank == 0 else fault)
        except OSError as err:  # disk full, permissions...: this save fails, the run goes on
            self.report.line(f"Rank {self.rank}: checkpoint at step {step} NOT saved ({err}); previous one kept")
            ok = 0.0
        agree = torch.tensor([ok], device=self.device)
        dist.all_reduce(agree, op=dist.ReduceOp.MIN)
        if agree.item() < 1:
            self.saved_step = None  # every rank knows (all-reduced): a later save of this step may try again
            if self.rank == 0:  # only this save's folder: an earlier save may still be writing its own
                shutil.rmtree(tmp, ignore_errors=True)
            return
        if self.rank != 0:
            return
        parts = self._state_parts()
        background = self.cfg.async_save and not wait
        if background:  # the bytes are the snapshot: training will change the live tensors
            parts = {name: ckpt.serialize(obj) for name, obj in parts.items()}
        meta = {"epoch": self.state.epoch, "world_size": self.world_size, "config_hash": self.cfg.shape_hash(),
                "attempt": self.attempt, "rank_rng": self.invariant is None}
        self.writer.submit(lambda: self._write_and_commit(step, parts, meta, fault), background)
        # what the training loop waited for (with async_save: the serialisation, not the writing)
        self.tb.scalars(step, **{"checkpoint/blocking_seconds": time.perf_counter() - t0})

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
        ckpt.purge(self.run_dir, self.cfg.keep_last, newest_valid=path)
        size = sum(p.stat().st_size for p in path.iterdir())
        self.tb.scalars(step, **{"checkpoint/save_seconds": time.perf_counter() - t0, "checkpoint/size_mb": size / 2**20})

    def _state_parts(self) -> dict:
        return {"model.pt": self.model.state_dict(), "optimizer.pt": self.optimizer.state_dict(),
                "scheduler.pt": self.scheduler.state_dict(),
                "trainer.pt": {"state": dataclasses.asdict(self.state),
                               "config": json.dumps({**self.cfg.to_dict(), "world_size": self.world_size})}}

    def _survive(self, err: Exception) -> str:
        """A peer died. Every collective of a step comes before its optimizer step, so this rank
        holds the full state of the newest finished step, the same on every rank that finished
        it. With the invariant reduction no randomness belongs to the dead rank either: save it
        (emergency checkpoint, same commit protocol), then re-form the group in this process
        (elastic: returns why, see :mod:`course_lib.regroup`) or leave with :data:`EXIT_SURVIVED`."""
        lost = isinstance(err, dist.DistError) or any(m in str(err) for m in PEER_LOST)
        if self.invariant is None or not lost:
            raise err
        why = f"a peer is gone ({' '.join(str(err).split())[:120]})"
        path = self._emergency_save(background=self.group is not None)
        if self.group is not None:
            return why
        self.report.line(f"Rank {self.rank}: {why}; emergency checkpoint {path.name} of the last finished step "
                         "saved, exiting for --resume auto")
        self.tb.close()
        raise SystemExit(EXIT_SURVIVED)

    def _preempted(self) -> None:
        if self.rank == 0:
            self.report.line(f"Stop requested ({self.stop.requested or 'by another rank'}): saved step "
                             f"{self.state.global_step}, exiting for a later --resume auto")
        self._save_checkpoint(wait=True)
        self.writer.wait()  # this step may have been saved already, in the background
        self.tb.close()
        raise SystemExit(EXIT_PREEMPTED)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict:
        """Held-out loss and accuracy (:mod:`course_lib.evaluation`), logged to TensorBoard."""
        metrics = held_out_metrics(self.model, self.test_data, self.pad_id, self.rank, self.world_size, self.device,
                                   self.cfg.eval_limit, self._autocast)
        self.tb.scalars(self.state.global_step, **{"val/loss": metrics["val_loss"], "val/accuracy": metrics["val_accuracy"]})
        return metrics

    def _finish(self, metrics: dict, seconds: float) -> dict:
        digest = check_ranks_agree(self.model, self.world_size, self.run_dir, self.rank)
        summary = {**metrics, "steps": self.state.global_step, "epochs": self.cfg.epochs,
                   "attempt": self.attempt, "resumes": self.attempt - 1, "resumed_from": self.resumed_from,
                   "world_size": self.world_size, "parameter_sha256": digest, "train_seconds_this_attempt": seconds,
                   "train_samples": len(self.train_data), "test_samples": metrics["val_count"],
                   "data": {k: self.data_info.get(k) for k in ("provenance", "near_dup", "tokenizer")}}
        if self.rank == 0:
            final = self.run_dir / "final"
            final.mkdir(parents=True, exist_ok=True)
            # each file replaced in one rename: a crash here leaves the previous final files whole
            ckpt.write_atomic(final / "model.pt", ckpt.serialize(self.model.state_dict()))
            ckpt.write_atomic(final / "summary.json", json.dumps(summary, indent=2, default=str).encode())
            self.tb.hparams({k: v for k, v in self.cfg.to_dict().items() if k not in ("run_dir", "cache_dir")},
                            {"hparam/val_accuracy": metrics["val_accuracy"]})
            self.report.line(f"Held-out accuracy {metrics['val_accuracy']:.2%} on {metrics['val_count']} reviews; "
                             f"parameters identical on all {self.world_size} ranks ({digest[:12]})")
        self.tb.close()
        self.ledger.close()
        return summary
