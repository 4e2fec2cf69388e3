"""A member of an elastic group: when the group changes, it re-forms in-process, no restart.

A peer is gone (a collective failed) or a node asks to join (seen at a step boundary). Every
collective of a step comes before its optimizer step, so each member holds the state of the last
finished step. It saves that step (in the background: disk stays the fallback), agrees with the
live members on the next generation of the group (:mod:`course_lib.beyond.elastic.membership`),
forms that generation's process group, builds its trainer for its new place, hands the state to
the members that lack it (:mod:`course_lib.beyond.elastic.peer_state`) and trains on. With the
invariant reduction the world size does not change a bit of the result, so the run goes on
exactly as if nothing had happened.

:class:`Member` composes the core's :class:`~course_lib.ddp.train.Trainer`, one per generation:
the group decides the rank and the world size first, then the trainer is built for them (the
model, optimizer, schedule and position carried over from the last generation's trainer), with
the invariant reduction's ``gradients`` and the group's :class:`JoinVote`. Every rank of a new
group runs the same collectives in the same order: the trainer's construction, then the state's
hand-over.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import torch.distributed as dist

from course_lib._runtime.rank_output import Reporter
from course_lib.beyond.elastic import peer_state
from course_lib.beyond.elastic.commands import ElasticSettings
from course_lib.beyond.elastic.membership import Decision, ElasticGroup, Membership, RunFinished
from course_lib.beyond.invariant_trainer import (
    INVARIANT,
    PEER_LOST,
    emergency_save,
    invariant_gradients,
    peer_lost,
    snapshot,
)
from course_lib.checkpoint import store as ckpt
from course_lib.config import ConfigError, TrainConfig
from course_lib.data.prepare import prepare_for
from course_lib.ddp.launch import faults_for, rank_setup
from course_lib.ddp.outcome import DONE, PREEMPTED, Outcome
from course_lib.ddp.seams import Seams
from course_lib.ddp.train import Trainer
from course_lib.ddp.training import Training
from course_lib.watch.monitor import Ledger, append_jsonl, read_ledger

REGROUP = Outcome("regroup", None)  # the group must re-form to go on: it goes on in this process, never an exit code


def fill_ledger_gap(run_dir: str | Path, source: int, target: int, up_to: int) -> int:
    """The number of rows copied into rank ``target``'s ledger from ``source``'s (those after its last
    step, up to ``up_to``, marked ``copied_from_rank``), for a member that takes over a dead one's place:
    the dead one may have finished a step it never logged, and most readers of a run read rank 0's ledger.
    A step's global fields (``global_loss``, ``samples``, ``batch_ids``) agree on all ranks."""
    have = [r["step"] for r in read_ledger(run_dir, target)]
    rows = [r for r in read_ledger(run_dir, source) if max(have, default=0) < r["step"] <= up_to]
    if rows:
        ledger = Ledger(run_dir, target)
        for r in rows:
            ledger.write({**r, "copied_from_rank": source})
        ledger.close()
    return len(rows)


class JoinVote:
    """The group's word at each step's end (the trainer's ``agreement``): does a node wait to join?
    Rank 0 asks the store, once a step; any "yes" makes every rank leave the epoch to re-form."""

    def __init__(self, membership: Membership, rank: int):
        self.membership, self.rank = membership, rank

    def votes(self) -> dict[str, float]:
        return {"join": float(self.rank == 0 and self.membership.change_wanted())}

    def decide(self, votes: dict[str, float]) -> Outcome | None:
        return REGROUP if votes["join"] else None


class Member:
    """One process of an elastic group, over every generation it is part of."""

    def __init__(self, cfg: TrainConfig, settings: ElasticSettings, group: ElasticGroup, device, report: Reporter):
        self.cfg, self.settings, self.group, self.device, self.report = cfg, settings, group, device, report
        self.data_file = group.data_file(lambda: str(prepare_for(cfg, progress=False).path))  # the group's, before joining
        self.trainer: Trainer | None = None
        self.parts: dict | None = None  # the last finished step's state, while the group re-forms
        self.received: dict | None = None  # how this member got its state, for elastic.jsonl

    def run(self) -> Outcome:
        """Join (as a newcomer, ready to train: its first AdamW built, ~1 s the group need not wait
        for), then train, re-forming the group whenever it changes, to the run's end."""
        training = Training.build(self.cfg, 0, self.device, self.data_file)  # ready to train before asking to join
        decision = self.group.form(-1, holds_state=False, reason="a node starts", trigger=True)
        self._enter(decision, training, started=self.group.started, asked=self.group.membership.asked)
        while True:
            outcome, why = self._train()
            if outcome == DONE and self.trainer.rank == 0:
                self.group.membership.finish()  # a node that arrives now is told the run is over
            if outcome in (DONE, PREEMPTED):
                return outcome
            self._regroup(why)

    def _train(self) -> tuple[Outcome, str]:
        """Train until the run ends or the group must change; a lost peer is such a change."""
        try:
            return self.trainer.train(), "a node asks to join"
        except RuntimeError as err:
            if not peer_lost(err):
                raise
            why = f"a peer is gone ({' '.join(str(err).split())[:120]})"
        self.parts = snapshot(self.trainer)  # outside the except clause: its traceback held the old groups
        emergency_save(self.trainer, self.parts, background=True)
        return PEER_LOST, why

    def _enter(self, decision: Decision, training: Training, **times) -> None:
        """Take this member's place in ``decision``'s group (a collective of that group): its trainer,
        the state it lacks (from the member that holds it; from the disk where none does), its record."""
        formed = time.time()
        self._build(decision, training)
        if decision.needs_state:
            self._share_state(decision)
        elif decision.source is None:  # no member holds a step in memory: all resume from the disk
            self.trainer.resume()
        self._record(decision, **times, formed=formed)

    def _build(self, decision: Decision, training: Training) -> None:
        """This member's trainer for its place in ``decision``'s group (a collective of that group)."""
        rank, world_size = decision.members.index(self.group.id), decision.world_size
        previous = self.trainer  # its ledger and TensorBoard file closed as its train() ended
        # a new place (e.g. the survivor of a lost rank 0): rank 0's ledger is what the views read
        if previous is not None and rank != previous.rank:
            fill_ledger_gap(self.cfg.run_dir, previous.rank, rank, previous.state.global_step)
        seams = Seams(gradients=invariant_gradients(self.cfg, rank, world_size),
                      agreement=JoinVote(self.group.membership, rank), training=training, about=self.group.describe())
        self.trainer = Trainer(self.cfg, rank, world_size, self.device, self.report, self.data_file, seams=seams,
                               faults=faults_for(self.cfg, rank))

    def _regroup(self, reason: str) -> None:
        """Re-form the group in this process (see the module docstring)."""
        noticed = time.time()
        trainer = self.trainer
        if self.parts is None:  # a planned change: rank 0 saves, like a periodic save
            self.parts = snapshot(trainer)
            if trainer.rank == 0:
                emergency_save(trainer, self.parts, background=True)
        trainer.gradients = None  # the old groups' last references (see ElasticGroup.dissolve)
        try:
            self.group.dissolve()
            decision = self.group.form(trainer.state.global_step, holds_state=True, reason=reason, trigger=False)
        except Exception:  # no group: torchrun restarts this worker, which resumes from the disk
            trainer.writer.wait()  # so the save of the last finished step lands first
            raise
        self._enter(decision, trainer.training, noticed=noticed)
        self.parts = None
        if self.trainer.rank == 0:
            self.report.line(f"The group re-formed in-process on {decision.world_size} rank(s) ({reason}), "
                             f"{time.time() - noticed:.2f} s after it noticed; "
                             f"step {self.trainer.state.global_step + 1} next")

    def _share_state(self, decision: Decision) -> None:
        """A collective of the new group: the members in ``decision.needs_state`` get the state of
        step ``decision.step``, from the source's memory or, without peer state, from the
        checkpoint the source commits first."""
        trainer = self.trainer
        source = decision.members.index(decision.source)
        receivers = [decision.members.index(m) for m in decision.needs_state]
        t0 = time.perf_counter()
        if self.settings.peer_state:
            parts, info = peer_state.share(self.parts if trainer.rank == source else None, source, receivers, trainer.rank)
            if parts is not None:
                trainer.restore(f"rank {source}'s memory (step {decision.step})", parts.get, "full")
                self.received = {**info, "via": "peer", "seconds": time.perf_counter() - t0}
            return
        if trainer.rank == source:
            trainer.writer.wait()  # its save of the step is committed before anyone reads it
        dist.barrier()
        if trainer.rank in receivers:
            path = ckpt.checkpoint_root(trainer.run_dir) / ckpt.step_dir_name(decision.step)  # not --resume: that step
            trainer.restore(path.name, lambda name: ckpt.load_part(path, name), "full")
            self.received = {"via": "checkpoint", "seconds": time.perf_counter() - t0, "from_rank": source}

    def _record(self, decision: Decision, **times) -> None:
        """One line per member and generation in ``DIR/elastic.jsonl``: the timeline's records."""
        row = {"member": self.group.id, "generation": decision.generation, "rank": self.trainer.rank,
               "world_size": decision.world_size, "reason": decision.reason, "decided": decision.decided,
               "attempt": self.trainer.attempt, "step": self.trainer.state.global_step, **times, "ready": time.time(),
               "state": self.received}
        self.received = None
        append_jsonl(self.trainer.run_dir / "elastic.jsonl", row)


@contextlib.contextmanager
def members_lock(run_dir: str | Path):
    """The group's hold on ``DIR/.lock``: every member holds it, shared, so that no other run gets
    in while nodes come and go (a run of the core holds it alone: ``run_dir_lock``)."""
    import fcntl

    Path(run_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(run_dir) / ".lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            raise ConfigError(f"{run_dir} is in use by another run ({f.read().strip() or 'unknown process'}); "
                              "wait for it to end, stop it, or pick another --run-dir") from None
        yield


def run_member(cfg: TrainConfig, settings: ElasticSettings, local_rank: int, report: Reporter) -> Outcome:
    """A member of an elastic group, started by torchrun (``--elastic-endpoint``): its rank and
    world size are the group's to decide, generation by generation, not torchrun's."""
    device, backend, timeout = rank_setup(cfg, local_rank, 1, INVARIANT)
    group = ElasticGroup(cfg, settings, backend, timeout)
    try:
        with members_lock(cfg.run_dir):
            return Member(cfg, settings, group, device, report).run()
    except RunFinished as done:
        report.line(f"Not joining: {done}")
        return DONE
    finally:
        group.membership.close()
        if dist.is_initialized():
            dist.destroy_process_group()
