"""The ``torchrun`` command lines the kit prints (notebooks 03, 05) and its drills run (:mod:`course_lib.beyond.elastic.drill`),
and the store a rank started by torchrun forms its process group on (:func:`attempt_store`).

A fixed group (``nnodes=2``): torch's static rendezvous at ``master_addr:master_port``.

An elastic group (``nnodes="1:2"``): torch's c10d rendezvous at ``master_addr:master_port``,
hosted by node 0's agent (``is_host=1``; on one machine both agents would match the address and
race to host it). Two ways to re-form the group when a node is lost or comes back:

* ``reform="in-process"`` (the default): each node is a one-node torchrun job and the workers
  keep the group themselves, in the store node 0's agent hosts (:mod:`course_lib.beyond.elastic.membership`):
  survivors and newcomers re-form it without a restart, and torchrun restarts a worker that
  crashes (the fallback; it joins again like a newcomer);
* ``reform="restart"``: one torchrun job over every node (``--nnodes 1:2``); torchrun's agents
  re-form the group by restarting every worker, which resumes from the checkpoint.

The ``--rdzv-conf`` settings (:data:`RDZV_CONF`) are the kit's. torch's defaults suit a big
cluster: a silent node is dropped after ``keep_alive_interval x keep_alive_max_attempt`` (5 s x 3)
and a group with enough nodes waits ``last_call_timeout`` (30 s) for more. Shorter finds a dead
node sooner, and declares a slow one dead sooner: with 1 s x 2 on this 2-core machine, one late
heartbeat of a busy agent made a newcomer drop the running node and start a second group (the
run directory's lock refused it). 1 s x 3 left that margin. They decide how fast torchrun
re-forms (``restart``); in-process, the members' own heartbeat decides
(``--elastic-heartbeat-s``, 0.2 s: silent for 1 s is dead), and the keep-alive only how soon a
node restarted under the same ``--rdzv-id`` gets past its predecessor's entry.
"""
from __future__ import annotations

import os
import shlex
from datetime import timedelta

import torch.distributed as dist

from course_lib._runtime.portability import tcpstore_uses_libuv
from course_lib.config import TrainConfig

RDZV_CONF = {"keep_alive_interval": 1, "keep_alive_max_attempt": 3, "last_call_timeout": 1}
# torch 2.13: with its shared TCPStore, a node that is rank 0 again in a later round does not
# publish MASTER_ADDR/PORT for that round, so a newcomer waits for them until it times out (60 s)
NO_SHARED_STORE = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
REFORMS = ("in-process", "restart")


def torchrun_parts(cfg: TrainConfig, nnodes: int | str = 1, nproc_per_node: int = 2, node_rank: int | str = 0,
                   master_addr: str = "127.0.0.1", master_port: int = 29500, max_restarts: int = 0,
                   reform: str = "in-process") -> tuple[dict[str, str], list[str]]:
    """The environment and the argument list of :func:`torchrun_command` (``torchrun`` first)."""
    elastic = isinstance(nnodes, str) and ":" in nnodes
    train = ["-m", "course_lib", "train"]
    if not elastic:
        args = ["--nnodes", str(nnodes), "--nproc-per-node", str(nproc_per_node), "--node-rank", str(node_rank),
                "--master-addr", master_addr, "--master-port", str(master_port)]
        if max_restarts:
            args += ["--max-restarts", str(max_restarts)]
        return {}, ["torchrun", *args, *train, "--run-dir", cfg.run_dir, *cfg.to_args(skip=("run_dir", "world_size"))]
    if reform not in REFORMS:
        raise ValueError(f"reform must be one of {', '.join(REFORMS)}, got {reform!r}")
    endpoint = f"{master_addr}:{master_port}"
    is_host = int(node_rank == 0) if isinstance(node_rank, int) else f"$(( {node_rank} == 0 ))"
    conf = {"is_host": is_host, **RDZV_CONF}
    cfg = cfg.replace(reduction="invariant", resume="auto")
    if reform == "in-process":
        conf.pop("last_call_timeout")  # one node per job: nothing to wait for
        env, nodes, rdzv_id = {}, "1", f"course-lib-node{node_rank}"
        cfg = cfg.replace(elastic_endpoint=endpoint)
    else:
        env, nodes, rdzv_id = dict(NO_SHARED_STORE), nnodes, "course-lib"
    args = ["--nnodes", nodes, "--nproc-per-node", str(nproc_per_node), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", endpoint, "--rdzv-id", rdzv_id, "--rdzv-conf", ",".join(f"{k}={v}" for k, v in conf.items()),
            "--max-restarts", str(max_restarts or 3)]
    return env, ["torchrun", *args, *train, "--run-dir", cfg.run_dir,
                 *cfg.to_args(skip=("run_dir", "world_size"), keep=("reduction",))]  # elastic: invariant, said


def torchrun_command(cfg: TrainConfig, nnodes: int | str = 1, nproc_per_node: int = 2, node_rank: int | str = 0,
                     master_addr: str = "127.0.0.1", master_port: int = 29500, max_restarts: int = 0,
                     reform: str = "in-process") -> str:
    """The shell command that runs ``cfg`` under torchrun on ``nnodes`` x ``nproc_per_node``
    ranks (run it on every node with its own ``node_rank``). ``nnodes="1:2"``: an elastic group
    (see the module docstring), with ``--reduction invariant --resume auto``.
    Used in notebook 03 (§8) and notebook 05 (optional deep-dive B)."""
    env, argv = torchrun_parts(cfg, nnodes, nproc_per_node, node_rank, master_addr, master_port, max_restarts, reform)
    return " ".join(_shell_word(w) for w in [f"{k}={v}" for k, v in env.items()] + argv)


def _shell_word(word: str) -> str:
    """Quoted for a POSIX shell, except that ``$NODE_RANK`` and ``$(( ... ))`` still expand."""
    if "$" not in word:
        return shlex.quote(word)
    return f'"{word}"' if " " in word else word


def attempt_store(rank: int, world_size: int, timeout: timedelta):
    """Under torchrun, a store whose keys are private to this attempt.

    With the agents' shared store (torchrun's default), every restart reuses one TCPStore, and
    gloo can read the addresses the previous, killed attempt published there: the restarted
    ranks then hang in ``init_process_group`` (seen here; cf. pytorch/pytorch#135712). A prefix
    per ``TORCHELASTIC_RESTART_COUNT`` keeps each attempt's keys apart. Without it
    (``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``, the kit's elastic commands) every round has a store
    of its own, which rank 0 hosts on a fresh port, and no prefix: the nodes' restart counts
    differ (a failure counts on its node only), so a prefix by them would part the ranks."""
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT")
    if restart is None or "MASTER_ADDR" not in os.environ:
        return None
    agent_hosts = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    base = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world_size,
                         is_master=not agent_hosts and rank == 0, timeout=timeout, multi_tenant=not agent_hosts,
                         use_libuv=tcpstore_uses_libuv())
    return dist.PrefixStore(f"course_lib/attempt-{restart}", base) if agent_hosts else base
