"""Interrupted vs uninterrupted: are two runs the same run?

``compare_runs(A, B)`` reads both ledgers (last attempt per step, every rank) and final summaries,
and answers what the textbook leaves open: where the runs part, by how much, which samples one
skipped or repeated, and whether the final parameters are bit-identical.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from course_lib.watch.monitor import latest_attempt, ledger_ranks, read_ledger, read_summary


def _final_digest(run_dir: Path) -> str | None:
    return (read_summary(run_dir) or {}).get("parameter_sha256")


def _seen(run_dir: Path) -> Counter:
    """Sample id -> how often the final model trained on it: per step, the whole batch (``batch_ids``)
    its newest attempt logged on any rank (a dead rank may not have logged a step it finished)."""
    newest = latest_attempt(row for rank in ledger_ranks(run_dir) for row in read_ledger(run_dir, rank))
    return Counter(i for row in newest for i in row["batch_ids"])


def compare_runs(run_a: str | Path, run_b: str | Path) -> dict:
    """Run B compared with reference run A; ``identical`` only if every step's global loss (exactly)
    and samples, the steps and the final parameters are the same (``compare`` exits 0 only then).
    Raises FileNotFoundError when either is not a run. Notebook 05, optional deep-dives A and C.
    Also: ``first_divergent_step``, ``max_loss_diff``, ``skipped_samples``, ``repeated_samples``,
    ``final_params_identical``."""
    a_dir, b_dir = Path(run_a), Path(run_b)
    a = {r["step"]: r for r in read_ledger(a_dir, 0)}
    b = {r["step"]: r for r in read_ledger(b_dir, 0)}
    if not a or not b:
        missing = [str(d) for d, rows in ((a_dir, a), (b_dir, b)) if not rows]
        raise FileNotFoundError(f"{' and '.join(missing)}: not a run directory (no metrics/rank0.jsonl); compare takes "
                                "two run directories, each the --run-dir of a train run")
    diffs = {s: abs(a[s]["global_loss"] - b[s]["global_loss"]) for s in a if s in b}
    first_diff = next((s for s in sorted(set(a) | set(b))  # a step only one run has parts them too
                       if s not in diffs or diffs[s] > 0 or a[s]["samples"] != b[s]["samples"]), None)
    seen_a, seen_b = _seen(a_dir), _seen(b_dir)
    digest_a, digest_b = _final_digest(a_dir), _final_digest(b_dir)
    params_identical = digest_a is not None and digest_a == digest_b
    return {
        "run_a": str(a_dir), "run_b": str(b_dir),
        "steps_a": max(a), "steps_b": max(b),
        "first_divergent_step": first_diff,
        "max_loss_diff": max([0.0, *diffs.values()]),
        "skipped_samples": sum((seen_a - seen_b).values()),
        "repeated_samples": sum((seen_b - seen_a).values()),
        "final_params_identical": params_identical,
        "identical": first_diff is None and params_identical,
    }


def acceptance_test(run_dir: str | Path) -> dict:
    """``{resumed_from, checkpoint_loss, first_epoch_after_loss, steps_averaged, passes}``: the chapter's
    test that the first epoch after a resume ends with a lower loss than the checkpoint's (each the mean
    global loss over an epoch's worth of steps: single steps are too noisy); raises ValueError for a run
    not finished, never resumed, or with no step after its resume. An amnesiac resume passes too: :func:`compare_runs`
    tells an exact resume from a plausible one."""
    run_dir = Path(run_dir)
    summary = read_summary(run_dir)
    if summary is None:
        raise ValueError(f"{run_dir} has not finished (no final/summary.json): resume it to its end first")
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
    """Share of the steps after the first epoch whose samples equal those at the same position of the
    first: 0.0 for a correct run, 1.0 when ``set_epoch`` was forgotten. Notebook 03, optional deep-dive D."""
    by_epoch: dict[int, list[str]] = {}
    for row in read_ledger(run_dir, 0):
        by_epoch.setdefault(row["epoch"], []).append(row["samples"])
    first = by_epoch.get(0, [])
    later = [(pos, d) for e, digests in by_epoch.items() if e > 0 for pos, d in enumerate(digests)]
    return sum(pos < len(first) and first[pos] == d for pos, d in later) / len(later) if later else 0.0
