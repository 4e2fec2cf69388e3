"""Correct, started by torchrun (one process per rank, env:// rendezvous): DDP with gloo, a
DistributedSampler with set_epoch, every rank's RNG in the checkpoint, the position in the
epoch, rank 0's atomic save, and a stop on SIGTERM agreed by all ranks.

    torchrun --standalone --nproc-per-node 2 correct_torchrun_ddp.py --out DIR
"""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from zoo_common import StopFlag, dataset, finish, load, model, options, save_atomic


def main() -> None:
    args = options()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    path = os.path.join(args.out, "snapshot.pt")
    torch.manual_seed(0)
    ddp_model = DDP(model())
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=36)
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=7)
    loader = DataLoader(data, batch_size=args.batch // world, sampler=sampler, generator=torch.Generator())
    torch.manual_seed(2000 + rank)
    epoch = step = 0
    snapshot = load(path)
    if snapshot is not None:
        ddp_model.module.load_state_dict(snapshot["model"])
        optimizer.load_state_dict(snapshot["optimizer"])
        scheduler.load_state_dict(snapshot["scheduler"])
        epoch, step = snapshot["epoch"], snapshot["step"]
        torch.set_rng_state(snapshot["rng"][rank])
    stop = StopFlag()
    while epoch < args.epochs:
        sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            if i < step:
                continue
            optimizer.zero_grad()
            F.cross_entropy(ddp_model(x), y).backward()
            optimizer.step()
            scheduler.step()
            step = i + 1
            flag = torch.tensor([float(stop.requested)])
            dist.all_reduce(flag)
            if step % args.save_every == 0 or flag.item():
                rngs = [None] * world
                dist.all_gather_object(rngs, torch.get_rng_state())
                if rank == 0:
                    save_atomic({"model": ddp_model.module.state_dict(), "optimizer": optimizer.state_dict(),
                                 "scheduler": scheduler.state_dict(), "rng": rngs, "epoch": epoch, "step": step}, path)
                dist.barrier()
            if flag.item():
                dist.destroy_process_group()
                return
        epoch, step = epoch + 1, 0
    finish(ddp_model.module, optimizer)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
