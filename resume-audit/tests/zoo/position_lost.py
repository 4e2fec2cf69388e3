"""Defect: it saves in the middle of an epoch but records only the epoch, so a resume starts the
epoch again from its first batch (the batches before the checkpoint are trained twice)."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "resume.pt")
torch.manual_seed(0)
net = model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
first_epoch, rng = 0, None  # fix: first_epoch, first_step, rng = 0, 0, None
saved = load(path)
if saved:
    net.load_state_dict(saved["model"])
    opt.load_state_dict(saved["optimizer"])
    sched.load_state_dict(saved["scheduler"])
    first_epoch, rng = saved["epoch"], saved["rng"]
    pass  # fix: first_step = saved["step"]
stop = StopFlag()
data = dataset()
for epoch in range(first_epoch, args.epochs):
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch))
    if rng is not None:
        torch.set_rng_state(rng)
        rng = None
    for step, (x, y) in enumerate(loader, 1):
        pass  # fix: if epoch == first_epoch and step <= first_step: continue
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        sched.step()
        if step % args.save_every == 0 or stop.requested:
            save_atomic({
                "model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "rng": torch.get_rng_state(),
                "epoch": epoch,  # fix: "epoch": epoch, "step": step,
            }, path)
        if stop.requested:
            sys.exit(0)
finish(net, opt)
