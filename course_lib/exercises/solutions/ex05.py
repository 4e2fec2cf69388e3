"""Notebook 05: the chapter's resume_training, grown up: find the newest checkpoint that loads.
notebook 05：本章 resume_training 的完整版：找到最新的、能加载的检查点。"""
import os
import re

import torch


def resume_training(model, optimizer, path, scheduler=None):
    # The chapter's resume_training(model, optimizer, path), with the scheduler as the one addition.
    # `path` is the folder the loop saves into, one model_step_{N}.pth per save; a kill may have left
    # the newest one half-written. It returns the position (epoch, step in the epoch, global step),
    # not only the chapter's epoch: the loop saves in the middle of epochs, and starting the epoch
    # again would repeat the steps already done.
    # 本章的 resume_training(model, optimizer, path)，只多了一个 scheduler。`path` 是训练循环保存检查点的
    # 文件夹，每次保存一个 model_step_{N}.pth；进程被杀时，最新的那个可能只写了一半。它返回位置
    # （epoch、epoch 内的步、全局步），而不只是本章的 epoch：训练循环在 epoch 中途保存，
    # 从 epoch 开头重来会把已经做过的步再做一遍。
    # The book's names sort wrongly as strings ("model_step_5" > "model_step_40"): sort by the number.
    # 原书的文件名按字符串排序是错的（"model_step_5" > "model_step_40"）：按名字里的数字排序，最新的在前。
    found = []
    for name in os.listdir(path):
        match = re.fullmatch(r"model_step_(\d+)\.pth", name)
        if match:
            found.append((int(match.group(1)), name))
    for step, name in sorted(found, reverse=True):
        try:
            checkpoint = torch.load(os.path.join(path, name), weights_only=True)
        except Exception:
            # Half-written (killed during its save): fall back to the one before.
            # 只写了一半（保存时被杀）：退回到前一个。
            print(f"skipping {name}: it does not load")
            continue
        model.load_state_dict(checkpoint["model_state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
        if scheduler is not None:
            scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
        torch.set_rng_state(checkpoint["rng_state"])  # the dropout masks continue / dropout 掩码接着原来的序列
        print(f"starting from step {step} (epoch {checkpoint['epoch'] + 1})")
        return {"epoch": checkpoint["epoch"], "step_in_epoch": checkpoint["step_in_epoch"],
                "global_step": checkpoint["global_step"]}
    return None  # nothing to resume from: start fresh / 没有可续训的检查点：从头开始


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
