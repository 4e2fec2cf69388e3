"""Process-level: real spawned ranks, real gloo process groups."""
import json
import socket

import pytest
from helpers import small_cfg

from course_lib.config import ConfigError
from course_lib.ddp.launch import RankFailed, launch
from course_lib.watch.monitor import read_ledger, read_scalars


def test_two_rank_run_trains_logs_and_agrees(tmp_path, capsys):
    summary = launch(small_cfg(tmp_path / "run", log_every=5))
    out = capsys.readouterr().out
    assert "Rank 0, Epoch [1/2], Step [1/" in out and "Rank 1, Epoch [1/2], Step [1/" in out
    assert "parameters identical on all 2 ranks" in out
    assert summary["world_size"] == 2 and summary["steps"] == read_ledger(tmp_path / "run", 1)[-1]["step"]
    assert 0.0 <= summary["val_accuracy"] <= 1.0 and summary["val_count"] == 200
    run = tmp_path / "run"
    assert json.loads((run / "config.json").read_text())["world_size"] == 2
    rows0, rows1 = read_ledger(run, 0), read_ledger(run, 1)
    assert [r["global_loss"] for r in rows0] == [r["global_loss"] for r in rows1]  # all-reduced
    assert all(not set(a["sample_ids"]) & set(b["sample_ids"]) for a, b in zip(rows0, rows1))
    scalars = read_scalars(run)
    for tag in ("train/loss", "train/lr", "train/grad_norm", "train/samples_per_s", "val/accuracy",
                "checkpoint/save_seconds", "checkpoint/size_mb"):
        assert tag in scalars, tag
    assert (run / "checkpoints" / "LATEST").exists() and (run / "final" / "summary.json").exists()


def test_forkserver_ranks_train_the_same_bits_as_spawned_ones_and_see_this_launchs_environment(tmp_path, reference_run):
    """A forkserver is started once, at its first launch; the ranks must still get the
    environment of *their* launch (here: when it began, recorded for the restart cost)."""
    import os

    from course_lib.watch.compare import compare_runs
    from course_lib.watch.monitor import LAUNCHED_ENV, read_attempts

    assert json.loads((reference_run / "config.json").read_text())["start_method"] == "auto"  # forkserver here
    for n, method in enumerate(("forkserver", "forkserver", "spawn"), 1):  # the 2nd reuses the 1st's server
        run = tmp_path / f"{n}-{method}"
        launch(small_cfg(run, start_method=method), quiet=True, launched_at=1_000_000.0 * n)
        assert [a["launched"] for a in read_attempts(run)] == [1_000_000.0 * n]
        assert compare_runs(reference_run, run)["identical"]
    assert LAUNCHED_ENV not in os.environ  # the ranks' only: a torchrun started from here must not read it


def test_failing_rank_raises_in_parent_with_traceback(tmp_path):
    # a real failure inside every rank: minilm cannot read GPT-2 BPE ids
    with pytest.raises(RankFailed, match="rank [01] failed") as err:
        launch(small_cfg(tmp_path / "bad", model="minilm", tokenizer="bpe", max_length=64), quiet=True)
    assert "wordpiece" in str(err.value)


def test_port_taken_is_a_clear_error(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        monkeypatch.setenv("MASTER_PORT", str(s.getsockname()[1]))
        with pytest.raises(ConfigError, match="already taken"):  # one line, before data or processes
            launch(small_cfg(tmp_path / "p"), quiet=True)
    assert not (tmp_path / "p" / "logs").exists()


def test_cuda_asked_where_there_is_none(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        launch(small_cfg(tmp_path / "c", device="cuda"), quiet=True)


@pytest.mark.slow
def test_too_many_ranks_warns(tmp_path):
    import os

    with pytest.warns(UserWarning, match="CPU cores"):
        launch(small_cfg(tmp_path / "w", world_size=(os.cpu_count() or 1) * 2, global_batch_size=64 * (os.cpu_count() or 1),
                         train_limit=1200, epochs=1, max_steps=2), quiet=True)


@pytest.mark.slow
def test_micro_batches_accumulate_to_the_same_update(tmp_path):
    whole = launch(small_cfg(tmp_path / "whole", max_steps=6), quiet=True)
    micro = launch(small_cfg(tmp_path / "micro", max_steps=6, micro_batch=8), quiet=True)  # 4 x 8 per rank
    a, b = read_ledger(tmp_path / "whole", 0), read_ledger(tmp_path / "micro", 0)
    assert [r["samples"] for r in a] == [r["samples"] for r in b]
    assert max(abs(x["global_loss"] - y["global_loss"]) for x, y in zip(a, b)) < 1e-4  # summation order only
    assert whole["steps"] == micro["steps"] == 6


@pytest.mark.slow
def test_fused_adamw_and_bucket_views_change_speed_not_the_run(tmp_path):
    """The two speed options of the step (on by default) train on the same samples to the
    same losses, up to rounding; the checkpoint records which AdamW made it."""
    from course_lib.checkpoint import store as ckpt

    fast = launch(small_cfg(tmp_path / "fast", max_steps=6), quiet=True)
    plain = launch(small_cfg(tmp_path / "plain", max_steps=6, fused_adamw=False, grad_bucket_view=False), quiet=True)
    a, b = read_ledger(tmp_path / "fast", 0), read_ledger(tmp_path / "plain", 0)
    assert [r["samples"] for r in a] == [r["samples"] for r in b]
    assert max(abs(x["global_loss"] - y["global_loss"]) for x, y in zip(a, b)) < 1e-3
    assert fast["steps"] == plain["steps"] == 6
    fused = [ckpt.load_part(run / "checkpoints" / "step-00000005", "optimizer.pt")["param_groups"][0]["fused"]
             for run in (tmp_path / "fast", tmp_path / "plain")]
    assert fused[0] is True and not fused[1]


def hello(rank):  # a worker that spawned children can import: it lives in a module
    print("hello from rank", rank)


def test_try_spawn_reports_the_childrens_own_error(monkeypatch):
    """A function defined in ``__main__`` (a notebook cell) cannot be found by spawned
    children; try_spawn shows the error each child printed, not a made-up message."""
    import sys

    from course_lib._runtime.spawn_check import try_spawn

    namespace = {"__name__": "__main__"}
    exec("def my_worker(rank):\n    print(rank)\n", namespace)
    monkeypatch.setattr(sys.modules["__main__"], "my_worker", namespace["my_worker"], raising=False)
    failed = try_spawn(namespace["my_worker"], nprocs=2)
    assert "ProcessExitedException" in failed and "exit code 1" in failed
    assert failed.count("child:  AttributeError: Can't get attribute 'my_worker'") == 2, failed
    assert try_spawn(hello, nprocs=2) == "parent: every process finished without an error"


def killed_or_stubborn(rank, ready):
    """Rank 0 ignores SIGTERM (torch SIGKILLs it after the grace period); once it does, rank 1 is SIGKILLed."""
    import os
    import signal
    import time

    if rank == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open(ready, "w").close()
        time.sleep(60)
    while not os.path.exists(ready):
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)


def test_the_rank_killed_first_is_named_not_a_survivor_torch_killed_after_it(tmp_path):
    """Both end by SIGKILL; the cause is rank 1, the one torch saw fail, though rank 0 comes first."""
    import torch.multiprocessing as mp

    from course_lib._runtime.processes import join_ranks

    ctx = mp.start_processes(killed_or_stubborn, args=(str(tmp_path / "ready"),), nprocs=2, join=False,
                             start_method="spawn")
    end = join_ranks(ctx, timeout=60, grace_period=1)
    assert [p.exitcode for p in ctx.processes] == [-9, -9]
    assert (end.rank, end.signal) == (1, "SIGKILL")


@pytest.mark.slow
def test_a_corrupt_rank_is_the_one_whose_loss_does_not_fall(tmp_path):
    """The chapter's third reading of the per-rank lines, on purpose: one rank trains on random
    labels (a corrupted shard); DDP keeps the parameters identical, the loss lines tell. Six epochs of
    the small run's 1,200 reviews: rank 0's loss falls about 8x as far as rank 1's (two epochs of
    4,000 at width 32 show it too, in 3x the time)."""
    from course_lib.watch.monitor import read_ledger

    summary = launch(small_cfg(tmp_path / "run", epochs=6, corrupt_rank=1), quiet=True)
    fall = []
    for rank in (0, 1):
        losses = [r["loss"] for r in read_ledger(tmp_path / "run", rank)]
        k = len(losses) // 5
        fall.append(sum(losses[:k]) / k - sum(losses[-k:]) / k)
    assert fall[1] < 0.5 * fall[0], fall  # rank 1's own loss falls by less than half as much
    assert summary["parameter_sha256"]  # the ranks still agree: the lines, not the check, show the fault


def test_corrupt_rank_must_be_a_rank():
    from course_lib.config import ConfigError, TrainConfig

    with pytest.raises(ConfigError, match="corrupt_rank 2 is not a rank of world_size 2"):
        TrainConfig(corrupt_rank=2)
