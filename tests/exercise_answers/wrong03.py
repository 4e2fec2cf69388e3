"""Wrong answers to notebook 03's exercises (they run in real spawned ranks)."""
import functools

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from course_lib.data.batching import pad_batch


def same_order_every_epoch(n, epoch, rank, world_size, seed):
    g = torch.Generator()
    g.manual_seed(seed)  # the epoch is forgotten
    return torch.randperm(n, generator=g).tolist()[rank::world_size]


def every_rank_the_same(n, epoch, rank, world_size, seed):
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    return torch.randperm(n, generator=g).tolist()[: n // world_size]  # no rank in the slice


def _share(model, dataset, rank, world_size):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for i in range(rank, len(dataset), world_size):
            ids = torch.tensor([dataset[i]["input_ids"]])
            correct += int(model(ids, torch.ones_like(ids)).argmax(1).item() == dataset[i]["label"])
            total += 1
    return correct, total


def averages_accuracies(model, dataset, rank, world_size):
    correct, total = _share(model, dataset, rank, world_size)
    accuracy = torch.tensor([correct / total], dtype=torch.float64)
    dist.all_reduce(accuracy)
    return accuracy.item() / world_size  # the mean of the shares' accuracies


def no_all_reduce(model, dataset, rank, world_size):
    correct, total = _share(model, dataset, rank, world_size)
    return correct / total  # this rank's share only


def padded_sampler(model, dataset, rank, world_size):
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False)  # pads the last share
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, collate_fn=functools.partial(pad_batch,
                                                                                              pad_id=dataset.pad_id))
    model.eval()
    counts = torch.zeros(2)
    with torch.no_grad():
        for batch in loader:
            counts[0] += (model(batch["input_ids"], batch["attention_mask"]).argmax(1) == batch["label"]).sum()
            counts[1] += len(batch["label"])
    dist.all_reduce(counts)
    return (counts[0] / counts[1]).item()


WRONG = {
    "03.split": [("the epoch forgotten", (same_order_every_epoch,), "repeats epoch 1"),
                 ("no rank in the slice", (every_rank_the_same,), "same reviews")],
    "03.worker": [("the mean of the ranks' accuracies", (averages_accuracies,), "averaged the ranks' accuracies"),
                  ("no all_reduce", (no_all_reduce,), "each that of its own share"),
                  ("DistributedSampler's padding", (padded_sampler,), "counted twice")],
}
