"""A plain one-process loop whose DataLoader has num_workers=2, seeded as PyTorch's "Randomness in
multi-process data loading" notes teach (a seeded generator; worker_init_fn seeding NumPy and
random from torch.initial_seed()), with a random augmentation drawn inside the workers. Saved
atomically every few steps (model, optimizer, scheduler, step); resumed mid-epoch.

    python bench/scorecard/dataloader_workers.py --out DIR     # started again in DIR, it resumes
"""
import argparse
import hashlib
import os
import random

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
args = parser.parse_args()
EPOCHS, SAVE_EVERY = 3, 10
path = os.path.join(args.out, "checkpoint.pt")
os.makedirs(args.out, exist_ok=True)


class Noisy(Dataset):
    """256 points; each read adds noise from the worker's torch RNG and NumPy's (an augmentation)."""

    def __init__(self):
        g = torch.Generator().manual_seed(1234)
        self.x = torch.randn(256, 16, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        noise = 0.05 * torch.randn(16) + torch.from_numpy(np.random.normal(0, 0.05, 16)).float()
        return self.x[i] + noise, self.y[i]


def seed_worker(worker_id):  # the docs' worker_init_fn
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


if __name__ == "__main__":
    torch.manual_seed(0)
    data = Noisy()
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / (EPOCHS * 16))

    step = 0
    if os.path.exists(path):
        checkpoint = torch.load(path, weights_only=True)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        step = checkpoint["step"]
        print(f"resumed from step {step}", flush=True)

    def save():
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "step": step}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    epoch, skip = divmod(step, 16)
    while epoch < EPOCHS:
        # the docs seed one generator for the whole run; seeded by the epoch, each pass (its
        # shuffle and the workers' base seed) is the same after a resume
        g = torch.Generator().manual_seed(epoch)
        loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=2, worker_init_fn=seed_worker, generator=g)
        batches = iter(loader)
        for _ in range(skip):  # read, not just skipped: each worker's RNG moves on as it did
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
    for name, p in sorted(model.named_parameters()):
        h.update(name.encode() + p.detach().numpy().tobytes())
    print("final-params", h.hexdigest()[:16], "steps", step)
    if os.environ.get("RESULT_FILE"):  # a file whose bytes a crash-consistency tester compares (bench/peer_ckpt_chaos.py)
        open(os.environ["RESULT_FILE"], "w").write(h.hexdigest()[:16])
