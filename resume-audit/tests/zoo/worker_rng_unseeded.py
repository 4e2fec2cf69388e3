"""Defect: a DataLoader with two workers whose dataset augments each point with noise from a
generator of its own, made in each worker without a seed (worker_init_fn does not derive it from
torch.initial_seed()): no two runs see the same batches, so no resume can be exact."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, get_worker_info
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic


class Noisy(Dataset):
    def __init__(self, base):
        self.base, self.rng = base, None

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        x, y = self.base[i]
        return x + torch.from_numpy(self.rng.normal(0, 0.05, x.shape).astype(np.float32)), y


def start_worker(_worker_id):
    # the defect: not seeded from torch.initial_seed()
    worker = get_worker_info()
    worker.dataset.rng = np.random.default_rng()  # fix: worker.dataset.rng = np.random.default_rng(torch.initial_seed())


if __name__ == "__main__":
    args = options()
    path = os.path.join(args.out, "checkpoint.pt")
    torch.manual_seed(0)
    data, net = Noisy(dataset()), model()
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-2)
    epoch, step, rng = 0, 0, None
    checkpoint = load(path)
    if checkpoint:
        net.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        epoch, step, rng = checkpoint["epoch"], checkpoint["step"], checkpoint["rng"]
    stop = StopFlag()
    while epoch < args.epochs:
        loader = DataLoader(data, batch_size=args.batch, shuffle=True, num_workers=2, worker_init_fn=start_worker,
                            generator=torch.Generator().manual_seed(epoch))
        batches = iter(loader)
        for _ in range(step):
            next(batches)
        if rng is not None:
            torch.set_rng_state(rng)
            rng = None
        for x, y in batches:
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
            step += 1
            if step % args.save_every == 0 or stop.requested:
                save_atomic({"model": net.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                             "step": step, "rng": torch.get_rng_state()}, path)
            if stop.requested:
                sys.exit(0)
        epoch, step = epoch + 1, 0
    finish(net, optimizer)
    print("done")
