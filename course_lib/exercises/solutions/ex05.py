"""Notebook 05: find the newest checkpoint that loads; the chapter's resume_training, made exact.
notebook 05：找到能加载的最新检查点；把本章的 resume_training 补到逐位相同。"""
import os
import re

import torch


def resume_training(model, optimizer, path, scheduler=None):
    # The chapter's resume_training(model, optimizer, path): `path` is one checkpoint file, the newest
    # that loads (the loop finds it, as newest_checkpoint below finds a model_epoch_N.pth). Two things
    # added, so that the run goes on as if never interrupted: the scheduler, and the RNG state (the
    # dropout masks). It returns the position (epoch, step in the epoch, global step), not only the
    # chapter's epoch: the loop saves in the middle of epochs, and starting the epoch again would
    # repeat the steps already done.
    # 本章的 resume_training(model, optimizer, path)：`path` 是一个检查点文件，能加载的最新那个（由训练循环
    # 找出，就像下面的 newest_checkpoint 找 model_epoch_N.pth）。多了两样，训练才能像从未中断那样接着走：
    # scheduler，以及随机数生成器状态（dropout 掩码）。它返回位置（epoch、epoch 内的步、全局步），而不只是
    # 本章的 epoch：训练循环在 epoch 中途保存，从 epoch 开头重来会把已经做过的步再做一遍。
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    if scheduler is not None:
        scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
    torch.set_rng_state(checkpoint["rng_state"])  # the dropout masks continue / dropout 掩码接着原来的序列
    print(f"starting from step {checkpoint['global_step']} (epoch {checkpoint['epoch'] + 1})")
    return {"epoch": checkpoint["epoch"], "step_in_epoch": checkpoint["step_in_epoch"],
            "global_step": checkpoint["global_step"]}


def newest_checkpoint(folder):
    # Newest by the epoch number in the name, and only a file that loads.
    # 按文件名中的 epoch 数字取最新的，而且必须能加载。
    found = []
    for name in os.listdir(folder):
        match = re.fullmatch(r"model_epoch_(\d+)\.pth", name)
        if match:
            found.append((int(match.group(1)), name))
    for _, name in sorted(found, reverse=True):
        path = os.path.join(folder, name)
        try:
            torch.load(path, weights_only=True)
            return path
        except Exception:
            continue  # half-written: try the one before / 只写了一半：试前一个
    return None
