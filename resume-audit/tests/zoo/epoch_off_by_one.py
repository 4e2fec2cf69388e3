"""Defect (the PyTorch DDP tutorial's snapshot, one process): the snapshot stores the epoch just
finished as EPOCHS_RUN, and the resume starts at EPOCHS_RUN: that epoch is trained again.
Snapshots are written at each epoch's end (atomically), and on SIGTERM once the epoch is done."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic


class Trainer:
    def __init__(self, snapshot_path: str, data):
        torch.manual_seed(0)
        self.model = model()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-2)
        self.data, self.epochs_run, self.snapshot_path = data, 0, snapshot_path
        snapshot = load(snapshot_path)
        if snapshot is not None:
            self._load_snapshot(snapshot)

    def _load_snapshot(self, snapshot):
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.optimizer.load_state_dict(snapshot["OPTIMIZER"])
        torch.set_rng_state(snapshot["RNG"])
        self.epochs_run = snapshot["EPOCHS_RUN"]  # fix: self.epochs_run = snapshot["EPOCHS_RUN"] + 1
        print(f"Resuming training from snapshot at Epoch {self.epochs_run}")

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        F.cross_entropy(self.model(source), targets).backward()
        self.optimizer.step()

    def _run_epoch(self, epoch, batch_size):
        loader = DataLoader(self.data, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(epoch))
        for source, targets in loader:
            self._run_batch(source, targets)

    def _save_snapshot(self, epoch):
        save_atomic({"MODEL_STATE": self.model.state_dict(), "OPTIMIZER": self.optimizer.state_dict(),
                     "RNG": torch.get_rng_state(), "EPOCHS_RUN": epoch}, self.snapshot_path)

    def train(self, max_epochs: int, batch_size: int, stop: StopFlag):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch, batch_size)
            self._save_snapshot(epoch)
            if stop.requested:
                sys.exit(0)


if __name__ == "__main__":
    args = options()
    trainer = Trainer(os.path.join(args.out, "snapshot.pt"), dataset())
    trainer.train(args.epochs, args.batch, StopFlag())
    finish(trainer.model, trainer.optimizer)
