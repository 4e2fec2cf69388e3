"""Wrong answers to notebook 03's exercises (they run in real spawned ranks)."""
import functools

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

from course_lib.data.batching import pad_batch
from course_lib.ddp.models import build_model
from course_lib.textbook.book import IMDBReviews
from course_lib.textbook.observer import Observer


def same_order_every_epoch(n, epoch, rank, world_size, seed):
    g = torch.Generator()
    g.manual_seed(seed)  # the epoch is forgotten
    return torch.randperm(n, generator=g).tolist()[rank::world_size]


def every_rank_the_same(n, epoch, rank, world_size, seed):
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    return torch.randperm(n, generator=g).tolist()[: n // world_size]  # no rank in the slice


def _worker(rank, world_size, settings, sampler_rank, set_epoch, wrap):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(settings.seed)
    dataset = IMDBReviews(settings.data_file, "train", settings.train_reviews)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=sampler_rank(rank))
    loader = DataLoader(dataset, batch_size=settings.batch_size, sampler=sampler,
                        collate_fn=functools.partial(pad_batch, pad_id=dataset.pad_id))
    model = build_model("bag", dataset.vocab_size, dim=8)
    ddp_model = DDP(model) if wrap else model
    optimizer = torch.optim.AdamW(ddp_model.parameters(), lr=settings.lr)
    kit = Observer(settings, rank, world_size, len(loader))
    for epoch in range(settings.epochs):
        if set_epoch:
            sampler.set_epoch(epoch)
        for step, batch in enumerate(loader):
            optimizer.zero_grad()
            loss = nn.CrossEntropyLoss()(ddp_model(batch["input_ids"], batch["attention_mask"]), batch["label"])
            loss.backward()
            optimizer.step()
            print(f"Rank {rank}, Epoch [{epoch + 1}/{settings.epochs}], Step [{step + 1}/{len(loader)}], Loss: {loss.item():.4f}")
            kit.record(epoch, step, loss.item(), batch)
    kit.finish(model, None)
    dist.destroy_process_group()


def forgets_set_epoch(rank, world_size, settings):
    _worker(rank, world_size, settings, lambda r: r, False, True)


def sampler_rank_zero(rank, world_size, settings):
    _worker(rank, world_size, settings, lambda r: 0, True, True)


def no_ddp(rank, world_size, settings):
    _worker(rank, world_size, settings, lambda r: r, True, False)


WRONG = {
    "03.split": [("the epoch forgotten", (same_order_every_epoch,), "repeats epoch 1"),
                 ("no rank in the slice", (every_rank_the_same,), "same reviews")],
    "03.worker": [("set_epoch forgotten", (forgets_set_epoch,), "repeats epoch 1"),
                  ("rank=0 for every sampler", (sampler_rank_zero,), "same reviews"),
                  ("no DDP", (no_ddp,), "different parameters")],
}
