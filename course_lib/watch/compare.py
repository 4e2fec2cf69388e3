"""Interrupted vs uninterrupted: are two runs the same run?

``compare_runs(A, B)`` reads both ledgers (last attempt per step, every rank) and the final
summaries, and answers the questions the textbook leaves open: the first step at which the
runs part, the largest loss difference, which samples one run saw that the other skipped or
repeated, and whether the final parameters are bit-identical.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from course_lib.watch.monitor import ledger_ranks, read_ledger


def _final_digest(run_dir: Path) -> str | None:
    path = run_dir / "final" / "summary.json"
    return json.loads(path.read_text()).get("parameter_sha256") if path.exists() else None


def _seen(run_dir: Path) -> Counter:
    """How often each sample id was trained on, as the final model saw it: per step, the
    step's whole batch (``batch_ids``) as written by its newest attempt, from any rank. (A rank
    that died may not have logged a step that it did finish; its peers logged the same batch.)

    Ledgers written before ``batch_ids`` existed: the union of every rank's ``sample_ids`` of
    the newest attempt."""
    rows = [row for rank in ledger_ranks(run_dir) for row in read_ledger(run_dir, rank)]
    newest: dict[int, dict] = {}
    for row in rows:
        if row["step"] not in newest or row["attempt"] > newest[row["step"]]["attempt"]:
            newest[row["step"]] = row
    seen: Counter = Counter()
    for step, row in newest.items():
        if "batch_ids" in row:
            seen.update(row["batch_ids"])
        else:
            seen.update(i for r in rows if r["step"] == step and r["attempt"] == row["attempt"]
                        for i in r.get("sample_ids", []))
    return seen


def compare_runs(run_a: str | Path, run_b: str | Path, tolerance: float = 0.0) -> dict:
    """Compare run B against reference run A. ``identical`` needs every step's global loss and
    sample set equal (within ``tolerance``, default exact), the same number of steps and the same
    final parameters. Used in notebook 05 (§5)."""
    a_dir, b_dir = Path(run_a), Path(run_b)
    a = {r["step"]: r for r in read_ledger(a_dir, 0)}
    b = {r["step"]: r for r in read_ledger(b_dir, 0)}
    if not a or not b:
        missing = [str(d) for d, rows in ((a_dir, a), (b_dir, b)) if not rows]
        raise FileNotFoundError(f"{' and '.join(missing)}: not a run directory (no metrics/rank0.jsonl); compare takes "
                                "two run directories, each the --run-dir of a train run")
    first_diff, max_diff, diffs = None, 0.0, []
    for step in sorted(set(a) | set(b)):
        ra, rb = a.get(step), b.get(step)
        if ra is None or rb is None:
            first_diff = step if first_diff is None else first_diff
            continue
        d = abs(ra["global_loss"] - rb["global_loss"])
        diffs.append((step, d))
        max_diff = max(max_diff, d)
        if first_diff is None and (d > tolerance or ra["samples"] != rb["samples"]):
            first_diff = step
    seen_a, seen_b = _seen(a_dir), _seen(b_dir)
    digest_a, digest_b = _final_digest(a_dir), _final_digest(b_dir)
    params_identical = digest_a is not None and digest_a == digest_b
    return {
        "run_a": str(a_dir), "run_b": str(b_dir),
        "steps_a": max(a), "steps_b": max(b),
        "first_divergent_step": first_diff,
        "max_loss_diff": max_diff,
        "loss_diffs": diffs,
        "skipped_samples": sum((seen_a - seen_b).values()),
        "repeated_samples": sum((seen_b - seen_a).values()),
        "final_params_identical": params_identical,
        "identical": first_diff is None and params_identical,
    }


def acceptance_test(run_dir: str | Path) -> dict:
    """The chapter's test of a resume: the first epoch after it ends with a lower loss than the
    checkpoint's. Here "the checkpoint's loss" is the mean global loss over the epoch's worth
    of steps up to the step resumed from, and "the first epoch after" the mean over the same
    number of steps after it (single steps are too noisy). It only asks whether training goes
    on improving, which an amnesiac resume also does: :func:`compare_runs` is the test that
    tells an exact resume from one that is merely plausible."""
    run_dir = Path(run_dir)
    summary = json.loads((run_dir / "final" / "summary.json").read_text())
    resumed = summary.get("resumed_from")
    if resumed is None:
        raise ValueError(f"{run_dir} was never resumed: the acceptance test needs an interrupted and resumed run")
    rows = read_ledger(run_dir, 0)
    epoch_steps = max(sum(r["epoch"] == 0 for r in rows), 1)
    before = [r["global_loss"] for r in rows if resumed - epoch_steps < r["step"] <= resumed]
    after = [r["global_loss"] for r in rows if resumed < r["step"] <= resumed + epoch_steps]
    if not after:
        raise ValueError(f"{run_dir} stopped right after resuming from step {resumed}: no epoch after it to judge")
    loss_before, loss_after = sum(before) / len(before), sum(after) / len(after)
    return {"resumed_from": resumed, "checkpoint_loss": loss_before, "first_epoch_after_loss": loss_after,
            "steps_averaged": [len(before), len(after)], "passes": loss_after < loss_before}


def repeated_epoch_order(run_dir: str | Path) -> float:
    """Share of the steps after epoch 1 whose samples equal those at the same position of
    epoch 1: 0.0 for a correct run, 1.0 when ``set_epoch`` was forgotten. Used in notebook 03 (§7)."""
    by_epoch: dict[int, list[str]] = {}
    for row in read_ledger(run_dir, 0):
        by_epoch.setdefault(row["epoch"], []).append(row["samples"])
    first = by_epoch.get(0, [])
    later = [(pos, d) for e, digests in by_epoch.items() if e > 0 for pos, d in enumerate(digests)]
    return sum(pos < len(first) and first[pos] == d for pos, d in later) / len(later) if later else 0.0
