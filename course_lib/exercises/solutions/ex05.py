"""Notebook 05: the chapter's resume_training, grown up: find the newest checkpoint that loads.
笔记本 05：本章 resume_training 的完整版：找到最新的、能加载的检查点。"""
import os
import re

import torch


def resume_training(run_dir, model, optimizer, scheduler):
    # The book's names, model_step_{N}.pth, sort wrongly as strings ("model_step_5" > "model_step_40"):
    # sort by the number in the name, newest first.
    # 书里的文件名按字符串排序是错的（"model_step_5" > "model_step_40"）：按名字里的数字排序，最新的在前。
    found = []
    for name in os.listdir(run_dir):
        match = re.fullmatch(r"model_step_(\d+)\.pth", name)
        if match:
            found.append((int(match.group(1)), name))
    for step, name in sorted(found, reverse=True):
        try:
            checkpoint = torch.load(os.path.join(run_dir, name), weights_only=True)
        except Exception:
            # Half-written (killed during its save): fall back to the one before.
            # 只写了一半（保存时被杀）：退回到前一个。
            print(f"skipping {name}: it does not load")
            continue
        model.load_state_dict(checkpoint["model_state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
        scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
        torch.set_rng_state(checkpoint["rng_state"])
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
