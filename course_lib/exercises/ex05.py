"""Notebook 05's exercises: find the newest checkpoint that loads (05.newest); restore everything the next step
needs from it (05.resume); fix a given loop's save and load until the audit says exact (05.audit). The last two
are checked by the audit (:mod:`.audited`)."""
from __future__ import annotations

import os
import random
import signal
import tempfile
from pathlib import Path

import torch

from course_lib._runtime.rank_start import start_ranks
from course_lib.checkpoint.faults import write_half
from course_lib.exercises.audited import check_by_audit
from course_lib.exercises.base import Exercise, Fail, learner_call, register
from course_lib.lab.i18n import both, tr


def half_write(_rank: int, state: dict, target: str) -> None:
    """A process that a real SIGKILL stops half-way through ``torch.save`` of ``state`` to
    ``target`` (05.newest's broken newest file), through the kit's one cut-a-save-half-way. Started
    as a rank is (one of one), from the ranks' forkserver: no fresh interpreter to import torch."""
    write_half(state, target, then=lambda: os.kill(os.getpid(), signal.SIGKILL))


def _book_files(folder: Path, epochs: list[int], half: int | None) -> None:
    """Real book-style checkpoints of a real model; ``half``'s file written by a process that a
    real SIGKILL stopped half-way through ``torch.save``."""
    model = torch.nn.Linear(64, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    for epoch in epochs:
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                    "loss": 1.0 / epoch}, folder / f"model_epoch_{epoch}.pth")
    if half is not None:
        state = {"epoch": half, "model_state_dict": model.state_dict(), "loss": 1.0 / half}
        proc = start_ranks(half_write, (state, str(folder / f"model_epoch_{half}.pth")), nprocs=1).processes[0]
        proc.join()
        assert proc.exitcode == -9, "the half-writing process was not killed"


def _check_newest(funcs: dict, seed: int, lang: str) -> str:
    rng = random.Random(seed)
    n = rng.randint(5, 8)
    epochs = [2 * i for i in range(1, n + 1)]  # 2, 4, ..., at least 10: "model_epoch_8" > "model_epoch_10" as strings
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "notes.txt").write_text("not a checkpoint")
        got = learner_call("05.newest", lang, funcs["newest_checkpoint"], str(folder))
        if got is not None:
            raise Fail(tr("in a folder with no checkpoint your function returned {got!r}; return None: there is nothing to "
                          "resume from", lang, got=got))
        _book_files(folder, epochs[:-1], half=epochs[-1])
        got = learner_call("05.newest", lang, funcs["newest_checkpoint"], str(folder))
    name = None if got is None else Path(got).name
    want, half = f"model_epoch_{epochs[-2]}.pth", f"model_epoch_{epochs[-1]}.pth"
    if name == want:
        return tr("picked {want}: the newest file that loads ({half} was half-written by a real kill)", lang, want=want,
                  half=half)
    if name == half:
        raise Fail(tr("{half} does not load: a kill came half-way through its save. Try to load each candidate, newest "
                      "first, and skip those that fail", lang, half=half))
    if name == max(f"model_epoch_{e}.pth" for e in epochs):  # the largest name as a string
        raise Fail(tr("'{got}' is the largest name as a string, not the newest: sort by the epoch number (int) in the name",
                      lang, got=name))
    if got is None:
        raise Fail(tr("your function returned None, but the folder holds {n} model_epoch_N.pth files and all but one of "
                      "them load", lang, n=len(epochs)))
    raise Fail(tr("your function returned {got!r}: not the newest model_epoch_N.pth of the folder that loads", lang,
                  got=got))


register(Exercise(
    "05.newest", both("The newest checkpoint that loads"), ("newest_checkpoint",), _check_newest,
    hints=[both("Newest means the largest epoch number N in model_epoch_N.pth, and the file must also load: a kill in the "
                "middle of a save leaves a newest file that does not."),
           both("os.listdir(folder) with re.fullmatch(r'model_epoch_(\\d+)\\.pth', name) finds the files and their N. "
                "Sort by int(N), not by the name: as strings 'model_epoch_8.pth' comes after 'model_epoch_10.pth'."),
           both("Newest first, try torch.load(path, weights_only=True) and return the first path that loads, skipping a "
                "file on any exception; return None when nothing loads.")]))

register(Exercise(
    "05.resume", both("The chapter's resume, made exact"), ("resume_training",),
    lambda funcs, seed, lang: check_by_audit("05.resume", funcs, seed, lang),
    hints=[both("The chapter's resume_training restores the model and the optimizer and returns the epoch. The run never "
                "interrupted also had a learning-rate schedule, random dropout masks and a place in the middle of an "
                "epoch: restore all of it from the one file you are given."),
           both("Which key holds what: read the save that wrote the file, book_style_save in "
                "course_lib/exercises/audit_loop.py. Load the file with torch.load(path, weights_only=True) (a dict); "
                "each object with state has its load_state_dict, and the RNG has torch.set_rng_state."),
           both("Restore the scheduler only when one is given, and return "
                "{'epoch': ..., 'step_in_epoch': ..., 'global_step': ...} exactly as the file holds them: they already "
                "count the steps done, and the loop goes on from there.")]))


register(Exercise(
    "05.audit", both("Fix a loop until the audit says exact"),
    ("save_checkpoint", "load_checkpoint"), lambda funcs, seed, lang: check_by_audit("05.audit", funcs, seed, lang),
    hints=[both("Run the check and read its one line: the audit names the first piece of state or the first habit that "
                "breaks the resume. Fix that, run it again: one finding at a time."),
           both("The next step reads the model, the optimizer's state, the scheduler (the learning rate), torch's RNG "
                "(dropout: torch.get_rng_state / set_rng_state) and where the loop is: the epoch and the step within it."),
           both("Write the file atomically: torch.save into path + '.tmp' opened with open(..., 'wb'), f.flush(), "
                "os.fsync(f.fileno()), then os.replace(tmp, path); load_checkpoint returns (epoch, step).")],
    solution="course_lib.exercises.solutions.ex05_audit"))
