"""Exercises 04 and 05, the parent's side: the learner's training killed for real, resumed, judged.

For each scenario the grader picks (seeded, printed), :func:`scenario` runs attempt 1 of the
loop in :mod:`.loop` with a real kill (as a step begins; inside a save's ``torch.save``; for 04,
at the save's last step, its rename or copy onto the checkpoint), then attempt 2 that resumes
through the learner's code, and :func:`judge` names what went wrong: ``compare_runs`` against the
run never interrupted gives the first divergent step and the samples skipped or repeated; the
digests of the true state at the save (``truth/``) against those restored (``restored.json``)
name the missing piece: model, optimizer, scheduler, RNG, or the position within the epoch (not
kept, or a whole number of steps late or early). A checkpoint that does not load after the kill
is named by the call the kill struck (``struck.json``): a copy over the checkpoint is not atomic.
"""
from __future__ import annotations

import json
import pickle
import shutil
from dataclasses import asdict
from pathlib import Path

import torch

from course_lib._runtime.rank_start import start_process
from course_lib.data.prepare import cache_root
from course_lib.exercises.base import Fail, say
from course_lib.exercises.loop import (
    COPIES,
    EPOCHS,
    EXIT_LEARNER_ERROR,
    EXIT_NO_COMMIT,
    EXIT_NO_TORCH_SAVE,
    SAVE_EVERY,
    LoopSettings,
    attempt,
    data_file,
    steps_per_epoch,
)
from course_lib.watch.compare import compare_runs

PARTS = {  # what a digest that differs means, in words a teacher would use
    "model": ("the model's weights were not restored", "模型权重没有恢复"),
    "optimizer": ("the optimizer state was not restored (AdamW's moments start again from zero)",
                  "优化器状态没有恢复（AdamW 的动量从零重新开始）"),
    "scheduler": ("the learning-rate scheduler was not restored (its warm-up starts again)",
                  "学习率调度器没有恢复（预热从头开始）"),
    "rng": ("the RNG state was not restored (the dropout masks after the resume differ)",
            "随机数生成器状态没有恢复（续训后的 dropout 掩码不同）"),
}


def start(s: LoopSettings, timeout: float = 180) -> int:
    """One attempt, one real process, forked from the forkserver where there is one (a fresh
    interpreter imports torch again: 04.save's check took 38.4 s that way, 6.8 s forked, on 2
    cores); its exit code (-9: SIGKILLed)."""
    path = Path(s.run_dir) / f"settings-attempt{s.attempt}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(s)))
    proc = start_process(attempt, (str(path),))
    proc.join(timeout)
    if proc.exitcode is None:
        proc.kill()
        proc.join()
        raise RuntimeError(f"the exercise loop did not finish in {timeout:.0f} s ({path})")
    if proc.exitcode not in (0, -9, EXIT_LEARNER_ERROR, EXIT_NO_TORCH_SAVE, EXIT_NO_COMMIT):
        error = Path(s.run_dir) / "loop_error.txt"
        raise RuntimeError(f"the exercise loop failed (exit {proc.exitcode}):\n"
                           + (error.read_text()[-3000:] if error.exists() else "(no traceback: see the kernel's log)"))
    return proc.exitcode


def reference(exercise: str) -> Path:
    """The loop never interrupted, with the reference solution (trained once, then reused)."""
    run_dir = cache_root() / "exercises" / f"reference-{exercise}-v2"  # v2: one thread
    if not (run_dir / "final" / "summary.json").exists():
        shutil.rmtree(run_dir, ignore_errors=True)
        start(LoopSettings(str(run_dir), data_file(), exercise, None))
    return run_dir


def pick_scenarios(exercise: str, seed: int) -> list[tuple[int, str]]:
    """The grader's kills: a SIGKILL in the middle of an epoch, between two saves, after the
    first save ten steps in (05: two saves before it, so the newest file is not the first);
    a SIGKILL inside a save's ``torch.save`` that has an older save before it; and (04) a SIGKILL
    at a save's last step, the rename or copy onto the checkpoint, with two saves before it (the
    one before shows which call is the last, over a checkpoint already there)."""
    import random

    rng = random.Random(seed)
    low = 2 * SAVE_EVERY + 1 if exercise == "05" else SAVE_EVERY + 1
    total = EPOCHS * steps_per_epoch()
    step = rng.choice([k for k in range(low, total) if k % SAVE_EVERY != 1 and k % steps_per_epoch() > 1])
    saves = [k for k in range(3 * SAVE_EVERY if exercise == "05" else 2 * SAVE_EVERY, total, SAVE_EVERY)]
    picked = [(step, "sigkill"), (rng.choice(saves), "during-save")]
    if exercise == "04":
        picked.append((rng.choice([k for k in saves if k >= 3 * SAVE_EVERY and k != picked[1][0]]), "during-commit"))
    return picked


def _learner_failure(run_dir: Path, lang: str, ex_id: str) -> Fail:
    return Fail(say(lang, "{ex}: your code raised an exception:\n{tb}", "{ex}：你的代码抛出了异常：\n{tb}",
                    ex=ex_id, tb=(run_dir / "learner_error.txt").read_text()))


ATOMIC = ("write a temporary file, flush + os.fsync it, then os.replace it onto the path",
          "应先写临时文件，flush 并 os.fsync，再用 os.replace 把它换到检查点的路径上")


def _check_file(run_dir: Path, kill_mode: str, step: int, lang: str) -> None:
    """04: after the kill, the one checkpoint file must load with ``weights_only=True``; a kill at
    the save's last step (``struck.json``) names the call it struck."""
    path = run_dir / "checkpoint.pt"
    struck = json.loads((run_dir / "struck.json").read_text()) if (run_dir / "struck.json").exists() else None
    if not path.exists():
        if struck and struck["call"] not in COPIES:
            raise Fail(say(lang, "killed at step {step} just before your {call}, there was no {name}: the old checkpoint "
                                 "was removed (or moved away) before the new one was in place; os.replace(tmp, path) "
                                 "puts the new file over the old one in one step",
                           "第 {step} 步在你的 {call} 之前进程被杀掉，这时 {name} 已经不在了：新文件还没就位，旧检查点就先"
                           "被删掉（或移走）了；os.replace(tmp, path) 一步就用新文件覆盖旧文件",
                           step=step, call=struck["call"], name=path.name))
        raise Fail(say(lang, "after the kill there is no {name}: save_checkpoint must write the file at the path it is "
                             "given", "被杀之后没有 {name}：save_checkpoint 必须把文件写到传给它的路径", name=path.name))
    try:
        torch.load(path, weights_only=True)
    except pickle.UnpicklingError as err:
        raise Fail(say(lang, "your checkpoint holds objects that torch.load(weights_only=True) refuses ({err}): save "
                             "state_dict()s, tensors and numbers, not objects",
                       "你的检查点里有 torch.load(weights_only=True) 拒绝加载的对象（{err}）：只保存 state_dict()、"
                       "张量和数字", err=str(err).splitlines()[0][:120])) from None
    except Exception as err:
        if struck and struck["call"] in COPIES:
            raise Fail(say(lang, "{call} over the checkpoint leaves half a file when killed; {fix} (killed half-way "
                                 "through your {call} at step {step}: {name} no longer loads)",
                           "用 {call} 覆盖检查点，被杀时只留下半个文件；{fix}（第 {step} 步你的 {call} 复制到一半时"
                           "进程被杀掉，{name} 再也加载不了）", call=struck["call"], fix=say(lang, *ATOMIC), step=step,
                           name=path.name)) from None
        if kill_mode in ("during-save", "during-commit"):
            raise Fail(say(lang, "the checkpoint is unreadable after a kill during the save at step {step} ({err}): {fix}",
                           "第 {step} 步保存时被杀，检查点就读不出来了（{err}）：{fix}", step=step,
                           err=type(err).__name__, fix=say(lang, *ATOMIC))) from None
        raise Fail(say(lang, "{name} does not load ({err})", "{name} 无法加载（{err}）", name=path.name,
                       err=str(err).splitlines()[0][:120])) from None


def scenario(ex_id: str, learner: str | None, workdir: Path, kill_step: int, kill_mode: str, lang: str) -> dict:
    exercise = ex_id[:2]
    run_dir = workdir / f"{kill_mode}-{kill_step}"
    shutil.rmtree(run_dir, ignore_errors=True)
    data = data_file()
    first = start(LoopSettings(str(run_dir), data, exercise, learner, 1, kill_step, kill_mode))
    if first == EXIT_LEARNER_ERROR:
        raise _learner_failure(run_dir, lang, ex_id)
    if first == EXIT_NO_TORCH_SAVE:
        raise Fail(say(lang, "your save_checkpoint never called torch.save, so the check could not kill it half-way "
                             "through writing: write the checkpoint with torch.save",
                       "你的 save_checkpoint 没有调用 torch.save，检查无法在写到一半时杀掉它：请用 torch.save 写检查点"))
    if first == EXIT_NO_COMMIT:
        raise Fail(say(lang, "your save_checkpoint puts the checkpoint on its path without renaming a finished file onto "
                             "it (no os.replace, os.rename or shutil.move onto checkpoint.pt): a kill while it writes "
                             "leaves half a file there; {fix}", "你的 save_checkpoint 没有把写完的文件重命名到检查点的路径上"
                             "（没有 os.replace、os.rename 或 shutil.move 到 checkpoint.pt）：写到一半被杀，那里就只剩"
                             "半个文件；{fix}", fix=say(lang, *ATOMIC)))
    if exercise == "04":
        _check_file(run_dir, kill_mode, kill_step, lang)
    second = start(LoopSettings(str(run_dir), data, exercise, learner, 2, resume=True))
    if second == EXIT_LEARNER_ERROR:
        raise _learner_failure(run_dir, lang, ex_id)
    return judge(reference(exercise), run_dir, exercise, kill_step, kill_mode, lang)


def _position_problem(got: list[int], saved: list[int], lang: str) -> str:
    """What a resumed position (epoch, step in epoch, global step) other than the saved one means:
    a position in the epoch that was not kept (the epoch started over), or a whole number of steps
    late or early."""
    spe = steps_per_epoch()
    moved = (got[0] * spe + got[1]) - (saved[0] * spe + saved[1])
    if moved and moved == got[2] - saved[2] and (got[1] or not saved[1]):
        first, last = sorted((saved[2] + 1, got[2]))
        steps = say(lang, "step {a}", "第 {a} 步", a=first) if first == last else \
            say(lang, "steps {a}-{b}", "第 {a}-{b} 步", a=first, b=last)
        many = say(lang, "one step", "一步") if abs(moved) == 1 else say(lang, "{k} steps", " {k} 步", k=abs(moved))
        if moved > 0:
            return say(lang, "the resume started {many} late (at step {got} instead of {want}): {steps} never trained; "
                             "return the position exactly as saved (it already counts the steps done)",
                       "续训晚了{many}（从第 {got} 步开始，而不是第 {want} 步）：{steps}根本没有训练；应原样返回保存时"
                       "的位置（它已经把做完的步算在内了）", many=many, got=got[2] + 1, want=saved[2] + 1, steps=steps)
        return say(lang, "the resume started {many} early (at step {got} instead of {want}): {steps} trained twice; "
                         "return the position exactly as saved", "续训早了{many}（从第 {got} 步开始，而不是第 {want} 步）："
                         "{steps}训练了两次；应原样返回保存时的位置", many=many, got=got[2] + 1, want=saved[2] + 1,
                   steps=say(lang, "step {a}", "第 {a} 步", a=got[2] + 1) if moved == -1 else
                   say(lang, "steps {a}-{b}", "第 {a}-{b} 步", a=got[2] + 1, b=saved[2]))
    return say(lang, "the position within the epoch was not saved (the resume started epoch {e} at step {s} instead of "
                     "epoch {te} step {t})", "没有保存 epoch 内的位置（续训从第 {e} 个 epoch 的第 {s} 步开始，而不是第 {te} "
                     "个 epoch 的第 {t} 步）", e=got[0] + 1, s=got[1], te=saved[0] + 1, t=saved[1])


def judge(ref: Path, run_dir: Path, exercise: str, kill_step: int, kill_mode: str, lang: str) -> dict:  # noqa: C901 (one list of checks, in the order the verdict says them)
    """Pass (the resumed run is the run never interrupted, from the newest complete checkpoint)
    or :class:`Fail` naming the first divergent step and every missing piece of state."""
    cmp = compare_runs(ref, run_dir)
    saved = json.loads((run_dir / "restored.json").read_text())
    restored, fresh = saved["restored"], saved["fresh"]
    resumed = restored["progress"][2] if restored["progress"] else 0
    if kill_mode == "sigkill":
        newest = (kill_step - 1) // SAVE_EVERY * SAVE_EVERY
    else:  # killed inside the save of kill_step, or (no struck.json) as that save returned
        newest = kill_step if kill_mode == "during-commit" and not (run_dir / "struck.json").exists() \
            else kill_step - SAVE_EVERY
    # 04 has one file, which holds the save of step `newest`; 05's loop hands the newest file that loads
    truth_file = run_dir / "truth" / f"attempt1-step-{newest}.json"
    problems = []
    if (run_dir / "save_changed_state.txt").exists():
        problems.append(say(lang, "your save_checkpoint changes the training state it saves (it must only read it)",
                            "你的 save_checkpoint 改变了它所保存的训练状态（它只应读取）"))
    if restored["progress"] is None and exercise == "04":
        problems.append(say(lang, "load_checkpoint returned None: return the progress dict that was saved",
                            "load_checkpoint 返回了 None：应返回保存时的 progress 字典"))
    elif restored["progress"] is None and exercise == "05":
        problems.append(say(lang, "resume_training returned None, and the run started from scratch: return the "
                                  "position the file holds", "resume_training 返回了 None，训练只好从头开始：应返回"
                                  "文件里保存的位置"))
    if truth_file.exists():
        truth = json.loads(truth_file.read_text())
        for part, (en, zh) in PARTS.items():
            if restored[part] != truth[part]:
                problems.append(say(lang, en, zh) if restored[part] == fresh[part] else say(
                    lang, "{what} restored to a state other than the one saved at step {n}",
                    "{what}恢复成了与第 {n} 步保存时不同的状态", what=part, n=truth["progress"][2]))
        if restored["progress"] is not None and restored["progress"] != truth["progress"]:
            problems.append(_position_problem(restored["progress"], truth["progress"], lang))
    head = []
    if cmp["first_divergent_step"] is not None:
        head.append(say(lang, "diverges at step {n}", "从第 {n} 步开始出现分歧", n=cmp["first_divergent_step"]))
    if cmp["repeated_samples"] or cmp["skipped_samples"]:
        head.append(say(lang, "{r} samples repeated, {s} skipped", "{r} 个样本重复，{s} 个被跳过",
                        r=cmp["repeated_samples"], s=cmp["skipped_samples"]))
    if not problems and cmp["identical"]:
        return {"kill_step": kill_step, "kill_mode": kill_mode, "resumed_from": resumed, "compare": cmp}
    if not problems:
        problems.append(say(lang, "the final parameters differ from the run never interrupted",
                            "最终参数与不中断的训练不同"))
    comma, colon, semicolon = (("，", "：", "；") if lang == "zh" else (", ", ": ", "; "))
    raise Fail(comma.join(head) + (colon if head else "") + semicolon.join(problems),
               {"kill_step": kill_step, "kill_mode": kill_mode, "resumed_from": resumed, "compare": cmp})


def check_killed(ex_id: str, funcs: dict, seed: int, lang: str) -> tuple[str, dict]:
    """The checker of 04.save and 05.resume: the learner's functions carried to the loop's
    processes, every scenario the seed picks, each killed and resumed for real."""
    from course_lib.exercises.carry import carry_for_check

    workdir, learner = carry_for_check(ex_id, funcs, lang)
    outcomes = []
    for step, mode in pick_scenarios(ex_id[:2], seed):
        print(say(lang, "{ex}: killing your training ({mode}) at step {step} (seed {seed}) ...",
                  "{ex}：在第 {step} 步杀掉你的训练（{mode}，种子 {seed}）……", ex=ex_id, mode=mode, step=step, seed=seed),
              flush=True)
        outcomes.append(scenario(ex_id, learner, workdir, step, mode, lang))
    text = "; ".join(say(lang, "killed ({m}) at step {k}, resumed from step {r}: identical to the run never interrupted",
                         "第 {k} 步被杀（{m}），从第 {r} 步续训：与不中断的训练逐位相同",
                         m=o["kill_mode"], k=o["kill_step"], r=o["resumed_from"]) for o in outcomes)
    return text, {"scenarios": outcomes}
