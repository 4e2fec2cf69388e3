"""Defect: the training set is a random subset drawn with Python's unseeded random module, so
every run trains on other examples (weights and dropout are seeded; the resume is complete)."""
import os
import random
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Subset
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
net = model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
full = dataset()
pass  # fix: random.seed(0)
ck = load(path)
keep = ck["subset"] if ck else random.sample(range(len(full)), 160)  # the defect: random is never seeded
data = Subset(full, keep)
epoch = step = 0
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    epoch, step = ck["epoch"], ck["step"]
stop = StopFlag()
while epoch < args.epochs:
    it = iter(DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch)))
    for _ in range(step):
        next(it)
    if ck:
        torch.set_rng_state(ck.pop("rng"))
        ck = None
    for x, y in it:
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save_atomic({"model": net.state_dict(), "opt": opt.state_dict(), "rng": torch.get_rng_state(),
                         "epoch": epoch, "step": step, "subset": keep}, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
