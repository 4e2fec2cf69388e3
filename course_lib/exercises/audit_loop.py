"""The loop of exercises 04.save, 05.resume and 05.audit, run by the audit as a script, as a
learner's own would be:

    python course_lib/exercises/audit_loop.py --out DIR --learner FILE [--exercise 04.save|05.resume|05.audit]

:func:`train` is the loop (dropout, AdamW, a linear decay of the learning rate, each epoch's
order a function of the epoch's number, 12 steps an epoch): it calls ``load`` once, then
``save`` every 5 steps and on SIGTERM, after which it leaves. What its next step reads, and so
what a checkpoint must give back: the model, AdamW's state, the schedule, torch's RNG (dropout),
the epoch and the step within it. ``FILE`` holds the learner's functions; :func:`plug` says how
each exercise's functions become ``load`` and ``save``. It imports nothing from the kit.
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


def train(load, save) -> None:
    """``load(model, optimizer, scheduler)`` gives ``(epoch, step)`` or ``None`` (no checkpoint);
    ``save(model, optimizer, scheduler, epoch, step)``."""
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


def plug(exercise: str, mine, out: str):
    """``(load, save)`` for :func:`train` from the learner's module ``mine``:

    * 05.audit: ``save_checkpoint(path, model, optimizer, scheduler, epoch, step)`` and
      ``load_checkpoint(path, model, optimizer, scheduler)`` -> ``(epoch, step)`` or ``None``;
    * 04.save: ``save_checkpoint(path, model, optimizer, scheduler, progress)`` and, when ``path``
      exists, ``load_checkpoint(path, model, optimizer, scheduler)`` -> ``progress``, the dict
      ``{"epoch", "step_in_epoch", "global_step"}`` it was given;
    * 05.resume: the loop saves the book's way (:func:`book_style_save`) and hands the newest file
      that loads to ``resume_training(model, optimizer, path, scheduler)`` -> ``progress``.
    """
    if exercise not in ("04.save", "05.resume", "05.audit"):
        raise SystemExit(f"unknown exercise {exercise!r}: 04.save, 05.resume or 05.audit")
    path = os.path.join(out, "checkpoint.pt")
    if exercise == "05.audit":
        return (lambda *state: mine.load_checkpoint(path, *state),
                lambda *state_and_place: mine.save_checkpoint(path, *state_and_place))

    def save(model, optimizer, scheduler, epoch, step):
        progress = {"epoch": epoch, "step_in_epoch": step, "global_step": epoch * STEPS_PER_EPOCH + step}
        if exercise == "04.save":
            mine.save_checkpoint(path, model, optimizer, scheduler, progress)
        else:
            book_style_save(out, model, optimizer, scheduler, progress)

    def load(model, optimizer, scheduler):
        if exercise == "04.save":
            return place(mine.load_checkpoint(path, model, optimizer, scheduler)) if os.path.exists(path) else None
        newest = newest_book_file(out)
        return None if newest is None else place(mine.resume_training(model, optimizer, newest, scheduler))

    return load, save


def place(progress) -> tuple[int, int] | None:
    """``(epoch, step)`` from what the learner's load returned: the progress dict as saved; the
    chapter's epoch alone (that epoch starts over); ``None``, nothing (the run starts over). The
    audit names what each loses, in the notebook's language."""
    if progress is None or isinstance(progress, int):
        return None if progress is None else (progress, 0)
    if not (isinstance(progress, dict) and {"epoch", "step_in_epoch"} <= set(progress)):
        raise TypeError(f"return the progress dict as saved, {{'epoch': ..., 'step_in_epoch': ..., 'global_step': "
                        f"...}}, not {progress!r}"[:300])
    return int(progress["epoch"]), int(progress["step_in_epoch"])


def book_style_save(folder: str, model, optimizer, scheduler, progress: dict) -> None:
    """05.resume's save: the book's way (one file per save, written in place), with everything a
    resume needs. Its names sort wrongly as strings: model_step_5 > model_step_34."""
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


def learner(path: str):
    spec = importlib.util.spec_from_file_location("learner", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="the loop of exercises 04.save, 05.resume and 05.audit")
    ap.add_argument("--out", required=True)
    ap.add_argument("--learner", required=True)
    ap.add_argument("--exercise", default="05.audit")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    train(*plug(a.exercise, learner(a.learner), a.out))
