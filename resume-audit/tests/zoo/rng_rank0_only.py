"""Defect (two ranks, mp.spawn, DDP): only rank 0 saves its RNG, and at a resume every rank loads
rank 0's. Each rank draws its own dropout masks, so rank 1 goes on with the wrong stream."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from zoo_common import StopFlag, dataset, finish, free_port, load, model, options, save_atomic


def train(rank, world_size, port, args):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)
    ckpt = os.path.join(args.out, "ckpt.pt")
    torch.manual_seed(0)
    ddp = DDP(model())
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-2)
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, seed=0)
    loader = DataLoader(data, batch_size=args.batch // world_size, sampler=sampler, generator=torch.Generator())
    torch.manual_seed(rank)
    epoch = step = 0
    saved = load(ckpt)
    if saved:
        ddp.module.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        # the defect: rank 0's stream, on every rank
        torch.set_rng_state(saved["rng"])  # fix: torch.set_rng_state(saved["rng"][rank])
        epoch, step = saved["epoch"], saved["step"]
    stop = StopFlag()
    while epoch < args.epochs:
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            if i < step:
                continue
            opt.zero_grad()
            F.cross_entropy(ddp(x), y).backward()
            opt.step()
            step = i + 1
            flag = torch.tensor([float(stop.requested)])
            dist.all_reduce(flag)
            if step % args.save_every == 0 or flag.item():
                rng = torch.get_rng_state()  # fix: rng = [None] * world_size
                pass  # fix: dist.all_gather_object(rng, torch.get_rng_state())
                if rank == 0:
                    save_atomic({"model": ddp.module.state_dict(), "optimizer": opt.state_dict(), "rng": rng,
                                 "epoch": epoch, "step": step}, ckpt)
            if flag.item():
                dist.barrier()
                dist.destroy_process_group()
                return
        epoch, step = epoch + 1, 0
    finish(ddp.module, opt)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(train, args=(2, free_port(), options()), nprocs=2)
