"""Defect: the batches are augmented with Python's random (a random scale) and NumPy's global RNG
(noise); both are seeded, but neither's state is in the checkpoint, so a resumed run augments
with other numbers. Everything else is saved and restored, torch's RNG included."""
import os
import random
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
random.seed(0)
np.random.seed(0)
torch.manual_seed(0)
data, net = dataset(), model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
epoch, step = 0, 0
ck = load(path)  # fix: ck = torch.load(path, weights_only=False) if os.path.exists(path) else None
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["scheduler"])
    torch.set_rng_state(ck["rng"])
    pass  # fix: random.setstate(ck["random"])
    pass  # fix: np.random.set_state(ck["numpy"])
    epoch, step = ck["epoch"], ck["step"]
stop = StopFlag()
while epoch < args.epochs:
    batches = iter(DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch)))
    for _ in range(step):
        next(batches)
    for x, y in batches:
        x = x * random.uniform(0.8, 1.2) + torch.from_numpy(np.random.normal(0, 0.05, x.shape).astype(np.float32))
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        sched.step()
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save_atomic({
                "model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "rng": torch.get_rng_state(),
                "epoch": epoch,  # fix: "epoch": epoch, "random": random.getstate(),
                "step": step,  # fix: "step": step, "numpy": np.random.get_state(),
            }, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
