"""Defect: a model with BatchNorm, whose running statistics are buffers, not parameters. The
checkpoint holds dict(net.named_parameters()) only and is loaded with strict=False, so a resume
starts the running statistics again from their initial values. Training goes on exactly (a
training step normalises by its batch's own statistics); the model that is evaluated does not."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
data, net = dataset(), model(batchnorm=True)
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
epoch, step, rng = 0, 0, None
ck = load(path)
if ck:
    net.load_state_dict(ck["model"], strict=False)  # strict=False: no error for what the file lacks
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["scheduler"])
    epoch, step, rng = ck["epoch"], ck["step"], ck["rng"]
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
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save_atomic({
                "model": dict(net.named_parameters()),  # fix: "model": net.state_dict(),
                "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "rng": torch.get_rng_state(),
                "epoch": epoch, "step": step,
            }, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
