"""Notebook 03: each rank's share of the data, and the chapter's DDP worker.
笔记本 03：每个 Rank 分到的数据，以及本章的 DDP 工作函数。"""
import torch

from course_lib.textbook.book import train  # noqa: F401  the chapter's template is the reference worker / 本章模板就是参考答案


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
