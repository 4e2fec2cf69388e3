"""Notebook 04's exercises: watch more than the loss; a checkpoint that survives a kill mid-save."""
from __future__ import annotations

import math
import tempfile

import torch
import torch.nn.functional as F

from course_lib.exercises.audited import check_by_audit
from course_lib.exercises.base import Exercise, Fail, book_data, learner_call, register, say


def _check_monitor(funcs: dict, seed: int, lang: str) -> str:
    """Twelve real optimizer steps on real reviews, the learner's ``log_metrics`` after each
    backward pass; TensorBoard's own reader reads back what it wrote."""
    from torch.utils.tensorboard import SummaryWriter

    from course_lib.ddp.models import build_model
    from course_lib.watch.monitor import read_scalars

    data = book_data()
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
                                 "global_step", "'{tag}' 记录在第 {steps} 步，应为 1..12：把 step 作为 "
                                 "add_scalar 的 global_step", tag=tag, steps=steps[:6]))
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
               "12 步的损失、学习率和梯度范数都已记录，并从事件文件中读回核对")


register(Exercise(
    "04.monitor", ("Log more than the loss", "不只记录损失"), ("log_metrics",), _check_monitor,
    hints=[("The loss alone does not say why a run goes wrong. Log two more numbers at every step: the learning "
            "rate this step used, and how large the gradients were (their norm), under the tags train/loss, "
            "train/lr and train/grad_norm, at the step you are given.",
            "只看损失，说不出训练为什么出问题。每一步再记两个数：这一步用的学习率，以及梯度有多大（梯度范数）；"
            "标签分别是 train/loss、train/lr 和 train/grad_norm，步数用传进来的 step。"),
           ("writer.add_scalar(tag, value, step) writes one point of a curve. The learning rate this step used is "
            "in optimizer.param_groups[0]['lr'] (warm-up changes it at every step).",
            "writer.add_scalar(tag, value, step) 写下曲线上的一个点。这一步用的学习率在 "
            "optimizer.param_groups[0]['lr'] 里（预热期间每一步都在变）。"),
           ("The gradient norm is the L2 norm of all gradients taken together: add up p.grad.pow(2).sum() over "
            "the parameters whose p.grad is not None, then take the square root of the sum.",
            "梯度范数是把所有梯度放在一起的 L2 范数：对 p.grad 不为 None 的参数，把 p.grad.pow(2).sum() "
            "加起来，再对总和开平方。")]))

register(Exercise(
    "04.save", ("A checkpoint that survives a kill", "被杀也不坏的检查点"), ("save_checkpoint", "load_checkpoint"),
    lambda funcs, seed, lang: check_by_audit("04.save", funcs, seed, lang),
    hints=[("The next step depends on more than the weights. List what changes at every step: the model, AdamW's "
            "moments, the learning rate's place in its schedule, the random numbers dropout draws, and where in "
            "the epoch you are.",
            "下一步依赖的不只是权重。数一数每一步都有什么在变：模型、AdamW 的一阶矩和二阶矩、学习率调度走到了哪里、"
            "dropout 抽的随机数，以及在 epoch 里走到了哪一步。"),
           ("model, optimizer and scheduler each have state_dict() and load_state_dict(); torch.get_rng_state() "
            "and torch.set_rng_state() hold the random number generator; progress is a plain dict. Put them all "
            "in one dict for torch.save, and load it with torch.load(path, weights_only=True).",
            "model、optimizer、scheduler 都有 state_dict() 和 load_state_dict()；torch.get_rng_state() 和 "
            "torch.set_rng_state() 管随机数生成器；progress 是普通的 dict。把它们放进一个 dict 交给 torch.save，"
            "加载时用 torch.load(path, weights_only=True)。"),
           ("Killed in the middle of writing, a file written in place is half a file: the old checkpoint is gone "
            "and the new one does not load. Write the new one under another name first, then put it in place in "
            "one step that cannot stop half-way: an atomic rename, os.replace (the temporary file first, then the "
            "checkpoint's path). A copy is no such step (killed half-way through shutil.copyfile, the path holds "
            "half a file).",
            "原地写文件时被杀，留下的是半个文件：旧检查点没了，新的又加载不了。先用另一个名字把新检查点写完，"
            "再用一步不会停在半路的操作把它放到原路径上：原子重命名 os.replace（先传临时文件，再传检查点的路径）。"
            "复制不是这样的一步（shutil.copyfile 复制到一半被杀，原路径上就是半个文件）。"),
           ("Before the rename, push the temporary file's bytes to the disk: open it yourself and call "
            "torch.save(state, f), then f.flush() and os.fsync(f.fileno()). load_checkpoint restores each part "
            "and returns the saved progress dict.",
            "重命名之前，先把临时文件的字节写到磁盘上：自己打开文件，调用 torch.save(state, f)，再 f.flush() 和 "
            "os.fsync(f.fileno())。load_checkpoint 逐个恢复各部分，并返回保存时的 progress 字典。")]))
