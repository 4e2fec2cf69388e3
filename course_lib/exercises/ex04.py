"""Notebook 04's exercises: watch more than the loss; a checkpoint that survives a kill mid-save."""
from __future__ import annotations

import math
import tempfile

import torch
import torch.nn.functional as F

from course_lib.exercises.audited import check_by_audit
from course_lib.exercises.base import Exercise, Fail, book_data, learner_call, register
from course_lib.lab.i18n import both, tr


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
            raise Fail(tr("TensorBoard has no '{tag}' (it has: {have}). Log loss, learning rate and gradient norm under "
                          "these three names: the loss alone gives no clue why a run goes wrong", lang, tag=tag,
                          have=", ".join(sorted(logged)) or "-"))
        steps = [s for s, _ in logged[tag]]
        if steps != list(range(1, 13)):
            raise Fail(tr("'{tag}' was logged at steps {steps}, expected 1..12: pass the step as add_scalar's global_step",
                          lang, tag=tag, steps=steps[:6]))
        for step, value in logged[tag]:
            want = truth[step][tag]
            if not math.isclose(value, want, rel_tol=1e-4, abs_tol=1e-7):
                hint = {"train/lr": tr("read it from optimizer.param_groups[0]['lr'] (warm-up changes it each step)", lang),
                        "train/grad_norm": tr("the L2 norm of all gradients after backward: sqrt(sum of "
                                              "p.grad.pow(2).sum())", lang),
                        "train/loss": tr("log loss.item() of this step", lang)}[tag]
                raise Fail(tr("'{tag}' at step {step} is {got:.6g}, the truth is {want:.6g}: {hint}", lang, tag=tag,
                              step=step, got=value, want=want, hint=hint))
    return tr("loss, learning rate and gradient norm logged at all 12 steps, read back from the event files", lang)


register(Exercise(
    "04.monitor", both("Log more than the loss"), ("log_metrics",), _check_monitor,
    hints=[both("The loss alone does not say why a run goes wrong. Log two more numbers at every step: the learning rate "
                "this step used, and how large the gradients were (their norm), under the tags train/loss, train/lr and "
                "train/grad_norm, at the step you are given."),
           both("writer.add_scalar(tag, value, step) writes one point of a curve. The learning rate this step used is in "
                "optimizer.param_groups[0]['lr'] (warm-up changes it at every step)."),
           both("The gradient norm is the L2 norm of all gradients taken together: add up p.grad.pow(2).sum() over the "
                "parameters whose p.grad is not None, then take the square root of the sum.")]))

register(Exercise(
    "04.save", both("A checkpoint that survives a kill"), ("save_checkpoint", "load_checkpoint"),
    lambda funcs, seed, lang: check_by_audit("04.save", funcs, seed, lang),
    hints=[both("The next step depends on more than the weights. List what changes at every step: the model, AdamW's "
                "moments, the learning rate's place in its schedule, the random numbers dropout draws, and where in the "
                "epoch you are."),
           both("model, optimizer and scheduler each have state_dict() and load_state_dict(); torch.get_rng_state() and "
                "torch.set_rng_state() hold the random number generator; progress is a plain dict. Put them all in one "
                "dict for torch.save, and load it with torch.load(path, weights_only=True)."),
           both("Killed in the middle of writing, a file written in place is half a file: the old checkpoint is gone and "
                "the new one does not load. Write the new one under another name first, then put it in place in one step "
                "that cannot stop half-way: an atomic rename, os.replace (the temporary file first, then the checkpoint's "
                "path). A copy is no such step (killed half-way through shutil.copyfile, the path holds half a file)."),
           both("Before the rename, push the temporary file's bytes to the disk: open it yourself and call "
                "torch.save(state, f), then f.flush() and os.fsync(f.fileno()). load_checkpoint restores each part and "
                "returns the saved progress dict.")]))
