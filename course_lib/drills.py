"""Interruption experiments built from real runs: kill, resume, compare.

``interrupt_and_resume`` is the unit (one real kill, one automatic resume); the notebooks'
resume-mode study and the chaos drill in ``bench/`` are loops over it.
"""
from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

from .compare import compare_runs  # noqa: F401  (re-exported for the notebooks)
from .config import TrainConfig
from .launch import RunInterrupted, launch
from .monitor import read_ledger


def ensure_reference(cfg: TrainConfig) -> Path:
    """The uninterrupted run of ``cfg`` (trained once, reused while its summary exists)."""
    if not (Path(cfg.run_dir) / "final" / "summary.json").exists():
        shutil.rmtree(cfg.run_dir, ignore_errors=True)
        launch(cfg, quiet=True)
    return Path(cfg.run_dir)


def interrupt_and_resume(cfg: TrainConfig, kill_at_step: int, kill_mode: str = "sigkill", kill_rank: int | None = None,
                         resume_mode: str = "full", resume_world_size: int | None = None, on_start=None) -> dict:
    """Train ``cfg`` with a real kill, resume it automatically, report what happened."""
    shutil.rmtree(cfg.run_dir, ignore_errors=True)
    rank = cfg.world_size - 1 if kill_rank is None else kill_rank
    interrupted = None
    try:
        launch(cfg.replace(kill_at_step=kill_at_step, kill_rank=rank, kill_mode=kill_mode), quiet=True, on_start=on_start)
    except RunInterrupted as err:
        interrupted = str(err)
    t0, restarted_at = time.perf_counter(), time.time()
    resumed = cfg.replace(resume="auto", resume_mode=resume_mode,
                          **({"world_size": resume_world_size} if resume_world_size else {}))
    summary = launch(resumed, quiet=True, on_start=on_start)
    restart_seconds = time.perf_counter() - t0
    rows = read_ledger(cfg.run_dir, 0, last_attempt=False)
    lost = [r["step"] for r in rows if r["attempt"] == 1 and (summary["resumed_from"] or 0) < r["step"]]
    first_resumed = min((r["time"] for r in rows if r["attempt"] == summary["attempt"]), default=None)
    return {"interrupted": interrupted, "resumed_from": summary["resumed_from"], "steps_redone": len(lost),
            "resume_call_seconds": restart_seconds, "summary": summary,
            # restart -> first optimizer step of the resumed run: start-up, rendezvous, load, verify
            "restart_to_first_step_seconds": None if first_resumed is None else first_resumed - restarted_at}


def resume_mode_study(workdir: str | Path, base: TrainConfig, kill_at_step: int,
                      modes=("full", "weights-only", "no-rng", "epoch-start")) -> dict:
    """The reference run, then one killed-and-resumed run per resume mode, each compared."""
    workdir = Path(workdir)
    ref = ensure_reference(base.replace(run_dir=str(workdir / "reference")))
    out = {"reference": str(ref), "kill_at_step": kill_at_step, "runs": {}}
    for mode in modes:
        cfg = base.replace(run_dir=str(workdir / mode))
        interrupt_and_resume(cfg, kill_at_step, resume_mode=mode)
        out["runs"][mode] = {"run_dir": cfg.run_dir, **compare_runs(ref, cfg.run_dir)}
    return out


def chaos_drill(workdir: str | Path, base: TrainConfig, kills: int = 20, seed: int = 0) -> list[dict]:
    """``kills`` real kills at random steps and modes, each resumed automatically and compared
    with the uninterrupted run."""
    rng = random.Random(seed)
    workdir = Path(workdir)
    ref = ensure_reference(base.replace(run_dir=str(workdir / "reference")))
    total = read_ledger(ref, 0)[-1]["step"]
    results = []
    for i in range(kills):
        step, mode = rng.randint(2, total), rng.choice(("sigkill", "sigterm", "during-save"))
        rank = rng.randrange(base.world_size)
        cfg = base.replace(run_dir=str(workdir / f"kill-{i:02d}"))
        t0 = time.perf_counter()
        r = interrupt_and_resume(cfg, step, mode, kill_rank=rank)
        c = compare_runs(ref, cfg.run_dir)
        first = r["restart_to_first_step_seconds"]
        results.append({"kill": i, "step": step, "mode": mode, "rank": rank, "identical": c["identical"],
                        "resumed_from": r["resumed_from"], "steps_redone": r["steps_redone"],
                        "resume_call_seconds": round(r["resume_call_seconds"], 2),
                        "restart_to_first_step_seconds": None if first is None else round(first, 2),
                        "seconds": round(time.perf_counter() - t0, 1)})
        shutil.rmtree(cfg.run_dir, ignore_errors=True)
    return results
