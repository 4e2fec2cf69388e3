"""Defect: at a resume the script seeds torch's RNG again ("to be safe") instead of restoring it."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

SEED = 0
args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(SEED)
net = model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
pos = {"epoch": 0, "step": 0}
ck = load(path)
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    sched.load_state_dict(ck["sched"])
    pos = ck["pos"]
    # the defect: a fresh stream, not the saved one
    torch.manual_seed(SEED)  # fix: torch.set_rng_state(ck["rng"])
stop = StopFlag()
data = dataset()
for epoch in range(pos["epoch"], args.epochs):
    loader = DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch))
    first = pos["step"] if epoch == pos["epoch"] else 0
    for i, (x, y) in enumerate(loader):
        if i < first:
            continue
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
        sched.step()
        if (i + 1) % args.save_every == 0 or stop.requested:
            save_atomic({"model": net.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                         "rng": torch.get_rng_state(), "pos": {"epoch": epoch, "step": i + 1}}, path)
        if stop.requested:
            sys.exit(0)
finish(net, opt)
