"""The book's loop grown up, where the learner's checkpoint code (exercises 04 and 05) is judged.

One real process per attempt (:func:`attempt`, started as a rank is), on the real
IMDB data: the ``bag`` model with dropout (so the RNG matters), AdamW with a warm-up + linear
decay schedule (so the scheduler matters), a shuffled order per epoch that is a pure function
of (seed, epoch) (so the position in the epoch matters), a save every ``SAVE_EVERY`` steps in
the middle of epochs. The grader's kills are real SIGKILLs of the attempt's process, at one of
three moments: as a step begins; inside ``torch.save`` half-way through the file (the bytes
written so far stay on disk); or at the save's last step, the rename or copy that puts the new
checkpoint in place (:class:`SaveWatch`: just before a rename, half-way through a copy).

So that a failure can be *named*, the loop writes, at every save, digests of the true state
(``truth/attempt{A}-step-{N}.json``: model, optimizer, scheduler, RNG, position), and after the learner's
load the same digests of what was restored (``restored.json``), next to those of fresh objects;
a kill at the save's last step leaves which call it struck in ``struck.json``.
"""
from __future__ import annotations

import functools
import io
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

EPOCHS, BATCH, SAVE_EVERY, WARMUP, LR, DIM, DROPOUT, SEED = 3, 64, 5, 5, 5e-3, 8, 0.1, 0
EXIT_LEARNER_ERROR, EXIT_NO_TORCH_SAVE, EXIT_NO_COMMIT = 5, 6, 7


@dataclass
class LoopSettings:
    run_dir: str
    data_file: str
    exercise: str              # "04": the learner's save_checkpoint/load_checkpoint; "05": their resume_training
    #                            (handed the newest model_step_N.pth that loads: newest_book_file)
    learner: str | None        # module file with the learner's functions; None = the reference solution
    attempt: int = 1
    kill_step: int = 0         # 0 = no kill in this attempt
    kill_mode: str = "sigkill"  # sigkill (as the step begins) | during-save (inside torch.save of that step's save)
    #                             | during-commit (at that save's last rename or copy onto the checkpoint)
    resume: bool = False


def state_digests(model, optimizer, scheduler, progress: dict | None) -> dict:
    from course_lib.ddp.consistency import state_digest

    sched = {k: v for k, v in scheduler.state_dict().items() if k != "lr_lambdas"}
    parts = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": sched,
             "rng": torch.get_rng_state()}
    return {**{name: state_digest(part)[:16] for name, part in parts.items()}, "progress": normalized(progress)}


def normalized(progress: dict | None) -> list[int] | None:
    """(epoch, step in epoch, global step), with "the end of epoch e" written as "the start of e + 1"."""
    if progress is None:
        return None
    epoch, step = int(progress["epoch"]), int(progress["step_in_epoch"])
    if step >= steps_per_epoch():
        epoch, step = epoch + 1, 0
    return [epoch, step, int(progress["global_step"])]


def data_file() -> str:
    """The loop's reviews (1,280 of IMDB: 1,024 in the training split), prepared once and cached."""
    from course_lib.data.prepare import prepare_imdb

    return str(prepare_imdb(limit=1280, progress=False).path)


@functools.cache
def steps_per_epoch() -> int:
    """Optimizer steps in one epoch of :func:`data_file`'s training split."""
    from course_lib.data.prepare import PreparedData

    return len(PreparedData.load(data_file()).train) // BATCH


def book_style_save(run_dir: str, model, optimizer, scheduler, progress: dict) -> None:
    """Exercise 05's save: the book's way (one file per save, written in place, not atomically),
    with everything a resume needs. Its names sort wrongly as strings: model_step_5 > model_step_40."""
    torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
                "scheduler_state_dict": scheduler.state_dict(), "rng_state": torch.get_rng_state(), **progress},
               os.path.join(run_dir, f"model_step_{progress['global_step']}.pth"))


def newest_book_file(run_dir: str) -> str | None:
    """Exercise 05's resume: the path of the newest ``model_step_N.pth`` that loads (by the number
    N, not the name), found by the loop, as 05.newest's answer finds a ``model_epoch_N.pth``; the
    learner's ``resume_training`` is handed that one file, as the chapter's is."""
    import re

    found = sorted(((int(m.group(1)), name) for name in os.listdir(run_dir)
                    if (m := re.fullmatch(r"model_step_(\d+)\.pth", name))), reverse=True)
    for _, name in found:
        try:
            torch.load(os.path.join(run_dir, name), weights_only=True)
            return os.path.join(run_dir, name)
        except Exception:  # half-written by a kill during its save: the one before
            continue
    return None


def die_half_way(data: bytes | memoryview, target) -> None:
    """Half of ``data`` in ``target`` (a path or an open binary file), then a real SIGKILL of this
    process: the kit's one cut-a-save-half-way (:func:`course_lib.checkpoint.faults.write_half`)."""
    from course_lib.checkpoint.faults import write_half

    write_half(data, target, then=lambda: os.kill(os.getpid(), signal.SIGKILL))


COPIES = {"shutil.copyfile", "shutil.copy", "shutil.copy2"}  # the other watched calls besides torch.save are renames


class SaveWatch:
    """The calls that can put a checkpoint on disk, watched while the learner's save runs:
    ``torch.save``, a rename (``os.replace``, ``os.rename``, ``shutil.move``) and a copy
    (``shutil.copyfile``, ``copy``, ``copy2``). They are wrapped once for the whole process, before
    the learner's module is imported, so that ``from os import replace`` gets the wrapper too;
    outside a save they pass through. Each save's outermost calls are recorded (a ``shutil.move``
    that renames through ``os.rename`` is one call), so the grader can strike at a chosen one:

    * ``"serialise"``: the first ``torch.save``; half the bytes on disk, then SIGKILL;
    * ``"commit"``: the rename or copy that the previous save used last to put its file on the
      checkpoint's path (a save's last step): SIGKILL just before a rename, or half the
      destination written by a copy, then SIGKILL.

    Before a commit kill, ``struck.json`` in the run directory names the call and its paths.
    """

    def __init__(self, run_dir: str):
        import shutil

        self.run_dir, self.path = run_dir, None
        self.calls: list[tuple[str, str]] | None = None  # (call, destination) of the save being watched
        self.previous: list[tuple[str, str]] = []        # the same, of the last save that finished
        self.depth, self.strike, self.commit_index = 0, None, None
        targets = [(torch, "save", "torch.save")] + [(os, n, f"os.{n}") for n in ("replace", "rename")] + \
                  [(shutil, n, f"shutil.{n}") for n in ("move", "copyfile", "copy", "copy2")]
        posix = sys.modules.get(os.name)  # os.replace is posix.replace: a notebook's `replace` is carried from there
        for module, name, label in targets:
            wrapped = self._wrap(getattr(module, name), label)
            setattr(module, name, wrapped)
            if module is os and posix is not None and getattr(posix, name, None) is not None:
                setattr(posix, name, wrapped)

    def begin(self, path: str, strike: str | None) -> None:
        """Watch the save onto ``path`` that starts now; ``strike``: ``None``, ``"serialise"`` or ``"commit"``."""
        self.path, self.calls, self.strike = os.path.abspath(path), [], strike
        onto = [i for i, (_, dst) in enumerate(self._commits(self.previous)) if dst == self.path]
        self.commit_index = onto[-1] if onto else None

    def end(self) -> list[tuple[str, str]]:
        """The save has returned: its calls, in order."""
        self.previous, self.calls, self.strike = self.calls, None, None
        return self.previous

    @staticmethod
    def _commits(calls: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [c for c in calls if c[0] != "torch.save"]

    def _strike(self, label: str, real, args: tuple, kwargs: dict) -> None:
        """Record one outermost call of the watched save; the grader's kill, if it is the one."""
        if label == "torch.save":
            self.calls.append((label, ""))
            if self.strike == "serialise" and sum(c == label for c, _ in self.calls) == 1:
                obj, target = args[0] if args else kwargs["obj"], args[1] if len(args) > 1 else kwargs["f"]
                buf = io.BytesIO()
                real(obj, buf, *args[2:], **{k: v for k, v in kwargs.items() if k not in ("obj", "f")})
                die_half_way(buf.getbuffer(), target)
            return
        src = os.fspath(args[0] if args else kwargs["src"])
        dst = os.fspath(args[1] if len(args) > 1 else kwargs["dst"])
        if label in ("shutil.move", "shutil.copy", "shutil.copy2") and os.path.isdir(dst):
            dst = os.path.join(dst, os.path.basename(src))  # as these three do
        index = len(self._commits(self.calls))
        self.calls.append((label, os.path.abspath(dst)))
        if self.strike == "commit" and index == self.commit_index:
            Path(self.run_dir, "struck.json").write_text(json.dumps({"call": label, "src": src, "dst": dst}))
            if label in COPIES:
                die_half_way(Path(src).read_bytes(), dst)
            os.kill(os.getpid(), signal.SIGKILL)

    def _wrap(self, real, label: str):
        def call(*args, **kwargs):
            if self.calls is None or self.depth:
                return real(*args, **kwargs)
            self._strike(label, real, args, kwargs)
            self.depth += 1
            try:
                return real(*args, **kwargs)
            finally:
                self.depth -= 1
        return call


def _functions(s: LoopSettings):
    if s.learner:
        from course_lib._runtime.rank_start import load_module

        return load_module(s.learner)
    from course_lib.exercises.solutions import ex04, ex05

    return ex04 if s.exercise == "04" else ex05


def _learner_error(s: LoopSettings, err: BaseException) -> None:
    from course_lib.exercises.base import short_traceback

    Path(s.run_dir, "learner_error.txt").write_text(short_traceback(err))
    sys.exit(EXIT_LEARNER_ERROR)


def run(s: LoopSettings) -> None:
    from course_lib.data.prepare import PreparedData
    from course_lib.ddp.consistency import parameter_digest
    from course_lib.ddp.models import build_model
    from course_lib.ddp.sampling import ResumableDistributedSampler, sample_digest
    from course_lib.ddp.training import linear_schedule
    from course_lib.watch.monitor import Ledger

    run_dir = Path(s.run_dir)
    (run_dir / "truth").mkdir(parents=True, exist_ok=True)
    data = PreparedData.load(s.data_file)
    train, pad_id, spe = data.train, data.info["tokenizer"]["pad_id"], len(data.train) // BATCH
    total = EPOCHS * spe
    torch.manual_seed(SEED)
    model = build_model("bag", data.info["tokenizer"]["vocab_size"], dim=DIM, dropout=DROPOUT)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    scheduler = linear_schedule(optimizer, WARMUP, total)
    watch = SaveWatch(s.run_dir)  # before the learner's module is imported: its `from os import replace` is watched too
    fns = _functions(s)
    progress = {"epoch": 0, "step_in_epoch": 0, "global_step": 0}
    if s.resume:
        fresh = state_digests(model, optimizer, scheduler, None)
        try:
            restored = (fns.load_checkpoint(str(run_dir / "checkpoint.pt"), model, optimizer, scheduler)
                        if s.exercise == "04" else fns.resume_training(model, optimizer, newest_book_file(s.run_dir),
                                                                       scheduler))
            if restored is not None and not (isinstance(restored, dict) and {"epoch", "step_in_epoch",
                                                                             "global_step"} <= set(restored)):
                raise TypeError(f"return {{'epoch': ..., 'step_in_epoch': ..., 'global_step': ...}} as saved, not "
                                f"{restored!r}"[:300])
            now = state_digests(model, optimizer, scheduler, restored)
        except Exception as err:
            _learner_error(s, err)
        (run_dir / "restored.json").write_text(json.dumps({"fresh": fresh, "restored": now}))
        if restored is not None:
            epoch, step, done = now["progress"]
            progress = {"epoch": epoch, "step_in_epoch": step, "global_step": done}
    ledger = Ledger(run_dir, 0)
    sampler = ResumableDistributedSampler(len(train), BATCH, 1, 0, SEED)  # the kit's order: (seed, epoch) decide it
    for epoch in range(progress["epoch"], EPOCHS):
        sampler.set_epoch(epoch)
        order = [i for chunk in sampler.global_batches() for i in chunk]
        first = progress["step_in_epoch"] if epoch == progress["epoch"] else 0
        for step in range(first, spe):
            global_step = progress["global_step"] + 1
            if s.kill_step == global_step and s.kill_mode == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            ids = order[step * BATCH:(step + 1) * BATCH]
            batch = train.batch(ids, pad_id)
            model.train()
            optimizer.zero_grad()
            loss = F.cross_entropy(model(batch["input_ids"], batch["attention_mask"]), batch["label"])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            progress = {"epoch": epoch, "step_in_epoch": step + 1, "global_step": global_step}
            sample_ids = train.ids[ids].tolist()
            ledger.write({"step": global_step, "epoch": epoch, "loss": loss.item(), "global_loss": loss.item(),
                          "lr": scheduler.get_last_lr()[0], "samples": sample_digest(sample_ids),
                          "sample_ids": sample_ids, "batch_ids": sample_ids, "attempt": s.attempt})
            if global_step % SAVE_EVERY == 0:
                _save(s, fns, watch, model, optimizer, scheduler, dict(progress))
    ledger.close()
    (run_dir / "final").mkdir(exist_ok=True)
    (run_dir / "final" / "summary.json").write_text(json.dumps({"parameter_sha256": parameter_digest(model),
                                                                "steps": progress["global_step"]}))


def _save(s: LoopSettings, fns, watch: SaveWatch, model, optimizer, scheduler, progress: dict) -> None:
    step = progress["global_step"]
    truth = state_digests(model, optimizer, scheduler, progress)
    Path(s.run_dir, "truth", f"attempt{s.attempt}-step-{step}.json").write_text(json.dumps(truth))
    dying = s.kill_step == step and s.kill_mode in ("during-save", "during-commit")
    path = Path(s.run_dir) / "checkpoint.pt"
    watch.begin(str(path), ({"during-save": "serialise", "during-commit": "commit"}[s.kill_mode]) if dying else None)
    try:
        if s.exercise == "04":
            fns.save_checkpoint(str(path), model, optimizer, scheduler, progress)
        else:
            book_style_save(s.run_dir, model, optimizer, scheduler, progress)
    except Exception as err:
        _learner_error(s, err)
    finally:
        watch.end()
    if dying and s.kill_mode == "during-save":  # the save returned: no torch.save, so no kill inside one
        sys.exit(EXIT_NO_TORCH_SAVE)
    if dying:  # during-commit, and the save returned
        if watch.commit_index is None:  # its file reached the path without a rename or copy onto it
            sys.exit(EXIT_NO_COMMIT)
        os.kill(os.getpid(), signal.SIGKILL)  # fewer renames than the save before: killed as it returns
    if state_digests(model, optimizer, scheduler, progress) != truth:
        Path(s.run_dir, "save_changed_state.txt").write_text(f"step {step}")


def attempt(settings_file: str) -> None:
    """One attempt's process: its settings from a file, so that the attempt can be rerun by hand
    (``run(LoopSettings(**json.load(open(FILE))))``); a crash of the loop itself leaves its
    traceback in ``loop_error.txt`` for the parent to show."""
    import traceback

    s = LoopSettings(**json.loads(Path(settings_file).read_text()))
    torch.set_num_threads(1)  # the reference (cached) and every attempt split their kernels the same way, any machine
    try:
        run(s)
    except Exception:
        Path(s.run_dir, "loop_error.txt").write_text(traceback.format_exc())
        raise


def half_write(source: str, target: str) -> None:
    """A process that a real SIGKILL stops half-way through ``torch.save`` of ``source``'s state
    to ``target`` (05.newest's broken newest file)."""
    buf = io.BytesIO()
    torch.save(torch.load(source, weights_only=True), buf)
    die_half_way(buf.getbuffer(), target)
