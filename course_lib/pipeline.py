"""The main job: all five stations on IMDB, offline, end to end.

clean + deduplicate -> tokenize -> 2-rank training with DDP (the chapter's) with TensorBoard and checkpoints ->
a real SIGKILL in the middle of training -> automatic resume from the newest valid
checkpoint -> held-out evaluation -> a short report and ``DIR/final/summary.json``.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from course_lib.beyond import launch
from course_lib.checkpoint.store import list_checkpoints
from course_lib.config import TrainConfig
from course_lib.data.prepare import prepare_for
from course_lib.ddp.launch import RunInterrupted
from course_lib.lab.i18n import resolve, tr
from course_lib.lab.tables import interruption
from course_lib.paths import disposable_run_dir
from course_lib.predict import out_of_domain


def pipeline_config(run_dir: str = "runs/pipeline", quick: bool = False, **overrides) -> TrainConfig:
    """The defaults of the main job; ``quick`` is a small first try (about half a minute)."""
    # async_save: the loop only waits for an in-memory snapshot; a thread writes the files.
    # Every 200 steps is about 8 s of training here: a save costs ~0.2 s of CPU on cores the
    # ranks keep busy: saving every 100 steps cost +2.6% wall time (median of 10 pairs), every 200 +0.1%.
    base = dict(run_dir=run_dir, model="bag", world_size=2, epochs=2, save_every_steps=200, log_every=100,
                async_save=True)
    if quick:
        base.update(train_limit=4000, epochs=3, warmup_steps=10, save_every_steps=20, log_every=50)
    return TrainConfig(**{**base, **overrides})


def run_pipeline(run_dir: str = "runs/pipeline", quick: bool = False, interrupt: bool = True, **overrides) -> dict:
    """The main job (``python -m course_lib pipeline``): every station on IMDB, through a real kill. Used in
    notebook 05 (§4)."""
    t0 = time.perf_counter()
    cfg = pipeline_config(run_dir, quick, **overrides)
    disposable_run_dir(run_dir)  # refused if it holds anything a run does not write: never wipe your files
    if Path(run_dir).exists():
        shutil.rmtree(run_dir)  # the pipeline's own folder: every run starts clean

    lang = resolve(None)  # the notebook's language, English on the command line
    print(tr("== Stations 1+2: IMDB -> clean, exact + near-duplicate dedup, split, WordPiece tokens", lang))
    data = prepare_for(cfg)
    info = data.info
    prov = info["provenance"]
    near = info.get("near_dup", {})
    print(tr("   source {source}: {raw} reviews, {exact} exact duplicates removed, {near} near-duplicates dropped from "
             "train, {leaks} train/test leaks dropped from test", lang, source=prov["source"], raw=prov["raw_reviews"],
             exact=prov["exact_duplicates_removed"], near=near.get("train_dropped", 0),
             leaks=near.get("test_leaks_dropped", 0)))
    print(tr("   train {train} / held-out {test} reviews, {tokens:,} training tokens (cache {cache})", lang,
             train=info["train"], test=info["test"], tokens=len(data.train.tokens), cache=tr(info["cache"], lang)))

    total = cfg.planned_steps(info["train"] // cfg.global_batch_size)
    kill_at = max(2, int(total * 0.55)) if interrupt else 0
    print(tr("== Stations 3+4: {ranks}-rank training ({model}, {reduction} reduction, {steps} steps, checkpoint every "
             "{every} steps, TensorBoard in {tb})", lang, ranks=cfg.world_size, model=cfg.model, reduction=cfg.reduction,
             steps=total, every=cfg.save_every_steps, tb=f"{run_dir}/tb"))
    first = cfg.replace(kill_at_step=kill_at, kill_rank=cfg.world_size - 1, kill_mode="sigkill")
    hit = None
    try:
        summary = launch(first)
    except RunInterrupted as err:
        hit = {"rank": err.rank, "signal": err.signal_name, "code": err.exit_code, "step": err.step,
               "checkpoint": err.checkpoint}
        print(tr("== Station 5: {what}", lang, what=interruption(err, lang)))
        print(tr("   resuming automatically from the newest valid checkpoint ...", lang))
        summary = launch(cfg.replace(resume="auto"))

    ood = out_of_domain(run_dir)  # how far it carries: critics' one-line snippets, not IMDB reviews
    report = {
        "held_out_accuracy": summary["val_accuracy"],
        "out_of_domain_accuracy": ood["accuracy"],
        "out_of_domain_reviews": ood["count"],
        "held_out_reviews": summary["val_count"],
        "train_reviews": info["train"],
        "steps": summary["steps"],
        "interruption": hit,
        "resumed_from_step": summary["resumed_from"],
        "checkpoints_on_disk": [p.name for p in list_checkpoints(run_dir)],
        "data": {"raw": prov["raw_reviews"], "exact_duplicates": prov["exact_duplicates_removed"],
                 "near_dup": info.get("near_dup"), "tokens": int(len(data.train.tokens))},
        "wall_seconds": round(time.perf_counter() - t0, 1),
    }
    summary["pipeline"] = report
    (Path(run_dir) / "final" / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(tr("== Done in {s} s: held-out accuracy {acc:.2%} on {n} reviews (out of domain: {ood:.2%} on {m:,} Rotten "
             "Tomatoes sentences); resumed from step {r}; summary in {path}", lang, s=report["wall_seconds"],
             acc=report["held_out_accuracy"], n=report["held_out_reviews"], ood=ood["accuracy"], m=ood["count"],
             r=report["resumed_from_step"], path=f"{run_dir}/final/summary.json"))
    return summary


def report_table(summary: dict, lang: str | None = None):
    """The main job's report (``summary["pipeline"]``) as one table a learner reads. Used in notebook 05 (§4)."""
    from course_lib.lab.tables import facts

    lang = resolve(lang)
    p = summary["pipeline"]
    hit = p["interruption"]
    rows = {
        "held-out accuracy": tr("{acc:.2%} on {n:,} reviews", lang, acc=p["held_out_accuracy"], n=p["held_out_reviews"]),
        "out-of-domain accuracy": tr("{acc:.2%} on {n:,} Rotten Tomatoes reviews", lang, acc=p["out_of_domain_accuracy"],
                                     n=p["out_of_domain_reviews"]),
        "training reviews": f"{p['train_reviews']:,}",
        "optimizer steps": p["steps"],
        "interrupted": tr("no", lang) if not hit else tr("rank {rank} killed by {signal} after step {step}", lang, **hit)
        if hit["signal"] else tr("rank {rank} exited with code {code} after step {step}", lang, **hit),
        "resumed from step": p["resumed_from_step"],
        "checkpoints on disk": ", ".join(p["checkpoints_on_disk"]),
        "wall time (s)": p["wall_seconds"],
    }
    return facts(rows, lang)
