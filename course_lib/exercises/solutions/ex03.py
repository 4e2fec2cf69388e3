"""Notebook 03: each rank's share of the data, and an evaluation the ranks share.
notebook 03：每个 Rank 分到的数据，以及各 Rank 分担的评估。"""
import torch
import torch.distributed as dist


def rank_indices(n, epoch, rank, world_size, seed):
    # One permutation per epoch, the same on every rank: seeded by seed + epoch (what set_epoch does).
    # 每个 epoch 一个排列，各 Rank 相同：种子是 seed + epoch（这正是 set_epoch 的作用）。
    generator = torch.Generator()
    generator.manual_seed(seed + epoch)
    order = torch.randperm(n, generator=generator).tolist()
    # Rank r takes every world_size-th index starting at r: disjoint shares of equal size.
    # Rank r 从第 r 个开始每隔 world_size 取一个：互不重叠、大小相等。
    usable = n - n % world_size
    return order[rank:usable:world_size]


def evaluate(model, dataset, rank, world_size):
    # Each rank scores only its share: every world_size-th review, starting at its rank. Every review
    # once, none twice: DistributedSampler would pad the last share by repeating reviews.
    # 每个 Rank 只给自己那一份打分：从第 rank 条开始，每隔 world_size 条取一条。每条影评算一次，
    # 不重复：DistributedSampler 会重复几条影评来填充最后一份。
    model.eval()  # dropout off, as in the chapter's evaluate / 关掉 dropout，和本章的 evaluate 一样
    correct = total = 0
    with torch.no_grad():
        for i in range(rank, len(dataset), world_size):
            review = dataset[i]
            input_ids = torch.tensor([review["input_ids"]])
            logits = model(input_ids, torch.ones_like(input_ids))  # one review alone: no padding / 单独一条，无需填充
            correct += int(logits.argmax(dim=1).item() == review["label"])
            total += 1
    # Add up the counts of all ranks, not their accuracies: the shares may differ in size, and the
    # mean of two ratios is not the ratio of the sums. After all_reduce every rank holds the totals.
    # 把各 Rank 的计数加起来，而不是把准确率取平均：各份的大小可能不同，两个比值的平均不等于总和之比。
    # all_reduce 之后，每个 Rank 上都是总数。
    counts = torch.tensor([correct, total])
    dist.all_reduce(counts, op=dist.ReduceOp.SUM)
    return counts[0].item() / counts[1].item()
