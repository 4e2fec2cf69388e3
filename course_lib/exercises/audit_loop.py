"""The loop of exercises 04.save, 05.resume and 05.audit, run by the audit as a script, as a
learner's own would be:

    python course_lib/exercises/audit_loop.py --out DIR --learner FILE [--exercise 04.save|05.resume|05.audit]

``FILE`` holds the learner's functions. The loop trains (dropout, AdamW, a linear decay of the
learning rate, each epoch's order a function of the epoch's number, 12 steps an epoch) and saves
every 5 steps and on SIGTERM, after which it leaves. What its next step reads, and so what a
checkpoint must give back: the model, AdamW's state, the schedule, torch's RNG (dropout), the
epoch and the step within it. How each exercise plugs in:

* ``05.audit``: ``save_checkpoint(path, model, optimizer, scheduler, epoch, step)`` and
  ``load_checkpoint(path, model, optimizer, scheduler)``, called once at the start, which returns
  ``(epoch, step)``, or ``None`` when there is no checkpoint;
* ``04.save``: ``save_checkpoint(path, model, optimizer, scheduler, progress)`` and
  ``load_checkpoint(path, model, optimizer, scheduler)``, called when ``path`` exists, which
  returns ``progress``: ``{"epoch", "step_in_epoch", "global_step"}``;
* ``05.resume``: the loop saves the book's way (:func:`book_style_save`: one file per save,
  written in place) and hands the newest file that loads to the learner's
  ``resume_training(model, optimizer, path, scheduler)``, which returns ``progress``.

It imports nothing from the kit.
"""
import argparse
import importlib.util
import os
import re
import signal

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

EPOCHS, BATCH, SAVE_EVERY, SAMPLES = 3, 16, 5, 192
STEPS_PER_EPOCH = SAMPLES // BATCH


def learner(path: str):
    spec = importlib.util.spec_from_file_location("learner", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def book_style_save(folder: str, model, optimizer, scheduler, progress: dict) -> None:
    """05.resume's save: the book's way (one file per save, written in place), with everything a
    resume needs. Its names sort wrongly as strings: model_step_5 > model_step_35."""
    torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                "scheduler_state_dict": scheduler.state_dict(), "rng_state": torch.get_rng_state(), **progress},
               os.path.join(folder, f"model_step_{progress['global_step']}.pth"))


def newest_book_file(folder: str) -> str | None:
    """The newest ``model_step_N.pth`` that loads (by the number N, not the name)."""
    found = sorted(((int(m.group(1)), name) for name in os.listdir(folder)
                    if (m := re.fullmatch(r"model_step_(\d+)\.pth", name))), reverse=True)
    for _, name in found:
        try:
            torch.load(os.path.join(folder, name), weights_only=True)
            return os.path.join(folder, name)
        except Exception:  # half-written by a kill during its save: the one before
            continue
    return None


def plug(exercise: str, mine, out: str):
    """``(load, save)`` for ``exercise``: ``load(model, optimizer, scheduler)`` gives ``(epoch,
    step)`` or ``None``; ``save(model, optimizer, scheduler, epoch, step)``."""
    path = os.path.join(out, "checkpoint.pt")
    progress = lambda epoch, step: {"epoch": epoch, "step_in_epoch": step,  # noqa: E731
                                    "global_step": epoch * STEPS_PER_EPOCH + step}
    position = lambda p: None if p is None else (int(p["epoch"]), int(p["step_in_epoch"]))  # noqa: E731
    if exercise == "05.audit":
        return (lambda m, o, s: mine.load_checkpoint(path, m, o, s),
                lambda m, o, s, epoch, step: mine.save_checkpoint(path, m, o, s, epoch, step))
    if exercise == "04.save":
        return (lambda m, o, s: position(mine.load_checkpoint(path, m, o, s)) if os.path.exists(path) else None,
                lambda m, o, s, epoch, step: mine.save_checkpoint(path, m, o, s, progress(epoch, step)))
    if exercise == "05.resume":
        def load(m, o, s):
            newest = newest_book_file(out)
            return None if newest is None else position(mine.resume_training(m, o, newest, s))
        return load, lambda m, o, s, epoch, step: book_style_save(out, m, o, s, progress(epoch, step))
    raise SystemExit(f"unknown exercise {exercise!r}: 04.save, 05.resume or 05.audit")


def main() -> None:
    ap = argparse.ArgumentParser(description="the loop of exercises 04.save, 05.resume and 05.audit")
    ap.add_argument("--out", required=True)
    ap.add_argument("--learner", required=True)
    ap.add_argument("--exercise", default="05.audit")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    load, save = plug(a.exercise, learner(a.learner), a.out)
    torch.set_num_threads(1)  # every start splits its kernels the same way, however loaded the machine
    torch.manual_seed(0)
    points = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, 12, generator=points)
    y = (x @ torch.randn(12, generator=points) > 0).long()
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / (EPOCHS * STEPS_PER_EPOCH)))
    epoch, step = load(model, optimizer, scheduler) or (0, 0)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    while epoch < EPOCHS:
        order = torch.Generator().manual_seed(epoch)
        batches = iter(DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, generator=order))
        for _ in range(step):  # the batches of this epoch already trained
            next(batches)
        for xb, yb in batches:
            optimizer.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
            scheduler.step()
            step += 1
            if step % SAVE_EVERY == 0 or stop:
                save(model, optimizer, scheduler, epoch, step)
            if stop:
                return
        epoch, step = epoch + 1, 0


if __name__ == "__main__":
    main()
