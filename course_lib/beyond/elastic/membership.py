"""Who is in the group of an elastic run, agreed by its members through a store: no restart.

torchrun re-forms a group by restarting every worker: its agents rendezvous again, start new
processes (interpreter, imports, data, model) and the state comes back from the checkpoint. The
members here stay alive instead, and agree on the next *generation* of the group through the
TCPStore that torchrun's agent on node 0 already hosts at the rendezvous endpoint (torchft's
replicas agree the same way through its Lighthouse):

* **heartbeats.** A thread in each member bumps a counter every ``heartbeat_s``. A member whose
  counter stands still for ``DEAD_AFTER`` beats is dead, whatever happened to it (SIGKILL, a lost
  machine, a hang). A shorter beat finds a dead node sooner, and declares a starved live one dead
  sooner too: it is then left out and joins again, which costs a state transfer, never a wrong bit;
* **arrivals.** A change is an arrival at generation ``n + 1``. Survivors whose collective failed
  arrive; a node that starts arrives and raises ``g{n+1}/trigger``, which the running members see
  at their next step boundary, and then they arrive too;
* **one decision.** The first to arrive leads: it waits until every member of generation ``n``
  has arrived or is dead (for the first generation, ``FORMATION_BEATS`` beats for the others), then
  writes who is in (old members first, in their old rank order), and who holds the newest state.
  A world size the run cannot use (the invariant reduction needs a divisor of its micro-batch
  count) leaves the last arrivals on standby until the next change;
* **late is safe.** A member left out (declared dead while alive, or arriving after the
  decision) reads the decision and arrives at the next generation; the group it was in has
  dissolved, so its collectives there fail: it never trains in two groups at once.

:class:`ElasticGroup` is the rank's side: the store, the :class:`Membership` and the process group
of each generation (``init_process_group`` on a fresh store prefix per generation).
"""
from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import torch.distributed as dist

from course_lib.beyond.invariant import check_layout
from course_lib.watch.monitor import LAUNCHED_ENV

DEAD_AFTER = 5        # beats without a heartbeat: dead
FORMATION_BEATS = 15  # how long the first generation waits for the other founders, in beats (3 s)
POLL_S = 0.01


class RunFinished(Exception):
    """A node arrived after the group had finished the run."""


@dataclass
class Decision:
    generation: int
    members: list[str]          # rank r is members[r]
    source: str | None          # the member whose in-memory state the others take; None: all resume from disk
    step: int                   # the step the source holds
    needs_state: list[str]      # members that lack it
    reason: str
    considered: int             # arrivals the leader counted (a later one is late)
    decided: float              # time.time() of the decision

    @property
    def world_size(self) -> int:
        return len(self.members)


class Heartbeats:
    """Watches other members' heartbeat counters; a counter that stands still is a dead member."""

    def __init__(self, store, heartbeat_s: float):
        self.store, self.limit = store, DEAD_AFTER * heartbeat_s
        self.seen: dict[str, tuple[int, float]] = {}

    def dead(self, member: str) -> bool:
        value, now = self.store.add(f"hb/{member}", 0), time.monotonic()
        if member not in self.seen or self.seen[member][0] != value:
            self.seen[member] = (value, now)
        return now - self.seen[member][1] > self.limit


class Membership:
    """This process's part in the protocol of the module docstring."""

    def __init__(self, store, member_id: str, heartbeat_s: float, usable_world: Callable[[int], int], beat_store):
        self.store, self.id, self.heartbeat_s, self.usable_world = store, member_id, heartbeat_s, usable_world
        self.generation, self.decision, self.asked = 0, None, None
        self._stop = threading.Event()
        store.add(f"hb/{member_id}", 1)  # beats go through beat_store: the training thread may be blocked in store
        threading.Thread(target=self._beat, args=(beat_store,), name="heartbeat", daemon=True).start()

    def _beat(self, store) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                store.add(f"hb/{self.id}", 1)
            except Exception:  # noqa: BLE001 - the store is gone; the training thread finds out in its next call
                return

    def close(self) -> None:
        self._stop.set()

    def latest(self) -> int:
        return int(self.store.get("gen")) if self.store.check(["gen"]) else 0

    def change_wanted(self) -> bool:
        """A node waits to join (cheap: one round trip; rank 0 asks once per step)."""
        return self.store.check([f"g{self.generation + 1}/trigger"])

    def finish(self) -> None:
        self.store.set("done", "1")

    def _check_done(self) -> None:
        if self.store.check(["done"]):
            raise RunFinished("the group has finished the run; nothing to join")

    def next(self, step: int, holds_state: bool, reason: str, trigger: bool) -> Decision:
        """Arrive at the next generation and return its decision, once this member is in it
        (late or on standby: at a later one)."""
        self._check_done()
        self.asked = time.time()
        target = max(self.generation, self.latest()) + 1
        while True:
            i = self.store.add(f"g{target}/n", 1)
            self.store.set(f"g{target}/a{i}", json.dumps({"id": self.id, "step": step, "holds": holds_state,
                                                          "reason": reason, "time": time.time()}))
            if trigger:
                self.store.set(f"g{target}/trigger", "1")
            decision = self._lead(target, reason, Heartbeats(self.store, self.heartbeat_s)) if i == 1 \
                else self._follow(target, reason)
            if self.id in decision.members:
                self.generation, self.decision = target, decision
                return decision
            trigger = i > decision.considered  # late: ask again; on standby: wait for the next change quietly
            target += 1

    def _arrivals(self, target: int) -> list[dict]:
        count = self.store.add(f"g{target}/n", 0)
        return [json.loads(self.store.get(f"g{target}/a{i}")) for i in range(1, count + 1)]

    def _decision(self, target: int) -> Decision | None:
        key = f"g{target}/decision"
        return Decision(**json.loads(self.store.get(key))) if self.store.check([key]) else None

    def _follow(self, target: int, reason: str) -> Decision:
        watch = Heartbeats(self.store, self.heartbeat_s)
        leader = json.loads(self.store.get(f"g{target}/a1"))["id"]
        while (decision := self._decision(target)) is None:
            self._check_done()
            if watch.dead(leader):  # it died while leading: lead instead (the first decision written wins)
                return self._lead(target, reason, watch)
            time.sleep(POLL_S)
        return decision

    def _lead(self, target: int, reason: str, watch: Heartbeats) -> Decision:
        previous = self._decision(target - 1)
        old = previous.members if previous else []
        start = time.monotonic()
        while True:
            self._check_done()
            arrivals = self._arrivals(target)
            came = [a["id"] for a in arrivals]
            waiting = [m for m in old if m not in came and not watch.dead(m)]
            formed = old or time.monotonic() - start >= FORMATION_BEATS * self.heartbeat_s
            if not waiting and formed:
                break
            time.sleep(POLL_S)
        alive = [a for a in arrivals if a["id"] not in watch.seen or not watch.dead(a["id"])]
        first = {a["id"]: a for a in reversed(alive)}  # a member counts once, at its first arrival
        ordered = [m for m in old if m in first] + [m for m in dict.fromkeys(a["id"] for a in alive) if m not in old]
        members = ordered[:self.usable_world(len(ordered))]
        holders = [first[m] for m in members if first[m]["holds"]]
        best = max((h["step"] for h in holders), default=-1)
        source = next((h["id"] for h in holders if h["step"] == best), None)
        needs = [m for m in members if source is not None and not (first[m]["holds"] and first[m]["step"] == best)]
        decision = Decision(target, members, source, best, needs, reason, len(arrivals), time.time())
        stored = self.store.compare_set(f"g{target}/decision", "", json.dumps(dataclasses.asdict(decision)))
        self.store.set("gen", str(target))
        return Decision(**json.loads(stored))


def usable_world(cfg) -> Callable[[int], int]:
    """The largest world size up to ``n`` that ``cfg`` can train on."""
    def largest(n: int) -> int:
        return max(w for w in range(1, n + 1) if check_layout(cfg.global_batch_size, cfg.micro_batch, w) is None)
    return largest


class ElasticGroup:
    """The process group of an elastic run, formed and re-formed in this process."""

    def __init__(self, cfg, settings, backend: str, timeout: timedelta):
        host, port = settings.endpoint.rsplit(":", 1)
        run_key = hashlib.blake2b(cfg.run_dir.encode(), digest_size=6).hexdigest()  # the same command line on every node

        def client():
            return dist.PrefixStore(f"course_lib/{run_key}",
                                    dist.TCPStore(host, int(port), is_master=False, timeout=timeout))

        self.backend, self.timeout, self.store = backend, timeout, client()
        # when this process began (``python -m course_lib`` notes it first thing, in LAUNCHED_ENV), for the timeline
        self.started = float(os.environ[LAUNCHED_ENV]) if LAUNCHED_ENV in os.environ else None
        self.id = f"{socket.gethostname()}-{os.getpid()}"
        self.membership = Membership(self.store, self.id, settings.heartbeat_s, usable_world(cfg), beat_store=client())

    def describe(self) -> dict:
        """The current generation, for ``attempts.jsonl``."""
        d = self.membership.decision
        return {"generation": d.generation, "world_size": d.world_size, "members": d.members, "reason": d.reason}

    def data_file(self, prepare: Callable[[], str]) -> str:
        """The tokenized data the group trains on: the file its members use when this machine can
        read it (one machine, or a shared file system), else ``prepare()``'s own."""
        if self.store.check(["data_file"]):
            path = self.store.get("data_file").decode()
            if os.path.exists(path):
                return path
        path = prepare()
        self.store.set("data_file", path)
        return path

    def form(self, step: int, holds_state: bool, reason: str, trigger: bool) -> Decision:
        """Join the next generation and its process group; returns the decision (this member's
        rank is its index in ``members``)."""
        d = self.membership.next(step, holds_state, reason, trigger)
        dist.init_process_group(self.backend, store=dist.PrefixStore(f"g{d.generation}/pg", self.store),
                                rank=d.members.index(self.id), world_size=d.world_size, timeout=self.timeout)
        return d

    def dissolve(self) -> None:
        """Leave the current process group. Drop every reference to its groups first: gloo closes a
        group's connections only when the group object dies, and a peer blocked in a collective
        with us fails at once instead of waiting out the timeout."""
        gc.collect()
        if dist.is_initialized():
            dist.destroy_process_group()
