"""``python -m course_lib``: the kit's command line (pipeline, train, compare, verify, advise, predict, edition).

Every option explains itself (``python -m course_lib COMMAND --help``): ``train``'s options come
from the ``TrainConfig`` fields' own metadata (:func:`course_lib.config.option`), the others are
written here, each with its help line and default.

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

from course_lib._runtime.rank_output import say
from course_lib.beyond import REDUCTION_NAMES
from course_lib.config import ConfigError, TrainConfig
from course_lib.paths import run_dir

STARTED = time.time()  # a restart's cost begins here: interpreter and imports count


def _cmd_pipeline(args) -> int:
    from course_lib.pipeline import run_pipeline

    run_pipeline(run_dir=args.run_dir, quick=args.quick, interrupt=not args.no_interrupt, reduction=args.reduction)
    return 0


def _cmd_train(args) -> int:
    torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ  # started by torchrun: we are one rank
    # the config's own checks first: they need no torch, so a mistake is answered at once
    cfg = TrainConfig.from_args(args, **({"world_size": int(os.environ["WORLD_SIZE"])} if torchrun else {}))
    from course_lib.beyond import reduction as reduction_named
    from course_lib.beyond.elastic.commands import ElasticSettings

    elastic = ElasticSettings.from_args(args)
    elastic.check(cfg)
    reduction = reduction_named(cfg.reduction)
    from course_lib._runtime.processes import run_dir_lock
    from course_lib._runtime.rank_output import Reporter
    from course_lib._runtime.rank_start import run_then_exit
    from course_lib.ddp.launch import RankFailed, RunInterrupted, check_before_start, launch, run_rank
    from course_lib.ddp.outcome import EXIT_FAILED, EXIT_INTERRUPTED, exit_code
    from course_lib.watch.monitor import LAUNCHED_ENV

    if torchrun:
        from contextlib import nullcontext

        rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", 0))
        check_before_start(cfg, reduction)
        # when this worker's interpreter began: the start of an attempt, for advise's restart cost
        # (torchrun's agent started a moment before it; a torchrun restart is the same kind of start)
        os.environ.setdefault(LAUNCHED_ENV, repr(STARTED))
        report = Reporter(rank, progress=False)

        def work() -> int:
            if elastic.endpoint:  # the kit's elastic group: ranks decided, re-formed in-process; every member holds the lock
                from course_lib.beyond.elastic.regroup import run_member

                return exit_code(run_member(cfg, elastic, local_rank, report))
            with run_dir_lock(cfg.run_dir) if rank == 0 else nullcontext():
                local_world = int(os.environ.get("LOCAL_WORLD_SIZE", cfg.world_size))
                return exit_code(run_rank(cfg, rank, cfg.world_size, local_rank, local_world, report, reduction=reduction))

        run_then_exit(work)  # the work is on disk: leave without the interpreter's teardown
    try:
        summary = launch(cfg, launched_at=STARTED, reduction=reduction)
    except RunInterrupted as err:
        print(f"INTERRUPTED: {err}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except RankFailed as err:
        print(f"FAILED: {err}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps({k: summary[k] for k in ("val_accuracy", "steps", "resumes", "world_size", "reduction")}))
    return 0


def _cmd_compare(args) -> int:
    from course_lib.lab.tables import format_report
    from course_lib.watch.compare import compare_runs

    run_dir(args.run_a, "compare")
    run_dir(args.run_b, "compare")
    result = compare_runs(args.run_a, args.run_b)
    print(format_report(result))
    return 0 if result["identical"] else 1


def _cmd_verify(args) -> int:
    from course_lib.checkpoint.store import checkpoint_root, list_checkpoints, verify

    run_dir(args.run_dir, "verify")
    found = list_checkpoints(args.run_dir)
    if not found:
        say(f"no checkpoints in {checkpoint_root(args.run_dir)}")
        return 1
    bad = 0
    for path in found:
        ok, reason = verify(path)
        bad += not ok
        say(f"{path.name}: valid" if ok else f"{path.name}: CORRUPT - {reason}")
    for tmp in sorted(checkpoint_root(args.run_dir).glob(".tmp-*")):
        say(f"{tmp.name}: uncommitted (a save that never finished; ignored)")
    say(f"{len(found) - bad} valid, {bad} corrupt")
    return 0 if bad == 0 else 1


def _cmd_advise(args) -> int:
    from course_lib.beyond.advisor import advise, format_advice, measure_costs, parse_duration

    mtbf = parse_duration(args.mtbf)
    given = {k: parse_duration(v) for k in ("restart_seconds", "save_seconds") if (v := getattr(args, k)) is not None}
    costs = measure_costs(args.run_dir, **given)
    if args.steps:
        costs.steps = args.steps
    advice = advise(costs, mtbf, covered=args.covered)
    for line in (json.dumps(advice, indent=2) if args.json else format_advice(advice, args.run_dir)).splitlines():
        say(line)
    return 0


def _cmd_audit(args) -> int:
    """The learner's front door to the audit, a distribution of its own (``resume-audit``): its
    options and its report are the audit's; only its error becomes the kit's one-line error."""
    from resume_audit import AuditError
    from resume_audit.cli import run

    try:
        return run(args)
    except AuditError as err:
        raise ConfigError(str(err)) from None


def _cmd_edition(args) -> int:
    from course_lib.lab.edition import build_edition
    from course_lib.paths import output_dir

    output_dir(args.out, "--out")
    from course_lib.exercises.teacher import solutions_section

    index = build_edition(args.out, langs=args.lang, small=args.small, only=args.notebooks,
                          appendix=solutions_section if args.teacher else None)
    print(f"executed edition: {index}")
    return 0


def _cmd_predict(args) -> int:
    from course_lib.paths import text_file
    from course_lib.predict import load_classifier

    run_dir(args.run_dir, "predict")
    texts = list(args.texts)
    if args.file:
        texts += [line for line in text_file(args.file, "predict --file").splitlines() if line.strip()]
        if not texts:
            raise ConfigError(f"{args.file} holds no text to label: give one review per line")
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


class _Help(argparse.RawDescriptionHelpFormatter):
    """Each option's default after its help line, unless the line says it already."""

    def _get_help_string(self, action):
        text, default = action.help or "", action.default
        if not (default is None or default is False or default == [] or default is argparse.SUPPRESS or "default:" in text):
            text += " (default: %(default)s)"
        return text


class _Commands(argparse.RawTextHelpFormatter):
    """The top-level list: each command's line and, below it, an example (no "COMMAND" header)."""

    def _format_action(self, action):
        if isinstance(action, argparse._SubParsersAction):
            return "".join(self._format_action(a) for a in action._get_subactions())
        return super()._format_action(action)


# name -> (what it does, an example); the top-level help shows both, the command's own help too
COMMANDS = {
    "pipeline": ("the whole kit end to end, offline: data, tokens, 2-rank training, a real kill + resume, held-out score",
                 "python -m course_lib pipeline --quick"),
    "train": ("train one run: spawns one process per rank, or is one rank under torchrun",
              "python -m course_lib train --run-dir runs/a --kill-at-step 13 --resume auto"),
    "compare": ("exit 0 only if two runs are identical; else where they part", "python -m course_lib compare runs/a runs/b"),
    "verify": ("exit 0 only if every checkpoint of a run is valid and complete", "python -m course_lib verify runs/a"),
    "advise": ("how often to save, from a finished run's own costs", "python -m course_lib advise runs/a --mtbf 6h"),
    "predict": ("label reviews with a trained run's model", 'python -m course_lib predict runs/pipeline "A fine film."'),
    "edition": ("run every notebook offline and write an HTML edition to read", "python -m course_lib edition --small"),
    "audit": ("kill any training script for real and check that it resumes bit-identically; exit 0 only if it does",
              "python -m course_lib audit -- python -m course_lib.textbook --run-dir {run} --resume auto"),
}


def build_parser() -> argparse.ArgumentParser:
    from course_lib.beyond.elastic.commands import ElasticSettings

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of one line (or set COURSE_LIB_DEBUG=1)")
    parser = _Parser(prog="python -m course_lib", formatter_class=_Commands,
                     description="Keeping long training runs alive: the kit's command line.",
                     epilog="Each command explains its options: python -m course_lib COMMAND --help")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND", title="commands")

    def command(name: str, func):
        text, example = COMMANDS[name]
        p = sub.add_parser(name, parents=[common], help=f"{text}\n  e.g. {example}", description=text,
                           epilog=f"example: {example}", formatter_class=_Help)
        p.set_defaults(func=func)
        return p

    p = command("pipeline", _cmd_pipeline)
    p.add_argument("--run-dir", default="runs/pipeline", help="the main job's run directory")
    p.add_argument("--quick", action="store_true", help="a small version for a first try (about half a minute)")
    p.add_argument("--no-interrupt", action="store_true", help="skip the SIGKILL + resume in the middle of training")
    p.add_argument("--reduction", choices=REDUCTION_NAMES, default="ddp",
                   help="ddp: DDP's all-reduce, the chapter's; invariant: the kit's world-size-invariant reduction, "
                        "whose survivors save the last finished step when a rank is killed (course_lib.beyond)")
    t = command("train", _cmd_train)
    TrainConfig.add_arguments(t, choices={"reduction": REDUCTION_NAMES})
    ElasticSettings.add_arguments(t)
    c = command("compare", _cmd_compare)
    c.add_argument("run_a", help="a run directory")
    c.add_argument("run_b", help="the run directory to compare it with")
    command("verify", _cmd_verify).add_argument("run_dir", help="a run directory (the --run-dir of a train run)")
    a = command("advise", _cmd_advise)
    a.add_argument("run_dir", help="a finished run directory (the --run-dir of a train run)")
    a.add_argument("--mtbf", required=True, help="mean time between failures (required): 90s, 30m, 6h, 2d")
    a.add_argument("--covered", type=float, default=0.0,
                   help="share of failures the survivors' emergency save covers (--reduction invariant), 0 to <1")
    a.add_argument("--steps", type=int, default=0, help="length of the run to plan; 0 = this run's")
    a.add_argument("--restart-seconds", help="use this restart cost instead of the measured one (default: measured)")
    a.add_argument("--save-seconds", help="use this save cost instead of the measured one (default: measured)")
    a.add_argument("--json", action="store_true", help="the whole answer as JSON")
    r = command("predict", _cmd_predict)
    r.add_argument("run_dir", help="a trained run directory (final/model.pt, else its newest valid checkpoint)")
    r.add_argument("texts", nargs="*", help="reviews to label; '-' or none: read standard input")
    r.add_argument("--file", help="a UTF-8 text file, one review per line")
    r.add_argument("--json", action="store_true", help="one JSON object per review")
    e = command("edition", _cmd_edition)
    e.add_argument("--out", default="editions", help="folder for the HTML files")
    e.add_argument("--lang", nargs="+", default=["en", "zh"], choices=["en", "zh"], help="editions to run")
    e.add_argument("--notebooks", nargs="+", metavar="NN", help="only these notebooks, 01 ... 05 (default: all)")
    e.add_argument("--small", action="store_true", help="the tests' small parameters (minutes, not half an hour)")
    e.add_argument("--teacher", action="store_true",
                   help="a teacher's edition: each notebook ends with its exercises' reference solutions, labelled")
    from resume_audit.cli import add_arguments as audit_options

    audit_options(command("audit", _cmd_audit))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Used in notebook 04 (optional deep-dives A and B: ``advise``, ``verify``)."""
    from course_lib.checkpoint.store import CheckpointError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, CheckpointError, OSError) as err:  # OSError: a path the checks did not foresee
        if args.debug or os.environ.get("COURSE_LIB_DEBUG", "") not in ("", "0"):
            raise
        hint = "" if isinstance(err, (ConfigError, CheckpointError)) else " (check that path; --debug shows where)"
        print(f"error: {' '.join(str(err).split())}{hint}", file=sys.stderr)
        return 2
