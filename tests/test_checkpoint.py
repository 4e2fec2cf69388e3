import json
import os
import pickle
import sys
import threading
import time

import pytest
import torch

from course_lib.checkpoint import store as ckpt
from course_lib.checkpoint.resume import rng_state
from course_lib.checkpoint.store import BackgroundWriter


def save(run_dir, step, payload=None, world_size=1, attempt=1, skip=()):
    """A complete checkpoint of a ``world_size``-rank run (less the parts named in ``skip``)."""
    tmp = ckpt.tmp_dir(run_dir, step, attempt)
    ckpt.write_part(tmp, "model.pt", payload or {"w": torch.full((50,), float(step))})
    for name in ckpt.required_parts(world_size)[1:]:
        if name not in skip:
            ckpt.write_part(tmp, name, rng_state() if name.startswith("rng") else {"step": step})
    return ckpt.commit(run_dir, step, {"world_size": world_size}, attempt=attempt)


def test_commit_verify_latest(tmp_path):
    for s in (10, 20):
        save(tmp_path, s)
    assert (tmp_path / "checkpoints" / "LATEST").read_text().strip() == "step-00000020"
    assert [p.name for p in ckpt.list_checkpoints(tmp_path)] == ["step-00000010", "step-00000020"]
    assert ckpt.verify(tmp_path / "checkpoints" / "step-00000020") == (True, "ok")
    m = json.loads((tmp_path / "checkpoints" / "step-00000020" / "manifest.json").read_text())
    assert m["step"] == 20 and set(m["files"]) == set(m["parts"]) == set(ckpt.required_parts(1)) and "torch" in m["versions"]
    assert ckpt.load_part(ckpt.latest_valid(tmp_path), "model.pt")["w"][0] == 20


def corrupt_truncate(p):
    data = (p / "model.pt").read_bytes()
    (p / "model.pt").write_bytes(data[: len(data) // 2])


def corrupt_flip(p):
    data = bytearray((p / "model.pt").read_bytes())
    data[len(data) // 2] ^= 0x01
    (p / "model.pt").write_bytes(bytes(data))


def corrupt_no_manifest(p):
    (p / "manifest.json").unlink()


def corrupt_foreign_manifest(p):
    other = p.parent / "step-00000010" / "manifest.json"
    (p / "manifest.json").write_text(other.read_text())


def corrupt_missing_file(p):
    (p / "rng-rank0.pt").unlink()


@pytest.mark.parametrize("damage,reason", [(corrupt_truncate, "truncated"), (corrupt_flip, "checksum"),
                                           (corrupt_no_manifest, "no manifest"), (corrupt_foreign_manifest, "foreign"),
                                           (corrupt_missing_file, "missing")])
def test_damaged_newest_falls_back(tmp_path, damage, reason):
    save(tmp_path, 10)
    newest = save(tmp_path, 20)
    damage(newest)
    ok, why = ckpt.verify(newest)
    assert not ok and reason in why
    messages = []
    assert ckpt.latest_valid(tmp_path, log=messages.append).name == "step-00000010"
    assert "step-00000020" in messages[0] and reason in messages[0]


@pytest.mark.parametrize("damage,reason", [(corrupt_truncate, "truncated"), (corrupt_no_manifest, "no manifest"),
                                           (corrupt_foreign_manifest, "foreign"), (corrupt_missing_file, "missing")])
def test_a_look_without_sha256_finds_what_a_crash_leaves_and_reads_no_file(tmp_path, monkeypatch, damage, reason):
    """``verify(sha256=False)``, the launcher's look before any rank starts: everything a crash
    mid-save leaves is found from the manifest and the files' sizes; only bit rot needs the hash,
    which the rank that loads computes."""
    save(tmp_path, 10)
    newest = save(tmp_path, 20)
    damage(newest)
    monkeypatch.setattr(ckpt, "_sha256", lambda path: pytest.fail(f"{path} was read"))
    ok, why = ckpt.verify(newest, sha256=False)
    assert not ok and reason in why
    assert ckpt.latest_valid(tmp_path, log=None, sha256=False).name == "step-00000010"
    corrupt_flip(tmp_path / "checkpoints" / "step-00000010")
    assert ckpt.verify(tmp_path / "checkpoints" / "step-00000010", sha256=False) == (True, "ok")


def test_crash_mid_save_leaves_previous_valid(tmp_path):
    save(tmp_path, 10)
    tmp = ckpt.tmp_dir(tmp_path, 20)
    tmp.mkdir(parents=True)  # what a SIGKILL half-way through the next save leaves (the real kill: test_resume)
    (tmp / "model.pt").write_bytes(bytes(ckpt.serialize({"w": torch.zeros(1000)}))[:2000])
    assert ckpt.latest_valid(tmp_path).name == "step-00000010"
    assert ckpt.remove_stale_tmp(tmp_path) == [tmp] and not tmp.exists()


def test_disk_full_leaves_previous_valid(tmp_path, monkeypatch):
    save(tmp_path, 10)

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        save(tmp_path, 20)
    monkeypatch.undo()
    assert ckpt.latest_valid(tmp_path).name == "step-00000010"


def test_code_in_a_checkpoint_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    path = save(tmp_path, 10)
    with open(path / "evil.pt", "wb") as f:
        pickle.dump({"model": Evil()}, f, protocol=2)  # torch.save's protocol: the refusal, not a protocol warning
    with pytest.raises(ckpt.CheckpointError, match="weights_only"):
        ckpt.load_part(path, "evil.pt")
    assert not ckpt.verify(path)[0]  # and the folder no longer matches its manifest


def test_purge_keeps_newest_valid(tmp_path):
    for s in (1, 2, 3, 4):
        save(tmp_path, s)
    corrupt_flip(tmp_path / "checkpoints" / "step-00000004")
    removed = ckpt.purge(tmp_path, keep_last=1)
    left = [p.name for p in ckpt.list_checkpoints(tmp_path)]
    assert "step-00000003" in left and "step-00000004" in left and len(removed) == 2


def test_a_checkpoint_that_does_not_fit_is_refused_with_its_keys():
    from course_lib.checkpoint.resume import check_fits
    from course_lib.config import TrainConfig

    now = TrainConfig(run_dir="r", model="bag", seed=0)
    saved = {**now.to_dict(), "world_size": 2}
    check_fits(saved, now, 2, "step-00000005")  # the same run: fits
    with pytest.raises(ckpt.CheckpointError, match=r"model: checkpoint 'minilm', now 'bag'"):
        check_fits({**saved, "model": "minilm"}, now, 2, "step-00000005")
    with pytest.raises(ckpt.CheckpointError, match="whose sum does not depend on it"):  # DDP on another world size
        check_fits(saved, now, 1, "step-00000005")
    both = now.replace(reduction="invariant")
    check_fits({**saved, "reduction": "invariant"}, both, 1, "step-00000005", any_world_size=True)  # any world size


def test_serialized_snapshot_is_independent_and_writer_runs_one_job_at_a_time(tmp_path):
    live = {"w": torch.zeros(3), "nested": [torch.ones(2), 5], "step": 7}
    snap = ckpt.serialize(live)
    live["w"] += 1
    live["nested"][0] += 1
    ckpt.write_part(tmp_path, "state.pt", snap)
    back = ckpt.load_part(tmp_path, "state.pt")
    assert back["w"].sum() == 0 and back["nested"][0].sum() == 2 and back["step"] == 7
    order = []
    writer = BackgroundWriter()
    writer.submit(lambda: (time.sleep(0.2), order.append("first")), background=True)
    writer.submit(lambda: order.append("second"), background=True)  # waits for the first
    writer.wait()
    assert order == ["first", "second"]


def test_a_failing_background_write_raises_in_the_training_thread():
    writer = BackgroundWriter()
    writer.submit(lambda: {}["epoch"], background=True)
    with pytest.raises(RuntimeError, match="background checkpoint writer failed") as info:
        writer.wait()
    assert isinstance(info.value.__cause__, KeyError)
    writer.wait()  # reported once


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux behaviour")
def test_background_writer_runs_at_low_priority_and_leaves_the_process_alone():
    seen, before = [], os.getpriority(os.PRIO_PROCESS, 0)
    writer = BackgroundWriter()
    writer.submit(lambda: seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())), background=True)
    writer.wait()
    assert seen == [19]
    assert os.getpriority(os.PRIO_PROCESS, 0) == before  # the training thread keeps its priority


def test_a_manifest_that_lacks_a_rank_describes_an_incomplete_checkpoint(tmp_path):
    """What two saves sharing one folder left behind: a 2-rank checkpoint whose manifest lists
    only the files that happened to be there, without rng-rank1.pt."""
    save(tmp_path, 10, world_size=2)
    newest = save(tmp_path, 20, world_size=2)
    (newest / "rng-rank1.pt").unlink()
    m = json.loads((newest / "manifest.json").read_text())
    del m["files"]["rng-rank1.pt"]
    m["parts"].remove("rng-rank1.pt")
    (newest / "manifest.json").write_text(json.dumps(m))
    ok, why = ckpt.verify(newest)
    assert not ok and "incomplete" in why and "rng-rank1.pt" in why
    messages = []
    assert ckpt.latest_valid(tmp_path, log=messages.append).name == "step-00000010"
    assert "rng-rank1.pt" in messages[0]
    del m["world_size"]
    (newest / "manifest.json").write_text(json.dumps(m))
    assert "world size" in ckpt.verify(newest)[1]


def test_commit_refuses_an_incomplete_folder(tmp_path):
    with pytest.raises(ckpt.CheckpointError, match="rng-rank1.pt missing"):
        save(tmp_path, 10, world_size=2, skip=("rng-rank1.pt",))
    assert ckpt.list_checkpoints(tmp_path) == []


def test_saves_of_one_step_by_two_attempts_do_not_share_a_folder(tmp_path):
    assert ckpt.tmp_dir(tmp_path, 36, 1) != ckpt.tmp_dir(tmp_path, 36, 2)
    save(tmp_path, 36, payload={"w": torch.zeros(3)}, attempt=1)
    path = save(tmp_path, 36, payload={"w": torch.ones(3)}, attempt=2)  # replaces the first, whole
    assert ckpt.verify(path)[0] and ckpt.load_part(path, "model.pt")["w"].sum() == 3
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["LATEST", "step-00000036"]


def test_a_commit_that_crashed_while_replacing_a_step_is_put_back(tmp_path):
    save(tmp_path, 10)
    root = tmp_path / "checkpoints"
    os.rename(root / "step-00000010", root / ".old-step-00000010-attempt2")  # crash between the two renames
    ckpt.tmp_dir(tmp_path, 10, 2).mkdir()
    assert ckpt.latest_valid(tmp_path) is None
    ckpt.remove_stale_tmp(tmp_path)
    assert ckpt.latest_valid(tmp_path).name == "step-00000010"
    assert sorted(p.name for p in root.iterdir()) == ["LATEST", "step-00000010"]


def test_the_table_of_a_checkpoint_says_which_run_needs_rng_files(reference_run, tmp_path):
    """The chapter's DDP needs each rank's RNG state to continue its dropout masks; the invariant
    reduction seeds every micro-batch itself, so its checkpoints hold no RNG file at all."""
    from helpers import small_cfg

    from course_lib.beyond import launch
    from course_lib.lab.tables import checkpoint_files

    why = "why a resume needs it"
    ddp = checkpoint_files(ckpt.latest_valid(reference_run, log=None), lang="en")
    assert ddp.loc["rng-rank0.pt", why].startswith("dropout masks continue exactly")
    run = tmp_path / "invariant"
    launch(small_cfg(run, reduction="invariant", epochs=1), quiet=True)
    inv = checkpoint_files(ckpt.latest_valid(run, log=None), lang="en")
    rng = ["rng-rank0.pt", "rng-rank1.pt"]
    assert not any(name.startswith("rng-rank") for name in inv.index)
    assert ddp.drop(rng).drop(columns="kB").equals(inv.drop(columns="kB"))  # the other rows are the same
