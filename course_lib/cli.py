"""``python -m course_lib``: pipeline, train, compare, verify (contract in DESIGN.md)."""
from __future__ import annotations

import argparse
import json
import os
import sys

from .config import TrainConfig


def _cmd_pipeline(args) -> int:
    from .pipeline import run_pipeline

    run_pipeline(run_dir=args.run_dir, quick=args.quick, interrupt=not args.no_interrupt)
    return 0


def _cmd_train(args) -> int:
    from .launch import RankFailed, Reporter, RunInterrupted, launch, run_rank

    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # started by torchrun: we are one rank
        world = int(os.environ["WORLD_SIZE"])
        cfg = TrainConfig.from_args(args, world_size=world)
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
        run_rank(cfg, int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", 0)), local_world,
                 Reporter(int(os.environ["RANK"]), progress=False))
        return 0
    cfg = TrainConfig.from_args(args)
    try:
        summary = launch(cfg)
    except RunInterrupted as err:
        print(f"INTERRUPTED: {err}", file=sys.stderr)
        return 3
    except RankFailed as err:
        print(f"FAILED: {err}", file=sys.stderr)
        return 1
    print(json.dumps({k: summary[k] for k in ("val_accuracy", "steps", "resumes", "world_size")}))
    return 0


def _cmd_compare(args) -> int:
    from .compare import compare_runs, format_report

    result = compare_runs(args.run_a, args.run_b)
    print(format_report(result))
    return 0 if result["identical"] else 1


def _cmd_verify(args) -> int:
    from .checkpoint import checkpoint_root, list_checkpoints, verify

    found = list_checkpoints(args.run_dir)
    if not found:
        print(f"no checkpoints in {checkpoint_root(args.run_dir)}")
        return 1
    bad = 0
    for path in found:
        ok, reason = verify(path)
        bad += not ok
        print(f"{path.name}: {'valid' if ok else 'CORRUPT'}{'' if ok else ' - ' + reason}")
    for tmp in sorted(checkpoint_root(args.run_dir).glob(".tmp-*")):
        print(f"{tmp.name}: uncommitted (a save that never finished; ignored)")
    print(f"{len(found) - bad} valid, {bad} corrupt")
    return 0 if bad == 0 else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m course_lib", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pipeline", help="the whole kit end to end, offline (data, tokens, DDP, kill + resume, eval)")
    p.add_argument("--run-dir", default="runs/pipeline")
    p.add_argument("--quick", action="store_true", help="a small version for a first try")
    p.add_argument("--no-interrupt", action="store_true", help="skip the SIGKILL + resume")
    p.set_defaults(func=_cmd_pipeline)
    t = sub.add_parser("train", help="train one run (spawns the ranks, or is one rank under torchrun)")
    TrainConfig.add_arguments(t)
    t.set_defaults(func=_cmd_train)
    c = sub.add_parser("compare", help="exit 0 only if the two runs are identical")
    c.add_argument("run_a")
    c.add_argument("run_b")
    c.set_defaults(func=_cmd_compare)
    v = sub.add_parser("verify", help="exit 0 only if every checkpoint in DIR is valid")
    v.add_argument("run_dir")
    v.set_defaults(func=_cmd_verify)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
