"""The guarantee at its edges: a finished run extended, a run killed again and again, and
mistakes on the command line answered in one line before anything starts."""
import json

import pytest
from helpers import cfg_args, cli, small_cfg

from course_lib.checkpoint.store import latest_valid, verify
from course_lib.cli import main
from course_lib.ddp.launch import launch
from course_lib.watch.compare import compare_runs
from course_lib.watch.monitor import read_ledger

# small_cfg: 960 training reviews / 64 = 15 steps per epoch; 2 epochs = 30 steps, saved every 5:
# the last step is also a periodic save step


@pytest.mark.slow
@pytest.mark.parametrize("async_save", [False, True])
def test_a_finished_run_whose_last_step_is_a_save_step_can_be_extended(tmp_path, async_save):
    run = tmp_path / "run"
    launch(small_cfg(run, async_save=async_save), quiet=True)
    newest = latest_valid(run)
    assert newest.name == "step-00000030" and verify(newest) == (True, "ok")
    assert json.loads((newest / "manifest.json").read_text())["parts"][-2:] == ["rng-rank0.pt", "rng-rank1.pt"]
    summary = launch(small_cfg(run, epochs=3, resume="auto", async_save=async_save), quiet=True)
    assert summary["steps"] == 45 and summary["resumed_from"] == 30
    log = (run / "logs" / "rank0.log").read_text()
    assert "planned for 30 steps and now runs to 45" in log  # the stretched schedule is said, not hidden
    rows = read_ledger(run, 0)
    assert [r["step"] for r in rows] == list(range(1, 46)) and rows[30]["lr"] > 0


@pytest.mark.slow
def test_extending_a_run_with_a_fixed_schedule_is_bit_identical_to_planning_it_that_long(tmp_path):
    planned = tmp_path / "planned"
    launch(small_cfg(planned, epochs=3, schedule_steps=45), quiet=True)
    run = tmp_path / "extended"
    launch(small_cfg(run, epochs=2, schedule_steps=45), quiet=True)
    launch(small_cfg(run, epochs=3, schedule_steps=45, resume="auto"), quiet=True)
    assert "planned for" not in (run / "logs" / "rank0.log").read_text()
    result = compare_runs(planned, run)
    assert result["identical"], result


@pytest.mark.slow
def test_a_run_killed_three_times_by_one_repeated_command_is_bit_identical(reference_run, tmp_path, capsys):
    """The command line's own ``main``, in this process (test_torchrun_cli.test_cli_contract
    checks the exit code of a real ``python -m course_lib train``)."""
    ref = reference_run
    run = tmp_path / "run"
    args = cfg_args(small_cfg(run, kill_at_step=[8, 17, 26], kill_rank=[1, 0, 1],
                              kill_mode=["sigkill", "sigterm", "during-save"], resume="auto"))
    codes, outs = [], []
    for _ in range(4):  # the same command line, as a scheduler would repeat it
        codes.append(main(["train", *args]))
        outs.append(capsys.readouterr())
    assert codes == [3, 3, 3, 0], [o.err[-500:] for o in outs]
    assert "already fired" in outs[3].out
    fired = [json.loads(line) for line in (run / "faults.jsonl").read_text().splitlines()]
    assert [(f["step"], f["rank"], f["attempt"]) for f in fired] == [(8, 1, 1), (17, 0, 2), (26, 1, 3)]
    result = compare_runs(ref, run)
    assert result["identical"], result
    assert main(["verify", str(run)]) == 0


@pytest.mark.slow
def test_a_kill_that_cannot_fire_says_so(tmp_path, capsys):
    run = tmp_path / "run"
    launch(small_cfg(run, max_steps=12), quiet=True)
    capsys.readouterr()
    assert main(["train", *cfg_args(small_cfg(run, epochs=3, max_steps=20, resume="auto", kill_at_step=[4, 50]))]) == 0
    out = capsys.readouterr()
    assert "kill at step 4 will not fire: this attempt resumes after step 12" in out.out
    assert "kill at step 50 will not fire: the run ends at step 20" in out.out


@pytest.mark.parametrize("args,expected", [
    (["train", "--model", "nope"], "argument --model: invalid choice: 'nope' (choose from 'bag'"),
    (["train", "--world-size", "0"], "world_size must be >= 1"),
    (["train", "--kill-at-step", "3", "--kill-rank", "5"], "kill_rank 5 is not a rank of world_size 2"),
    (["train", "--data-source", "path"], "--data-source path needs --data-path"),
    (["train", "--data-path", "{tmp}/no-such-file.csv"], "does not exist"),
    (["train", "--resume", "{tmp}"], "is not a checkpoint folder"),
    (["train", "--resume", "{tmp}/nothing"], "does not exist; use --resume auto"),
    (["train", "--kill-at-step", "x"], "invalid int value"),
    (["compare", "{tmp}", "{tmp}"], "not a run directory"),
    (["verify", "{tmp}/nothing"], "does not exist"),
    (["train", "--run-dir", "{tmp}/run", "--resume", "{tmp}/run"], "does not exist"),
])
def test_cli_errors_are_one_line_before_anything_starts(tmp_path, args, expected, capsys):
    """In this process (the command line's own ``main``; test_debug_shows_the_traceback and
    tests/test_bad_input.py go through a real interpreter)."""
    from course_lib.cli import main

    run = tmp_path / "run"
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if args[0] == "train":
        args += ["--run-dir", str(run)]
    try:
        code = main(args)
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], err
    assert not (run / "logs").exists()  # no data prepared, no process started


def test_debug_shows_the_traceback(tmp_path):
    out = cli("train", "--world-size", "0", "--run-dir", tmp_path / "run", "--debug", timeout=60)
    assert out.returncode != 0 and "Traceback" in out.stderr and "ConfigError" in out.stderr


def test_a_second_run_in_a_busy_directory_is_refused(tmp_path):
    from course_lib._runtime.processes import run_dir_lock
    from course_lib.config import ConfigError

    with run_dir_lock(tmp_path):
        with pytest.raises(ConfigError, match="in use by another run"):
            launch(small_cfg(tmp_path), quiet=True)
    assert cli("compare", tmp_path, tmp_path, timeout=60).returncode == 2  # lock released, nothing ran


def test_compare_and_verify_answer_with_their_exit_codes(reference_run, tmp_path, capsys):
    """The contract's exit codes, in this process: identical 0, different 1; valid 0, corrupt 1."""
    import shutil

    from course_lib.cli import main

    assert main(["compare", str(reference_run), str(reference_run)]) == 0 and "IDENTICAL" in capsys.readouterr().out
    other = tmp_path / "other"
    shutil.copytree(reference_run, other)
    ledger = other / "metrics" / "rank0.jsonl"
    rows = [json.loads(line) for line in ledger.read_text().splitlines()]
    rows[9]["global_loss"] += 1e-6  # one step's loss, a millionth off
    ledger.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["compare", str(reference_run), str(other)]) == 1
    assert "first divergent step: 10" in capsys.readouterr().out
    assert main(["verify", str(other)]) == 0
    newest = sorted((other / "checkpoints").glob("step-*"))[-1]
    (newest / "model.pt").write_bytes(b"x")
    assert main(["verify", str(other)]) == 1 and f"{newest.name}: CORRUPT" in capsys.readouterr().out
