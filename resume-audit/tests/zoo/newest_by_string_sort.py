"""Defect: every save is a file of its own, step-{N}.pt (atomic, every 3 steps), and the resume
takes the last of sorted(glob("step-*.pt")): a string sort, so step-9.pt comes after step-18.pt
and the resume goes on from an older checkpoint than the newest. The same run, steps trained
twice."""
import glob
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options(save_every=3)
torch.manual_seed(0)
data, net = dataset(), model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
epoch, step, done, rng = 0, 0, 0, None
pattern = os.path.join(args.out, "step-*.pt")
found = sorted(glob.glob(pattern))  # fix: found = sorted(glob.glob(pattern), key=lambda p: int(p[:-3].split("-")[-1]))
ck = load(found[-1]) if found else None  # the newest checkpoint, or so it seems
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["scheduler"])
    epoch, step, done, rng = ck["epoch"], ck["step"], ck["done"], ck["rng"]
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
        if done % args.save_every == 0 or stop.requested:
            save_atomic({"model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                         "rng": torch.get_rng_state(), "epoch": epoch, "step": step, "done": done},
                        os.path.join(args.out, f"step-{done}.pt"))
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
