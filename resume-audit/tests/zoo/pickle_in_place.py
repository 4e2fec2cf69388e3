"""Defect: the checkpoint is pickled straight onto its final name (pickle.dump into open(path,
"wb")): a kill during the write leaves a truncated file where the last checkpoint was, and every
restart fails on it."""
import os
import pickle
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import (
    StopFlag,
    dataset,
    finish,
    model,
    options,  # fix: options, fsync_dir,
)

args = options()
path = os.path.join(args.out, "state.pkl")
torch.manual_seed(0)
data, net = dataset(), model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
epoch, step, rng = 0, 0, None
if os.path.exists(path):
    with open(path, "rb") as f:
        state = pickle.load(f)
    net.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    epoch, step, rng = state["epoch"], state["step"], state["rng"]


def save(state: dict) -> None:
    with open(path, "wb") as f:  # fix: with open(path + ".tmp", "wb") as f:
        pickle.dump(state, f)
        f.flush()
        pass  # fix: os.fsync(f.fileno())
    pass  # fix: os.replace(path + ".tmp", path)
    pass  # fix: fsync_dir(args.out)


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
            save({"model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                  "rng": torch.get_rng_state(), "epoch": epoch, "step": step})
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
