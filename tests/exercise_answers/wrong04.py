"""Wrong answers to notebook 04's exercises: the typical checkpoints that lose a piece of state, or
that a kill at the wrong moment of the save leaves unreadable."""
import os
import shutil

import torch

from course_lib.exercises.solutions.ex04 import load_checkpoint as full_load
from course_lib.exercises.solutions.ex04 import save_checkpoint as full_save


def only_loss(writer, step, loss, model, optimizer):
    writer.add_scalar("train/loss", loss.item(), step)


def always_step_zero(writer, step, loss, model, optimizer):
    norm = sum(p.grad.pow(2).sum().item() for p in model.parameters() if p.grad is not None) ** 0.5
    for tag, value in (("train/loss", loss.item()), ("train/lr", optimizer.param_groups[0]["lr"]),
                       ("train/grad_norm", norm)):
        writer.add_scalar(tag, value, 0)


def three_items_save(path, model, optimizer, scheduler, progress):  # the chapter's checkpoint
    torch.save({"epoch": progress["epoch"], "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(), "loss": 0.0}, path + ".tmp")
    os.replace(path + ".tmp", path)


def three_items_load(path, model, optimizer, scheduler):
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    return {"epoch": checkpoint["epoch"], "step_in_epoch": 0, "global_step": checkpoint["epoch"] * 16}


def _load(path, model, optimizer, scheduler, rng):
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    if rng:
        torch.set_rng_state(state["rng"])
    return state.get("progress")


def _save(path, state):
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def weights_only_save(path, model, optimizer, scheduler, progress):
    _save(path, {"model": model.state_dict(), "progress": progress})


def weights_only_load(path, model, optimizer, scheduler):
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    return state["progress"]


def no_rng_save(path, model, optimizer, scheduler, progress):
    _save(path, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict(), "progress": progress})


def no_rng_load(path, model, optimizer, scheduler):
    return _load(path, model, optimizer, scheduler, rng=False)


def no_position_save(path, model, optimizer, scheduler, progress):
    _save(path, {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                 "rng": torch.get_rng_state(), "epoch": progress["epoch"], "global_step": progress["global_step"]})


def no_position_load(path, model, optimizer, scheduler):
    state = torch.load(path, weights_only=True)
    _load(path, model, optimizer, scheduler, rng=True)
    return {"epoch": state["epoch"], "step_in_epoch": 0, "global_step": state["global_step"]}


def _everything(model, optimizer, scheduler, progress):
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "rng": torch.get_rng_state(), "progress": progress}


def direct_save(path, model, optimizer, scheduler, progress):  # everything, but written in place
    torch.save(_everything(model, optimizer, scheduler, progress), path)


def copied_save(path, model, optimizer, scheduler, progress):  # a temporary file, then copied over the checkpoint
    torch.save(_everything(model, optimizer, scheduler, progress), path + ".tmp")
    shutil.copyfile(path + ".tmp", path)


def removed_then_renamed_save(path, model, optimizer, scheduler, progress):  # the old one goes first
    torch.save(_everything(model, optimizer, scheduler, progress), path + ".tmp")
    if os.path.exists(path):
        os.remove(path)
    os.rename(path + ".tmp", path)


def backed_up_then_copied_save(path, model, optimizer, scheduler, progress):  # a backup, then a copy over the checkpoint
    torch.save(_everything(model, optimizer, scheduler, progress), path + ".tmp")
    if os.path.exists(path):
        shutil.copyfile(path, path + ".bak")
    shutil.copyfile(path + ".tmp", path)


def rotated_save(path, model, optimizer, scheduler, progress):  # the old one moved aside, then the new one renamed in
    torch.save(_everything(model, optimizer, scheduler, progress), path + ".tmp")
    if os.path.exists(path):
        os.replace(path, path + ".bak")
    os.replace(path + ".tmp", path)


def one_step_late_load(path, model, optimizer, scheduler):  # "resume at the next step": one too many
    progress = full_load(path, model, optimizer, scheduler)
    return {"epoch": progress["epoch"], "step_in_epoch": progress["step_in_epoch"] + 1,
            "global_step": progress["global_step"] + 1}


WRONG = {
    "04.monitor": [("the loss alone", (only_loss,), "no 'train/lr'"),
                   ("every value at step 0", (always_step_zero,), "logged at steps")],
    # the chapter's three items lose the RNG and the place in the epoch: the RNG differs first
    "04.save": [("the chapter's three items", (three_items_save, three_items_load), "torch's CPU RNG differs"),
                ("weights only", (weights_only_save, weights_only_load), "the optimizer state at the resume"),
                ("no RNG", (no_rng_save, no_rng_load), "torch's CPU RNG differs"),
                ("no position in the epoch", (no_position_save, no_position_load), "went back to the start of its epoch"),
                ("written in place, killed during the save", (direct_save, full_load),
                 "half-way through the save after step"),
                ("copied over the checkpoint", (copied_save, full_load),
                 "was put in place (its rename or copy), the resumed run did not start"),
                ("the old one removed before the rename", (removed_then_renamed_save, full_load),
                 "the crash struck while the save replaced it, and left neither"),
                ("a backup, then copied over the checkpoint", (backed_up_then_copied_save, full_load),
                 "was put in place (its rename or copy), the resumed run did not start"),
                ("the old one moved aside before the rename", (rotated_save, full_load),
                 "the crash struck while the save replaced it, and left neither"),
                ("one step late", (full_save, one_step_late_load), "skipped the batches of 1 step(s)")],
}
