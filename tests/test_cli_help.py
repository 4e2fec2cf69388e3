"""The command line explains itself: every option of every subcommand has a help line, its
default and its choices; ``train``'s come from the ``TrainConfig`` fields' own metadata, in
groups; the top-level help names each command with an example; the contract's spellings parse."""
import argparse
import dataclasses
import re
from pathlib import Path

import pytest

from course_lib.cli import COMMANDS, build_parser
from course_lib.config import DATA_SOURCES, GROUPS, LIST_FIELDS, MODEL_NAMES, TrainConfig

REPO = Path(__file__).resolve().parent.parent


def subparsers(parser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_of_every_command_has_a_help_line():
    for name, sub in subparsers(build_parser()).items():
        for action in sub._actions:
            assert action.help and action.help != argparse.SUPPRESS, f"{name} {action.option_strings or action.dest}"


def test_every_trainconfig_field_documents_itself_in_a_group():
    for f in dataclasses.fields(TrainConfig):
        assert f.metadata.get("help"), f"TrainConfig.{f.name}: give it option(default, GROUP, help)"
        assert f.metadata.get("group") in GROUPS, f"TrainConfig.{f.name}: group must be one of {GROUPS}"
    train = subparsers(build_parser())["train"]
    shown = {g.title: [a.dest for a in g._group_actions] for g in train._action_groups}
    assert [g for g in shown if g in GROUPS] == list(GROUPS)  # the groups, in their order
    assert sorted(d for g in GROUPS for d in shown[g]) == sorted(f.name for f in dataclasses.fields(TrainConfig))
    text = train.format_help()
    for f in dataclasses.fields(TrainConfig):
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        flag = "--" + f.name.replace("_", "-")
        block = text[text.index("\n  " + flag):].split("\n  --")[1]  # this option's lines
        assert "(default: " in " ".join(block.split()), flag
        for choice in f.metadata.get("choices", ()):
            assert choice in block, (flag, choice)
        if default not in (None, [], False, True, ""):  # "" and None both read "none"
            shown_default = " ".join(map(str, default)) if isinstance(default, list) else str(default)
            assert f"(default: {shown_default})" in " ".join(block.split()), flag


def test_the_other_commands_say_their_defaults():
    text = subparsers(build_parser())["advise"].format_help()
    assert "(default: 0.0)" in " ".join(text.split()) and "(required)" in text
    assert "(default: runs/pipeline)" in subparsers(build_parser())["pipeline"].format_help()


def test_the_top_level_help_names_each_command_with_an_example(capsys):
    with pytest.raises(SystemExit) as code:
        build_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    assert code.value.code == 0
    assert set(COMMANDS) == set(subparsers(build_parser()))
    for name, (line, example) in COMMANDS.items():
        assert re.search(rf"^  {name}\s+{re.escape(line)}$", out, re.M), name
        assert f"e.g. {example}" in out and example.startswith(f"python -m course_lib {name}")
    for name in re.findall(r"[\w./-]+\.(?:md|py|json|ipynb)\b", out + "".join(
            sub.format_help() for sub in subparsers(build_parser()).values())):
        assert name.endswith(".json") or (REPO / name).exists(), f"help mentions {name}, which the project does not ship"


def test_the_contracts_spellings_still_parse():
    p = build_parser()
    args = p.parse_args(["train", "--run-dir", "d", "--kill-at-step", "13", "27", "--kill-rank", "1", "--no-async-save",
                         "--no-fused-adamw", "--model", "transformer", "--resume-mode", "no-rng", "--world-size", "4"])
    cfg = TrainConfig.from_args(args)
    assert (cfg.run_dir, cfg.kill_at_step, cfg.kill_rank, cfg.async_save, cfg.fused_adamw, cfg.model, cfg.resume_mode,
            cfg.world_size) == ("d", [13, 27], [1], False, False, "transformer", "no-rng", 4)
    assert TrainConfig.from_args(p.parse_args(["train", "--async-save"])).async_save is True
    assert TrainConfig.from_args(p.parse_args(["train"])) == TrainConfig()  # nothing given: the dataclass's defaults
    cfg = TrainConfig(run_dir="r", kill_at_step=[5, 9], kill_mode=["sigterm", "during-save"], async_save=True, lr=0.01,
                      data_path="x.csv", reduction="invariant", global_batch_size=64)
    assert TrainConfig.from_args(p.parse_args(["train", *cfg.to_args()])) == cfg
    assert set(LIST_FIELDS) <= {f.name for f in dataclasses.fields(TrainConfig)}


@pytest.mark.parametrize("argv,expected", [
    (["train", "--model", "nope"], "argument --model: invalid choice: 'nope'"),
    (["train", "--kill-mode", "nuke"], "argument --kill-mode: invalid choice: 'nuke'"),
    (["train", "--epochs", "two"], "argument --epochs: invalid int value: 'two'"),
    (["advise", "runs/x"], "the following arguments are required: --mtbf"),
    (["nope"], "invalid choice: 'nope'"),
])
def test_a_parse_error_is_one_line_that_points_at_the_help(argv, expected, capsys):
    with pytest.raises(SystemExit) as code:
        build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert code.value.code == 2 and err.count("\n") == 1 and err.startswith("error: ") and expected in err, err
    assert err.rstrip().endswith("--help)")


def test_the_choices_are_the_ones_the_code_accepts():
    from course_lib.data.sources import SOURCES
    from course_lib.ddp.models import MODELS

    assert MODEL_NAMES == MODELS and DATA_SOURCES == SOURCES
