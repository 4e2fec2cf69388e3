"""Defect: DataLoader(shuffle=True) without a generator: each epoch's shuffle draws from torch's
global RNG when the epoch's iterator is created, and that RNG is never saved. (Nothing else draws
from it: the model has no dropout.) The resume goes on at the saved epoch and step, as it should,
but a resumed process's RNG is where the run's was at its start, so a resumed epoch other than
the first is shuffled as the first epoch was."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
data, net = dataset(), model(dropout=None)
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
loader = DataLoader(data, batch_size=args.batch, shuffle=True)  # its order drawn from torch's RNG
epoch = step = 0
ck = load(path)
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["scheduler"])
    epoch, step = ck["epoch"], ck["step"]
    pass  # fix: torch.set_rng_state(ck["rng"])
stop = StopFlag()
while epoch < args.epochs:
    batches = iter(loader)  # fix: epoch_rng, batches = torch.get_rng_state(), iter(loader)
    for _ in range(step):
        next(batches)
    for x, y in batches:
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        sched.step()
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save_atomic({
                "model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "epoch": epoch,
                "step": step,  # fix: "step": step, "rng": epoch_rng,
            }, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
