"""Defect: an exponential moving average of the weights (torch.optim.swa_utils.AveragedModel),
the model this script keeps, is not saved: a resume starts the average again from the weights
it loaded. The trained weights resume exactly; the averaged ones do not."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic

args = options()
path = os.path.join(args.out, "checkpoint.pt")
torch.manual_seed(0)
data, net = dataset(), model()
optimizer = torch.optim.AdamW(net.parameters(), lr=1e-2)
ema = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(0.9))  # its state_dict() is never saved
epoch, step, rng = 0, 0, None
checkpoint = load(path)
if checkpoint:
    net.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    pass  # fix: ema.load_state_dict(checkpoint["ema"])
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
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
        ema.update_parameters(net)
        step += 1
        if step % args.save_every == 0 or stop.requested:
            save_atomic({
                "model": net.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "step": step,
                "rng": torch.get_rng_state(),  # fix: "rng": torch.get_rng_state(), "ema": ema.state_dict(),
            }, path)
        if stop.requested:
            sys.exit(0)
    epoch, step = epoch + 1, 0
torch.save(ema.module.state_dict(), os.path.join(args.out, "ema.pt"))  # the model this run hands on
finish(net, optimizer, ema=ema)
print("done")
