"""Interruption experiments built from real runs: kill, resume, compare.

``interrupt_and_resume`` is the unit (one real kill, one automatic resume); the notebooks'
resume-mode study and the chaos drill in ``bench/`` are loops over it.
"""
from __future__ import annotations

import re
import shutil
import time
import warnings
from pathlib import Path

import pandas as pd

from course_lib.beyond import launch
from course_lib.config import RESUME_MODES, ConfigError, TrainConfig
from course_lib.ddp.launch import RankFailed, RunInterrupted
from course_lib.lab import references
from course_lib.lab.i18n import tr
from course_lib.lab.tables import comparisons, interruption
from course_lib.watch.compare import acceptance_test, compare_runs
from course_lib.watch.monitor import read_ledger, read_summary

UNPLANNED_KILLS = 5  # interruptions beyond the plan that interrupt_and_resume still resumes from


def ensure_reference(cfg: TrainConfig) -> Path:
    """The uninterrupted run of ``cfg`` in ``cfg.run_dir``: trained once per settings, then
    copied from the cache (:mod:`course_lib.lab.references`). A finished run already in the
    folder with other settings (a notebook rerun after a parameter changed) is never reused.
    Used in notebook 05 (optional deep-dive C) and by every drill and lab that compares with a run never
    interrupted."""
    settings = {k: v for k, v in cfg.to_dict().items() if k not in ("run_dir", "cache_dir")}
    if references.reuse(cfg.run_dir, settings, lambda: launch(cfg, quiet=True), root=cfg.cache_dir):
        cfg.save(Path(cfg.run_dir) / "config.json")  # the copy names its own folder
    return Path(cfg.run_dir)


def steps_redone(run_dir: str | Path) -> dict[int, int]:
    """Lost work, per attempt: every ledger line of a step that a later attempt did again
    (the steps since the last checkpoint a kill threw away), charged to the attempt that lost it."""
    rows = read_ledger(run_dir, 0, last_attempt=False)
    last_attempt: dict[int, int] = {}
    for r in rows:
        last_attempt[r["step"]] = max(last_attempt.get(r["step"], 0), r["attempt"])
    return {a: sum(1 for r in rows if r["attempt"] == a and last_attempt[r["step"]] > a)
            for a in sorted({r["attempt"] for r in rows})}


def interrupt_and_resume(cfg: TrainConfig, kill_at_step: int | list[int], kill_mode: str | list[str] = "sigkill",
                         kill_rank: int | list[int] | None = None, resume_mode: str = "full",
                         resume_world_size: int | None = None, on_start=None) -> dict:
    """Train ``cfg`` with real kills (one per step in ``kill_at_step``), resuming automatically
    after each, until the run finishes; report what happened. Used in notebook 05 (optional deep-dive A)."""
    shutil.rmtree(cfg.run_dir, ignore_errors=True)
    planned = cfg.replace(kill_at_step=kill_at_step, kill_mode=kill_mode,
                          kill_rank=cfg.world_size - 1 if kill_rank is None else kill_rank)
    interruptions, restarted_at, t_restart, summary = [], None, None, None
    # each planned kill costs one attempt; a few more for kills from outside (the lab's "kill now")
    for attempt in range(len(planned.kill_at_step) + 1 + UNPLANNED_KILLS):
        this = planned if attempt == 0 else planned.replace(resume="auto", resume_mode=resume_mode)
        if attempt and resume_world_size:  # later kills strike ranks that the smaller world still has
            this = this.replace(world_size=resume_world_size, kill_rank=[r % resume_world_size for r in this.kill_rank])
        try:
            summary = launch(this, quiet=True, on_start=on_start)
            break
        except RunInterrupted as err:
            interruptions.append(interruption(err))  # in the notebook's language
            t_restart, restarted_at = time.perf_counter(), time.time()
    if summary is None:
        raise RuntimeError(f"{cfg.run_dir}: still interrupted after {len(interruptions)} kills: {interruptions[-1]}")
    rows = read_ledger(cfg.run_dir, 0, last_attempt=False)
    redone_by_attempt = steps_redone(cfg.run_dir)
    first_resumed = min((r["time"] for r in rows if r["attempt"] == summary["attempt"]), default=None)
    return {"interrupted": interruptions[0] if interruptions else None, "interruptions": interruptions,
            "kills": len(interruptions), "resumed_from": summary["resumed_from"],
            "steps_redone": sum(redone_by_attempt.values()), "redone_by_attempt": redone_by_attempt,
            "resume_call_seconds": None if t_restart is None else time.perf_counter() - t_restart, "summary": summary,
            # last restart -> first optimizer step of the resumed run: start-up, rendezvous, load, verify
            "restart_to_first_step_seconds": None if first_resumed is None or restarted_at is None
            else first_resumed - restarted_at}


def resume_mode_study(workdir: str | Path, base: TrainConfig, kill_at_step: int, modes=RESUME_MODES) -> dict:
    """The reference run, then one killed-and-resumed run per resume mode, each compared. Used in notebook 05 (§3)."""
    workdir = Path(workdir)
    ref = ensure_reference(base.replace(run_dir=str(workdir / "reference")))
    out = {"reference": str(ref), "kill_at_step": kill_at_step, "runs": {}}
    for mode in modes:
        cfg = base.replace(run_dir=str(workdir / mode))
        interrupt_and_resume(cfg, kill_at_step, resume_mode=mode)
        out["runs"][mode] = {"run_dir": cfg.run_dir, **compare_runs(ref, cfg.run_dir)}
    return out


def acceptance_table(study: dict, lang: str | None = None):
    """The chapter's acceptance test (:func:`course_lib.watch.compare.acceptance_test`) applied to
    every resume of a :func:`resume_mode_study`, beside what ``compare`` says of the same run (the
    first divergent step, the samples repeated, identical or not). Used in notebook 05 (§3)."""
    rows = {}
    for mode, r in study["runs"].items():
        a = acceptance_test(r["run_dir"])
        first = r["first_divergent_step"]
        rows[mode] = {tr("first divergent step", lang): tr("none", lang) if first is None else first,
                      tr("samples repeated", lang): r["repeated_samples"],
                      tr("loss before the resume", lang): round(a["checkpoint_loss"], 4),
                      tr("loss after it", lang): round(a["first_epoch_after_loss"], 4),
                      tr("the chapter's acceptance test", lang): tr("passes" if a["passes"] else "fails", lang),
                      tr("identical?", lang): tr("yes" if r["identical"] else "no", lang)}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = tr("resume mode", lang)
    return frame


def resume_elsewhere(workdir: str | Path, base: TrainConfig, kill_at_step: int, resume_world_size: int = 1) -> dict:
    """Kill a run of ``base`` (at its world size), resume it on ``resume_world_size`` ranks, and
    compare it with the uninterrupted run: with DDP the resume is refused before any rank starts
    (``{"refused": why}``), with the invariant reduction the run is identical (notebook 05,
    optional deep-dive A)."""
    workdir = Path(workdir) / base.reduction
    run = base.replace(run_dir=str(workdir / f"ws{base.world_size}-to-{resume_world_size}"))
    try:
        interrupt_and_resume(run, kill_at_step, resume_world_size=resume_world_size)
    except ConfigError as refused:
        return {"refused": str(refused)}
    return compare_runs(ensure_reference(base.replace(run_dir=str(workdir / "reference"))), run.run_dir)


def world_size_study(workdir: str | Path, base: TrainConfig, world_sizes=(1, 2, 4), steps: int = 30,
                     lang: str | None = None):
    """One config trained on 1, 2 and 4 ranks, with DDP's all-reduce and with the invariant
    reduction; each run compared with the 1-rank run of the same reduction. A table: one row
    per (reduction, world size). More ranks than cores is slow but correct, and said here, so
    the launcher's warning about it is not shown. Used in notebook 03 (optional deep-dive A)."""
    rows = {}
    for reduction in ("ddp", "invariant"):
        runs = {}
        for ws in world_sizes:
            cfg = base.replace(run_dir=str(Path(workdir) / f"{reduction}-ws{ws}"), world_size=ws, reduction=reduction,
                               max_steps=steps)
            shutil.rmtree(cfg.run_dir, ignore_errors=True)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="world_size .* CPU cores")
                launch(cfg, quiet=True)
            runs[ws] = cfg.run_dir
        rows.update({(reduction, ws): compare_runs(runs[world_sizes[0]], run) for ws, run in runs.items()
                     if ws != world_sizes[0]})
    table = comparisons(rows, lang)
    table.index = pd.MultiIndex.from_tuples(rows, names=[tr("reduction", lang), tr("ranks vs {n}", lang, n=world_sizes[0])])
    return table[table.columns[:3]]


def damage(path: str | Path, how: str = "flip") -> Path:
    """Damage a checkpoint's model file on purpose (``flip`` one byte or ``truncate`` it), for
    the corruption demo: ``verify`` must flag it and ``latest_valid`` must fall back.
    Used in notebook 04 (optional deep-dive B)."""
    f = Path(path) / "model.pt"
    data = bytearray(f.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0xFF
    elif how == "truncate":
        data = data[: len(data) // 3]
    else:
        raise ValueError(f"how must be 'flip' or 'truncate', got {how!r}")
    f.write_bytes(bytes(data))
    return f


def sync_claim(workdir: str | Path, base: TrainConfig, synced: str | Path) -> dict:
    """The chapter's reading "close losses falling together mean the gradient sync works", tested
    (notebook 03, "Is the gradient sync working?"): ``synced``, a finished 2-rank DDP run, beside the
    same run never all-reduced (``skip_grad_sync``). Both runs' losses fall, close together; only the
    check at the end that every rank holds the same parameters tells them apart. Returns, per run,
    its folder and that check's verdict (a table: :func:`course_lib.lab.tables.sync_claim`)."""
    summary = read_summary(synced)
    if summary is None:
        raise ValueError(f"{synced}/final/summary.json is missing: the synced run has not finished; train it to its end")
    digest = summary["parameter_sha256"]
    alone = base.replace(run_dir=str(Path(workdir) / "unsynced"), reduction="ddp", skip_grad_sync=True)
    shutil.rmtree(alone.run_dir, ignore_errors=True)
    try:
        launch(alone, quiet=True)
        agree, check = True, "every rank holds the same parameters"
    except RankFailed as err:  # the end-of-run check found the ranks' parameters apart, as it must
        found = re.search(r"ranks ended with different parameters: (rank \d+ vs rank \d+: \d+ tensor\(s\) differ)", str(err))
        if found is None:
            raise
        agree, check = False, found.group(1)
    return {"synchronised (DDP)": {"run_dir": str(synced), "parameters_agree": True,
                                   "check": f"sha256 {digest[:12]} on every rank"},
            "never synchronised": {"run_dir": alone.run_dir, "parameters_agree": agree, "check": check}}
