"""Station 5's guarantee, tested with real signals: an interrupted run resumed with
``--resume-mode full`` is bit-identical to the run never interrupted."""
import pytest
from helpers import small_cfg

from course_lib.checkpoint.store import CheckpointError, latest_valid
from course_lib.config import ConfigError
from course_lib.ddp.launch import RunInterrupted, launch
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
