"""The invariant reduction: the same bits on 1, 2 or 4 ranks, and across a resume on another
world size (issue: a 2-rank checkpoint resumed on 1 rank was only "close")."""

import pytest
import torch
import torch.nn.functional as F
from helpers import small_cfg

from course_lib.beyond import launch, reduction
from course_lib.beyond.invariant import InvariantStep, check_layout, micro_batch_count, micro_batch_seed, tree_sum
from course_lib.config import ConfigError
from course_lib.ddp.launch import check_before_start
from course_lib.ddp.models import build_model
from course_lib.lab.drills import interrupt_and_resume
from course_lib.watch.compare import compare_runs

# one worker runs the whole file (its module fixture is trained once): .ci/run uses --dist loadgroup
pytestmark = [pytest.mark.xdist_group("test_invariant"),  # 4 ranks on 2 cores: the launch's warning is
              pytest.mark.filterwarnings("ignore:world_size .* CPU cores:UserWarning")]  # tested in test_launch


def test_the_tree_and_the_layout():
    assert tree_sum([1, 2, 3, 4]) == (1 + 2) + (3 + 4)
    a, b, c, d = 1e16, 1.0, -1e16, 1.0
    assert ((a + b) + c) + d != (a + b) + (c + d)  # why the order of a sum must be fixed
    assert micro_batch_count(64, 0) == 4 and micro_batch_count(64, 8) == 8 and micro_batch_count(6, 0) == 2
    assert check_layout(64, 0, 4) is None and "divide" in check_layout(64, 0, 8)
    assert "power of two" in check_layout(48, 16, 1)
    assert len({micro_batch_seed(0, s, j) for s in range(1, 5) for j in range(4)}) == 16
    with pytest.raises(ConfigError, match="world size that divides"):  # refused before any rank starts
        check_before_start(small_cfg("x", reduction="invariant", world_size=8, global_batch_size=64), reduction("invariant"))


def _by_hand(model, batch_of, step, count, size, seed):
    """The tree written out: each micro-batch's gradient alone, summed pairwise."""
    leaves, losses = [], []
    for j in range(count):
        model.zero_grad(set_to_none=True)
        torch.manual_seed(micro_batch_seed(seed, step, j))
        batch = batch_of(list(range(j * size, (j + 1) * size)))
        loss = F.cross_entropy(model(batch["input_ids"], batch["attention_mask"]), batch["label"]) * (size / 64)
        loss.backward()
        leaves.append(torch.cat([torch.zeros(p.numel()) if p.grad is None else p.grad.reshape(-1)
                                 for p in model.parameters()]))
        losses.append(loss.item())
    return tree_sum(leaves), tree_sum(losses)


@pytest.mark.parametrize("micro_batch", [0, 8])
def test_the_step_leaves_the_trees_bits_in_the_gradients(micro_batch):
    """One rank, 4 or 8 micro-batches, three buckets: what ``compute`` leaves in ``param.grad`` (autograd
    accumulating into buffer views, the last pair summed per bucket in the gradient hooks) has
    the bits of the tree summed by hand, step after step (buffers reused), also for a second
    step object built on the same model (as for another world size: the first one's hooks stay
    inert), and a parameter that gets no gradient counts as a gradient of zeros."""
    torch.manual_seed(0)
    model = build_model("bag", 500, dim=8, dropout=0.3).train()
    model.unused = torch.nn.Parameter(torch.ones(3))
    g = torch.Generator().manual_seed(1)
    ids, labels = torch.randint(1, 500, (64, 40), generator=g), torch.randint(0, 2, (64,), generator=g)
    mask = (torch.arange(40) < torch.randint(5, 41, (64, 1), generator=g)).long()
    batch_of = lambda rows: {"input_ids": ids[rows], "attention_mask": mask[rows], "label": labels[rows]}  # noqa: E731
    first = InvariantStep(model, 64, micro_batch, 1, 0, seed=7, bucket_mb=0.5)
    assert len(first.buckets) == 3 and all(a % 32 == 0 for a, _ in first.slices)  # head, embedding, unused
    for step_object, step in ((first, 1), (first, 2), (InvariantStep(model, 64, micro_batch, 1, 0, 7, bucket_mb=0.5), 3)):
        expected, expected_loss = _by_hand(model, batch_of, step, step_object.count, step_object.size, 7)
        model.zero_grad(set_to_none=True)
        batches = [batch_of(part) for part in step_object.parts(list(range(64)))]
        _, loss = step_object.compute(step, batches)
        got = torch.cat([p.grad.reshape(-1) for p in model.parameters()])  # every grad set, if only to zeros
        assert torch.equal(got.view(torch.int32), expected.view(torch.int32)) and loss == expected_loss


def invariant_cfg(run, **kw):
    return small_cfg(run, reduction="invariant", max_steps=12, **kw)


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    run = tmp_path_factory.mktemp("inv") / "ws1"
    launch(invariant_cfg(run, world_size=1), quiet=True)
    return run


@pytest.mark.parametrize("world_size", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_bag_is_bit_identical_on_any_number_of_ranks(one_rank, tmp_path, world_size):
    launch(invariant_cfg(tmp_path / "run", world_size=world_size), quiet=True)
    result = compare_runs(one_rank, tmp_path / "run")
    assert result["identical"], result


@pytest.mark.slow
def test_transformer_with_dropout_is_bit_identical_on_1_2_and_4_ranks_and_ddp_is_not(tmp_path):
    cfg = dict(model="transformer", max_length=64, max_steps=6, lr=1e-3, dropout=0.1, eval_limit=100)
    for ws in (1, 2, 4):
        launch(small_cfg(tmp_path / f"inv{ws}", reduction="invariant", world_size=ws, **cfg), quiet=True)
    for ws in (2, 4):
        result = compare_runs(tmp_path / "inv1", tmp_path / f"inv{ws}")
        assert result["identical"], result
    for ws in (1, 2):
        launch(small_cfg(tmp_path / f"ddp{ws}", world_size=ws, **cfg), quiet=True)
    assert compare_runs(tmp_path / "ddp1", tmp_path / "ddp2")["first_divergent_step"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("before,after", [(2, 1), (1, 2)])
def test_a_run_resumed_on_another_world_size_is_bit_identical(one_rank, tmp_path, before, after):
    report = interrupt_and_resume(invariant_cfg(tmp_path / "run", world_size=before), 8, resume_world_size=after)
    assert report["kills"] == 1 and report["summary"]["world_size"] == after
    assert "continues bit-identically" in (tmp_path / "run" / "logs" / "rank0.log").read_text()
    result = compare_runs(one_rank, tmp_path / "run")
    assert result["identical"], result


@pytest.mark.parametrize("rank", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_survivors_save_the_last_finished_step_so_a_sigkill_costs_no_step(one_rank, tmp_path, rank):
    import json

    report = interrupt_and_resume(invariant_cfg(tmp_path / "run"), 8, "sigkill", kill_rank=rank)
    assert "newest valid checkpoint: step-00000007" in report["interrupted"], report["interrupted"]
    manifest = json.loads((tmp_path / "run" / "checkpoints" / "step-00000007" / "manifest.json").read_text())
    assert manifest["emergency"] and manifest["saved_by_rank"] == 1 - rank and not manifest["rank_rng"]
    assert report["steps_redone"] == 0 and report["resumed_from"] == 7
    result = compare_runs(one_rank, tmp_path / "run")
    assert result["identical"], result


PEER_WHO_NEVER_ANSWERS = """
import datetime, os, sys, time
import torch, torch.distributed as dist
from course_lib.beyond.invariant import InvariantStep
from course_lib.beyond.invariant_trainer import peer_lost
from course_lib.ddp.models import build_model

rank, port = int(sys.argv[1]), sys.argv[2]
timeout = datetime.timedelta(seconds=2)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2, timeout=timeout)
torch.manual_seed(0)
step = InvariantStep(build_model("bag", 50, dim=4), 4, 2, 2, rank, seed=0, timeout=timeout)  # its pair groups: a collective
if rank == 1:  # alive, but it never joins the exchange: a peer gloo did not see die
    time.sleep(60)
    os._exit(0)
batch = {"input_ids": torch.randint(1, 50, (2, 6)), "attention_mask": torch.ones(2, 6, dtype=torch.long),
         "label": torch.tensor([0, 1])}
t0 = time.monotonic()
try:
    step.compute(1, [batch])
except RuntimeError as err:
    print("lost" if peer_lost(err) else f"not lost: {err}", round(time.monotonic() - t0, 1))
os._exit(0)
"""


@pytest.mark.slow
def test_an_exchange_whose_peer_never_answers_fails_within_the_runs_timeout_as_a_lost_peer(tmp_path):
    """The pair groups take the run's timeout (gloo's default is 30 minutes): a survivor whose peer
    died unseen by gloo gives up after the timeout and re-forms, instead of hanging (seen in the drill)."""
    import subprocess
    import sys

    from course_lib._runtime.portability import free_port

    script = tmp_path / "pair.py"
    script.write_text(PEER_WHO_NEVER_ANSWERS)
    port = str(free_port())
    silent = subprocess.Popen([sys.executable, str(script), "1", port])
    try:
        out = subprocess.run([sys.executable, str(script), "0", port], capture_output=True, text=True, timeout=45)
    finally:
        silent.kill()
        silent.wait()
    word, _, seconds = out.stdout.strip().rpartition(" ")
    assert word == "lost" and float(seconds) < 10, out.stdout + out.stderr
