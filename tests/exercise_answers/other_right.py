"""Right answers other than the reference solutions: each check must pass them too."""
import os

import torch

from course_lib.exercises.solutions.ex04 import load_checkpoint


def renamed_save(path, model, optimizer, scheduler, progress):  # a temporary file, then os.rename onto the path
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "rng": torch.get_rng_state(), "progress": progress}, path + ".part")
    os.rename(path + ".part", path)  # atomic on POSIX, over an existing file too


RIGHT = {
    "04.save": [("temporary file + os.rename", (renamed_save, load_checkpoint))],
}
