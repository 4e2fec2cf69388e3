"""The audit's probe and supervisor on what the field's scripts do: a closure's step (LBFGS,
Lightning's automatic optimisation), safetensors saves cut half-way, DataLoader workers, a
``torch.compile``d model, ``torch.distributed.checkpoint`` sharded over two ranks; and the
process boundary: the audit signals only what its command started, and ends all of that.
Each test runs one real attempt (:func:`resume_audit.attempt.run_attempt`) of a small script."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from resume_audit import AuditError
from resume_audit.attempt import run_attempt
from resume_audit.auditor import check_platform
from resume_audit.probe.resume_audit_schema import RECORDS

MODEL = '''import os, sys, torch
torch.manual_seed(0)
out = sys.argv[1]
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))
data = torch.utils.data.TensorDataset(torch.randn(24, 4), torch.arange(24) % 2)
'''


def attempt(tmp_path: Path, name: str, body: str, fault: dict | None = None, argv: list[str] | None = None):
    """One attempt of ``MODEL + body`` (``argv``: how it is started, ``{script}``, ``{run}``)."""
    script, run = tmp_path / f"{name}.py", tmp_path / f"{name}-run"
    script.write_text(MODEL + body)
    run.mkdir()
    argv = [a.replace("{script}", str(script)).replace("{run}", str(run)) for a in argv or [sys.executable, "{script}",
                                                                                            "{run}"]]
    return run, run_attempt(argv, tmp_path / f"{name}-records", tmp_path / f"{name}.log", fault=fault, timeout=180)


def keys_in_schema(processes) -> None:
    for p in processes:
        for e in p.events:
            assert set(e) - {"type"} <= set(RECORDS[e["type"]]), (e["type"], sorted(set(e) - set(RECORDS[e["type"]])))


def test_the_audit_signals_only_what_its_command_started(tmp_path):
    """A process started before the audit, outside its command, is never signalled, even when
    the command's records name its PID (a PID the system reused). What the command leaves running,
    in a session of its own, is ended."""
    outsider_log = tmp_path / "outsider.log"
    outsider = subprocess.Popen([sys.executable, "-c", f"""import signal, time
def note(signum, _):
    open({str(outsider_log)!r}, "a").write(signal.Signals(signum).name + chr(10))
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
    signal.signal(s, note)
open({str(outsider_log)!r}, "a").write("ready" + chr(10))
time.sleep(120)
"""])
    try:
        while not outsider_log.exists():
            time.sleep(0.05)
        body = f'''import json, subprocess
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in torch.utils.data.DataLoader(data, batch_size=8):
    opt.zero_grad(); torch.nn.functional.cross_entropy(net(x), y).backward(); opt.step()
records = json.loads(os.environ["RESUME_AUDIT"])["out"]
open(os.path.join(records, "{outsider.pid}-1.jsonl"), "w").write("")  # a record file that names the outsider
orphan = subprocess.Popen(["sleep", "300"], start_new_session=True)  # left running, in a session of its own
open(os.path.join(out, "orphan.pid"), "w").write(str(orphan.pid))
'''
        run, done = attempt(tmp_path, "boundary", body)
        assert done.exit_code == 0, done.tail()
        orphan = int((run / "orphan.pid").read_text())
        assert not Path(f"/proc/{orphan}").exists() or "Z" in Path(f"/proc/{orphan}/stat").read_text().split(")")[1][:3]
        assert outsider.poll() is None, "the outsider was killed"
        assert outsider_log.read_text().split() == ["ready"], "the outsider got a signal"
    finally:
        outsider.kill()
        outsider.wait()


def test_the_audit_runs_on_linux_and_refuses_the_rest_in_one_line():
    check_platform("linux")
    for other in ("darwin", "win32"):
        with pytest.raises(AuditError, match="Linux only"):
            check_platform(other)


def test_a_closure_step_records_the_gradients_computed_inside_it(tmp_path):
    """``optimizer.step(closure)`` (LBFGS; Lightning's automatic optimisation): the gradients
    exist only once the step has run its closure; the probe takes them after the step."""
    body = '''import resume_audit_digests as d
opt = torch.optim.LBFGS(net.parameters(), lr=0.5, max_iter=3)
for x, y in torch.utils.data.DataLoader(data, batch_size=8):
    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        return loss
    opt.step(closure)
    print("grads", d.grads_digest(opt), flush=True)
'''
    _, done = attempt(tmp_path, "closure", body)
    assert done.exit_code == 0, done.tail()
    [process] = done.processes
    steps = process.steps
    printed = [line.split()[1] for line in done.log.read_text().splitlines() if line.startswith("grads")]
    assert [s["grads"] for s in steps] == printed and len(set(printed)) == 3
    assert all(s["backwards"] >= 3 for s in steps), "the closure's backward passes, counted in its step"
    keys_in_schema(done.processes)


def test_a_safetensors_save_is_recorded_and_cut_half_way(tmp_path):
    body = '''from safetensors.torch import load_file, save_file
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in torch.utils.data.DataLoader(data, batch_size=8):
    opt.zero_grad(); torch.nn.functional.cross_entropy(net(x), y).backward(); opt.step()
    save_file(net.state_dict(), os.path.join(out, "model.safetensors"))
load_file(os.path.join(out, "model.safetensors"))
'''
    run, plain = attempt(tmp_path, "st", body)
    assert plain.exit_code == 0, plain.tail()
    [process] = plain.processes
    saves = process.of_type("save")
    assert [(s["via"], s["local_step"], s["target"]) for s in saves] == \
        [("safetensors", k, str(run / "model.safetensors")) for k in (1, 2, 3)]
    assert saves[0]["params"] == process.steps[0]["params"], "a resume from it can be found by content"
    assert process.of_type("load")[0]["via"] == "safetensors"
    whole = (run / "model.safetensors").stat().st_size
    cut_run, cut = attempt(tmp_path, "st-cut", body, fault={"mode": "during-save", "at": 2, "rank": 0, "nth": 0})
    assert cut.exit_code == -signal.SIGKILL and cut.processes[0].fault["target"].endswith("model.safetensors")
    assert 0 < (cut_run / "model.safetensors").stat().st_size <= whole // 2 + 1
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    with pytest.raises(SafetensorError):
        load_file(cut_run / "model.safetensors")
    keys_in_schema(plain.processes)


def test_dataloader_workers_write_nothing_and_their_batches_are_recorded_once(tmp_path):
    body = '''opt = torch.optim.SGD(net.parameters(), lr=0.1)
def start(worker_id):
    import random
    random.seed(torch.initial_seed() % 2**32)  # what a worker seeds is the worker's business
loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True, num_workers=2, worker_init_fn=start,
                                     generator=torch.Generator().manual_seed(1))
for x, y in loader:
    opt.zero_grad(); torch.nn.functional.cross_entropy(net(x), y).backward(); opt.step()
'''
    _, done = attempt(tmp_path, "workers", body)
    assert done.exit_code == 0, done.tail()
    assert [p.pid for p in done.processes] == [p.pid for p in done.processes if p.steps], "only the trainer wrote"
    [process] = done.processes
    assert [s["positions"] for s in process.steps] == [[i] for i in range(1, 7)]
    assert len({s["batches"][0] for s in process.steps}) == 6
    assert process.of_type("loader")[0]["workers"] == 2 and not process.of_type("seed")[1:], "no worker's seeds"
    keys_in_schema(done.processes)


@pytest.mark.slow
def test_a_compiled_model_is_observed_like_any_other(tmp_path):
    """``torch.compile`` (inductor): the same steps, digests and saves as the model it compiles."""
    body = '''compiled = torch.compile(net)
opt = torch.optim.AdamW(net.parameters(), lr=0.01)
for x, y in torch.utils.data.DataLoader(data, batch_size=8):
    opt.zero_grad(); torch.nn.functional.cross_entropy(compiled(x), y).backward(); opt.step()
    torch.save({"model": net.state_dict(), "opt": opt.state_dict()}, os.path.join(out, "ck.pt"))
'''
    _, first = attempt(tmp_path, "compiled", body)
    _, second = attempt(tmp_path, "compiled-again", body)
    assert first.exit_code == second.exit_code == 0, first.tail()
    a, b = first.processes[0], second.processes[0]
    assert len(a.steps) == 3 and all(s["params"] and s["grads"] for s in a.steps)
    assert len({s["params"] for s in a.steps}) == 3  # three steps, three states
    assert [s["params"] for s in a.steps] == [s["params"] for s in b.steps], "a compiled run is deterministic"
    assert [s["rng"]["torch"] for s in a.steps] == [s["rng"]["torch"] for s in b.steps], "dropout's draws, compiled"
    assert len(a.of_type("save")) == 3


@pytest.mark.slow
def test_dcp_saves_sharded_over_two_ranks_are_seen_and_cut(tmp_path):
    """``torch.distributed.checkpoint`` on gloo, two ranks under torchrun: each rank writes its
    shard (``torch.save`` into the file DCP opened) and rank 0 commits ``.metadata`` by a rename;
    a fault cuts one shard half-way, and the step's ``.metadata`` is never written."""
    body = '''import torch.distributed as dist, torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict
dist.init_process_group("gloo")
model = torch.nn.parallel.DistributedDataParallel(net)
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
sampler = torch.utils.data.DistributedSampler(data, shuffle=False)
for step, (x, y) in enumerate(torch.utils.data.DataLoader(data, batch_size=4, sampler=sampler), 1):
    opt.zero_grad(); torch.nn.functional.cross_entropy(model(x), y).backward(); opt.step()
    model_state, opt_state = get_state_dict(model, opt)
    dcp.save({"model": model_state, "optim": opt_state}, checkpoint_id=os.path.join(out, f"step-{step}"))
dist.destroy_process_group()
'''
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "{script}",
                "{run}"]
    run, plain = attempt(tmp_path, "dcp", body, argv=torchrun)
    assert plain.exit_code == 0, plain.tail()
    ranks = {p.rank: p for p in plain.processes if p.steps}
    assert sorted(ranks) == [0, 1]
    for rank, p in ranks.items():
        targets = {Path(s["target"]).name for s in p.of_type("save") if s["local_step"] == 3}
        assert f"__{rank}_0.distcp" in targets, (rank, targets)
    assert (run / "step-3" / ".metadata").exists()
    cut_run, cut = attempt(tmp_path, "dcp-cut", body, argv=torchrun,
                           fault={"mode": "during-save", "at": 2, "rank": 1, "nth": 0})
    assert any(p.fault and p.fault["mode"] == "during-save" for p in cut.processes), cut.tail()
    assert (cut_run / "step-1" / ".metadata").exists() and not (cut_run / "step-2" / ".metadata").exists()
    keys_in_schema(plain.processes)


def test_every_path_handed_to_the_command_is_absolute(tmp_path, monkeypatch):
    """A command that changes folder still finds the probe, its records and ``{run}``."""
    monkeypatch.chdir(tmp_path)
    body = '''opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in torch.utils.data.DataLoader(data, batch_size=8):
    opt.zero_grad(); torch.nn.functional.cross_entropy(net(x), y).backward(); opt.step()
    torch.save(net.state_dict(), "last.pt")
'''
    (tmp_path / "s.py").write_text(MODEL + body)
    (tmp_path / "r").mkdir()
    done = run_attempt(["bash", "-c", f"cd r && exec {sys.executable} ../s.py ."], Path("records"), Path("cd.log"))
    assert done.exit_code == 0, done.tail()
    [process] = done.processes
    assert len(process.steps) == 3 and process.of_type("save")[0]["target"] == str(tmp_path / "r" / "last.pt")


SAVES = '''import json, pickle, threading
import numpy as np
opt = torch.optim.AdamW(net.parameters(), lr=0.1)
for step, (x, y) in enumerate(torch.utils.data.DataLoader(data, batch_size=8), 1):
    opt.zero_grad(); torch.nn.functional.cross_entropy(net(x), y).backward(); opt.step()
    with open(os.path.join(out, "ck.pkl"), "wb") as f:
        pickle.dump({"model": net.state_dict(), "opt": opt.state_dict()}, f)
    np.save(os.path.join(out, "w.npy"), net[0].weight.detach().numpy())
    json.dump({"step": step}, open(os.path.join(out, "meta.json"), "w"))
    os.system(f"cp {out}/w.npy {out}/copied.npy")  # a writer the audit cannot see
'''


def test_every_write_under_the_run_is_a_file_event_and_a_save_is_what_its_file_holds(tmp_path):
    """pickle, NumPy and json through Python's open(): numbered file events of the role ``main``;
    the pickle's save record holds step k's parameters and optimizer state (what the file holds);
    the model's buffers (BatchNorm's statistics) are digested with each step; a file another
    program wrote is no event's."""
    script, run = tmp_path / "saves.py", tmp_path / "saves-run"
    script.write_text(MODEL.replace("torch.nn.Dropout(0.5)", "torch.nn.BatchNorm1d(8)") + SAVES)
    run.mkdir()
    done = run_attempt([sys.executable, str(script), str(run)], tmp_path / "rec", tmp_path / "log", run=run, timeout=120)
    assert done.exit_code == 0, done.tail()
    [p] = done.processes
    files = p.of_type("file")
    assert [(e["op"], e["path"]) for e in files[:3]] == [("create", "ck.pkl"), ("create", "w.npy"),
                                                        ("create", "meta.json")]
    assert [e["n"] for e in files] == list(range(1, len(files) + 1)) and {e["who"] for e in files} == {"main"}
    pickled = [e for e in p.of_type("save") if e["via"] == "pickle"]
    assert [e["holds"] for e in pickled] == [[k, k] for k in (1, 2, 3)], "the state of the step it was made after"
    assert len({s["buffers"] for s in p.steps}) == 3 and p.end["buffers"] == p.steps[-1]["buffers"]
    from resume_audit import disk

    assert disk.unseen(disk.scan(run), done.processes) == ["copied.npy"]
    keys_in_schema(done.processes)


def test_a_torn_fault_cuts_what_python_wrote_once_it_is_closed(tmp_path):
    from resume_audit.plan import Fault

    script, run = tmp_path / "torn.py", tmp_path / "torn-run"
    script.write_text(MODEL + SAVES.replace("    os.system", "    pass  # os.system"))
    run.mkdir()
    fault = Fault("torn", 0, None, who="main", n=4).for_probe()  # the second step's pickle
    done = run_attempt([sys.executable, str(script), str(run)], tmp_path / "rec", tmp_path / "log", fault=fault,
                       run=run, timeout=120)
    assert done.exit_code == -signal.SIGKILL, done.tail()
    [p] = done.processes
    assert p.fault["mode"] == "torn" and p.fault["event"] == ["main", 4] and len(p.steps) == 2
    import pickle

    with pytest.raises((pickle.UnpicklingError, EOFError)):
        pickle.loads((run / "ck.pkl").read_bytes())


THREADS = '''import os, sys, threading
run = sys.argv[1]

def write(name):
    for i in range(300):
        with open(os.path.join(run, f"{name}-{i}.txt"), "w") as f:
            f.write("x")

threads = [threading.Thread(target=write, args=(name,), name=f"writer-{name}") for name in ("a", "b")]
[t.start() for t in threads]
[t.join() for t in threads]
'''


def test_two_threads_writing_at_once_each_get_every_event_a_number_of_its_own(tmp_path):
    """A background save writes while the training thread writes too (the kit's --async-save): every
    file each thread makes is an event (one process-wide "audit's own work" count once dropped the
    writer's events while the other thread was inside a hook, and an unseen file followed), numbered
    in its thread's own order (one count for the process let the numbers drift from run to run: a crash
    point struck a neighbouring event)."""
    script, run = tmp_path / "threads.py", tmp_path / "threads-run"
    script.write_text(THREADS)
    run.mkdir()
    done = run_attempt([sys.executable, str(script), str(run)], tmp_path / "rec", tmp_path / "log", run=run, timeout=120)
    assert done.exit_code == 0, done.tail()
    [p] = done.processes
    created = [e for e in p.of_type("file") if e["op"] == "create"]
    assert sorted(e["path"] for e in created) == sorted(f"{t}-{i}.txt" for t in "ab" for i in range(300))
    for name in "ab":
        mine = [e for e in p.of_type("file") if e["who"] == f"main/writer-{name}"]
        assert [(e["n"], e["path"]) for e in mine] == [(i + 1, f"{name}-{i}.txt") for i in range(300)]
    from resume_audit import disk

    assert disk.unseen(disk.scan(run), done.processes) == []


def test_a_file_another_thread_is_about_to_open_is_fingerprinted_once_written(tmp_path):
    """The audit hook announces an open before it happens; the training thread's step may look in
    between (a background save's thread opens the file). That look found no file, or the old content
    of one the open truncates, and was taken for the write: the save's file had no fingerprint, and
    the audit could not tell that the resume read a background save's mix of steps (CI named the
    schedule instead, once in many runs). Here each interleaving is played in order, on real files."""
    import json

    from resume_audit import disk
    from resume_audit.probe.resume_audit_files import fingerprint
    from resume_audit.probe.resume_audit_probe import Probe

    run, out = tmp_path / "run", tmp_path / "records"
    run.mkdir()
    watch = Probe({"out": str(out), "run": str(run)}).watch
    tmp, final = str(run / "ck.pt.tmp"), str(run / "ck.pt")
    for content in (b"first save", b"a longer second save"):  # a new file, then one whose open truncates it
        for path in (tmp, final):
            watch.hook("open", (path, "wb", os.O_WRONLY | os.O_CREAT | os.O_TRUNC))  # announced ...
            watch.settle()  # ... the other thread's step looks ...
            with open(path, "wb") as f:  # ... then it is opened and written
                f.write(content)
            watch.settle()
        watch.hook("os.rename", (tmp, final + ".old", None, None))
        os.replace(tmp, final + ".old")
        watch.settle()
        records = [json.loads(line) for f in sorted(out.iterdir()) for line in f.read_text().splitlines()]
        for path in ("ck.pt.tmp", "ck.pt"):
            opened = max(i for i, e in enumerate(records) if e["type"] == "file" and e["op"] in ("create", "truncate")
                         and e["path"] == path)
            ended, written = disk.follow(records[opened:], path)
            assert written == fingerprint(run / ended), (path, ended)
    assert not watch.pending, "two looks that agree end the watch of a file"
