"""A node lost for good: torchrun's elastic rendezvous, for real.

Two torchrun agents on this machine play two nodes (``--nnodes 1:2 --rdzv-backend c10d``, one
rank each, the run in ``--reduction invariant`` with ``--resume auto``). :func:`lose_a_node`
starts both; once the run has passed a given step, the second node is killed whole (its agent
and its worker, SIGKILL). The surviving rank notices in its next collective, saves the last
finished step (an emergency checkpoint), and its agent re-forms the group with the one node
left, which resumes on 1 rank and ends bit-identical to the 2-rank run never disturbed.

Scale-up (a node joining a running 1-node group) did not work here: the first agent noticed
the newcomer, stopped its worker (which saved, as on any SIGTERM), but the next rendezvous round
timed out waiting for both agents' ``role_info`` keys (60 s).

What we learned (torch 2.13, CPU, loopback): both agents match the endpoint's host, so one
must be told to host the rendezvous store (``--rdzv-conf is_host=1``) and the other not
(``is_host=0``), or both may try. The node hosting the store is a single point of failure:
lose the *other* one. An agent starts its workers in sessions of their own, so killing the
agent's process group leaves its worker running: kill the worker too (what a lost machine does).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .config import TrainConfig
from .launch import free_port
from .monitor import read_ledger

LAST_CALL_S = 2  # how long a re-forming group waits for more nodes once it has enough (torch's default: 30 s)


def _agent(cfg: TrainConfig, port: int, host: bool, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1:2", "--nproc-per-node", "1",
           "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "course-lib-elastic",
           "--rdzv-conf", f"is_host={int(host)},last_call_timeout={LAST_CALL_S}", "--max-restarts", "3",
           "-m", "course_lib", "train", "--run-dir", cfg.run_dir, *cfg.to_args(skip=("run_dir", "world_size"))]
    return subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux ``/proc``)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _wait_for_step(run_dir: str, step: int, agent: subprocess.Popen, timeout: float) -> None:
    deadline = time.time() + timeout
    while max((r["step"] for r in read_ledger(run_dir, 0, last_attempt=False)), default=0) < step:
        if agent.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"the run never reached step {step} (see {run_dir}/elastic-*.log)")
        time.sleep(0.05)


def _finish(agent: subprocess.Popen, cfg: TrainConfig, event_time: float, timeout: float) -> dict:
    try:
        code = agent.wait(timeout)
    except subprocess.TimeoutExpired:
        agent.kill()
        raise RuntimeError(f"the elastic run did not finish in {timeout} s (see {cfg.run_dir}/elastic-*.log)") from None
    rows = read_ledger(cfg.run_dir, 0, last_attempt=False)
    last = max(r["attempt"] for r in rows)
    summary_path = Path(cfg.run_dir) / "final" / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return {"exit_code": code, "world_size_at_end": summary.get("world_size"), "summary": summary,
            "seconds_to_first_step_after": min(r["time"] for r in rows if r["attempt"] == last) - event_time,
            "log": (Path(cfg.run_dir) / "elastic-node0.log").read_text()}


def lose_a_node(cfg: TrainConfig, after_step: int, timeout: float = 300) -> dict:
    """Two nodes train ``cfg``; after ``after_step`` the second is killed whole; the first
    finishes alone. Returns its exit code, the final world size and the seconds from the
    node's death to the first step of the shrunken group."""
    cfg = cfg.replace(resume="auto", reduction="invariant")
    Path(cfg.run_dir).mkdir(parents=True, exist_ok=True)
    port = free_port()
    first = _agent(cfg, port, True, Path(cfg.run_dir) / "elastic-node0.log")
    time.sleep(1)
    second = _agent(cfg, port, False, Path(cfg.run_dir) / "elastic-node1.log")
    try:
        _wait_for_step(cfg.run_dir, after_step, first, timeout)
        for pid in (*_children(second.pid), second.pid):  # the machine is gone: its worker and its agent
            os.kill(pid, signal.SIGKILL)
        died = time.time()
        return _finish(first, cfg, died, timeout)
    finally:
        for agent in (first, second):
            if agent.poll() is None:
                agent.kill()
