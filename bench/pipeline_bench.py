"""The main job as a user runs it: ``python -m course_lib pipeline`` with its defaults, in a
fresh process with an empty token cache (data preparation included), timed from outside.
``--quick`` is recorded too (the README's first try), and the default with ``--reduction
invariant`` beside it in the same run (the main job trained with the invariant reduction until
2026-12-02: its survivors save the killed step, so the resume redoes nothing).

    python bench/pipeline_bench.py
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import write


def run(work: Path, *flags: str) -> dict:
    run_dir = work / ("-".join(f.strip("-") for f in flags) or "default")
    env = {**os.environ, "COURSE_LIB_CACHE": str(work / f"cache-{run_dir.name}"), "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "course_lib", "pipeline", "--run-dir", str(run_dir), *flags],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    p = json.loads((run_dir / "final" / "summary.json").read_text())["pipeline"]
    return {"command_seconds": round(wall, 1), "pipeline_seconds": p["wall_seconds"],
            "held_out_accuracy": p["held_out_accuracy"], "held_out_reviews": p["held_out_reviews"],
            "out_of_domain_accuracy": p["out_of_domain_accuracy"],
            "train_reviews": p["train_reviews"], "steps": p["steps"], "interruption": p["interruption"],
            "resumed_from_step": p["resumed_from_step"], "steps_redone": p["interruption"]["step"] - p["resumed_from_step"]
            if p["interruption"] else 0, "cold_cache": True}


def main():
    with tempfile.TemporaryDirectory() as work:
        out = {"default": run(Path(work)), "quick": run(Path(work), "--quick"),
               "invariant": run(Path(work), "--reduction", "invariant")}
    out["invariant_vs_ddp_seconds"] = round(out["invariant"]["pipeline_seconds"] / out["default"]["pipeline_seconds"], 3)
    write("pipeline", out)


if __name__ == "__main__":
    main()
