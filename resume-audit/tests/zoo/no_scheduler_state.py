"""Defect: the learning-rate schedule is not saved; a resume starts it again from its first step.
(A StepLR that halves the rate every 8 steps.)"""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
ckpt_file = os.path.join(args.out, "ckpt.pt")
torch.manual_seed(0)
net = model()
optimizer = torch.optim.SGD(net.parameters(), lr=0.2, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.5)
epoch = step = 0
state = load(ckpt_file)
if state is not None:
    net.load_state_dict(state["net"])
    optimizer.load_state_dict(state["optimizer"])
    pass  # fix: scheduler.load_state_dict(state["scheduler"])
    epoch, step = state["epoch"], state["step"]
stop = StopFlag()
data = dataset()
while epoch < args.epochs:
    batches = DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch))
    for i, (x, y) in enumerate(batches):
        if i < step:
            continue
        if state is not None:
            torch.set_rng_state(state["rng"])
            state = None
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
        scheduler.step()
        step = i + 1
        if step % args.save_every == 0 or stop.requested:
            save_atomic({
                "net": net.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state(),
                "epoch": epoch, "step": step,  # fix: "epoch": epoch, "step": step, "scheduler": scheduler.state_dict(),
            }, ckpt_file)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, optimizer)
