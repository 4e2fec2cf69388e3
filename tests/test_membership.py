"""The elastic group's membership protocol on a real TCPStore, members as threads (fast), and a new
rank 0's ledger; the process-level tests (real nodes, real kills) are in test_elastic.py."""
import threading
import time
from datetime import timedelta

import pytest
import torch.distributed as dist

from course_lib.beyond.elastic.membership import Membership, RunFinished, usable_world
from course_lib.beyond.elastic.regroup import fill_ledger_gap
from course_lib.config import TrainConfig
from course_lib.watch.monitor import Ledger, read_ledger

BEAT = 0.02


MEMBERS = []


@pytest.fixture
def store():
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=10))
    yield lambda: dist.PrefixStore("test", dist.TCPStore("127.0.0.1", server.port, is_master=False,
                                                         timeout=timedelta(seconds=10)))
    while MEMBERS:  # their heartbeats stop before the store does
        MEMBERS.pop().close()
    time.sleep(2 * BEAT)


def member(store, name, world=lambda n: n):
    MEMBERS.append(Membership(store(), name, BEAT, world, beat_store=store()))
    return MEMBERS[-1]


def together(*calls):
    """Run the calls at once (each in a thread); their results in order."""
    out = [None] * len(calls)

    def run(i, call):
        out[i] = call()
    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    return out


def test_founders_then_a_loss_then_a_newcomer_with_the_state_from_the_survivor(store):
    a, b = member(store, "a"), member(store, "b")
    first, second = together(lambda: a.next(-1, False, "start", True), lambda: b.next(-1, False, "start", True))
    assert first == second and first.generation == 1 and sorted(first.members) == ["a", "b"]
    assert first.source is None and first.needs_state == []  # nobody holds state: every member resumes from disk
    old_rank0 = first.members[0]
    b_or_a = {"a": a, "b": b}
    dead, alive = (b, a) if old_rank0 == "a" else (a, b)
    dead.close()  # its heartbeat stops: what a SIGKILL does to it
    lost = alive.next(15, True, "a peer is gone", False)
    assert lost.members == [alive.id] and lost.source == alive.id and lost.needs_state == []
    newcomer = member(store, "c")
    assert not alive.change_wanted()
    joined = {}
    t = threading.Thread(target=lambda: joined.update(d=newcomer.next(-1, False, "a node starts", True)))
    t.start()
    while not alive.change_wanted():  # what rank 0 asks the store once per step
        pass
    grown = alive.next(30, True, "a node asks to join", False)
    t.join(10)
    assert joined["d"] == grown and grown.generation == 3
    assert grown.members == [alive.id, "c"]  # old members keep their ranks; the newcomer comes after
    assert grown.source == alive.id and grown.step == 30 and grown.needs_state == ["c"]
    assert b_or_a[alive.id].generation == 3


def test_a_world_size_the_layout_cannot_use_leaves_the_last_arrival_on_standby(store):
    cfg = TrainConfig(run_dir="x", reduction="invariant", global_batch_size=64)  # 4 micro-batches: 1, 2 or 4 ranks
    world = usable_world(cfg)
    assert [world(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 4, 4]
    ms = [member(store, n, world) for n in "xyz"]
    done = {}
    t = threading.Thread(target=lambda: done.update(z=ms[2].next(-1, False, "start", True)))
    x, y = together(lambda: ms[0].next(-1, False, "start", True), lambda: ms[1].next(-1, False, "start", True))
    assert x == y and x.world_size == 2 and sorted(x.members) == ["x", "y"]  # z was late; x, y in arrival order
    t.start()
    while not ms[0].change_wanted():
        pass
    x2, y2 = together(lambda: ms[0].next(5, True, "join", False), lambda: ms[1].next(5, True, "join", False))
    assert x2 == y2 and x2.members == x.members  # three members, a world of two: z waits on standby
    ms[1].close()  # y dies: z takes its place, with the state from x
    x3 = ms[0].next(9, True, "a peer is gone", False)
    t.join(10)
    assert done["z"] == x3 and x3.members == ["x", "z"] and x3.needs_state == ["z"] and x3.step == 9


def test_a_node_that_comes_after_the_end_is_told_so(store):
    a = member(store, "a")
    a.next(-1, False, "start", True)
    a.finish()
    with pytest.raises(RunFinished):
        member(store, "late").next(-1, False, "start", True)


def test_a_survivor_that_takes_rank_0_fills_the_lines_the_dead_rank_0_never_wrote(tmp_path):
    """An elastic group lost its rank 0 after step 3 finished but before rank 0 wrote its line;
    the survivor (rank 1) becomes rank 0 and copies step 3, and only what is missing."""
    row = lambda step, rank: {"step": step, "attempt": 1, "global_loss": 1.0 / step, "samples": f"s{step}", "loss": rank}
    zero, one = Ledger(tmp_path, 0), Ledger(tmp_path, 1)
    for step in (1, 2):
        zero.write(row(step, 0))
    for step in (1, 2, 3):
        one.write(row(step, 1))
    zero.close(), one.close()
    assert fill_ledger_gap(tmp_path, source=1, target=0, up_to=3) == 1
    rows = read_ledger(tmp_path, 0)
    assert [r["step"] for r in rows] == [1, 2, 3] and rows[2]["copied_from_rank"] == 1 and "copied_from_rank" not in rows[1]
    assert rows[2]["global_loss"] == 1.0 / 3 and fill_ledger_gap(tmp_path, source=1, target=0, up_to=3) == 0
