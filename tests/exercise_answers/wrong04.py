"""Wrong answers to notebook 04's exercises: the typical checkpoints that lose a piece of state."""
import os

import torch

from course_lib.exercises.solutions.ex04 import load_checkpoint as full_load


def only_loss(writer, step, loss, model, optimizer):
    writer.add_scalar("train/loss", loss.item(), step)


def always_step_zero(writer, step, loss, model, optimizer):
    norm = sum(p.grad.pow(2).sum().item() for p in model.parameters() if p.grad is not None) ** 0.5
    for tag, value in (("train/loss", loss.item()), ("train/lr", optimizer.param_groups[0]["lr"]), ("train/grad_norm", norm)):
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


def direct_save(path, model, optimizer, scheduler, progress):  # everything, but written in place
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "rng": torch.get_rng_state(), "progress": progress}, path)


WRONG = {
    "04.monitor": [("the loss alone", (only_loss,), "no 'train/lr'"), ("every value at step 0", (always_step_zero,), "logged at steps")],
    "04.save": [("the chapter's three items", (three_items_save, three_items_load), "scheduler was not restored"),
                ("weights only", (weights_only_save, weights_only_load), "optimizer state was not restored"),
                ("no RNG", (no_rng_save, no_rng_load), "RNG state was not restored"),
                ("no position in the epoch", (no_position_save, no_position_load), "position within the epoch"),
                ("written in place, killed during the save", (direct_save, full_load), "unreadable after a kill during the save")],
}
