"""Nodes lost and gained back, for real: torchrun agents on this machine play the nodes.

:func:`node_drill` starts the nodes (one torchrun agent and one rank each, with the commands of
:func:`course_lib.beyond.elastic.commands.elastic_parts`) and carries out a plan: ``("lose", 15)``
kills the last node whole (its agent and its worker, SIGKILL) once the run has passed step 15;
``("gain", 30)`` starts a node (a new one, with its own torchrun agent: a replacement machine)
once the run has passed step 30; ``("crash", 10)`` kills node 0's worker alone (SIGKILL), and
its agent, which hosts the store, starts it again: it joins as a newcomer, so another node's
worker then holds rank 0 (a ``"lose"`` after it loses the rank-0 member). The run ends
bit-identical to the run never disturbed (docs/invariant.md). Each event lands in
``DIR/nodes.jsonl``, the drill's part of the timeline (:func:`course_lib.lab.tables.elastic_timeline`).

The two ways to re-form (``reform``) are :mod:`course_lib.beyond.elastic.commands`'s. Why the node
lost is never the store's host, and its worker is killed with its agent: CONTRIBUTING.md ("Two
torchrun agents ... on one host").
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from course_lib._runtime.portability import free_port
from course_lib.beyond.elastic.commands import ElasticSettings, elastic_parts
from course_lib.beyond.random_failures import proc_stats
from course_lib.config import TrainConfig
from course_lib.watch.monitor import append_jsonl, ledger_ranks, read_attempts, read_ledger, read_summary

EVENTS = ("lose", "gain", "crash")


def _record(run_dir: Path, **event) -> dict:
    """One line of ``DIR/nodes.jsonl`` (the event, with its time); returns it."""
    event["time"] = time.time()
    append_jsonl(run_dir / "nodes.jsonl", event)
    return event


def _start_node(cfg: TrainConfig, node: int, port: int, reform: str, settings: ElasticSettings) -> subprocess.Popen:
    env, argv = elastic_parts(cfg, node_rank=node, master_port=port, reform=reform, settings=settings)
    argv = [sys.executable, "-m", "torch.distributed.run", *argv[1:]]
    log = open(Path(cfg.run_dir) / f"elastic-node{node}.log", "a")
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **env})


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux ``/proc``)."""
    return [child for child, fields in proc_stats() if int(fields[1]) == pid]


def _newest_step(run_dir: str) -> int:
    """The newest step in any ledger, from the last line of each: the drill polls it while the
    ranks train, and parsing whole ledgers 20 times a second would take CPU from them."""
    newest = 0
    for path in (Path(run_dir) / "metrics").glob("rank*.jsonl"):
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - 8192))
            lines = f.read().splitlines()
        for line in reversed(lines[1:] if len(lines) > 1 else lines):
            try:
                newest = max(newest, json.loads(line)["step"])
                break
            except ValueError:  # a line being written
                continue
    return newest


def _wait_until(ready: Callable[[], bool], agent: subprocess.Popen, deadline: float, failed: str, run_dir,
                pause: float = 0.05) -> None:
    """Poll ``ready`` until it holds; ``RuntimeError(failed)`` once node 0's ``agent`` ends or the deadline passes."""
    while not ready():
        if (agent.poll() is not None or time.time() > deadline) and not ready():  # again: it may hold as the agent ends
            raise RuntimeError(f"{failed} (see {run_dir}/elastic-node*.log)")
        time.sleep(pause)


def node_drill(cfg: TrainConfig, plan: list[tuple[str, int]], nodes: int = 2, reform: str = "in-process",
               timeout: float = 300, settings: ElasticSettings = ElasticSettings()) -> dict:
    """Start ``nodes`` nodes on ``cfg`` (their members with ``settings``) and carry out ``plan``
    (see the module docstring). Returns
    node 0's exit code, the world size at the end, the summary, and per event the seconds from the
    node's death (or start) to the first step of the re-formed group. Used in notebook 05 (optional deep-dive C)."""
    _check_plan(plan, nodes)
    cfg = cfg.replace(resume="auto", reduction="invariant")
    run_dir = Path(cfg.run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)  # a drill is a run of its own, from its first step
    run_dir.mkdir(parents=True)
    port, deadline = free_port(), time.time() + timeout
    agents = {}
    for node in range(nodes):  # all at once: node 0's agent hosts the store, the others wait for it
        agents[node] = _start_node(cfg, node, port, reform, settings)
        _record(run_dir, event="start", node=node)
    events, started = [], nodes - 1
    try:
        _wait_until((run_dir / "metrics" / f"rank{nodes - 1}.jsonl").exists, agents[0], deadline,  # the group has them all
                    f"the {nodes} nodes never trained together", run_dir)
        for what, step in plan:
            _wait_until(lambda: _newest_step(cfg.run_dir) >= step, agents[0], deadline,  # noqa: B023 - called at once
                        f"the run never reached step {step}", run_dir, pause=0.02)
            if what == "lose":  # the newest live node
                node = max(n for n, a in agents.items() if a.poll() is None)
                _kill_node(agents.pop(node))
                event = _record(run_dir, event="lose", node=node, after_step=step, world=len(agents))
            elif what == "crash":  # the world size after it is the same
                _kill_workers(agents[0])
                event = _record(run_dir, event="crash", node=0, after_step=step, world=len(agents))
            else:
                started += 1  # a node of its own: a replacement machine, or the same one back
                agents[started] = _start_node(cfg, started, port, reform, settings)
                event = {**_record(run_dir, event="start", node=started, after_step=step, world=len(agents)),
                         "event": "gain"}
            _wait_until(lambda: _trains_again(run_dir, event), agents[0], deadline,  # noqa: B023 - called at once
                        f"the group never trained on {event['world']} node(s) after the {what} at step {step}", run_dir,
                        pause=0.2)  # it reads whole ledgers: not 20 times a second
            events.append(event)
        try:
            code = agents[0].wait(max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the elastic run did not finish in {timeout} s (see {run_dir}/elastic-node*.log)") from None
    finally:  # a node's worker runs in a session of its own: killed with its agent, or it outlives the drill
        for agent in agents.values():
            if agent.poll() is None:
                _kill_node(agent)
    summary = read_summary(run_dir) or {}
    for e in events:
        e["seconds_to_first_step"] = seconds_to_first_step(run_dir, e["time"], e["world"])
    return {"exit_code": code, "world_size_at_end": summary.get("world_size"), "summary": summary, "events": events,
            "log": "\n".join(p.read_text() for p in sorted(run_dir.glob("elastic-node*.log")))}


def _check_plan(plan: list[tuple[str, int]], nodes: int) -> None:
    """Raises ValueError for an unknown event, or for a plan that would lose node 0 or have more than
    2 nodes (:func:`~course_lib.beyond.elastic.commands.elastic_parts`' groups have 1 or 2: a third
    would never join, and each event waits for the group it leads to)."""
    bad = [e for e, _ in plan if e not in EVENTS]
    if bad:
        raise ValueError(f"plan events must be one of {EVENTS}, got {bad}")
    change = {"gain": 1, "lose": -1, "crash": 0}
    live = list(itertools.accumulate((change[e] for e, _ in plan), initial=nodes))
    if min(live) < 1:
        raise ValueError("the plan loses node 0, which hosts the store the group agrees through")
    if max(live) > 2:
        raise ValueError(f"the plan has {max(live)} nodes at once; an elastic group here has 1 or 2")


def _trains_again(run_dir: Path, event: dict) -> bool:
    """Whether a group of the event's world size took a step after it (or the run finished): the
    next event waits for it, so that however late the drill sees a step, two events never merge
    into one re-forming, and each one's timing is its own."""
    return first_step_after(run_dir, event["time"], event["world"]) is not None or \
        (run_dir / "final" / "summary.json").exists()


def _kill_workers(agent: subprocess.Popen) -> None:
    """SIGKILL to the workers of a node's ``agent`` (its children, read from ``/proc``)."""
    for pid in _children(agent.pid):
        with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
            os.kill(pid, signal.SIGKILL)


def _kill_node(agent: subprocess.Popen) -> None:
    """A node gone whole: its workers and its agent (SIGKILL)."""
    _kill_workers(agent)
    agent.kill()
    agent.wait()


def first_step_after(run_dir: str | Path, since: float, world: int | None = None) -> tuple[float, int] | None:
    """Time and number of the first step of the first attempt that began after ``since`` and
    stepped (a restart, or a generation of an elastic group), on ``world`` ranks when given (a
    crashed worker's group may re-form without it first, then with it)."""
    wanted = {i for i, a in enumerate(read_attempts(run_dir), start=1)
              if a["started"] > since and world in (None, a.get("world_size"))}
    rows = [r for rank in ledger_ranks(run_dir) for r in read_ledger(run_dir, rank, last_attempt=False)
            if r["attempt"] in wanted]  # an attempt that failed before its first step has none
    first = min(rows, key=lambda r: (r["attempt"], r["time"]), default=None)
    return (first["time"], first["step"]) if first else None


def seconds_to_first_step(run_dir: str | Path, since: float, world: int | None = None) -> float | None:
    """From ``since`` (a node's death or start) to the first step of the group (of ``world`` ranks)
    re-formed after it."""
    first = first_step_after(run_dir, since, world)
    return first[0] - since if first else None
