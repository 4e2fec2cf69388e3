"""Defect: the learning rate falls per epoch (MultiStepLR, stepped once an epoch), but the resume
fast-forwards the scheduler by the saved *step* count, as one would a per-step schedule: the run
goes on with the rate of a later epoch."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic


def fast_forward(schedule, steps: int) -> None:
    """Put a schedule back where it was by stepping it again as many times."""
    for _ in range(steps):
        schedule.step()


args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
data, net = dataset(), model()
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 2], gamma=0.5)
epoch, step, done, rng = 0, 0, 0, None
checkpoint = load(path)
if checkpoint:
    net.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    epoch, step, done, rng = checkpoint["epoch"], checkpoint["step"], checkpoint["done"], checkpoint["rng"]
    # the defect: the schedule put back by the steps done (it counts epochs)
    fast_forward(scheduler, done)  # fix: scheduler.load_state_dict(checkpoint["scheduler"])
stop = StopFlag()
while epoch < args.epochs:
    batches = iter(DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch)))
    for _ in range(step):
        next(batches)
    if rng is not None:
        torch.set_rng_state(rng)
        rng = None
    for x, y in batches:
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
        step, done = step + 1, done + 1
        if done % args.save_every == 0 or stop.requested:
            save_atomic({
                "model": net.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                "done": done, "rng": torch.get_rng_state(),
                "step": step,  # fix: "step": step, "scheduler": scheduler.state_dict(),
            }, path)
        if stop.requested:
            sys.exit(0)
    scheduler.step()
    epoch, step = epoch + 1, 0
finish(net, optimizer)
print("done")
