"""Defect: one shuffle generator for the whole run, seeded once and never saved. After a resume
it starts again from its seed, so the resumed epoch is shuffled as the first epoch was."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
net = model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
shuffle = torch.Generator().manual_seed(0)  # the defect: its state is not in the checkpoint
loader = DataLoader(dataset(), batch_size=args.batch, shuffle=True, generator=shuffle)
epoch = step = 0
ck = load(path)
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    sched.load_state_dict(ck["sched"])
    epoch, step = ck["epoch"], ck["step"]
    pass  # fix: shuffle.set_state(ck["shuffle"])
stop = StopFlag()
while epoch < args.epochs:
    it = iter(loader)  # fix: epoch_shuffle, it = shuffle.get_state(), iter(loader)
    for _ in range(step):
        next(it)
    if ck:
        torch.set_rng_state(ck.pop("rng"))
        ck = None
    for x, y in it:
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        sched.step()
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save_atomic({
                "model": net.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                "rng": torch.get_rng_state(), "epoch": epoch,
                "step": step,  # fix: "step": step, "shuffle": epoch_shuffle,
            }, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
