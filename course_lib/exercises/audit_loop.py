"""The loop of exercise 05.audit, run by the audit as a script, as a learner's own would be:

    python course_lib/exercises/audit_loop.py --out DIR --learner FILE

``FILE`` holds the learner's ``save_checkpoint(path, model, optimizer, scheduler, epoch, step)``
and ``load_checkpoint(path, model, optimizer, scheduler)`` (which returns ``(epoch, step)``, or
``None`` when there is no checkpoint). The loop calls ``load_checkpoint`` once, at the start,
then ``save_checkpoint`` every 5 steps and on SIGTERM, after which it leaves. What its next step
reads, and so what a checkpoint must give back: the model, AdamW's state, the linear decay of
the learning rate, torch's RNG (dropout), the epoch and the step within it. Each epoch's order
is a function of the epoch's number. It imports nothing from the kit.
"""
import argparse
import importlib.util
import os
import signal

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

EPOCHS, BATCH, SAVE_EVERY = 3, 16, 5


def learner(path: str):
    spec = importlib.util.spec_from_file_location("learner", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description="the loop of exercise 05.audit")
    ap.add_argument("--out", required=True)
    ap.add_argument("--learner", required=True)
    a = ap.parse_args()
    mine = learner(a.learner)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "checkpoint.pt")
    torch.manual_seed(0)
    points = torch.Generator().manual_seed(0)
    x = torch.randn(192, 12, generator=points)
    y = (x @ torch.randn(12, generator=points) > 0).long()
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / 36))
    epoch, step = mine.load_checkpoint(path, model, optimizer, scheduler) or (0, 0)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    while epoch < EPOCHS:
        order = torch.Generator().manual_seed(epoch)
        batches = iter(DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, generator=order))
        for _ in range(step):  # the batches of this epoch already trained
            next(batches)
        for xb, yb in batches:
            optimizer.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            scheduler.step()
            step += 1
            if step % SAVE_EVERY == 0 or stop:
                mine.save_checkpoint(path, model, optimizer, scheduler, epoch, step)
            if stop:
                return
        epoch, step = epoch + 1, 0


if __name__ == "__main__":
    main()
