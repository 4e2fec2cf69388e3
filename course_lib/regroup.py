"""What a rank of an elastic run does when its group changes: it does not restart.

A peer is gone (a collective failed) or a node asks to join (seen at a step boundary). Every
collective of a step comes before its optimizer step, so each member holds the state of the last
finished step. It saves that step (in the background: disk stays the fallback), agrees with the
live members on the next generation of the group (:mod:`course_lib.membership`), forms that
generation's process group, hands the state to the members that lack it over the process group
(:mod:`course_lib.peer_state`) and trains on. With the invariant reduction the world size does
not change a bit of the result, so the run goes on exactly as if nothing had happened.

A mixin of :class:`course_lib.train.Trainer`; every rank of the new group runs the same
collectives in the same order (``_join``, then ``_share_state``), newcomers from ``__init__``.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import torch.distributed as dist

from . import checkpoint as ckpt
from . import peer_state


class Regrouping:
    _parts: dict | None = None  # the state of the last finished step, as objects, while the group re-forms

    def _emergency_save(self, background: bool) -> Path:
        """Save the last finished step outside the periodic schedule (same commit protocol; a
        step already committed is never replaced). In the background its bytes are the snapshot,
        written while the group re-forms and trains on."""
        step = self.state.global_step
        self._parts = self._state_parts()
        self.writer.wait()  # a periodic save in flight finishes first
        folder = ckpt.checkpoint_root(self.run_dir) / ckpt.step_dir_name(step)
        if folder.exists():
            return folder
        meta = {"epoch": self.state.epoch, "world_size": self.world_size, "config_hash": self.cfg.shape_hash(),
                "attempt": self.attempt, "rank_rng": False, "emergency": True, "saved_by_rank": self.rank}
        parts = {name: ckpt.serialize(obj) for name, obj in self._parts.items()} if background else self._parts
        self.saved_step = step
        run_dir, rank, attempt = self.run_dir, self.rank, self.attempt
        self.writer.submit(lambda: ckpt.emergency_save(run_dir, step, parts, meta, rank, attempt), background)
        return folder

    def _regroup(self, reason: str) -> None:
        """Re-form the group in this process (see the module docstring)."""
        noticed = time.time()
        if self._parts is None:  # a planned change: rank 0 saves, like a periodic save
            self._parts = self._state_parts()
            if self.rank == 0:
                self._emergency_save(background=True)
        self.invariant = self.ddp = None  # the old groups' last references (see ElasticGroup.dissolve)
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
        step = self._maybe_resume()
        self._state_received = {"via": "checkpoint", "seconds": time.perf_counter() - t0, "from_rank": source}
        return step

    def _record_generation(self, decision, **times) -> None:
        """One line per member and generation in ``DIR/elastic.jsonl``: the timeline's records."""
        row = {"member": self.group.id, "generation": decision.generation, "rank": self.rank,
               "world_size": decision.world_size, "reason": decision.reason, "decided": decision.decided,
               "attempt": self.attempt, "step": self.state.global_step, **times, "ready": time.time(),
               "state": getattr(self, "_state_received", None)}
        self._state_received = None
        with open(self.run_dir / "elastic.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
