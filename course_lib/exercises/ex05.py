"""Notebook 05's exercises: find the newest checkpoint that loads; resume under the grader's kills."""
from __future__ import annotations

import random
import tempfile
from pathlib import Path

import torch

from course_lib._runtime.rank_start import start_process
from course_lib.exercises.base import Exercise, Fail, learner_call, register, say
from course_lib.exercises.killed_runs import check_killed
from course_lib.exercises.loop import half_write


def _book_files(folder: Path, epochs: list[int], half: int | None) -> None:
    """Real book-style checkpoints of a real model; ``half``'s file written by a process that a
    real SIGKILL stopped half-way through ``torch.save``."""
    model = torch.nn.Linear(64, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in epochs:
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(), "loss": 1.0 / epoch}, folder / f"model_epoch_{epoch}.pth")
    if half is not None:
        whole = folder / "whole.tmp"
        torch.save({"epoch": half, "model_state_dict": model.state_dict(), "loss": 1.0 / half}, whole)
        proc = start_process(half_write, (str(whole), str(folder / f"model_epoch_{half}.pth")))
        proc.join()
        whole.unlink()
        assert proc.exitcode == -9, "the half-writing process was not killed"


def _check_newest(funcs: dict, seed: int, lang: str) -> tuple[str, dict]:
    rng = random.Random(seed)
    n = rng.randint(5, 8)
    epochs = [2 * i for i in range(1, n + 1)]  # 2, 4, ..., at least 10: "model_epoch_8" > "model_epoch_10" as strings
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "notes.txt").write_text("not a checkpoint")
        got = learner_call("05.newest", lang, funcs["newest_checkpoint"], str(folder))
        if got is not None:
            raise Fail(say(lang, "in a folder with no checkpoint your function returned {got!r}; return None: "
                                 "there is nothing to resume from", "文件夹里没有检查点，你的函数却返回了 {got!r}；"
                                 "应返回 None：没有可续训的检查点", got=got))
        _book_files(folder, epochs[:-1], half=epochs[-1])
        got = learner_call("05.newest", lang, funcs["newest_checkpoint"], str(folder))
    name = None if got is None else Path(got).name
    want, half = f"model_epoch_{epochs[-2]}.pth", f"model_epoch_{epochs[-1]}.pth"
    if name == want:
        return say(lang, "picked {want}: the newest file that loads ({half} was half-written by a real kill)",
                   "选中了 {want}：能加载的最新文件（{half} 被真实的 kill 写了一半）", want=want, half=half), {}
    as_strings = max(f"model_epoch_{e}.pth" for e in epochs)
    if name == half:
        raise Fail(say(lang, "{half} does not load: a kill came half-way through its save. Try to load each "
                             "candidate, newest first, and skip those that fail (the answer is {want})",
                       "{half} 无法加载：保存到一半时进程被杀。按从新到旧逐个尝试加载，跳过失败的（正确答案是 {want}）",
                       half=half, want=want))
    if name == as_strings:
        raise Fail(say(lang, "'{got}' is the largest name as a string, not the newest: sort by the epoch number "
                             "(int) in the name (the answer is {want})", "'{got}' 只是按字符串排序最大，不是最新的："
                             "应按文件名中的 epoch 数字排序（正确答案是 {want}）", got=name, want=want))
    raise Fail(say(lang, "your function returned {got!r}; the newest checkpoint that loads is {want}",
                   "你的函数返回了 {got!r}；能加载的最新检查点是 {want}", got=got, want=want))


register(Exercise(
    "05.newest", ("The newest checkpoint that loads", "能加载的最新检查点"), ("newest_checkpoint",), _check_newest,
    hints=[("List the files that match model_epoch_<N>.pth and take N from each name.",
            "列出符合 model_epoch_<N>.pth 的文件，从名字里取出 N。"),
           ("sorted() of the names puts 'model_epoch_8.pth' after 'model_epoch_10.pth': sort by int(N).",
            "直接 sorted() 文件名，'model_epoch_8.pth' 会排在 'model_epoch_10.pth' 之后：应按 int(N) 排序。"),
           ("A kill during a save leaves a file that torch.load cannot read: newest first, try torch.load(..., "
            "weights_only=True) and skip the file on any exception; None if nothing loads.",
            "保存时被杀会留下 torch.load 读不了的文件：从最新的开始，尝试 torch.load(..., weights_only=True)，"
            "出错就跳过；都读不了就返回 None。")],
    solution="course_lib.exercises.solutions.ex05"))

register(Exercise(
    "05.resume", ("Resume under real kills", "在真实的 kill 下续训"), ("resume_training",),
    lambda funcs, seed, lang: check_killed("05.resume", funcs, seed, lang),
    hints=[("The files are the book's, one per save: model_step_<N>.pth, each holding model_state_dict, "
            "optimizer_state_dict, scheduler_state_dict, rng_state, epoch, step_in_epoch, global_step.",
            "文件和书里一样，每次保存一个：model_step_<N>.pth，里面有 model_state_dict、optimizer_state_dict、"
            "scheduler_state_dict、rng_state、epoch、step_in_epoch、global_step。"),
           ("Newest first by the number N, not by the name as a string; skip a file that does not load.",
            "按数字 N 从新到旧，而不是按字符串；跳过加载失败的文件。"),
           ("Restore all four objects (model, optimizer, scheduler, torch.set_rng_state) and return epoch, "
            "step_in_epoch and global_step: the loop continues from that position. Return None when nothing loads.",
            "恢复全部四样（模型、优化器、调度器、torch.set_rng_state），并返回 epoch、step_in_epoch 和 global_step："
            "训练循环从这个位置继续。什么都加载不了就返回 None。")],
    solution="course_lib.exercises.solutions.ex05", spawns=True))
