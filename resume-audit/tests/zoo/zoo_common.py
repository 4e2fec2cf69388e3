"""What the zoo's training scripts share: the data, the model, the command line, an atomic and
durable save, a SIGTERM flag, and ``finish`` (the run's final state, for tests/zoo/hand_truth.py).
Each script's loop, where its one defect lives, is its own.

The task is small on purpose (a 2-layer classifier with dropout on 192 seeded points, 12 steps
an epoch): the audit starts each script many times, and what it judges is the loop, not the model.
"""
import argparse
import os
import signal

import torch
from torch import nn
from torch.utils.data import TensorDataset

DIM = 12


def options(argv=None, **defaults) -> argparse.Namespace:
    """The command line every script takes; ``defaults`` changes a default (``save_every=3``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="the run's folder: its checkpoints")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--save-every", type=int, default=5, help="save a checkpoint every N steps")
    ap.add_argument("--batch", type=int, default=16)
    ap.set_defaults(**defaults)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    return a


def dataset(seed: int = 0) -> TensorDataset:
    """192 points whose label is the side of a random plane they lie on (always the same points)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(192, DIM, generator=g)
    return TensorDataset(x, (x @ torch.randn(DIM, generator=g) > 0).long())


def model(dropout: float | None = 0.2, batchnorm: bool = False) -> nn.Module:
    """The classifier: dropout draws from torch's RNG (``dropout=None``: nothing in the model draws);
    ``batchnorm`` adds running statistics, buffers that are state without being parameters."""
    layers = [nn.Linear(DIM, 32), nn.BatchNorm1d(32), nn.ReLU()] if batchnorm else [nn.Linear(DIM, 32), nn.ReLU()]
    if dropout is not None:
        layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers, nn.Linear(32, 2))


def fsync_dir(folder: str) -> None:
    """Make the folder's entries durable (a file created, renamed or removed in it): without this a
    power cut may undo a rename that a process kill never could."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_atomic(obj, path: str) -> None:
    """Write to a temporary file, fsync it, rename it over the old checkpoint, then fsync the
    folder: a crash at any point, a power cut included, leaves the old checkpoint or the new one."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")


def load(path: str):
    return torch.load(path, weights_only=True) if os.path.exists(path) else None


class StopFlag:
    """SIGTERM (a scheduler's preemption) sets a flag; the loop saves at the step's end and leaves."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGTERM, self._set)

    def _set(self, *_):
        self.requested = True


def finish(net: nn.Module, optimizer: torch.optim.Optimizer, **more) -> None:
    """The run's end: with ``ZOO_FINAL`` set (tests/zoo/hand_truth.py sets it), the final state is
    written there: parameters, buffers, the optimizer's state and each of ``more``'s state_dict()
    (an EMA, a GradScaler). Rank 0 only in a distributed run. Without ``ZOO_FINAL``: nothing."""
    target = os.environ.get("ZOO_FINAL")
    if not target or (torch.distributed.is_initialized() and torch.distributed.get_rank() != 0):
        return
    state = {"parameters": {k: v.detach().clone() for k, v in net.named_parameters()},
             "buffers": {k: v.clone() for k, v in net.named_buffers()}, "optimizer": optimizer.state_dict()}
    torch.save({**state, **{name: obj.state_dict() for name, obj in more.items()}}, target)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
