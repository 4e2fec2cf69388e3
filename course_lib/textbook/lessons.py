"""What the book's version loses, measured: the same real kills, the book's resume against the kit's.

Both experiments run real processes and real SIGKILLs, and judge each interrupted run against
the *same code* never interrupted with :func:`course_lib.watch.compare.compare_runs` (the book's run
is compared with the book's, the kit's with the kit's: the two loops differ, the question is
whether each resume continues its own run).
"""
from __future__ import annotations

import contextlib
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import torch

from course_lib.checkpoint.faults import fired_kills
from course_lib.checkpoint.store import list_checkpoints, verify
from course_lib.config import TrainConfig
from course_lib.ddp.launch import RankFailed, RunInterrupted, launch
from course_lib.lab import i18n, references
from course_lib.lab.drills import ensure_reference, interrupt_and_resume, steps_redone
from course_lib.textbook.run import DATA_LIMIT, EMBED_DIM, checkpoints, run_book
from course_lib.watch.compare import acceptance_test, compare_runs
from course_lib.watch.monitor import read_ledger, read_scalars

STEPS_PER_EPOCH = 16  # the chapter's: 1,024 reviews / 2 ranks / 32 per step
# crash_during_save's run: 6 epochs, a checkpoint every 2, killed half-way through saving epoch 4
CRASH_EPOCHS, CRASH_SAVE_INTERVAL, CRASH_KILL_EPOCH = 6, 2, 4


def _kit_config(run_dir: Path, epochs: int, save_interval: int, embed_dim: int) -> TrainConfig:
    """The kit's trainer on the book's data and shapes: 1,024 reviews, 64 per global step
    (16 steps an epoch), a checkpoint as often as the book's (every ``save_interval`` epochs), and
    the book's DDP: the same kind of run, with the whole state saved."""
    return TrainConfig(run_dir=str(run_dir), train_limit=DATA_LIMIT, epochs=epochs, global_batch_size=64,
                       save_every_steps=save_interval * STEPS_PER_EPOCH, log_every=10**6, world_size=2, reduction="ddp",
                       embed_dim=embed_dim)


def _book_acceptance(run_dir: Path, epoch: int) -> tuple[float, float]:
    """The chapter's test with the book's own records: the loss in ``model_epoch_{epoch}.pth``
    and the loss its ``SummaryWriter`` wrote for the epoch after (rank 0's epoch means)."""
    before = torch.load(run_dir / f"model_epoch_{epoch}.pth", weights_only=True)["loss"]
    after = dict(read_scalars(run_dir)["Loss/train"])[epoch + 1]
    return float(after), float(before)


# what_the_book_loses's columns
_COLUMNS = ("identical to its run never interrupted", "first divergent step", "resumed from step",
            "steps lost and redone", "samples skipped / repeated", "largest loss difference",
            "the chapter's acceptance test")


def _row(lang: str | None, cmp: dict | None, resumed: int | None, redone: int | None, accept: tuple | None) -> dict:
    verdict = "-" if accept is None else i18n.tr("passes ({after:.4f} < {before:.4f})" if accept[0] < accept[1]
                                            else "fails ({after:.4f} >= {before:.4f})", lang,
                                            after=accept[0], before=accept[1])
    if cmp is None:
        values = (i18n.tr("reference", lang), "-", "-", 0, "-", "-", verdict)
    else:
        first = cmp["first_divergent_step"]
        values = (i18n.tr("yes" if cmp["identical"] else "no", lang), i18n.tr("none", lang) if first is None else first,
                  resumed, redone, f"{cmp['skipped_samples']} / {cmp['repeated_samples']}",
                  f"{cmp['max_loss_diff']:.3g}", verdict)
    return {i18n.tr(label, lang): value for label, value in zip(_COLUMNS, values, strict=True)}


def _say(i: int, n: int, what: str, t0: float) -> None:
    print(f"[{i}/{n}] {what}: {time.perf_counter() - t0:.1f} s", flush=True)


def what_the_book_loses(workdir: str | Path, epochs: int = 12, save_interval: int = 10, kill_at_step: int = 185,
                        embed_dim: int = EMBED_DIM, lang: str | None = None,
                        book_killed: str | Path | None = None) -> pd.DataFrame:
    """The book's run never interrupted; the book's run SIGKILLed at ``kill_at_step`` and resumed
    with ``resume_training`` from its newest ``model_epoch_N.pth``; the kit's trainer under the
    same kill with ``--resume auto``. Each judged against its own run never interrupted.

    The defaults: 12 epochs of 16 steps, a checkpoint after epoch 10 (the chapter's), the kill as
    step 185 begins (step 9 of epoch 12); ``embed_dim``: the bag model's width, the book's and the
    kit's (see :func:`run_book`). ``book_killed``: a book run already killed at ``kill_at_step`` and
    resumed with these settings (notebook 05's §1), judged instead of training it again.
    ``df.attrs`` holds the raw comparisons. Used in notebook 05 (§2)."""
    workdir = Path(workdir)
    saved_epoch = (kill_at_step - 1) // STEPS_PER_EPOCH // save_interval * save_interval
    if saved_epoch < 1:
        raise ValueError(f"a kill at step {kill_at_step} comes before the first checkpoint (epoch {save_interval}, "
                         f"step {save_interval * STEPS_PER_EPOCH}): the book has nothing to resume from; kill later")
    if kill_at_step > epochs * STEPS_PER_EPOCH:
        raise ValueError(f"a kill at step {kill_at_step} is past the run's end (step {epochs * STEPS_PER_EPOCH})")
    ckpt_name = f"model_epoch_{saved_epoch}.pth"
    names = [i18n.tr("the book, never interrupted", lang),
             i18n.tr("the book, killed at step {k}, resume_training('{f}')", lang, k=kill_at_step, f=ckpt_name),
             i18n.tr("the kit, never interrupted", lang),
             i18n.tr("the kit, killed at step {k}, --resume auto", lang, k=kill_at_step)]
    t0 = time.perf_counter()
    book_ref, book_run = workdir / "book-reference", workdir / "book-killed"
    references.reuse(book_ref, {"book": "never interrupted", "epochs": epochs, "save_interval": save_interval,
                                "embed_dim": embed_dim, "data_limit": DATA_LIMIT},
                     lambda: run_book(book_ref, epochs, save_interval, embed_dim=embed_dim, show="none"))
    _say(1, 4, names[0], t0)
    if book_killed is not None:
        book_run = Path(book_killed)
        killed_and_resumed = ((book_run / "final" / "summary.json").exists()
                              and any(k["step"] == kill_at_step for k in fired_kills(book_run))
                              and max((r["step"] for r in read_ledger(book_run, 0)), default=0) == epochs * STEPS_PER_EPOCH)
        if not killed_and_resumed or not (book_run / ckpt_name).exists():
            raise ValueError(f"{book_run} is not a book run killed at step {kill_at_step} and resumed from {ckpt_name} "
                             f"to epoch {epochs}: run it so first (notebook 05, section 1), or leave book_killed out")
    else:
        run_book(book_run, epochs, save_interval, kill_at_step=kill_at_step, embed_dim=embed_dim, show="none")
        run_book(book_run, epochs, save_interval, resume=ckpt_name, embed_dim=embed_dim, show="none")
    _say(2, 4, names[1], t0)
    kit = _kit_config(workdir / f"kit-reference-e{epochs}-s{save_interval}", epochs, save_interval, embed_dim)
    ensure_reference(kit)
    _say(3, 4, names[2], t0)
    kit_run = kit.replace(run_dir=str(workdir / "kit-killed"))
    drill = interrupt_and_resume(kit_run, kill_at_step)
    _say(4, 4, names[3], t0)

    book_cmp, kit_cmp = compare_runs(book_ref, book_run), compare_runs(kit.run_dir, kit_run.run_dir)
    kit_accept, book_accept = acceptance_test(kit_run.run_dir), _book_acceptance(book_run, saved_epoch)
    book_redone = sum(steps_redone(book_run).values())
    df = pd.DataFrame.from_dict({
        names[0]: _row(lang, None, None, None, None),
        names[1]: _row(lang, book_cmp, saved_epoch * STEPS_PER_EPOCH, book_redone, book_accept),
        names[3]: _row(lang, kit_cmp, drill["resumed_from"], drill["steps_redone"],
                       (kit_accept["first_epoch_after_loss"], kit_accept["checkpoint_loss"]))}, orient="index")
    df.attrs = {"book": book_cmp, "kit": kit_cmp, "kit_acceptance": kit_accept, "checkpoint": ckpt_name,
                "book_acceptance": book_accept, "book_redone": book_redone, "kit_redone": drill["steps_redone"],
                "kit_resumed_from": drill["resumed_from"], "seconds": time.perf_counter() - t0}
    return df


def _sentence(text: str) -> str:
    """The first sentence of an error message, whole (a table shows it, never a cut word): torch's
    own about half a zip file is three sentences and a request to report it."""
    return re.split(r"(?<=\.)\s", text.strip(), maxsplit=1)[0]


def _loads(path: Path) -> str:
    try:
        torch.load(path, weights_only=True)
        return "loads"
    except Exception as err:  # what torch says about half a zip file
        return f"{type(err).__name__}: {_sentence(str(err).splitlines()[0])}"


def _last_error(failure: RankFailed) -> str:
    lines = [line.strip() for line in str(failure).splitlines() if "Error" in line and ":" in line]
    return _sentence(lines[-1] if lines else str(failure).splitlines()[-1])


def crash_during_save(workdir: str | Path, embed_dim: int = EMBED_DIM, lang: str | None = None) -> pd.DataFrame:
    """A SIGKILL half-way through a checkpoint, the book's ``model_epoch_4.pth`` and the kit's save of
    the same step (the run: the ``CRASH_*`` constants): what is on disk after the kill, and what each
    resume does. ``embed_dim``: the bag model's width, the book's and the kit's (see :func:`run_book`).
    Both killed runs start from empty folders on every call, so a second call (Restart & Run All
    before a class) kills for real again: a kill fires once per run folder (``faults.jsonl``), and
    a kept folder once made the second call report a resume from the run's end. ``df.attrs`` holds
    the raw results, ``kit_kills`` the kit run's kills as ``faults.jsonl`` recorded them.
    Used in notebook 04 (§4)."""
    workdir = Path(workdir)
    t0, step = time.perf_counter(), CRASH_KILL_EPOCH * STEPS_PER_EPOCH
    names = [i18n.tr("the book, killed while saving epoch {n}", lang, n=CRASH_KILL_EPOCH),
             i18n.tr("the kit, killed while saving step {s}", lang, s=step)]
    book_dir, name = workdir / "book-save-killed", f"model_epoch_{CRASH_KILL_EPOCH}.pth"
    run_book(book_dir, CRASH_EPOCHS, CRASH_SAVE_INTERVAL, kill_during_save=CRASH_KILL_EPOCH, embed_dim=embed_dim,
             show="none")
    files = {f: _loads(book_dir / f) for f in checkpoints(book_dir)}
    said = {f: i18n.tr("loads", lang) if state == "loads" else i18n.tr("unreadable: {why}", lang, why=state)
            for f, state in files.items()}
    on_disk = ", ".join(f"{f} ({what})" for f, what in said.items())
    try:
        run_book(book_dir, CRASH_EPOCHS, CRASH_SAVE_INTERVAL, resume=name, embed_dim=embed_dim, show="none")
        book_resume = i18n.tr("resumed (unexpected)", lang)
    except RankFailed as failure:
        book_resume = i18n.tr("resume_training('{f}') crashed: {err}", lang, f=name, err=_last_error(failure))
    _say(1, 2, names[0], t0)

    kit = _kit_config(workdir / f"kit-reference-e{CRASH_EPOCHS}-s{CRASH_SAVE_INTERVAL}", CRASH_EPOCHS, CRASH_SAVE_INTERVAL,
                      embed_dim)
    ensure_reference(kit)
    kit_run = kit.replace(run_dir=str(workdir / "kit-save-killed"), kill_at_step=step, kill_mode="during-save",
                          kill_rank=0)
    shutil.rmtree(kit_run.run_dir, ignore_errors=True)  # a fresh run: its kill fires again (the docstring)
    with contextlib.suppress(RunInterrupted):
        launch(kit_run, quiet=True)
    root = Path(kit_run.run_dir) / "checkpoints"
    kit_disk = ", ".join([f"{p.name} ({i18n.tr('valid', lang) if (ok := verify(p))[0] else ok[1]})"
                          for p in list_checkpoints(kit_run.run_dir)]
                         + [f"{p.name} ({i18n.tr('not a checkpoint: never committed', lang)})"
                            for p in sorted(root.glob(".tmp-*"))])
    summary = launch(kit_run.replace(resume="auto"), quiet=True)
    cmp = compare_runs(kit.run_dir, kit_run.run_dir)
    _say(2, 2, names[1], t0)
    kit_resume = i18n.tr("--resume auto continued from step {s}", lang, s=summary["resumed_from"])
    df = pd.DataFrame([[on_disk, book_resume, i18n.tr("- (the run cannot continue)", lang)],
                       [kit_disk, kit_resume, i18n.tr("yes" if cmp["identical"] else "no", lang)]], index=names,
                      columns=[i18n.tr(c, lang) for c in ("on disk after the kill", "the resume",
                                                           "identical to its run never interrupted")])
    df.attrs = {"book_files": files, "book_resume": book_resume, "kit_resumed_from": summary["resumed_from"], "kit": cmp,
                "kit_kills": fired_kills(kit_run.run_dir), "seconds": time.perf_counter() - t0}
    return df
