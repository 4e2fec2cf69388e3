"""What the zoo's training scripts share: the data, the model, the command line, an atomic save,
a SIGTERM flag. Each script's loop, where its one defect lives, is its own.

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


def options(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="the run's folder: its checkpoints")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--save-every", type=int, default=5, help="save a checkpoint every N steps")
    ap.add_argument("--batch", type=int, default=16)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    return a


def dataset(seed: int = 0) -> TensorDataset:
    """192 points whose label is the side of a random plane they lie on (always the same points)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(192, DIM, generator=g)
    return TensorDataset(x, (x @ torch.randn(DIM, generator=g) > 0).long())


def model() -> nn.Module:
    return nn.Sequential(nn.Linear(DIM, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 2))


def save_atomic(obj, path: str) -> None:
    """Write to a temporary file, fsync it, then rename it over the old checkpoint."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(path: str):
    return torch.load(path, weights_only=True) if os.path.exists(path) else None


class StopFlag:
    """SIGTERM (a scheduler's preemption) sets a flag; the loop saves at the step's end and leaves."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGTERM, self._set)

    def _set(self, *_):
        self.requested = True


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
