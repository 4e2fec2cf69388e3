"""Notebook 04: a full-state checkpoint that a crash in the middle of the save does not destroy.
笔记本 04：完整状态的检查点，保存到一半时崩溃也不会毁掉它。"""
import os

import torch


def save_checkpoint(path, model, optimizer, scheduler, progress):
    # Everything the next step depends on, not only the weights (the chapter's three items are not enough):
    # 下一步依赖的一切，而不只是权重（本章的"三样"还不够）：
    state = {
        "model": model.state_dict(),            # the weights / 权重
        "optimizer": optimizer.state_dict(),    # AdamW's moments and step counts / AdamW 的动量和步数
        "scheduler": scheduler.state_dict(),    # where the LR schedule is / 学习率调度走到了哪里
        "rng": torch.get_rng_state(),           # the next dropout masks / 接下来的 dropout 掩码
        "progress": dict(progress),             # epoch, step in the epoch, global step / epoch、epoch 内的步、全局步
    }
    # Atomic: write a temporary file, then rename it over the old one in one step. A kill during
    # torch.save leaves a half-written temporary file and the previous checkpoint intact.
    # 原子写入：先写临时文件，再一步改名覆盖旧文件。torch.save 写到一半被杀，只留下半个临时文件，旧检查点完好。
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_checkpoint(path, model, optimizer, scheduler):
    # weights_only=True: a checkpoint is data, never code. / 检查点是数据，不是代码。
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    return state["progress"]


def log_metrics(writer, step, loss, model, optimizer):
    # Loss alone gives no clue why a run goes wrong: log the learning rate and the gradient norm too.
    # 只看损失，出问题时找不到线索：把学习率和梯度范数也记下来。
    norm = sum(p.grad.pow(2).sum().item() for p in model.parameters() if p.grad is not None) ** 0.5
    writer.add_scalar("train/loss", loss.item(), step)
    writer.add_scalar("train/lr", optimizer.param_groups[0]["lr"], step)
    writer.add_scalar("train/grad_norm", norm, step)
