"""Wrong answers to notebook 05's exercises."""
import os
import re

import torch


def newest_as_string(folder):
    names = sorted(n for n in os.listdir(folder) if n.startswith("model_epoch_"))
    return os.path.join(folder, names[-1]) if names else None


def newest_without_fallback(folder):
    found = [(int(m.group(1)), n) for n in os.listdir(folder) if (m := re.fullmatch(r"model_epoch_(\d+)\.pth", n))]
    return os.path.join(folder, max(found)[1]) if found else None


def _restore(path, model, optimizer, scheduler, rng=True, sched=True):
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    if sched:
        scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
    if rng:
        torch.set_rng_state(checkpoint["rng_state"])
    return {k: checkpoint[k] for k in ("epoch", "step_in_epoch", "global_step")}


def resume_no_rng(model, optimizer, path, scheduler=None):
    return _restore(path, model, optimizer, scheduler, rng=False)


def resume_no_scheduler(model, optimizer, path, scheduler=None):
    return _restore(path, model, optimizer, scheduler, sched=False)


def resume_epoch_start(model, optimizer, path, scheduler=None):
    """The chapter's way: continue from the saved epoch, at its start."""
    position = _restore(path, model, optimizer, scheduler)
    return {**position, "step_in_epoch": 0}


WRONG = {
    "05.newest": [("string order", (newest_as_string,), "as a string"),
                  ("no fallback", (newest_without_fallback,), "does not load")],
    "05.resume": [("no RNG", (resume_no_rng,), "torch's CPU RNG differs"),
                  ("no scheduler", (resume_no_scheduler,), "used learning rate"),
                  ("the epoch from its start", (resume_epoch_start,), "went back to the start of its epoch")],
}  # 05.audit's wrong answer is the notebook's own unfilled one: Run All checks it (tests/test_notebooks.py)
