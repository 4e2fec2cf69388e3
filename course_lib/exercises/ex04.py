"""Notebook 04's exercises: watch more than the loss; a checkpoint that survives a kill mid-save."""
from __future__ import annotations

import math
import tempfile

import torch
import torch.nn.functional as F

from course_lib.exercises.base import Exercise, Fail, learner_call, register, say
from course_lib.exercises.killed_runs import check_killed


def _check_monitor(funcs: dict, seed: int, lang: str) -> tuple[str, dict]:
    """Twelve real optimizer steps on real reviews, the learner's ``log_metrics`` after each
    backward pass; TensorBoard's own reader reads back what it wrote."""
    from torch.utils.tensorboard import SummaryWriter

    from course_lib.data.prepare import prepare_imdb
    from course_lib.ddp.models import build_model
    from course_lib.watch.monitor import read_scalars

    data = prepare_imdb(limit=1280, progress=False)
    torch.manual_seed(seed)
    model = build_model("bag", data.info["tokenizer"]["vocab_size"], dim=8)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: min(1.0, (i + 1) / 4))
    truth = {}
    with tempfile.TemporaryDirectory() as folder:
        writer = SummaryWriter(f"{folder}/tb")  # read_scalars reads DIR/tb, as in a run directory
        for step in range(1, 13):
            batch = data.train.batch(list(range((step - 1) * 32, step * 32)), data.info["tokenizer"]["pad_id"])
            optimizer.zero_grad()
            loss = F.cross_entropy(model(batch["input_ids"], batch["attention_mask"]), batch["label"])
            loss.backward()
            norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters() if p.grad is not None))
            truth[step] = {"train/loss": loss.item(), "train/lr": optimizer.param_groups[0]["lr"], "train/grad_norm": norm}
            learner_call("04.monitor", lang, funcs["log_metrics"], writer, step, loss, model, optimizer)
            optimizer.step()
            scheduler.step()
        writer.close()
        logged = read_scalars(folder)
    for tag in ("train/loss", "train/lr", "train/grad_norm"):
        if tag not in logged:
            raise Fail(say(lang, "TensorBoard has no '{tag}' (it has: {have}). Log loss, learning rate and gradient "
                                 "norm under these three names: the loss alone gives no clue why a run goes wrong",
                           "TensorBoard 里没有 '{tag}'（现有：{have}）。请用这三个名字记录损失、学习率和梯度范数："
                           "只看损失，出问题时找不到线索", tag=tag, have=", ".join(sorted(logged)) or "-"))
        steps = [s for s, _ in logged[tag]]
        if steps != list(range(1, 13)):
            raise Fail(say(lang, "'{tag}' was logged at steps {steps}, expected 1..12: pass the step as add_scalar's "
                                 "global_step", "'{tag}' 记录在第 {steps} 步，应为 1..12：把 step 作为 add_scalar 的 global_step",
                           tag=tag, steps=steps[:6]))
        for step, value in logged[tag]:
            want = truth[step][tag]
            if not math.isclose(value, want, rel_tol=1e-4, abs_tol=1e-7):
                hint = {"train/lr": say(lang, "read it from optimizer.param_groups[0]['lr'] (warm-up changes it each step)",
                                        "从 optimizer.param_groups[0]['lr'] 读取（预热期间每步都在变）"),
                        "train/grad_norm": say(lang, "the L2 norm of all gradients after backward: "
                                                     "sqrt(sum of p.grad.pow(2).sum())",
                                               "backward 之后所有梯度的 L2 范数：sqrt(各 p.grad.pow(2).sum() 之和)"),
                        "train/loss": say(lang, "log loss.item() of this step", "记录本步的 loss.item()")}[tag]
                raise Fail(say(lang, "'{tag}' at step {step} is {got:.6g}, the truth is {want:.6g}: {hint}",
                               "第 {step} 步的 '{tag}' 是 {got:.6g}，实际应为 {want:.6g}：{hint}",
                               tag=tag, step=step, got=value, want=want, hint=hint))
    return say(lang, "loss, learning rate and gradient norm logged at all 12 steps, read back from the event files",
               "12 步的损失、学习率和梯度范数都已记录，并从事件文件中读回核对"), {}


register(Exercise(
    "04.monitor", ("Log more than the loss", "不只记录损失"), ("log_metrics",), _check_monitor,
    hints=[("TensorBoard's SummaryWriter has add_scalar(tag, value, global_step).",
            "SummaryWriter 的 add_scalar(tag, value, global_step) 就够了。"),
           ("The rate this step uses is optimizer.param_groups[0]['lr'].", "本步用的学习率是 optimizer.param_groups[0]['lr']。"),
           ("Gradient norm: sum p.grad.pow(2).sum() over the parameters with a gradient, then the square root.",
            "梯度范数：对有梯度的参数求 p.grad.pow(2).sum() 之和，再开平方。")],
    solution="course_lib.exercises.solutions.ex04"))

register(Exercise(
    "04.save", ("A checkpoint that survives a kill", "被杀也不坏的检查点"), ("save_checkpoint", "load_checkpoint"),
    lambda funcs, seed, lang: check_killed("04.save", funcs, seed, lang),
    hints=[("The next step depends on more than the weights: what else changes at every step?",
            "下一步依赖的不只是权重：每一步还有什么在变？"),
           ("Five things: model, optimizer, scheduler state_dicts, torch.get_rng_state() (dropout), and progress "
            "(where in the epoch you are).", "五样：模型、优化器、调度器的 state_dict，torch.get_rng_state()（dropout），"
            "以及 progress（在 epoch 里走到了哪一步）。"),
           ("A kill during torch.save(state, path) leaves half a file at path. Write to path + '.tmp' first, then "
            "os.replace(tmp, path): the rename is atomic.", "torch.save(state, path) 写到一半被杀，path 上只剩半个文件。"
            "先写到 path + '.tmp'，再 os.replace(tmp, path)：改名是原子操作。"),
           ("Load with torch.load(path, weights_only=True), then load_state_dict each object, torch.set_rng_state, "
            "and return the progress dict.", "用 torch.load(path, weights_only=True) 加载，逐个 load_state_dict，"
            "torch.set_rng_state，最后返回 progress 字典。")],
    solution="course_lib.exercises.solutions.ex04", spawns=True))
