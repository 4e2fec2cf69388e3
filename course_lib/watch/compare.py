"""Interrupted vs uninterrupted: are two runs the same run?

``compare_runs(A, B)`` reads both ledgers (last attempt per step, every rank) and final summaries,
and answers what the textbook leaves open: where the runs part, by how much, which samples one
skipped or repeated, and whether the final parameters are bit-identical.

A step that no ledger of a run holds (its lines lost with a machine that crashed before they were
fsynced, or never written by a rank that died) is not a difference: it is said (``not_read``), the
steps both runs hold are compared, and the final parameters' digests decide. A run that differs
still differs: at a step both hold, in its number of steps, or in its final parameters.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from course_lib.watch.monitor import latest_attempt, ledger_ranks, read_ledger, read_summary


def _steps(run_dir: Path) -> tuple[dict[int, dict], int, dict | None]:
    """Each step's row as its newest attempt logged it (rank 0's, else another rank's: a step's
    global fields, ``global_loss``, ``samples`` and ``batch_ids``, agree on every rank), the run's
    number of steps (its summary's, or the last one logged) and its summary."""
    rows = latest_attempt(row for rank in reversed(ledger_ranks(run_dir)) for row in read_ledger(run_dir, rank))
    summary = read_summary(run_dir)
    steps = max((summary or {}).get("steps", 0), rows[-1]["step"] if rows else 0)
    return {r["step"]: r for r in rows}, steps, summary


def _gaps(rows: dict[int, dict], steps: int) -> list[list[int]]:
    """The runs of steps ``1..steps`` that ``rows`` lacks, as ``[first, last]``."""
    gaps: list[list[int]] = []
    for s in (s for s in range(1, steps + 1) if s not in rows):
        if gaps and gaps[-1][1] == s - 1:
            gaps[-1][1] = s
        else:
            gaps.append([s, s])
    return gaps


def compare_runs(run_a: str | Path, run_b: str | Path) -> dict:
    """Run B compared with reference run A; ``identical`` only if every step both ledgers hold has
    the same global loss (exactly) and samples, the runs have as many steps and their final
    parameters are the same (``compare`` exits 0 only then). Raises FileNotFoundError when either
    is not a run. Notebook 05, optional deep-dives A and C. Also: ``first_divergent_step``,
    ``max_loss_diff``, ``skipped_samples``, ``repeated_samples`` (over the steps both hold),
    ``final_params_identical``, and ``not_read``: ``{"run", "rank": 0, "first", "last"}`` for each
    span of steps that no ledger of a run holds (rank 0's is the one every attempt writes)."""
    a_dir, b_dir = Path(run_a), Path(run_b)
    (a, steps_a, summary_a), (b, steps_b, summary_b) = _steps(a_dir), _steps(b_dir)
    if not steps_a or not steps_b:
        missing = [str(d) for d, steps in ((a_dir, steps_a), (b_dir, steps_b)) if not steps]
        raise FileNotFoundError(f"{' and '.join(missing)}: not a run directory (no metrics/rank0.jsonl); compare takes "
                                "two run directories, each the --run-dir of a train run")
    both = sorted(set(a) & set(b))
    diffs = {s: abs(a[s]["global_loss"] - b[s]["global_loss"]) for s in both}
    parted = [s for s in both if diffs[s] > 0 or a[s]["samples"] != b[s]["samples"]]
    if steps_a != steps_b:  # a step only one run took parts them too
        parted.append(min(steps_a, steps_b) + 1)
    gaps_a, gaps_b = _gaps(a, steps_a), _gaps(b, steps_b)
    unread = {s for first, last in gaps_a + gaps_b for s in range(first, last + 1)}
    seen_a = Counter(i for s, row in a.items() if s not in unread for i in row["batch_ids"])
    seen_b = Counter(i for s, row in b.items() if s not in unread for i in row["batch_ids"])
    digest_a, digest_b = ((summary or {}).get("parameter_sha256") for summary in (summary_a, summary_b))
    params_identical = digest_a is not None and digest_a == digest_b
    return {
        "run_a": str(a_dir), "run_b": str(b_dir),
        "steps_a": steps_a, "steps_b": steps_b,
        "first_divergent_step": min(parted, default=None),
        "max_loss_diff": max([0.0, *diffs.values()]),
        "skipped_samples": sum((seen_a - seen_b).values()),
        "repeated_samples": sum((seen_b - seen_a).values()),
        "final_params_identical": params_identical,
        "identical": not parted and params_identical,
        "not_read": [{"run": str(d), "rank": 0, "first": first, "last": last}
                     for d, gaps in ((a_dir, gaps_a), (b_dir, gaps_b)) for first, last in gaps],
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
