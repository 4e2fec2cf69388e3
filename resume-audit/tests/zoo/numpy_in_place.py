"""Defect: the weights and AdamW's moments are written with numpy.savez straight onto the
checkpoint's final name: a kill during the write leaves a truncated archive where the last
checkpoint was, and every restart fails on it."""
import os
import sys

import numpy as np
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

MOMENTS = ("step", "exp_avg", "exp_avg_sq")
args = options()
path = os.path.join(args.out, "checkpoint.npz")
torch.manual_seed(0)
data, net = dataset(), model()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
epoch, step, rng = 0, 0, None
if os.path.exists(path):
    arrays = np.load(path)
    net.load_state_dict({k.removeprefix("model."): torch.from_numpy(a) for k, a in arrays.items() if k[:6] == "model."})
    saved = opt.state_dict()
    saved["state"] = {i: {m: torch.from_numpy(arrays[f"adam.{i}.{m}"]) for m in MOMENTS}
                      for i in range(len(saved["param_groups"][0]["params"]))}
    opt.load_state_dict(saved)
    epoch, step, rng = int(arrays["epoch"]), int(arrays["step"]), torch.from_numpy(arrays["rng"])


def save() -> None:
    arrays = {f"model.{k}": v.numpy() for k, v in net.state_dict().items()}
    arrays |= {f"adam.{i}.{m}": s[m].numpy() for i, s in opt.state_dict()["state"].items() for m in MOMENTS}
    with open(path, "wb") as f:  # fix: with open(path + ".tmp", "wb") as f:
        np.savez(f, **arrays, rng=torch.get_rng_state().numpy(), epoch=epoch, step=step)
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
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save()
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
finish(net, opt)
