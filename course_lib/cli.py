"""``python -m course_lib``: pipeline, train, compare, verify, advise, predict (contract in DESIGN.md).

A mistake on the command line (a model that does not exist, a checkpoint path that is not one,
a rank that the run does not have) ends in one line on stderr that names the problem and the
fix, with exit code 2, before any data is prepared or process started. ``--debug`` (or
``COURSE_LIB_DEBUG=1``) shows the traceback instead.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from .config import ConfigError, TrainConfig

STARTED = time.time()  # a restart's cost begins here: interpreter and imports count


def _cmd_pipeline(args) -> int:
    from .pipeline import run_pipeline

    run_pipeline(run_dir=args.run_dir, quick=args.quick, interrupt=not args.no_interrupt)
    return 0


def _cmd_train(args) -> int:
    torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ  # started by torchrun: we are one rank
    # the config's own checks first: they need no torch, so a mistake is answered at once
    cfg = TrainConfig.from_args(args, **({"world_size": int(os.environ["WORLD_SIZE"])} if torchrun else {}))
    from .faults import EXIT_INTERRUPTED
    from .launch import RankFailed, Reporter, RunInterrupted, check_before_start, exit_now, launch, run_dir_lock, run_rank

    if torchrun:
        from contextlib import nullcontext

        rank = int(os.environ["RANK"])
        check_before_start(cfg)
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", cfg.world_size))
        elastic = bool(cfg.elastic_endpoint)  # every member holds the lock: nodes come and go
        with run_dir_lock(cfg.run_dir, shared=elastic) if rank == 0 or elastic else nullcontext():
            run_rank(cfg, rank, cfg.world_size, int(os.environ.get("LOCAL_RANK", 0)), local_world,
                     Reporter(rank, progress=False))
        exit_now(0)  # the work is on disk: leave without the interpreter's teardown (see exit_now)
    try:
        summary = launch(cfg, launched_at=STARTED)
    except RunInterrupted as err:
        print(f"INTERRUPTED: {err}", file=sys.stderr)
        return EXIT_INTERRUPTED
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

    if not Path(args.run_dir).is_dir():
        raise ConfigError(f"{args.run_dir} does not exist; verify takes a run directory (the --run-dir of a train run)")
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


def _cmd_advise(args) -> int:
    from .advisor import advise, format_advice, measure_costs, parse_duration

    mtbf = parse_duration(args.mtbf)
    costs = measure_costs(args.run_dir, restart_seconds=None if args.restart_seconds is None
                          else parse_duration(args.restart_seconds),
                          save_seconds=None if args.save_seconds is None else parse_duration(args.save_seconds))
    if args.steps:
        costs.steps = args.steps
    advice = advise(costs, mtbf, covered=args.covered)
    print(json.dumps(advice, indent=2) if args.json else format_advice(advice, args.run_dir))
    return 0


def _cmd_predict(args) -> int:
    from .predict import load_classifier

    texts = list(args.texts)
    if args.file:
        texts += [line for line in Path(args.file).read_text(encoding="utf-8").splitlines() if line.strip()]
    if not texts or texts == ["-"]:
        if sys.stdin.isatty() and texts != ["-"]:
            raise ConfigError("no text to label: give it as an argument, with --file F (one review per line) "
                              "or on standard input")
        texts = [line for line in sys.stdin.read().splitlines() if line.strip()]
        if not texts:
            raise ConfigError("standard input held no text to label")
    for p in load_classifier(args.run_dir).predict(texts):
        short = p["text"] if len(p["text"]) <= 70 else p["text"][:67] + "..."
        print(json.dumps(p, ensure_ascii=False) if args.json else f"{p['label']:8s} {p['probability']:.3f}  {short}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (usage is one ``--help`` away)."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    parser = _Parser(prog="python -m course_lib", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("pipeline", parents=[common], help="the whole kit end to end, offline (data, tokens, DDP, kill + resume, eval)")
    p.add_argument("--run-dir", default="runs/pipeline")
    p.add_argument("--quick", action="store_true", help="a small version for a first try")
    p.add_argument("--no-interrupt", action="store_true", help="skip the SIGKILL + resume")
    p.set_defaults(func=_cmd_pipeline)
    t = sub.add_parser("train", parents=[common], help="train one run (spawns the ranks, or is one rank under torchrun)")
    TrainConfig.add_arguments(t)
    t.set_defaults(func=_cmd_train)
    c = sub.add_parser("compare", parents=[common], help="exit 0 only if the two runs are identical")
    c.add_argument("run_a")
    c.add_argument("run_b")
    c.set_defaults(func=_cmd_compare)
    v = sub.add_parser("verify", parents=[common], help="exit 0 only if every checkpoint in DIR is valid")
    v.add_argument("run_dir")
    v.set_defaults(func=_cmd_verify)
    a = sub.add_parser("advise", parents=[common], help="how often to save, from a finished run's own costs")
    a.add_argument("run_dir")
    a.add_argument("--mtbf", required=True, help="mean time between failures: 90s, 30m, 6h, 2d")
    a.add_argument("--covered", type=float, default=0.0,
                   help="share of failures the survivors' emergency save covers (--reduction invariant)")
    a.add_argument("--steps", type=int, default=0, help="length of the run to plan (default: this run's)")
    a.add_argument("--restart-seconds", help="use this restart cost instead of the measured one")
    a.add_argument("--save-seconds", help="use this save cost instead of the measured one")
    a.add_argument("--json", action="store_true", help="the whole answer as JSON")
    a.set_defaults(func=_cmd_advise)
    r = sub.add_parser("predict", parents=[common], help="label reviews with a trained run's model")
    r.add_argument("run_dir")
    r.add_argument("texts", nargs="*", help="reviews to label ('-' or none: read standard input)")
    r.add_argument("--file", help="a text file, one review per line")
    r.add_argument("--json", action="store_true", help="one JSON object per review")
    r.set_defaults(func=_cmd_predict)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .checkpoint import CheckpointError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, CheckpointError, FileNotFoundError) as err:
        if args.debug or os.environ.get("COURSE_LIB_DEBUG", "") not in ("", "0"):
            raise
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
