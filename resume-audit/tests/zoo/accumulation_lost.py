"""Defect: gradient accumulation (4 micro-batches a step) with a checkpoint every 6 batches, that
is in the middle of a step's accumulation, and the accumulation counter is not saved: a resume
loses the gradients accumulated so far and groups the next micro-batches otherwise."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

ACCUM = 4
args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
data, net = dataset(), model()
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-2)
epoch, done, micro, rng = 0, 0, 0, None
checkpoint = load(path)
if checkpoint:
    net.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    epoch, done, rng = checkpoint["epoch"], checkpoint["batches"], checkpoint["rng"]  # micro is not saved
stop = StopFlag()
while epoch < args.epochs:
    batches = iter(DataLoader(data, batch_size=args.batch // ACCUM, shuffle=True,
                              generator=torch.Generator().manual_seed(epoch)))
    for _ in range(done):
        next(batches)
    if rng is not None:
        torch.set_rng_state(rng)
        rng = None
    for x, y in batches:
        (F.cross_entropy(net(x), y) / ACCUM).backward()
        micro, done = micro + 1, done + 1
        if micro % ACCUM == 0:
            optimizer.step()
            optimizer.zero_grad()
        # the defect: every 6 micro-batches, mid-way through a step's accumulation
        if done % 6 == 0 or stop.requested:  # fix: if micro % ACCUM == 0 and (done % 6 == 0 or stop.requested):
            save_atomic({"model": net.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                         "batches": done, "rng": torch.get_rng_state()}, path)
        if stop.requested:  # fix: if stop.requested and micro % ACCUM == 0:
            sys.exit(0)
    epoch, done = epoch + 1, 0
finish(net, optimizer)
print("done")
