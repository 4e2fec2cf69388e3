"""A member of an elastic group: when the group changes, it re-forms in-process, no restart.

A peer is gone (a collective failed) or a node asks to join (seen at a step boundary). Every
collective of a step comes before its optimizer step, so each member holds the state of the last
finished step. It saves that step (in the background: disk stays the fallback), agrees with the
live members on the next generation of the group (:mod:`course_lib.beyond.elastic.membership`),
forms that generation's process group, hands the state to the members that lack it over the
process group (:mod:`course_lib.beyond.elastic.peer_state`) and trains on. With the invariant
reduction the world size does not change a bit of the result, so the run goes on exactly as if
nothing had happened.

:class:`ElasticTrainer` is the invariant reduction's trainer with four of the core's hooks
filled in: its place in the group (``_take_place``, ``_join``), the state on joining (``_resume``),
a vote at each step's end (``_votes`` / ``_after_votes``: does a node wait to join?), and, from
:class:`~course_lib.beyond.invariant_trainer.InvariantTrainer`, a lost peer (``_peer_lost``). Every
rank of the new group runs the same collectives in the same order (``_join``, then
``_share_state``), newcomers from ``__init__``.
"""
from __future__ import annotations

import json
import time

import torch.distributed as dist

from course_lib._runtime.rank_output import Reporter
from course_lib.beyond.elastic import peer_state
from course_lib.beyond.elastic.membership import ElasticGroup, RunFinished
from course_lib.beyond.invariant_trainer import InvariantTrainer
from course_lib.checkpoint import store as ckpt
from course_lib.config import TrainConfig
from course_lib.data.prepare import prepare_for
from course_lib.watch.monitor import fill_ledger_gap


class ElasticTrainer(InvariantTrainer):
    def __init__(self, cfg: TrainConfig, device, report: Reporter, group: ElasticGroup):
        self.group, self._parts, self._state_received = group, None, None
        data_file = group.data_file(lambda: str(prepare_for(cfg, progress=False).path))  # the group's, read before joining
        super().__init__(cfg, -1, 0, device, report, data_file)  # rank and world size: the group's (_take_place)
        self._record_generation(group.decision, started=group.started, asked=group.membership.asked, formed=self._formed)

    def _take_place(self, rank: int, world_size: int) -> tuple[int, int]:
        """A newcomer, ready to train (its first AdamW built: ~1 s that the group need not wait
        for), asks the running group, if any, to let it in."""
        decision = self.group.form(-1, holds_state=False, reason="a node starts", trigger=True)
        self._formed = time.time()
        return decision.members.index(self.group.id), decision.world_size

    def _join(self, rank: int, world_size: int, about: dict | None = None) -> None:
        if self.ledger is not None:  # a re-formed group: this process's place may have changed
            self.ledger.close()
            self.tb.close()
            if rank != self.rank:  # e.g. the survivor of a lost rank 0: rank 0's ledger is what compare reads
                fill_ledger_gap(self.run_dir, self.rank, rank, self.state.global_step)
        super()._join(rank, world_size, self.group.describe())

    def _resume(self) -> int | None:
        decision = self.group.decision
        return self._share_state(decision) if decision.needs_state else super()._resume()

    def _votes(self) -> list[float]:
        joining = self.rank == 0 and self.group.change_wanted()  # rank 0 asks the store, once a step
        return [*super()._votes(), float(joining)]

    def _after_votes(self, votes: list[float]) -> bool:
        super()._after_votes(votes)
        if votes[1]:
            self._regroup("a node asks to join")
            return True
        return False

    def _peer_lost(self, why: str) -> None:
        self._parts = self._snapshot()
        self._emergency_save(self._parts, background=True)
        self._regroup(why)

    def train(self) -> dict:
        summary = super().train()
        if self.rank == 0:
            self.group.finish()  # a node that arrives now is told the run is over
        return summary

    # ------------------------------------------------------------------ re-forming
    def _regroup(self, reason: str) -> None:
        """Re-form the group in this process (see the module docstring)."""
        noticed = time.time()
        if self._parts is None:  # a planned change: rank 0 saves, like a periodic save
            self._parts = self._snapshot()
            if self.rank == 0:
                self._emergency_save(self._parts, background=True)
        self.sync = None  # the old groups' last references (see ElasticGroup.dissolve)
        try:
            self.group.dissolve()
            decision = self.group.form(self.state.global_step, holds_state=True, reason=reason, trigger=False)
        except BaseException:  # no group: torchrun restarts this worker, which resumes from the disk
            self.writer.wait()  # so the save of the last finished step lands first
            raise
        formed = time.time()
        self._join(decision.members.index(self.group.id), decision.world_size)
        if decision.needs_state:
            self._share_state(decision)
        self._record_generation(decision, noticed=noticed, formed=formed)
        self._parts = None
        self.saved_step = self.state.global_step  # saved (rank 0 or the survivors did): the same on every member
        if self.rank == 0:
            self.report.line(f"The group re-formed in-process on {decision.world_size} rank(s) ({reason}), "
                             f"{time.time() - noticed:.2f} s after it noticed; step {self.state.global_step + 1} next")

    def _share_state(self, decision) -> int | None:
        """A collective of the new group: the members in ``decision.needs_state`` get the state of
        step ``decision.step``, from the source's memory or, with ``--no-elastic-peer-state``, from
        the checkpoint the source commits first. Returns the step on a receiver."""
        source = decision.members.index(decision.source)
        receivers = [decision.members.index(m) for m in decision.needs_state]
        t0 = time.perf_counter()
        if self.cfg.elastic_peer_state:
            parts, info = peer_state.share(self._parts if self.rank == source else None, source, receivers, self.rank)
            if parts is None:
                return None
            step = self._restore(f"rank {source}'s memory (step {decision.step})", parts.get, "full")
            self._state_received = {**info, "via": "peer", "seconds": time.perf_counter() - t0}
            return step
        if self.rank == source:
            self.writer.wait()  # its save of the step is committed before anyone reads it
        dist.barrier()
        if self.rank not in receivers:
            return None
        path = ckpt.checkpoint_root(self.run_dir) / ckpt.step_dir_name(decision.step)  # not --resume: that step
        step = self._restore(path.name, lambda name: ckpt.load_part(path, name), "full")
        self._state_received = {"via": "checkpoint", "seconds": time.perf_counter() - t0, "from_rank": source}
        return step

    def _record_generation(self, decision, **times) -> None:
        """One line per member and generation in ``DIR/elastic.jsonl``: the timeline's records."""
        row = {"member": self.group.id, "generation": decision.generation, "rank": self.rank,
               "world_size": decision.world_size, "reason": decision.reason, "decided": decision.decided,
               "attempt": self.attempt, "step": self.state.global_step, **times, "ready": time.time(),
               "state": self._state_received}
        self._state_received = None
        with open(self.run_dir / "elastic.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")


def run_member(cfg: TrainConfig, local_rank: int, report: Reporter) -> dict:
    """A member of an elastic group, started by torchrun (``--elastic-endpoint``): its rank and
    world size are the group's to decide, generation by generation, not torchrun's."""
    from course_lib.ddp.launch import rank_setup

    device, backend, timeout = rank_setup(cfg, local_rank, 1, ElasticTrainer)
    group = ElasticGroup(cfg, backend, timeout)
    try:
        return ElasticTrainer(cfg, device, report, group).train()
    except RunFinished as done:
        report.line(f"Not joining: {done}")
        return {}
    finally:
        group.close()
        if dist.is_initialized():
            dist.destroy_process_group()
