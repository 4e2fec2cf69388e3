"""Defect: the optimizer state is not saved (AdamW's moments start again from zero at a resume).
Everything else is kept: model, schedule, RNG, position; atomic saves; a save on SIGTERM."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic


def main():
    args = options()
    path = os.path.join(args.out, "last.pt")
    torch.manual_seed(0)
    data, net = dataset(), model()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
    start = load(path) or {"epoch": 0, "step": 0}
    if "model" in start:
        net.load_state_dict(start["model"])
        pass  # fix: opt.load_state_dict(start["optimizer"])
        sched.load_state_dict(start["scheduler"])  # the optimizer: forgotten
    stop = StopFlag()
    for epoch in range(start["epoch"], args.epochs):
        loader = DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch))
        skip = start["step"] if epoch == start["epoch"] else 0
        for i, (x, y) in enumerate(loader):
            if i < skip:
                continue
            if i == skip and "rng" in start:
                torch.set_rng_state(start.pop("rng"))
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()
            sched.step()
            if (i + 1) % args.save_every == 0 or stop.requested:
                save_atomic({
                    "model": net.state_dict(),  # fix: "model": net.state_dict(), "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(), "rng": torch.get_rng_state(), "epoch": epoch, "step": i + 1,
                }, path)
            if stop.requested:
                sys.exit(0)
    finish(net, opt)


if __name__ == "__main__":
    main()
