"""Defect: each save is handed to a background thread (so that training need not wait for the
disk), with the live state_dict()s of the model and the optimizer: their tensors are the ones
training keeps updating, and the thread writes them two steps later (a busy disk, made
deterministic: it waits for the steps, not for a time a loaded machine would stretch). The file
holds the step counter, the schedule and the RNG of the step it was asked for beside weights and
moments of a later one."""
import os
import sys
import threading  # fix: import copy, threading
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
data, net = dataset(), model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
epoch, step, rng = 0, 0, None
ck = load(path)
if ck:
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    sched.load_state_dict(ck["scheduler"])
    epoch, step, rng = ck["epoch"], ck["step"], ck["rng"]


trained = {"steps": 0, "over": False}  # what the writer waits on


def write(model_state, optimizer_state, rest):
    asked = trained["steps"]
    while trained["steps"] < asked + 2 and not trained["over"]:  # the disk is busy for two more steps
        time.sleep(0.002)
    save_atomic({"model": model_state, "optimizer": optimizer_state, **rest}, path)


writer = None
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
        trained["steps"] += 1
        if step % args.save_every == 0 or stop.requested:
            if writer is not None:
                writer.join()
            rest = {"scheduler": sched.state_dict(), "rng": torch.get_rng_state(), "epoch": epoch, "step": step}
            writer = threading.Thread(target=write, args=(
                net.state_dict(), opt.state_dict(),  # fix: copy.deepcopy(net.state_dict()), copy.deepcopy(opt.state_dict()),
                rest))
            writer.start()
        if stop.requested:
            trained["over"] = True
            sys.exit(0)  # the interpreter waits for the writer
    epoch, step = epoch + 1, 0
trained["over"] = True
writer.join() if writer else None
finish(net, opt)
