"""The ``torchrun`` command line of a fixed group that the kit prints (notebook 03, §6): one
command per node, torch's static rendezvous at ``master_addr:master_port``. (An elastic group's
commands are an extension's: ``course_lib.beyond.elastic.commands``. The store a rank started by
torchrun forms its process group on is :func:`course_lib._runtime.rank_start.attempt_store`.)
"""
from __future__ import annotations

import shlex

from course_lib.config import TrainConfig

TRAIN = ["-m", "course_lib", "train"]


def torchrun_command(cfg: TrainConfig, nnodes: int = 1, nproc_per_node: int = 2, node_rank: int | str = 0,
                     master_addr: str = "127.0.0.1", master_port: int = 29500) -> str:
    """The shell command that runs ``cfg`` on ``nnodes`` x ``nproc_per_node`` ranks, on node
    ``node_rank`` (run it on every node with its own ``node_rank``). Notebook 03, §6."""
    args = ["--nnodes", str(nnodes), "--nproc-per-node", str(nproc_per_node), "--node-rank", str(node_rank),
            "--master-addr", master_addr, "--master-port", str(master_port)]
    train = [*TRAIN, "--run-dir", cfg.run_dir, *cfg.to_args(skip=("run_dir", "world_size"))]
    return shell_line({}, ["torchrun", *args, *train])


def shell_line(env: dict[str, str], argv: list[str]) -> str:
    """``env`` and ``argv`` as one line for a POSIX shell (``$NODE_RANK``, ``$(( ... ))`` still expand)."""
    return " ".join(_shell_word(w) for w in [f"{k}={v}" for k, v in env.items()] + argv)


def _shell_word(word: str) -> str:
    if "$" not in word:
        return shlex.quote(word)
    return f'"{word}"' if " " in word else word
