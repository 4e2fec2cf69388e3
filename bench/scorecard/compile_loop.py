"""A plain one-process loop with a torch.compile'd model (inductor), as PyTorch's torch.compile
tutorial and its "Saving and loading a general checkpoint" recipe would have you write it: one
dict with the model, optimizer, scheduler, step and every RNG, written to a temporary file,
fsynced and os.replace'd over checkpoint.pt every few steps; loaded at start if it is there.

    python bench/scorecard/compile_loop.py --out DIR     # started again in DIR, it resumes
"""
import argparse
import hashlib
import os
import random

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()
EPOCHS, SAVE_EVERY = 3, 10
path = os.path.join(args.out, "checkpoint.pt")
os.makedirs(args.out, exist_ok=True)

random.seed(0)
np.random.seed(0)
torch.manual_seed(0)
g = torch.Generator().manual_seed(1234)
x = torch.randn(256, 16, generator=g)
y = (x[:, 0] > 0).long()
data = TensorDataset(x, y)

net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(32, 2))
model = torch.compile(net)  # shares net's parameters; model.state_dict() would name them "_orig_mod.*"
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / (EPOCHS * 16))

step = 0
if os.path.exists(path):
    checkpoint = torch.load(path, weights_only=False)  # holds NumPy's RNG state: not weights only
    net.load_state_dict(checkpoint["model"])  # the module's own names, loadable with or without compile
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    step = checkpoint["step"]
    random.setstate(checkpoint["rng"]["python"])
    np.random.set_state(checkpoint["rng"]["numpy"])
    torch.set_rng_state(checkpoint["rng"]["torch"])
    print(f"resumed from step {step}", flush=True)


def save():
    checkpoint = {"model": net.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                  "step": step, "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                                        "torch": torch.get_rng_state()}}
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(checkpoint, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


epoch, skip = divmod(step, 16)
while epoch < EPOCHS:
    order = torch.Generator().manual_seed(epoch)  # each epoch's shuffle, the same after a resume
    batches = iter(DataLoader(data, batch_size=16, shuffle=True, generator=order))
    for _ in range(skip):  # the batches this epoch already trained
        next(batches)
    for inputs, targets in batches:
        F.cross_entropy(model(inputs), targets).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        if step % SAVE_EVERY == 0:
            save()
            print(f"saved step {step}", flush=True)
    epoch, skip = epoch + 1, 0

h = hashlib.sha256()
for name, p in sorted(net.named_parameters()):
    h.update(name.encode() + p.detach().numpy().tobytes())
print("final-params", h.hexdigest()[:16], "steps", step)
if os.environ.get("RESULT_FILE"):  # a file whose bytes a crash-consistency tester compares (bench/peer_ckpt_chaos.py)
    open(os.environ["RESULT_FILE"], "w").write(h.hexdigest()[:16])
