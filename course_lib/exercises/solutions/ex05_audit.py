"""Notebook 05, exercise 05.audit: the save and the load that make the given loop resume exactly.
notebook 05 的练习 05.audit：让给定的训练循环逐位相同地续训的保存和加载。"""
import os

import torch


def save_checkpoint(path, model, optimizer, scheduler, epoch, step):
    # Everything the next step reads: the chapter's model and optimizer, and what it leaves out:
    # the schedule, the RNG (dropout), the step within the epoch. Written atomically: a temporary
    # file, fsynced, then renamed over the old checkpoint, which stays valid until then.
    # 下一步要读的一切：本章的模型和优化器，加上它漏掉的：学习率调度、随机数生成器（dropout）、epoch 内的步。
    # 原子地写入：先写临时文件并 fsync，再用原子重命名覆盖旧检查点；在那之前旧检查点一直有效。
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "rng": torch.get_rng_state(), "epoch": epoch, "step": step}
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_checkpoint(path, model, optimizer, scheduler):
    # Put back all of it, and say where the loop goes on: the epoch and the step within it.
    # 全部放回去，并告诉训练循环从哪里接着走：epoch 和 epoch 内的步。
    if not os.path.exists(path):
        return None
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    return state["epoch"], state["step"]
