"""Defect (two ranks, mp.spawn, DDP): sampler.set_epoch is never called, so the
DistributedSampler shuffles every epoch the same way. (The resume itself is complete.)"""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from zoo_common import StopFlag, dataset, finish, free_port, load, model, options, save_atomic


def run(rank, port, args):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    path = os.path.join(args.out, "checkpoint.pt")
    torch.manual_seed(0)
    net = DDP(model())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    data = dataset()
    loader = DataLoader(data, batch_size=args.batch // 2, sampler=DistributedSampler(data, 2, rank, seed=0),
                        generator=torch.Generator())
    torch.manual_seed(10 + rank)
    first = step = 0
    ck = load(path)
    if ck:
        net.module.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        torch.set_rng_state(ck["rng"][rank])
        first, step = ck["epoch"], ck["step"]
    stop = StopFlag()
    for epoch in range(first, args.epochs):
        pass  # fix: loader.sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            if i < step:
                continue
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()
            step = i + 1
            flag = torch.tensor([float(stop.requested)])
            dist.all_reduce(flag)
            if step % args.save_every == 0 or flag.item():
                rngs = [None, None]
                dist.all_gather_object(rngs, torch.get_rng_state())
                if rank == 0:
                    save_atomic({"model": net.module.state_dict(), "opt": opt.state_dict(), "rng": rngs,
                                 "epoch": epoch, "step": step}, path)
                dist.barrier()
            if flag.item():
                dist.destroy_process_group()
                return
        step = 0
    finish(net.module, opt)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(free_port(), options()), nprocs=2)
