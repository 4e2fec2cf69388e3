"""Defect: the model is built before anything is seeded, so every run starts from other weights
(the data order and the dropout stream are seeded; the resume itself is complete)."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
# the defect: torch.manual_seed comes after the model is built
net = model()  # fix: torch.manual_seed(0)
torch.manual_seed(0)  # fix: net = model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
epoch = step = 0
ck = load(path)
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    epoch, step = ck["epoch"], ck["step"]
stop = StopFlag()
data = dataset()
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
                         "epoch": epoch, "step": step}, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
