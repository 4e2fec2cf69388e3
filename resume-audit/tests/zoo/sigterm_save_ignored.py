"""Defect: on SIGTERM it saves (atomically) into preempted.pt and leaves, as it should; but the
resume reads only the periodic checkpoint.pt, so the steps since the last periodic save are
trained again. The same run, steps trained twice."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
preempted = os.path.join(args.out, "preempted.pt")
torch.manual_seed(0)
data, net = dataset(), model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
epoch, step, done, rng = 0, 0, 0, None
ck = load(path)  # fix: ck = max(filter(None, [load(path), load(preempted)]), key=lambda c: c["done"], default=None)
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["scheduler"])
    epoch, step, done, rng = ck["epoch"], ck["step"], ck["done"], ck["rng"]


def state() -> dict:
    return {"model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "rng": torch.get_rng_state(), "epoch": epoch, "step": step, "done": done}


stop = StopFlag()
while epoch < args.epochs:
    batches = iter(DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch)))
    for _ in range(step):
        next(batches)
    if rng is not None:
        torch.set_rng_state(rng)
        rng = None
    for x, y in batches:
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        sched.step()
        step, done = step + 1, done + 1
        if done % args.save_every == 0:
            save_atomic(state(), path)
        if stop.requested:  # a preemption: save where the resume will look, then leave
            save_atomic(state(), preempted)
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
