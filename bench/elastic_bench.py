"""Nodes lost and gained back under torchrun (loopback, one rank per node, invariant reduction).

1. The cycle 2 -> 1 -> 2 nodes, ``--reps`` times each way, interleaved: the group re-formed
   in-process (the kit) or by torchrun's restarts. Seconds from the node's death to the first step
   of the shrunken group, and from the node's start (its torchrun agent) to the first step of the
   grown group; whether the run ends bit-identical to the run never disturbed.
2. The floor under a node's start on this machine, measured in the same run: what any fresh
   process pays before it can train (``import torch``; torch and its first ``torch.optim``
   optimizer, which imports ``torch._dynamo``) and what torchrun's agent pays before it starts
   the worker (its own imports). The machines here differ by up to 2x in these; the kit's
   excess over the floor is what it can still remove.
3. How a newcomer gets the state, for ``bag`` and ``minilm``: from the live peer's memory over the
   process group, or from the checkpoint the peer commits first (one node running, a second one
   joins): the hand-over's seconds and size, and the newcomer's arrival to its first step.

    python bench/elastic_bench.py [--reps 3]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import write

from course_lib.beyond.elastic.commands import RDZV_CONF, ElasticSettings
from course_lib.beyond.elastic.drill import node_drill
from course_lib.checkpoint.store import STATE_PARTS
from course_lib.config import TrainConfig
from course_lib.ddp.launch import launch
from course_lib.watch.compare import compare_runs

BAG = TrainConfig(run_dir="unused", reduction="invariant", train_limit=4000, epochs=6, embed_dim=8, save_every_steps=10,
                  log_every=10_000, eval_limit=200, warmup_steps=5, threads_per_rank=1, timeout_s=30, keep_last=100)
MINILM = BAG.replace(model="minilm", max_length=64, global_batch_size=16, train_limit=1000, epochs=1, max_steps=30,
                     lr=2e-5, save_every_steps=100, timeout_s=120)


def _joined(run: Path) -> dict:
    rows = [json.loads(line) for line in (run / "elastic.jsonl").read_text().splitlines()]
    newcomer = next(r for r in rows if r.get("state"))
    size = newcomer["state"].get("bytes") or sum(  # from the checkpoint: its state parts' size on disk
        (run / "checkpoints" / f"step-{newcomer['step']:08d}" / name).stat().st_size for name in STATE_PARTS)
    return {"state_via": newcomer["state"]["via"], "state_mb": round(size / 2**20, 1),
            "state_seconds": round(newcomer["state"]["seconds"], 3),
            "asked_to_ready_seconds": round(newcomer["ready"] - newcomer["asked"], 3),
            "worker_start_to_ready_seconds": round(newcomer["ready"] - newcomer["started"], 3),
            "started": newcomer["started"]}


def cycle(work: Path, ref: Path, reform: str, rep: int) -> dict:
    run = work / f"cycle-{reform}-{rep}"
    r = node_drill(BAG.replace(run_dir=str(run)), [("lose", 15 + 5 * rep), ("gain", 30 + 5 * rep)], reform=reform)
    lost, gained = r["events"]
    out = {"reform": reform, "exit_code": r["exit_code"], "world_size_at_end": r["world_size_at_end"],
           "identical": compare_runs(ref, run)["identical"], "death_to_first_step": round(lost["seconds_to_first_step"], 2),
           "start_to_first_step": round(gained["seconds_to_first_step"], 2)}
    if reform == "in-process":  # the newcomer's own records: when its worker process began (torchft's "start")
        out.update(_joined(run))
        out["worker_start_to_first_step"] = round(gained["time"] + gained["seconds_to_first_step"] - out.pop("started"), 2)
    return out


def join(work: Path, cfg: TrainConfig, name: str, peer: bool, ref: Path, after_step: int) -> dict:
    run = work / f"join-{name}-{'peer' if peer else 'disk'}"
    r = node_drill(cfg.replace(run_dir=str(run)), [("gain", after_step)], nodes=1, settings=ElasticSettings(peer_state=peer))
    joined = _joined(run)
    joined.pop("started")
    return {"model": name, "exit_code": r["exit_code"], "identical": compare_runs(ref, run)["identical"],
            "start_to_first_step": round(r["events"][0]["seconds_to_first_step"], 2), **joined}


FLOOR = {"import_torch": "import torch",
         "import_torch_first_optimizer": "import torch; torch.optim.AdamW([torch.zeros(1, requires_grad=True)])",
         "torchrun_agent_imports": "import torch.distributed.run"}


def floor(reps: int) -> dict:
    """Seconds a fresh interpreter takes for each of :data:`FLOOR` (median of ``reps``, interleaved),
    and their sum for a node's start: the agent's imports, then the worker's torch and optimizer."""
    seconds = {k: [] for k in FLOOR}
    for _ in range(reps):
        for key, code in FLOOR.items():
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            seconds[key].append(round(time.perf_counter() - t, 3))
    out = {k: {"median": statistics.median(v), "runs": v} for k, v in seconds.items()}
    out["node_start"] = round(out["torchrun_agent_imports"]["median"] + out["import_torch_first_optimizer"]["median"], 3)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        refs = {"bag": work / "ref-bag", "minilm": work / "ref-minilm"}
        fresh = floor(max(a.reps, 3))
        launch(BAG.replace(run_dir=str(refs["bag"])), quiet=True)
        launch(MINILM.replace(run_dir=str(refs["minilm"]), world_size=1), quiet=True)
        cycles = [cycle(work, refs["bag"], reform, rep) for rep in range(a.reps) for reform in ("in-process", "restart")]
        joins = [join(work, cfg, name, peer, refs[name], step)
                 for name, cfg, step in (("bag", BAG, 10), ("minilm", MINILM, 2)) for peer in (True, False)]
    summary = {}
    for reform in ("in-process", "restart"):
        rows = [c for c in cycles if c["reform"] == reform]
        keys = ["death_to_first_step", "start_to_first_step"] + ["worker_start_to_first_step"] * (reform == "in-process")
        summary[reform] = {k: {"median": statistics.median(c[k] for c in rows), "min": min(c[k] for c in rows),
                               "max": max(c[k] for c in rows)} for k in keys}
        summary[reform]["identical"] = sum(c["identical"] for c in rows)
        summary[reform]["runs"] = len(rows)
    write("elastic", {"rdzv_conf": RDZV_CONF, "floor_seconds": fresh, "cycles": cycles, "joins": joins, "summary": summary,
                      "conditions": "2 cores, loopback, one rank per node (1 thread), bag: 300 steps of 64 reviews; "
                                    "run under flock /tmp/cpu.lock (nothing else training)",
                      "torchft_reference_seconds": {"death_to_next_step": 5.1, "start_to_training": 3.5}})


if __name__ == "__main__":
    main()
