"""A power cut, modelled (resume_audit.power) and the crash points it is tried at
(resume_audit.crashpoints): replayed from file events as the probe records them, applied to a
real folder; then in a real attempt, where the probe keeps the shadows and the supervisor ends
every process of the command at once."""
import os
import sys

import pytest

from resume_audit import crashpoints, disk
from resume_audit.attempt import run_attempt
from resume_audit.plan import Fault, parse_fault
from resume_audit.power import cut_power, replayed
from resume_audit.records import Process


def _proc(events: list[dict], fault: dict | None = None) -> Process:
    out = []
    for t, e in enumerate(events):
        out.append({"type": "file", "who": "main", "n": t + 1, "local_step": e.pop("step", 1), "t": float(t), **e})
    if fault:
        out.append({"type": "fault", **fault})
    return Process(1, 0.0, out)


SAVE = [{"op": "create", "path": "ck.tmp", "python_open": True}, {"op": "fsync", "path": "ck.tmp", "size": 4},
        {"op": "rename", "path": "ck.tmp", "dst": "ck.pt"}]


def test_a_power_cut_takes_back_unsynced_data_and_undoes_unsynced_names(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "ck.pt").write_bytes(b"new!")
    (run / "log.txt").write_bytes(b"line 1\nline 2\n")
    old = tmp_path / "old-ck"
    old.write_bytes(b"old")
    events = [{"op": "create", "path": "log.txt", "python_open": True}, {"op": "fsync", "path": "log.txt", "size": 7},
              {"op": "append", "path": "log.txt", "python_open": True},
              *[dict(e) for e in SAVE[:2]], {**SAVE[2], "shadow": str(old)}]
    names = replayed([_proc([dict(e) for e in events])])
    assert names.undo_names(run) == [["rename", "ck.tmp", "ck.pt"], ["create", "ck.tmp"], ["create", "log.txt"]]
    assert not (run / "ck.tmp").exists() and (run / "ck.pt").read_bytes() == b"old"
    assert not (run / "log.txt").exists(), "its folder was never fsynced: the create is undone"
    (run / "log.txt").write_bytes(b"line 1\nline 2\n")
    data = replayed([_proc([dict(e) for e in events] + [{"op": "fsync-dir", "path": "."}])])
    assert data.pending == [], "an fsync of the folder makes every name in it durable"
    assert data.lose_data(run) == ["log.txt"], "the checkpoint was fsynced; the log's tail was not"
    assert (run / "log.txt").read_bytes() == b"line 1\n"


def test_the_event_a_fault_struck_did_not_happen():
    """A power cut just before the folder's fsync: that fsync is recorded, but never made."""
    events = [dict(e) for e in SAVE] + [{"op": "fsync-dir", "path": "."}]
    struck = _proc(events, fault={"mode": "power-names", "event": ["main", 4], "local_step": 1, "rank": 0})
    assert [p[0] for p in replayed([struck]).pending] == ["create", "rename"]


def test_crash_points_are_each_event_in_each_way_it_allows():
    events = [{"op": "mkdir", "path": "ck", "step": 0}, *[{**e, "step": 3} for e in SAVE],
              {"op": "fsync-dir", "path": ".", "step": 3}]
    proc = _proc([dict(e) for e in events])
    proc.events.append({"type": "save", "local_step": 3, "target": "x"})
    found = {(f.n, f.kind) for f in crashpoints.every([proc])}
    assert (2, "torn") in found and (3, "torn") not in found, "a Python write can be torn, an fsync cannot"
    assert (1, "power-data") not in found and (3, "power-data") in found, "a power cut only where it loses something"
    assert (5, "power-names") in found and (2, "power-names") in found
    picked = crashpoints.sampled([proc], count=4, seed=0)
    assert picked == crashpoints.sampled([proc], count=4, seed=0) and len(picked) == 4
    assert all(f.at == 3 for f in picked), "from the step that saves, not the set-up"
    assert parse_fault(picked[0].spec) == Fault(picked[0].kind, 0, None, who="main", n=picked[0].n)


POWER_SCRIPT = '''import os, sys, torch
torch.manual_seed(0)
out = sys.argv[1]
net = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(1, 5):
    opt.zero_grad(); net(torch.randn(3, 4)).sum().backward(); opt.step()
    torch.save(net.state_dict(), os.path.join(out, "tmp.pt"))   # no fsync of the file
    os.replace(os.path.join(out, "tmp.pt"), os.path.join(out, "ck.pt"))   # nor of the folder
'''


@pytest.mark.parametrize("mode", ["power-data", "power-names"])
def test_a_power_cut_in_a_real_attempt(tmp_path, mode):
    """Struck just before the third save's rename: the probe kept the second checkpoint's file
    (its shadow) as the rename replaced it; the supervisor ends the command; the model then
    empties the never-fsynced checkpoint, or undoes its rename (no checkpoint: the first one
    was never made durable either)."""
    script, run, plain = tmp_path / "s.py", tmp_path / "run", tmp_path / "plain"
    script.write_text(POWER_SCRIPT)
    run.mkdir()
    plain.mkdir()
    uninterrupted = run_attempt([sys.executable, str(script), str(plain)], tmp_path / "plain-records",
                                tmp_path / "plain-log", run=plain, timeout=120)
    finals = disk.final_paths(uninterrupted.processes, plain)
    assert set(finals.values()) == {"ck.pt"}, "where a save ends once renamed"
    fault = Fault(mode, 0, None, who="main", n=8).for_probe()  # write, rename per save: the 4th save's rename
    done = run_attempt([sys.executable, str(script), str(run)], tmp_path / "records", tmp_path / "log", fault=fault,
                       run=run, timeout=120)
    assert done.exit_code == -9 and done.processes[0].fault["mode"] == mode, done.tail()
    assert len(list((tmp_path / "records" / "shadows").iterdir())) == 3, "each replaced checkpoint kept"
    found = disk.checkpoints(done.processes, run, finals)
    assert [c.step for c in found] == [1, 2, 3, 4] and disk.newest(found, disk.scan(run)) == 3, \
        "the 4th save is whole, but not yet where it goes"
    changed = cut_power(mode, done.processes, run)
    if mode == "power-data":
        assert changed == ["ck.pt", "tmp.pt"] and (run / "ck.pt").stat().st_size == 0
    else:
        assert not (run / "ck.pt").exists() and ["rename", "tmp.pt", "ck.pt"] in changed
    assert disk.newest(found, disk.scan(run)) == 0, "no checkpoint survives"
    assert os.listdir(tmp_path / "records" / "shadows")


def test_files_no_event_wrote_are_unseen():
    proc = _proc([{"op": "create", "path": "a.pt", "python_open": True}])
    assert disk.unseen({"a.pt": {}, "b.bin": {}, "c/d": {}}, [proc]) == ["b.bin", "c/d"]



def test_a_power_cut_is_named_only_for_what_it_took():
    """A resume that passed over a checkpoint the power cut left intact is the resume's fault
    (``older``: newest_by_string_sort at a crash point of a later save), not the power cut's; one
    whose checkpoint the cut took back is not durable."""
    from resume_audit.diagnosis import AfterFault, _where_from

    cut = Fault("power-data", 21, None, who="main", n=31, op="fsync", path="step-24.pt.tmp")
    left = AfterFault(found=[], complete=21, intact=21, power=["step-24.pt.tmp"], survived=18)
    assert [f.kind for f in _where_from(cut.for_report(), cut, 9, left)] == ["older"]
    assert _where_from(cut.for_report(), cut, 9, left)[0].values["newest"] == 18
    took = AfterFault(found=[], complete=21, intact=21, power=["step-21.pt"], survived=9)
    assert [f.kind for f in _where_from(cut.for_report(), cut, 9, took)] == ["unsynced-file"]
