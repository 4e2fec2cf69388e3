"""What watching costs: the kit's 2-rank ``minilm`` training step, plain and under the audit's
probe (digests every step, and every 10th), in interleaved rounds in one run.

Each round trains the same short run three times as ``python -m course_lib train`` (a fresh
process each time): without the probe, with it digesting parameters, gradients and optimizer
state every step (``--every 1``, the audit's default), and every 10th step. The step time is
the median gap between consecutive steps in rank 0's ledger (the first two steps left out:
start-up). The probe's own time per step comes from its records (``probe_s``). Writes
``bench/results/audit_overhead.json``.

    python bench/audit_overhead.py [--rounds 3] [--steps 12]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import write
from resume_audit.attempt import probe_env
from resume_audit.records import read_processes

TRAIN = ["--model", "minilm", "--global-batch-size", "16", "--max-length", "256", "--train-limit", "600", "--lr", "3e-5",
         "--world-size", "2", "--save-every-steps", "0", "--epochs", "1"]
CONFIGS = {"plain": None, "every step": 1, "every 10th step": 10}


def one(work: Path, name: str, every: int | None, steps: int) -> dict:
    run = work / name.replace(" ", "-")
    env = dict(os.environ) if every is None else probe_env(work / f"{run.name}-records", None, every, None, None)
    subprocess.run([sys.executable, "-m", "course_lib", "train", "--run-dir", str(run), "--max-steps", str(steps), *TRAIN],
                   env=env, check=True, capture_output=True)
    times = [json.loads(line)["time"] for line in (run / "metrics" / "rank0.jsonl").read_text().splitlines()]
    gaps = [b - a for a, b in zip(times[2:], times[3:])]
    out = {"step_seconds": statistics.median(gaps)}
    if every is not None:
        ranks = [p for p in read_processes(work / f"{run.name}-records") if p.steps]
        probe_s = [max((e.get("probe_s", 0.0) for e in p.events), default=0.0) for p in ranks]  # the probe's running total
        out["probe_seconds_per_step"] = statistics.mean(s / len(p.steps) for s, p in zip(probe_s, ranks))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    a = ap.parse_args()
    rows: dict[str, list[dict]] = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for name, every in CONFIGS.items():
                rows[name].append(one(Path(tmp) / f"round{r}", name, every, a.steps))
                print(f"round {r + 1}: {name}: {rows[name][-1]}", flush=True)
    plain = statistics.median(x["step_seconds"] for x in rows["plain"])
    result = {"setting": "python -m course_lib train " + " ".join(TRAIN), "rounds": a.rounds, "steps": a.steps,
              "plain_step_seconds": round(plain, 4), "configs": {}}
    for name, runs in rows.items():
        step = statistics.median(x["step_seconds"] for x in runs)
        result["configs"][name] = {"step_seconds": round(step, 4), "vs_plain": round(step / plain, 4),
                                   "per_round": [round(x["step_seconds"], 4) for x in runs],
                                   **({"probe_seconds_per_step": round(statistics.median(x["probe_seconds_per_step"]
                                                                                        for x in runs), 4)}
                                      if name != "plain" else {})}
    write("audit_overhead", result)


if __name__ == "__main__":
    main()
