"""Defect: each checkpoint is written in place over the only one (torch.save to its final name):
a crash during the write leaves half a file, and the resume cannot read it."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import (
    StopFlag,
    dataset,
    finish,
    model,
    options,  # fix: options, save_atomic,
)

args = options()
path = os.path.join(args.out, "model.pth")
torch.manual_seed(0)
net = model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
epoch = step = 0
rng = None
if os.path.exists(path):
    checkpoint = torch.load(path, weights_only=True)
    net.load_state_dict(checkpoint["model_state_dict"])
    opt.load_state_dict(checkpoint["optimizer_state_dict"])
    sched.load_state_dict(checkpoint["scheduler_state_dict"])
    epoch, step, rng = checkpoint["epoch"], checkpoint["step"], checkpoint["rng"]
stop = StopFlag()
data = dataset()
while epoch < args.epochs:
    loader = iter(DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch)))
    for _ in range(step):
        next(loader)
    if rng is not None:
        torch.set_rng_state(rng)
        rng = None
    for x, y in loader:
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        sched.step()
        step += 1
        if step % args.save_every == 0 or stop.requested:
            checkpoint = {"model_state_dict": net.state_dict(), "optimizer_state_dict": opt.state_dict(),
                          "scheduler_state_dict": sched.state_dict(), "rng": torch.get_rng_state(),
                          "epoch": epoch, "step": step}
            torch.save(checkpoint, path)  # fix: save_atomic(checkpoint, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
