import argparse

import pytest

from course_lib.config import TrainConfig
from course_lib.ddp.sampling import ResumableDistributedSampler, sample_digest
from course_lib.paths import read_config


def test_config_roundtrip_and_cli(tmp_path):
    cfg = TrainConfig(run_dir="x", world_size=2, epochs=3)
    cfg.save(tmp_path / "config.json")
    assert read_config(tmp_path) == cfg
    p = argparse.ArgumentParser()
    TrainConfig.add_arguments(p)
    args = p.parse_args(["--run-dir", "d", "--world-size", "1", "--kill-mode", "sigterm", "--lr", "0.1"])
    got = TrainConfig.from_args(args)
    assert (got.run_dir, got.world_size, got.kill_mode, got.lr) == ("d", 1, ["sigterm"], 0.1)
    assert got.shape_hash() == TrainConfig(run_dir="other", world_size=1).shape_hash()


def test_kill_plans_and_flags_round_trip(tmp_path):
    p = argparse.ArgumentParser()
    TrainConfig.add_arguments(p)
    got = TrainConfig.from_args(p.parse_args(["--kill-at-step", "13", "27", "--kill-rank", "1", "0", "--no-fused-adamw"]))
    assert (got.kill_at_step, got.kill_rank, got.kill_mode, got.fused_adamw) == ([13, 27], [1, 0], ["sigkill"], False)
    assert TrainConfig(kill_at_step=13).kill_at_step == [13] and TrainConfig(kill_at_step=0).kill_at_step == []
    assert TrainConfig(kill_at_step="13, 27").kill_at_step == [13, 27]
    cfg = TrainConfig(run_dir="r", kill_at_step=[5, 9], kill_mode=["sigterm", "during-save"], async_save=True, lr=0.01)
    assert TrainConfig.from_args(p.parse_args(cfg.to_args())) == cfg  # the flags rebuild the config
    cfg.save(tmp_path / "config.json")
    assert read_config(tmp_path) == cfg


@pytest.mark.parametrize("kw,msg", [({"global_batch_size": 63}, "divisible"), ({"resume_mode": "x"}, "resume_mode"),
                                    ({"kill_mode": "nuke"}, "kill_mode"), ({"kill_at_step": 3, "kill_rank": 5}, "kill_rank"),
                                    ({"kill_at_step": [3, 4, 5], "kill_rank": [0, 1]}, "one per kill"),
                                    ({"epochs": 0}, "epochs"), ({"precision": "fp8"}, "precision")])
def test_config_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        TrainConfig(**kw)
    with pytest.raises(ValueError, match="unknown"):
        TrainConfig.from_dict({"nope": 1})


def _steps(s: ResumableDistributedSampler) -> list[list[int]]:
    """The rank's index lists, one per step, as the trainer draws them."""
    return [s.share(chunk) for chunk in s.global_batches()]


def test_global_order_is_world_size_independent():
    one = ResumableDistributedSampler(1000, 64, num_replicas=1, rank=0, seed=7)
    two = [ResumableDistributedSampler(1000, 64, num_replicas=2, rank=r, seed=7) for r in (0, 1)]
    for s in (one, *two):
        s.set_epoch(3)
    for b1, b20, b21 in zip(_steps(one), _steps(two[0]), _steps(two[1])):
        assert sorted(b1) == sorted(b20 + b21) and not set(b20) & set(b21)
    assert one.steps_per_epoch == 15 and len(one) == 15 * 64 and len(two[0]) == 15 * 32
    assert list(two[1]) == [i for step in _steps(two[1]) for i in step]  # as a DistributedSampler iterates


def test_start_anywhere_in_an_epoch():
    s = ResumableDistributedSampler(500, 50, num_replicas=2, rank=1, seed=0)
    s.set_epoch(1)
    full = _steps(s)
    s.set_position(4)
    assert _steps(s) == full[4:]
    s.set_epoch(2)
    s.set_position(0)
    assert _steps(s) != full  # a new epoch, a new order
    with pytest.raises(ValueError):
        s.set_position(99)
    with pytest.raises(ValueError, match="training samples"):
        ResumableDistributedSampler(10, 64, 2, 0)
    assert sample_digest([3, 1, 2]) == sample_digest([1, 2, 3])
