"""An elastic group's settings and torchrun command lines (notebook 05, optional deep-dive C;
:mod:`course_lib.beyond.elastic.drill` runs them).

An elastic group (``nnodes="1:2"``): torch's c10d rendezvous at ``master_addr:master_port``,
hosted by node 0's agent (``is_host=1``; on one machine both agents would match the address and
race to host it). Two ways to re-form the group when a node is lost or comes back:

* ``reform="in-process"`` (the default): each node is a one-node torchrun job and the workers
  keep the group themselves, in the store node 0's agent hosts (:mod:`course_lib.beyond.elastic.membership`):
  survivors and newcomers re-form it without a restart, and torchrun restarts a worker that
  crashes (the fallback; it joins again like a newcomer);
* ``reform="restart"``: one torchrun job over every node (``--nnodes 1:2``); torchrun's agents
  re-form the group by restarting every worker, which resumes from the checkpoint.

The ``--rdzv-conf`` settings (:data:`RDZV_CONF`; why not shorter: CONTRIBUTING, "a keep-alive too
short splits the group") decide how fast torchrun re-forms (``restart``); in-process, the members'
own heartbeat does (:attr:`ElasticSettings.heartbeat_s`), and the keep-alive only how soon a node
restarted under the same ``--rdzv-id`` gets past its predecessor's entry.
"""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from course_lib._runtime.torchrun import TRAIN, shell_line
from course_lib.config import ConfigError, TrainConfig

RDZV_CONF = {"keep_alive_interval": 1, "keep_alive_max_attempt": 3, "last_call_timeout": 1}
# torch 2.13: with its shared TCPStore, a node that is rank 0 again in a later round does not
# publish MASTER_ADDR/PORT for that round, so a newcomer waits for them until it times out (60 s)
NO_SHARED_STORE = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
REFORMS = ("in-process", "restart")


@dataclass(frozen=True)
class ElasticSettings:
    """What a member of an elastic group needs beyond its :class:`TrainConfig` (``train``'s
    ``--elastic-*`` options)."""
    endpoint: str = ""        # host:port where the members agree (torchrun's --rdzv-endpoint); "" = a fixed group
    heartbeat_s: float = 0.2  # a member silent for 5 beats is dead: found sooner, but a starved one too
    peer_state: bool = True   # a joining rank takes the state from a live peer's memory (else the checkpoint)

    def __post_init__(self):
        host, _, port = self.endpoint.rpartition(":")
        if self.endpoint and (not host or not port.isdigit()):
            raise ConfigError(f"--elastic-endpoint {self.endpoint!r} must be HOST:PORT (the torchrun rendezvous "
                              "endpoint whose store node 0's agent hosts)")
        if self.heartbeat_s <= 0:
            raise ConfigError(f"--elastic-heartbeat-s must be > 0 (got {self.heartbeat_s})")

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("elastic groups (course_lib.beyond: nodes that leave and join)")
        group.add_argument("--elastic-endpoint", default="", metavar="HOST:PORT",
                           help="where elastic members agree (torchrun's --rdzv-endpoint); empty = a fixed group")
        group.add_argument("--elastic-heartbeat-s", type=float, default=0.2, metavar="SECONDS",
                           help="a member silent for 5 beats is dead: found sooner, but a starved one too")
        group.add_argument("--elastic-peer-state", action=argparse.BooleanOptionalAction, default=True,
                           help="a joining rank takes the state from a live peer's memory (else from the checkpoint)")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ElasticSettings:
        return cls(args.elastic_endpoint, args.elastic_heartbeat_s, args.elastic_peer_state)

    def check(self, cfg: TrainConfig) -> None:
        """An elastic group changes its world size as nodes come and go: it needs the invariant reduction."""
        if self.endpoint and cfg.reduction != "invariant":
            raise ConfigError("an elastic group changes its world size as nodes come and go: it needs "
                              "--reduction invariant (the same bits on any world size)")

    def to_args(self) -> list[str]:
        out = ["--elastic-endpoint", self.endpoint] if self.endpoint else []
        if self.heartbeat_s != ElasticSettings.heartbeat_s:
            out += ["--elastic-heartbeat-s", str(self.heartbeat_s)]
        return out + ([] if self.peer_state else ["--no-elastic-peer-state"])


def elastic_parts(cfg: TrainConfig, nproc_per_node: int = 1, node_rank: int | str = 0, master_addr: str = "127.0.0.1",
                  master_port: int = 29500, reform: str = "in-process",
                  settings: ElasticSettings = ElasticSettings()) -> tuple[dict[str, str], list[str]]:
    """The environment and argument list (``torchrun`` first) of node ``node_rank`` of an elastic
    group of 1 or 2 nodes on ``cfg``, with ``--reduction invariant --resume auto``."""
    if reform not in REFORMS:
        raise ValueError(f"reform must be one of {', '.join(REFORMS)}, got {reform!r}")
    endpoint = f"{master_addr}:{master_port}"
    is_host = int(node_rank == 0) if isinstance(node_rank, int) else f"$(( {node_rank} == 0 ))"
    conf = {"is_host": is_host, **RDZV_CONF}
    cfg = cfg.replace(reduction="invariant", resume="auto")
    extra: list[str] = []
    if reform == "in-process":
        conf.pop("last_call_timeout")  # one node per job: nothing to wait for
        env, nodes, rdzv_id = {}, "1", f"course-lib-node{node_rank}"
        extra = dataclasses.replace(settings, endpoint=endpoint).to_args()
    else:
        env, nodes, rdzv_id = dict(NO_SHARED_STORE), "1:2", "course-lib"
    args = ["--nnodes", nodes, "--nproc-per-node", str(nproc_per_node), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", endpoint, "--rdzv-id", rdzv_id, "--rdzv-conf", ",".join(f"{k}={v}" for k, v in conf.items()),
            "--max-restarts", "3"]
    return env, ["torchrun", *args, *TRAIN, "--run-dir", cfg.run_dir,
                 *cfg.to_args(skip=("run_dir", "world_size"), keep=("reduction",)), *extra]


def elastic_command(cfg: TrainConfig, **options) -> str:
    """The shell command of :func:`elastic_parts` (the same options). Notebook 05, optional deep-dive C."""
    return shell_line(*elastic_parts(cfg, **options))
