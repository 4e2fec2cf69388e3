"""Defect: mixed precision (float16 autocast) with a GradScaler whose state is not saved: a resume
starts from the initial scale, so other steps overflow and are skipped than in the run never
interrupted."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
data, net = dataset(), model()
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**20, growth_interval=2)
epoch, step, rng = 0, 0, None
checkpoint = load(path)
if checkpoint:
    net.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])  # the scaler's state_dict() is not restored
    pass  # fix: scaler.load_state_dict(checkpoint["scaler"])
    epoch, step, rng = checkpoint["epoch"], checkpoint["step"], checkpoint["rng"]
stop = StopFlag()
while epoch < args.epochs:
    batches = iter(DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch)))
    for _ in range(step):
        next(batches)
    if rng is not None:
        torch.set_rng_state(rng)
        rng = None
    for x, y in batches:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.cross_entropy(net(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save_atomic({
                "model": net.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "step": step,
                "rng": torch.get_rng_state(),  # fix: "rng": torch.get_rng_state(), "scaler": scaler.state_dict(),
            }, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, optimizer, scaler=scaler)
print("done")
