"""Notebook 05's exercises: find the newest checkpoint that loads (05.newest); restore everything the next step
needs from it (05.resume); fix a given loop's save and load until the audit says exact (05.audit). The last two
are checked by the audit (:mod:`.audited`)."""
from __future__ import annotations

import os
import random
import signal
import tempfile
from pathlib import Path

import torch

from course_lib._runtime.rank_start import start_ranks
from course_lib.checkpoint.faults import write_half
from course_lib.exercises.audited import check_by_audit
from course_lib.exercises.base import Exercise, Fail, learner_call, register, say


def half_write(_rank: int, state: dict, target: str) -> None:
    """A process that a real SIGKILL stops half-way through ``torch.save`` of ``state`` to
    ``target`` (05.newest's broken newest file), through the kit's one cut-a-save-half-way. Started
    as a rank is (one of one), from the ranks' forkserver: no fresh interpreter to import torch."""
    write_half(state, target, then=lambda: os.kill(os.getpid(), signal.SIGKILL))


def _book_files(folder: Path, epochs: list[int], half: int | None) -> None:
    """Real book-style checkpoints of a real model; ``half``'s file written by a process that a
    real SIGKILL stopped half-way through ``torch.save``."""
    model = torch.nn.Linear(64, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in epochs:
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                    "loss": 1.0 / epoch}, folder / f"model_epoch_{epoch}.pth")
    if half is not None:
        state = {"epoch": half, "model_state_dict": model.state_dict(), "loss": 1.0 / half}
        proc = start_ranks(half_write, (state, str(folder / f"model_epoch_{half}.pth")), nprocs=1).processes[0]
        proc.join()
        assert proc.exitcode == -9, "the half-writing process was not killed"


def _check_newest(funcs: dict, seed: int, lang: str) -> str:
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
                   "选中了 {want}：能加载的最新文件（写 {half} 写到一半时，进程被真实地杀掉了）", want=want,
                   half=half)
    if name == half:
        raise Fail(say(lang, "{half} does not load: a kill came half-way through its save. Try to load each "
                             "candidate, newest first, and skip those that fail",
                       "{half} 无法加载：保存到一半时进程被杀。按从新到旧逐个尝试加载，跳过失败的", half=half))
    if name == max(f"model_epoch_{e}.pth" for e in epochs):  # the largest name as a string
        raise Fail(say(lang, "'{got}' is the largest name as a string, not the newest: sort by the epoch number "
                             "(int) in the name", "'{got}' 只是按字符串排序最大，不是最新的：应按文件名中的 epoch 数字"
                             "排序", got=name))
    if got is None:
        raise Fail(say(lang, "your function returned None, but the folder holds {n} model_epoch_N.pth files and "
                             "all but one of them load", "你的函数返回了 None，可是文件夹里有 {n} 个 model_epoch_N.pth "
                             "文件，除了一个之外都能加载", n=len(epochs)))
    raise Fail(say(lang, "your function returned {got!r}: not the newest model_epoch_N.pth of the folder that loads",
                   "你的函数返回了 {got!r}：这不是文件夹里能加载的最新的 model_epoch_N.pth", got=got))


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
            "一个都加载不了就返回 None。")]))

register(Exercise(
    "05.resume", ("The chapter's resume, made exact", "把本章的断点续训补到逐位相同"), ("resume_training",),
    lambda funcs, seed, lang: check_by_audit("05.resume", funcs, seed, lang),
    hints=[("The chapter's resume_training restores the model and the optimizer and returns the epoch. The run "
            "never interrupted also had a learning-rate schedule, random dropout masks and a place in the middle "
            "of an epoch: restore all of it from the one file you are given.",
            "本章的 resume_training 恢复模型和优化器，返回 epoch。从未中断的那次训练还有学习率调度、随机的 dropout "
            "掩码，以及它在一个 epoch 中间的位置：把这些都从给你的那个文件里恢复出来。"),
           ("Which key holds what: read the save that wrote the file, book_style_save in "
            "course_lib/exercises/audit_loop.py. Load the file with torch.load(path, weights_only=True) (a dict); "
            "each object with state has its load_state_dict, and the RNG has torch.set_rng_state.",
            "哪个键存的是什么，去看写这个文件的保存函数：course_lib/exercises/audit_loop.py 里的 book_style_save。"
            "用 torch.load(path, weights_only=True) 加载这个文件（得到一个 dict）；每个有状态的对象都有自己的 "
            "load_state_dict，随机数生成器用 torch.set_rng_state。"),
           ("Restore the scheduler only when one is given, and return {'epoch': ..., 'step_in_epoch': ..., "
            "'global_step': ...} exactly as the file holds them: they already count the steps done, and the loop "
            "goes on from there.",
            "只在传入 scheduler 时才恢复它；原样返回文件里的 {'epoch': ..., 'step_in_epoch': ..., "
            "'global_step': ...}：这些数已经把做完的步算在内，训练循环从那里接着走。")]))


register(Exercise(
    "05.audit", ("Fix a loop until the audit says exact", "修一个训练循环，直到审计的结论是逐位相同"),
    ("save_checkpoint", "load_checkpoint"), lambda funcs, seed, lang: check_by_audit("05.audit", funcs, seed, lang),
    hints=[("Run the check and read its one line: the audit names the first piece of state or the first habit that "
            "breaks the resume. Fix that, run it again: one finding at a time.",
            "运行检查，读它给出的那一行：审计会指出第一个让续训出错的状态或习惯做法。改掉它，再运行：一次只改一个问题。"),
           ("The next step reads the model, the optimizer's state, the scheduler (the learning rate), torch's RNG "
            "(dropout: torch.get_rng_state / set_rng_state) and where the loop is: the epoch and the step within it.",
            "下一步要读的是：模型、优化器状态、学习率调度器（决定当前的学习率）、torch 的随机数生成器（dropout："
            "torch.get_rng_state / set_rng_state），以及训练循环的位置：epoch 和 epoch 内的步。"),
           ("Write the file atomically: torch.save into path + '.tmp' opened with open(..., 'wb'), f.flush(), "
            "os.fsync(f.fileno()), then os.replace(tmp, path); load_checkpoint returns (epoch, step).",
            "原子地写文件：用 open(..., 'wb') 打开 path + '.tmp'，torch.save 写进去，f.flush()，"
            "os.fsync(f.fileno())，再 os.replace(tmp, path)；load_checkpoint 返回 (epoch, step)。")],
    solution="course_lib.exercises.solutions.ex05_audit"))
