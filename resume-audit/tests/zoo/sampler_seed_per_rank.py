"""Defect: two ranks with torch.multiprocessing.spawn and DDP (gloo), everything saved and restored,
but each rank's DistributedSampler is seeded with its rank: the ranks shuffle different
permutations, so their shares overlap and some points are never trained in an epoch."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from zoo_common import StopFlag, dataset, finish, free_port, load, model, options, save_atomic

WORLD = 2


def worker(rank: int, port: int, args) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    path = os.path.join(args.out, "checkpoint.pt")
    torch.manual_seed(0)
    net = DDP(model())
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 40))
    data = dataset()
    # the defect: each rank's sampler seeded with its rank
    sampler = DistributedSampler(data, num_replicas=WORLD, rank=rank, shuffle=True,
                                 seed=rank)  # fix: seed=0)
    # a generator of its own: the loader draws its workers' base seed from it, not from torch's RNG
    loader = DataLoader(data, batch_size=args.batch // WORLD, sampler=sampler, generator=torch.Generator())
    torch.manual_seed(1000 + rank)  # each rank's own dropout stream
    epoch = step = 0
    ck = load(path)
    if ck:
        net.module.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        sched.load_state_dict(ck["sched"])
        epoch, step = ck["epoch"], ck["step"]
        torch.set_rng_state(ck["rng"][rank])
    stop = StopFlag()

    def save():
        rngs = [None] * WORLD
        dist.all_gather_object(rngs, torch.get_rng_state())
        if rank == 0:
            save_atomic({"model": net.module.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                         "rng": rngs, "epoch": epoch, "step": step}, path)
        dist.barrier()

    while epoch < args.epochs:
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            if i < step:
                continue
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()
            sched.step()
            step = i + 1
            stopping = torch.tensor([float(stop.requested)])
            dist.all_reduce(stopping)
            if step % args.save_every == 0 or stopping.item():
                save()
            if stopping.item():
                dist.destroy_process_group()
                return
        epoch, step = epoch + 1, 0
    finish(net.module, opt)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(free_port(), options()), nprocs=WORLD)
