"""Station 5's guarantee, tested with real signals: an interrupted run resumed with
``--resume-mode full`` is bit-identical to the run never interrupted."""
import json
from pathlib import Path

import pytest
from helpers import small_cfg

from course_lib.checkpoint import store
from course_lib.checkpoint.store import CheckpointError, latest_valid
from course_lib.config import ConfigError
from course_lib.ddp.launch import Reduction, RunInterrupted, launch, train_with_ddp
from course_lib.watch.compare import compare_runs


@pytest.fixture
def reference(reference_run):
    return reference_run  # shared by the session (tests/conftest.py)


def interrupt_and_resume(run, mode="sigkill", step=13, rank=1, resume_mode="full", async_save=False, **resume_kw):
    with pytest.raises(RunInterrupted) as err:
        launch(small_cfg(run, kill_at_step=step, kill_rank=rank, kill_mode=mode, async_save=async_save), quiet=True)
    launch(small_cfg(run, resume="auto", resume_mode=resume_mode, async_save=async_save, **resume_kw), quiet=True)
    return err.value


SLOW = pytest.mark.slow


@pytest.mark.parametrize("mode,rank,async_save", [  # the default suite keeps the plain SIGKILL
    ("sigkill", 1, False), pytest.param("sigterm", 0, False, marks=SLOW), pytest.param("during-save", 0, False, marks=SLOW),
    pytest.param("during-save", 1, False, marks=SLOW), pytest.param("during-save", 0, True, marks=SLOW),
    pytest.param("sigkill", 0, True, marks=SLOW)])
def test_full_resume_is_bit_identical(reference, tmp_path, mode, rank, async_save):
    err = interrupt_and_resume(tmp_path / "run", mode, rank=rank, async_save=async_save)
    if mode == "sigkill":  # an asynchronous save of step 10 may still be in flight at the kill: then step 5
        newest = {"step-00000005", "step-00000010"} if async_save else {"step-00000010"}
        assert err.signal_name == "SIGKILL" and err.checkpoint in newest
    if mode == "sigterm":
        assert err.exit_code == 143 and err.checkpoint == "step-00000013"  # saved on the way out
    result = compare_runs(reference, tmp_path / "run")
    assert result["identical"], result
    assert result["skipped_samples"] == result["repeated_samples"] == 0


def verify_counted(cfg, rank, world_size, device, report, data_file):
    """A rank of the core's DDP run that writes, beside the run, every :func:`store.verify` it makes
    (``verify-rank{R}.json``: the folder's name, whether it hashed)."""
    real, calls = store.verify, []

    def verify(path, sha256=True):
        calls.append([Path(path).name, sha256])
        return real(path, sha256)
    store.verify = verify
    try:
        return train_with_ddp(cfg, rank, world_size, device, report, data_file)
    finally:
        store.verify = real
        (Path(cfg.run_dir).parent / f"verify-rank{rank}.json").write_text(json.dumps(calls))


def test_a_resume_hashes_each_checkpoint_once_on_rank_0_and_falls_back_from_bit_rot(reference, tmp_path, monkeypatch):
    """#64: the newest checkpoint was sha256-verified twice per resume (the launcher, then rank 0).
    Now rank 0 alone hashes, as every rank is about to load, under torchrun too; the launcher reads
    manifests and sizes. A newest checkpoint whose bytes rotted (same size: only the hash sees it)
    is still skipped for the one before, and the run is still bit-identical."""
    run = tmp_path / "run"
    with pytest.raises(RunInterrupted):
        launch(small_cfg(run, kill_at_step=13, kill_rank=1), quiet=True)
    model = run / "checkpoints" / "step-00000010" / "model.pt"
    rotten = bytearray(model.read_bytes())
    rotten[len(rotten) // 2] ^= 0x01
    model.write_bytes(bytes(rotten))
    launcher, real = [], store.verify
    monkeypatch.setattr(store, "verify", lambda path, sha256=True: launcher.append([Path(path).name, sha256])
                        or real(path, sha256))
    summary = launch(small_cfg(run, resume="auto"), quiet=True, reduction=Reduction("ddp", verify_counted))
    rank0, rank1 = (json.loads((tmp_path / f"verify-rank{r}.json").read_text()) for r in (0, 1))
    assert rank0 == [["step-00000010", True], ["step-00000005", True]] and rank1 == []
    assert launcher and not any(sha256 for _, sha256 in launcher), launcher
    assert summary["resumed_from"] == 5 and "checksum mismatch" in (run / "logs" / "rank0.log").read_text()
    assert compare_runs(reference, run)["identical"]


@SLOW
@pytest.mark.parametrize("resume_mode,skips", [("weights-only", False), ("no-rng", False), ("epoch-start", True)])
def test_partial_state_diverges(reference, tmp_path, resume_mode, skips):
    interrupt_and_resume(tmp_path / "run", resume_mode=resume_mode)
    result = compare_runs(reference, tmp_path / "run")
    assert not result["identical"] and result["first_divergent_step"] >= 11
    assert (result["repeated_samples"] > 0) == skips


@SLOW
def test_a_ddp_resume_on_another_world_size_is_refused_in_one_line(reference, tmp_path):
    """DDP's sum and each rank's RNG depend on the world size: such a resume could only continue
    closely, so it is refused before any rank starts, naming the flag that makes it exact."""
    import shutil

    shutil.copytree(reference, tmp_path / "run")
    with pytest.raises(ConfigError, match="whose sum does not depend on it") as err:
        launch(small_cfg(tmp_path / "run", resume="auto", world_size=1), quiet=True)
    assert "\n" not in str(err.value) and "saved by 2 rank(s), this run has 1" in str(err.value)


def test_resume_with_incompatible_config_names_keys(reference, tmp_path):
    import shutil

    shutil.copytree(reference, tmp_path / "run")
    log = tmp_path / "run" / "logs" / "rank0.log"
    before = log.read_text()
    with pytest.raises(ConfigError, match="embed_dim"):  # refused before any rank starts
        launch(small_cfg(tmp_path / "run", resume="auto", embed_dim=16), quiet=True)
    assert log.read_text() == before


def test_resume_from_damaged_path_is_refused(reference, tmp_path):
    import shutil

    shutil.copytree(reference, tmp_path / "run")
    newest = latest_valid(tmp_path / "run")
    (newest / "model.pt").write_bytes(b"broken")
    with pytest.raises(ConfigError, match="checksum|bytes"):  # refused before any rank starts
        launch(small_cfg(tmp_path / "run", resume=str(newest)), quiet=True)
    assert isinstance(CheckpointError("x"), RuntimeError)
