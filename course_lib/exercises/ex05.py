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
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                    "loss": 1.0 / epoch}, folder / f"model_epoch_{epoch}.pth")
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
                   "选中了 {want}：能加载的最新文件（写 {half} 写到一半时，进程被真实地杀掉了）", want=want, half=half), {}
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
    hints=[("Newest means the largest epoch number N in model_epoch_N.pth, and the file must also load: a kill in "
            "the middle of a save leaves a newest file that does not.",
            "最新指的是 model_epoch_N.pth 里 epoch 数字 N 最大的那个，而且这个文件必须能加载：保存到一半时进程"
            "被杀，最新的文件就加载不了。"),
           ("os.listdir(folder) with re.fullmatch(r'model_epoch_(\\d+)\\.pth', name) finds the files and their N. "
            "Sort by int(N), not by the name: as strings 'model_epoch_8.pth' comes after 'model_epoch_10.pth'.",
            "os.listdir(folder) 加上 re.fullmatch(r'model_epoch_(\\d+)\\.pth', name) 找出文件和它们的 N。"
            "按 int(N) 排序，不要按文件名：按字符串比，'model_epoch_8.pth' 排在 'model_epoch_10.pth' 后面。"),
           ("Newest first, try torch.load(path, weights_only=True) and return the first path that loads, skipping "
            "a file on any exception; return None when nothing loads.",
            "从最新的开始，试着 torch.load(path, weights_only=True)，返回第一个能加载的路径，出任何异常就跳过；"
            "一个都加载不了就返回 None。")],
    solution="course_lib.exercises.solutions.ex05"))

register(Exercise(
    "05.resume", ("Resume after real kills", "进程被真实杀掉之后的断点续训"), ("resume_training",),
    lambda funcs, seed, lang: check_killed("05.resume", funcs, seed, lang),
    hints=[("The chapter's resume_training loads the one file it is given. Here path is the folder the loop saves "
            "into, one model_step_N.pth per save, and a kill may have left the newest one half-written: find the "
            "newest file that loads, and restore everything the step after it needs.",
            "本章的 resume_training 只加载给它的那一个文件。这里的 path 是训练循环保存检查点的文件夹，每次保存一个 "
            "model_step_N.pth，进程被杀时最新的那个可能只写了一半：找出能加载的最新文件，把它之后那一步需要的"
            "一切都恢复。"),
           ("Each file holds model_state_dict, optimizer_state_dict, scheduler_state_dict, rng_state, epoch, "
            "step_in_epoch and global_step. Sort the files by int(N), newest first (as strings 'model_step_5' "
            "comes after 'model_step_40'), and skip a file that torch.load(..., weights_only=True) cannot read.",
            "每个文件里有 model_state_dict、optimizer_state_dict、scheduler_state_dict、rng_state、epoch、"
            "step_in_epoch 和 global_step。按 int(N) 从新到旧排序（按字符串比，'model_step_5' 排在 'model_step_40' "
            "后面），跳过 torch.load(..., weights_only=True) 读不了的文件。"),
           ("Restore with load_state_dict (the scheduler only when one is given) and torch.set_rng_state, then "
            "return {'epoch': ..., 'step_in_epoch': ..., 'global_step': ...} from the file: the loop continues "
            "from that position. Return None when no file loads.",
            "用 load_state_dict 恢复（scheduler 只在传入时恢复），再 torch.set_rng_state，然后返回文件里的 "
            "{'epoch': ..., 'step_in_epoch': ..., 'global_step': ...}：训练循环从这个位置接着训练。"
            "没有能加载的文件就返回 None。")],
    solution="course_lib.exercises.solutions.ex05", spawns=True))
