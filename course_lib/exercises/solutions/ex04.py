"""Notebook 04: a full-state checkpoint that a crash in the middle of the save does not destroy.
notebook 04：完整状态的检查点，保存到一半时崩溃也不会毁掉它。"""
import os

import torch


def save_checkpoint(path, model, optimizer, scheduler, progress):
    # Everything the next step depends on, not only the weights (the chapter's three items are not enough):
    # 下一步依赖的一切，而不只是权重（本章的"三样"还不够）：
    state = {
        "model": model.state_dict(),            # the weights / 权重
        "optimizer": optimizer.state_dict(),    # AdamW's moments and step counts / AdamW 的一阶矩、二阶矩和步数
        "scheduler": scheduler.state_dict(),    # where the LR schedule is / 学习率调度走到了哪里
        "rng": torch.get_rng_state(),           # the next dropout masks / 接下来的 dropout 掩码
        "progress": dict(progress),             # epoch, step in the epoch, global step / epoch、epoch 内的步、全局步
    }
    # Atomic: write the new checkpoint under another name, then rename it over the old one in one step.
    # A kill at any moment leaves the old checkpoint or the new one, never half of one. (Copying the
    # temporary file over the old one with shutil.copyfile would not do: killed half-way, the path holds
    # half a file.)
    # 原子写入：先用另一个名字把新检查点写完，再一步重命名覆盖旧的。任何时刻被杀，留下的要么是旧检查点，
    # 要么是新检查点，不会是半个。（用 shutil.copyfile 把临时文件复制过去不行：复制到一半被杀，原路径上就是半个文件。）
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        # fsync: the bytes leave the operating system's page cache for the disk before the rename. It
        # protects against power loss or the machine going down; a SIGKILL of this process alone loses
        # nothing already written (the bytes are in the page cache, and the kernel still writes them out).
        # fsync：重命名之前，让字节离开操作系统的页缓存、真正写到磁盘上。它防的是断电或机器宕机；
        # 只是这个进程被 SIGKILL 杀掉，已经写出的字节不会丢（它们在页缓存里，内核照样会写到磁盘）。
        f.flush()
        os.fsync(f.fileno())
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
