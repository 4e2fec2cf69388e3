"""Defect: no SIGTERM handler. A scheduler's preemption ends the process at once, and every step
since the last periodic checkpoint is trained again. (The checkpoints themselves are complete.)"""
import os

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import (
    dataset,  # fix: StopFlag, dataset,
    finish,
    load,
    model,
    options,
    save_atomic,
)

args = options()
where = os.path.join(args.out, "train_state.pt")
torch.manual_seed(0)
net = model()
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-2)
schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / 40))
state = load(where)
first, done = (state["epoch"], state["done"]) if state else (0, 0)
if state:
    net.load_state_dict(state["net"])
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
data = dataset()  # fix: data, stop = dataset(), StopFlag()
for epoch in range(first, args.epochs):
    batches = list(DataLoader(data, batch_size=args.batch, shuffle=True, generator=torch.Generator().manual_seed(epoch)))
    if state:
        torch.set_rng_state(state["rng"])
        state = None
    for i in range(done, len(batches)):
        x, y = batches[i]
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
        schedule.step()
        if (i + 1) % args.save_every == 0:  # fix: if (i + 1) % args.save_every == 0 or stop.requested:
            save_atomic({"net": net.state_dict(), "optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(),
                         "rng": torch.get_rng_state(), "epoch": epoch, "done": i + 1}, where)
        pass  # fix: if stop.requested: raise SystemExit(0)
    done = 0
finish(net, optimizer)
