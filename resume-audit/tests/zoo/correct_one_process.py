"""Correct, one process: model, optimizer, scheduler, torch's RNG and the position in the epoch
saved atomically every few steps and on SIGTERM; each epoch's order a function of its number."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
data, net = dataset(), model()
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / 40))
epoch, step, rng = 0, 0, None
checkpoint = load(path)
if checkpoint:
    net.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    epoch, step, rng = checkpoint["epoch"], checkpoint["step"], checkpoint["rng"]
stop = StopFlag()


def save():
    save_atomic({"model": net.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                 "rng": torch.get_rng_state(), "epoch": epoch, "step": step}, path)


while epoch < args.epochs:
    order = torch.Generator().manual_seed(epoch)  # the epoch's shuffle: the same after a resume
    batches = iter(DataLoader(data, batch_size=args.batch, shuffle=True, generator=order))
    for _ in range(step):  # the batches this epoch already trained
        next(batches)
    if rng is not None:  # restored last: nothing draws from it before the next step
        torch.set_rng_state(rng)
        rng = None
    for x, y in batches:
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
        scheduler.step()
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save()
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, optimizer)
print("done")
