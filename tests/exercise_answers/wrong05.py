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


def _restore(path, model, optimizer, scheduler, rng=True):
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
    if rng:
        torch.set_rng_state(checkpoint["rng_state"])
    return {k: checkpoint[k] for k in ("epoch", "step_in_epoch", "global_step")}


def resume_string_sorted(model, optimizer, path, scheduler=None):
    names = sorted(n for n in os.listdir(path) if n.startswith("model_step_"))
    for name in reversed(names):
        try:
            return _restore(os.path.join(path, name), model, optimizer, scheduler)
        except Exception:
            continue
    return None


def _by_number(path):
    found = [(int(m.group(1)), n) for n in os.listdir(path) if (m := re.fullmatch(r"model_step_(\d+)\.pth", n))]
    return [n for _, n in sorted(found, reverse=True)]


def resume_no_fallback(model, optimizer, path, scheduler=None):
    names = _by_number(path)
    return _restore(os.path.join(path, names[0]), model, optimizer, scheduler) if names else None


def resume_no_rng(model, optimizer, path, scheduler=None):
    for name in _by_number(path):
        try:
            return _restore(os.path.join(path, name), model, optimizer, scheduler, rng=False)
        except Exception:
            continue
    return None


WRONG = {
    "05.newest": [("string order", (newest_as_string,), "as a string"),
                  ("no fallback", (newest_without_fallback,), "does not load")],
    "05.resume": [("string order", (resume_string_sorted,), "sorts after"),
                  ("no fallback past a half-written file", (resume_no_fallback,), "half-written"),
                  ("no RNG", (resume_no_rng,), "RNG state was not restored")],
}
