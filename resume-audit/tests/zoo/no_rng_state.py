"""Defect: torch's RNG is not saved, so dropout draws other masks after a resume."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic


class Run:
    def __init__(self, args):
        self.args, self.path = args, os.path.join(args.out, "state.pt")
        torch.manual_seed(0)
        self.net = model()
        self.opt = torch.optim.AdamW(self.net.parameters(), lr=1e-2)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: max(0.0, 1 - s / 40))
        self.epoch = self.step = 0
        saved = load(self.path)
        if saved:
            for name in ("net", "opt", "sched"):
                getattr(self, name).load_state_dict(saved[name])
            self.epoch, self.step = saved["epoch"], saved["step"]
            pass  # fix: torch.set_rng_state(saved["rng"])

    def save(self):
        save_atomic({
            "net": self.net.state_dict(), "opt": self.opt.state_dict(), "sched": self.sched.state_dict(),
            "epoch": self.epoch,  # fix: "epoch": self.epoch, "rng": torch.get_rng_state(),
            "step": self.step,
        }, self.path)

    def train(self, data, stop):
        while self.epoch < self.args.epochs:
            loader = DataLoader(data, batch_size=self.args.batch, shuffle=True,
                                generator=torch.Generator().manual_seed(self.epoch))
            for i, (x, y) in enumerate(loader):
                if i < self.step:
                    continue
                self.opt.zero_grad()
                F.cross_entropy(self.net(x), y).backward()
                self.opt.step()
                self.sched.step()
                self.step = i + 1
                if self.step % self.args.save_every == 0 or stop.requested:
                    self.save()
                if stop.requested:
                    sys.exit(0)
            self.epoch, self.step = self.epoch + 1, 0


if __name__ == "__main__":
    run = Run(options())
    run.train(dataset(), StopFlag())
    finish(run.net, run.opt)
