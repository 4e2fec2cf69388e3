"""The same entry point under torchrun (one node, two loopback nodes, automatic restarts) and
the command-line contract (exit codes of train / compare / verify)."""
import contextlib
import os
import signal
import subprocess
import sys

import pytest
from helpers import assert_run_directory, cfg_args, cli, small_cfg

from course_lib._runtime.portability import free_port
from course_lib.beyond.elastic.drill import _children
from course_lib.watch.compare import compare_runs


def torchrun(*args):
    return subprocess.Popen([sys.executable, "-m", "torch.distributed.run", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def train_args(cfg):
    return ["-m", "course_lib", "train", *cfg_args(cfg)]


pytestmark = pytest.mark.slow  # torchrun and the command line in real interpreters: the full suite


@pytest.fixture
def reference(reference_run):
    return reference_run  # shared by the session (tests/conftest.py)


def finish(proc, timeout=180):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # torchrun's workers run in sessions of their own: killed one by one
        for pid in _children(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"torchrun did not finish in {timeout} s:\n{out[-3000:]}")
    assert proc.returncode == 0, out
    return out


def test_torchrun_one_node_matches_spawn(reference, tmp_path):
    out = finish(torchrun("--nproc-per-node", 2, "--master-port", free_port(), *train_args(small_cfg(tmp_path / "tr"))))
    assert "Rank 1, Epoch [1/2], Step [1/" in out
    assert compare_runs(reference, tmp_path / "tr")["identical"]
    assert_run_directory(tmp_path / "tr", reference)  # torchrun's rank 0 wrote config.json too


def test_torchrun_two_nodes_on_loopback(reference, tmp_path):
    port = free_port()
    common = ["--nnodes", 2, "--nproc-per-node", 1, "--master-addr", "127.0.0.1", "--master-port", port]
    # two "nodes" share this machine's cores; each torchrun would otherwise give its rank all of them
    cfg = small_cfg(tmp_path / "nodes", threads_per_rank=1)
    nodes = [torchrun(*common, "--node-rank", r, *train_args(cfg)) for r in (0, 1)]
    outs = [finish(p) for p in nodes]
    assert "parameters identical on all 2 ranks" in outs[0]
    assert compare_runs(reference, tmp_path / "nodes")["identical"]
    assert_run_directory(tmp_path / "nodes", reference)


def test_torchrun_restarts_a_killed_worker_unattended(reference, tmp_path):
    cfg = small_cfg(tmp_path / "elastic", kill_at_step=13, kill_rank=1, resume="auto", timeout_s=30)
    out = finish(torchrun("--nproc-per-node", 2, "--max-restarts", 2, "--master-port", free_port(), *train_args(cfg)))
    assert "Resumed from step-00000010" in out
    assert compare_runs(reference, tmp_path / "elastic")["identical"]


def test_cli_contract(reference, tmp_path, capsys):
    """Exit codes: 0 done, 1 a finding (runs differ, a checkpoint corrupt), 2 a usage error, 3 a run
    interrupted. The interrupted run is a real process (its code is what a scheduler reads); the
    rest go through the command line's own ``main`` in this process (tests/test_bad_input.py runs
    the real ``python -m course_lib`` for usage errors)."""
    from course_lib.cli import main

    assert_run_directory(reference)  # started by launch()
    interrupted = cli("train", *cfg_args(small_cfg(tmp_path / "k", kill_at_step=8, kill_rank=0)))
    assert interrupted.returncode == 3 and "SIGKILL" in interrupted.stderr
    assert (tmp_path / "k" / "config.json").is_file()  # rank 0 wrote it before its first step
    capsys.readouterr()
    assert main(["compare", str(reference), str(tmp_path / "k")]) == 1 and "DIFFERENT" in capsys.readouterr().out
    newest = sorted((tmp_path / "k" / "checkpoints").glob("step-*"))[-1]
    (newest / "model.pt").write_bytes(b"x")
    assert main(["verify", str(tmp_path / "k")]) == 1 and "CORRUPT" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "nothing")]) == 2  # not a run directory: a usage error
