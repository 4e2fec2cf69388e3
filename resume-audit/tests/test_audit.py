"""The audit's parts: where a resume went on from, the fault plan, the probe inside a real
process (its records, a real SIGKILL at a step, a real cut half-way through a save), and the
command line's answers to commands that cannot be audited. The zoo of whole scripts is in
tests/test_zoo.py."""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from resume_audit import AuditError, audit, cli
from resume_audit.attempt import probe_env, run_attempt
from resume_audit.findings import KINDS as FINDINGS
from resume_audit.findings import Finding, merge
from resume_audit.plan import DRAWN, Fault, given, parse_fault, plan
from resume_audit.probe.resume_audit_digests import digest, resume_point
from resume_audit.records import read_processes
from resume_audit.report import Report
from resume_audit.verdict import FaultRow, RunVerdict, passed_over

# one worker runs the whole file (its module fixture is trained once): .ci/run uses --dist loadgroup
pytestmark = pytest.mark.xdist_group("test_audit")
SHM = Path("/dev/shm")  # on Linux another file system than the tests' temporary folders

TINY = '''import os, sys, torch
torch.manual_seed(0)
out = sys.argv[1]
net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(24, 4), torch.arange(24) % 2),
                                   batch_size=4, generator=torch.Generator().manual_seed(1), shuffle=True)
for x, y in data:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
    torch.save(net.state_dict(), os.path.join(out, "last.pt"))
'''


def test_a_resume_is_found_by_its_parameters_and_optimizer_state():
    table = [[0, "p0", "s0"], [1, "p1", "s1"], [2, "p2", "s2"], [3, "p2", "s3"]]
    assert resume_point(table, "p1", "s1") == 1
    assert resume_point(table, "p2", "s3") == 3
    assert resume_point(table, "p2", "fresh") == 3, "the optimizer restored wrongly: the parameters alone decide"
    assert resume_point(table, "p2", "fresh", hint=2) == 2, "several matches: the latest the run had reached"
    assert resume_point(table, "other", "s1") is None


def test_digests_see_every_bit_and_the_structure():
    import torch

    a = torch.arange(6, dtype=torch.float32)
    b = a.clone()
    b[3] = torch.nextafter(b[3], torch.tensor(10.0))
    assert digest([a]) == digest([a.clone()]) != digest([b])
    assert digest([a[:3], a[3:]]) != digest([a]), "the same bytes cut otherwise are another state"
    assert digest({"x": 1}) != digest({"x": 1.0})


def test_the_plan_is_the_seeds_and_spreads_the_faults_over_the_run():
    saves = {(0, s): 1 for s in range(5, 41, 5)}
    runs = plan(40, [0, 1], saves, count=8, seed=3, per_run=2)
    assert runs == plan(40, [0, 1], saves, count=8, seed=3, per_run=2) != plan(40, [0, 1], saves, count=8, seed=4)
    faults = [f for run in runs for f in run]
    assert len(faults) == 8 and {f.kind for f in faults} == {"sigkill", "sigterm", "during-save", "after-save"}
    assert all(max(len(r) for r in runs) <= 2 for _ in runs)
    for run in runs:
        assert [f.when for f in run] == sorted(f.when for f in run), "a run's faults strike in order"
    steps = sorted(f.at for f in faults)
    assert steps[0] <= 10 and steps[-1] >= 30, "spread over the run"
    for f in faults:
        if f.kind == "during-save":
            assert (f.rank, f.at) in saves
        if f.kind == "after-save":
            assert f.at - 1 in {s for _, s in saves}
        if f.kind == "sigterm":
            assert f.rank is None, "a preemption reaches every rank"


def test_a_script_that_never_saves_gets_only_kills_and_preemptions():
    kinds = {f.kind for run in plan(30, [0], {}, count=6) for f in run}
    assert kinds <= {"sigkill", "sigterm"} and kinds


def test_a_fault_a_run_went_past_strikes_a_fresh_run_and_its_note_goes():
    """A SIGTERM saved one step late (the kit votes at a step's end) resumes two steps on: the
    run's next fault leaves that gap; a fault an exact run still went past is dealt again, once."""
    term, kill = Fault("sigterm", 5, None), Fault("sigkill", 6, 1)
    assert given([term, kill], per_run=2) == [[term], [kill]]
    assert given([Fault("sigkill", 5, 0), kill], per_run=2) == [[Fault("sigkill", 5, 0), kill]]
    run = RunVerdict([FaultRow(term, True), FaultRow(kill, False)], [], steps=9, reference_steps=9, final_identical=True)
    assert passed_over(run, [term, kill, Fault("sigkill", 8, 0)]) == [kill, Fault("sigkill", 8, 0)]
    broken = RunVerdict(run.rows, [Finding("optimizer", {})], steps=9, reference_steps=9, final_identical=False)
    assert passed_over(broken, [term, kill]) == [], "a broken run's faults would show its defect again"
    note = Finding("undelivered-ended", {"fault": kill.for_report(), "reached": 9, "code": 0})
    later = RunVerdict([FaultRow(kill, True)], [], steps=9, reference_steps=9, final_identical=True)
    report = Report(["python", "t.py", "{run}"], None, Path("."), 0, {}, [],
                    runs=[RunVerdict(run.rows, [note], 9, 9, True), later])
    assert report.faults == 2 and "undelivered-ended" not in [f.kind for f in report.findings]


def test_an_audit_that_struck_nothing_is_inconclusive_not_a_defect():
    """No run was struck (the budget ran out first, or no fault kind found anything to strike):
    nothing was tested, so nothing is claimed, neither exact nor a defect that was never found."""
    report = Report(["python", "t.py", "{run}"], None, Path("."), 0, {}, [])
    assert report.verdict_case()[0] == "inconclusive" and report.exit_code == 3
    habit = Report(["python", "t.py", "{run}"], None, Path("."), 0, {}, [Finding("set-epoch", {})])
    assert habit.verdict_case()[0] == "habit" and habit.exit_code == 1


@pytest.mark.parametrize("differs, column", [(["state_before"], "optimizer"), (["hyper"], "optimizer"),
                                              (["lr"], "lr"), (["rng.torch"], "rng.torch")])
def test_what_differs_at_the_resume_marks_its_column(differs, column):
    """An optimizer whose settings (weight decay, betas: its param groups) were not restored is an
    optimizer that differs at the resume, like one whose moments were not: the row's "optimizer"
    column says no, not yes beside a "hyper" finding."""
    from types import SimpleNamespace

    from resume_audit.judge import Difference, Segment
    from resume_audit.verdict import _state

    first = Segment(2, 0, SimpleNamespace(steps=[{"batches": ["b"]}]), 5, Difference(6, 0, differs), None)
    state = _state(SimpleNamespace(live={0: {"rng.torch"}}), [first])
    assert state[column] is False
    assert all(ok for name, ok in state.items() if name != column), state


def test_findings_merge_one_per_kind_in_the_order_to_fix_them():
    first = {"kind": "sigkill", "at": 7, "rank": 1}
    merged = merge([Finding("rng", {"fault": first, "rngs": ["rng.torch"], "ranks": "0"}),
                    Finding("optimizer", {"fault": first, "resumed": 3}),
                    Finding("rng", {"fault": {"kind": "sigterm", "at": 9, "rank": None}, "rngs": ["rng.torch"],
                                    "ranks": "0"})])
    assert [f.kind for f in merged] == ["optimizer", "rng"]
    assert merged[1].count == 2
    assert merged[1].line.startswith("after SIGKILL rank 1 at step 7, the state of torch's CPU RNG differs")
    assert all(fix for kind, (_, fix) in FINDINGS.items() if Finding(kind).defect), "every defect says its fix"
    back = {"fault": first, "step": 13, "other": 1, "n": 12}
    lost = merge([Finding("epoch", back), Finding("position", {**back, "n": 5})])
    assert [(f.kind, f.count) for f in lost] == [("position", 2)], "a lost place, saved at an epoch's end"
    assert [f.kind for f in merge([Finding("epoch", back)])] == ["epoch"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "tiny.py").write_text(TINY)
    return folder


def _run(tiny, name, fault=None):
    run = tiny / name
    run.mkdir()
    return run, run_attempt([sys.executable, str(tiny / "tiny.py"), str(run)], tiny / f"{name}-records",
                            tiny / f"{name}.log", fault=fault, timeout=120)


@pytest.fixture(scope="module")
def plain(tiny):
    """The tiny script run once, watched and undisturbed (its checkpoint is what a cut save is half of)."""
    return _run(tiny, "plain")


def test_the_probe_records_every_step_of_an_unchanged_script(tiny, plain):
    run, attempt = plain
    assert attempt.exit_code == 0, attempt.tail()
    [process] = read_processes(tiny / "plain-records")
    steps = process.steps
    assert [s["local_step"] for s in steps] == list(range(1, 7)) and all(s["rank"] == 0 for s in steps)
    first = steps[0]
    assert {"params_before", "state_before", "grads", "params", "state", "lr", "rng", "batches"} <= set(first)
    assert first["lr"] == [0.1] and set(first["rng"]) >= {"python", "torch"}
    assert len({s["rng"]["torch"] for s in steps}) == 6, "dropout draws: torch's RNG moves every step"
    assert [s["positions"] for s in steps] == [[i] for i in range(1, 7)], "each batch's place in its pass"
    assert [s["backwards"] for s in steps] == [1] * 6, "one backward pass a step"
    saves = process.of_type("save")
    assert len(saves) == 6 and saves[0]["target"] == str(run / "last.pt") and saves[0]["params"] == steps[0]["params"]
    assert process.end["params"] == steps[-1]["params"], "the final state, as the process left"
    assert process.of_type("seed")[0]["which"] == "torch"


def test_a_fault_is_a_real_sigkill_as_its_step_begins(tiny):
    _, attempt = _run(tiny, "killed", {"mode": "sigkill", "at": 4, "rank": 0})
    assert attempt.exit_code == -9
    [process] = attempt.processes
    assert len(process.steps) == 3 and process.fault["at"] == 4 and process.end is None


def test_a_cut_save_leaves_half_the_file_and_dies(tiny, plain):
    run, attempt = _run(tiny, "cut", {"mode": "during-save", "at": 2, "rank": 0, "nth": 0})
    assert attempt.exit_code == -9
    [process] = attempt.processes
    assert len(process.steps) == 2 and process.fault["target"] == str(run / "last.pt")
    import torch

    whole = (plain[0] / "last.pt").stat().st_size
    assert 0 < (run / "last.pt").stat().st_size < 0.6 * whole
    with pytest.raises((RuntimeError, OSError)):  # what torch says of half a zip archive
        torch.load(run / "last.pt", weights_only=True)


@pytest.mark.parametrize("put", ["os.replace", "shutil.copyfile", "shutil.move"])
def test_a_commit_fault_strikes_the_rename_or_copy_after_a_whole_save(tiny, put, request):
    """``during-commit``: the save of step 2 is written whole to a temporary file; SIGKILL just
    before its rename (the checkpoint of step 1 stays), or half-way through its copy. ``shutil.move``
    from another file system (/dev/shm) cannot rename, and copies: struck half-way through the copy."""
    run = tiny / f"commit-{put}"
    run.mkdir()
    staging = run
    if put == "shutil.move":
        if not SHM.is_dir() or SHM.stat().st_dev == run.stat().st_dev:
            pytest.skip("no second file system (/dev/shm) here to move a checkpoint across")
        staging = Path(tempfile.mkdtemp(dir=SHM))
        request.addfinalizer(lambda: shutil.rmtree(staging, ignore_errors=True))
    script = tiny / f"commit-{put}.py"
    script.write_text("import shutil\n" + TINY.replace(
        'torch.save(net.state_dict(), os.path.join(out, "last.pt"))',
        f'torch.save(net.state_dict(), "{staging}/new.pt"); {put}("{staging}/new.pt", os.path.join(out, "last.pt"))'))
    attempt = run_attempt([sys.executable, str(script), str(run)], tiny / f"commit-{put}-records",
                          tiny / f"commit-{put}.log", fault={"mode": "during-commit", "at": 2, "rank": 0}, timeout=120)
    assert attempt.exit_code == -9
    [process] = attempt.processes
    assert len(process.steps) == 2 and process.fault["mode"] == "during-commit"
    import torch

    assert torch.load(staging / "new.pt", weights_only=True), "the save itself was written whole"
    if put == "os.replace":
        assert "just before the rename" in process.fault["target"]
        torch.load(run / "last.pt", weights_only=True)  # step 1's checkpoint, still whole
    else:
        assert 0 < (run / "last.pt").stat().st_size < 0.6 * (staging / "new.pt").stat().st_size
        with pytest.raises((RuntimeError, OSError)):
            torch.load(run / "last.pt", weights_only=True)


def test_commit_faults_are_given_by_hand_never_drawn():
    saves = {(0, s): 1 for s in range(5, 41, 5)}
    assert {f.kind for run in plan(40, [0], saves, count=40) for f in run} == set(DRAWN)
    assert parse_fault("during-commit@10") == Fault("during-commit", 10, 0)
    assert Fault("during-commit", 10, 0).describe() == ("SIGKILL rank 0 as the save after step 10 was put in place "
                                                        "(its rename or copy)")


def test_the_probe_runs_the_sitecustomize_it_hides(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIRS_RAN'] = '1'\n")
    env = probe_env(tmp_path / "records", None, 1, None, None)
    env["PYTHONPATH"] += os.pathsep + str(theirs)
    out = subprocess.run([sys.executable, "-c", "import os, sys; print(os.environ.get('THEIRS_RAN'), "
                          "'resume_audit_probe' in sys.modules)"], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["1", "True"], out.stderr


@pytest.mark.parametrize("command, words", [
    (["python", "train.py"], "{run}"),
    ("python train.py --out {run}", "list of arguments"),
    ([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)", "{run}"], "exit code 3: boom"),
    ([sys.executable, "-c", "import torch, sys; sys.argv", "{run}"], "no optimizer step"),
    ([sys.executable, "-c", "import torch, sys; torch.save(1, '/tmp/x.pt')", "{run}"], "no optimizer step"),
])
def test_a_command_that_cannot_be_audited_is_one_line_with_the_fix(tmp_path, command, words):
    with pytest.raises(AuditError, match=words.replace("{", r"\{").replace("}", r"\}")):
        audit(command, out=tmp_path / "audit", progress=False)


def test_the_command_line_answers_bad_input_with_exit_2(tmp_path, capsys):
    assert cli.main(["--out", str(tmp_path / "a"), "--", sys.executable, "train.py"]) == 2
    assert "{run}" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("x")
    assert cli.main(["--out", str(tmp_path / "mine"), "--", sys.executable, "t.py", "{run}"]) == 2
    assert "other than an audit" in capsys.readouterr().err
    assert cli.main(["--each", str(tmp_path / "none"), "--out", str(tmp_path / "b"), "--",
                     sys.executable, "{script}", "{run}"]) == 2
    assert "names no script" in capsys.readouterr().err


def test_a_fault_describes_itself():
    assert Fault("sigterm", 7, None).describe() == "SIGTERM every rank at step 7"
    assert Fault("after-save", 11, 1).describe() == "SIGKILL rank 1 at step 11, just after the save of step 10"
    assert Fault("during-save", 10, 0).for_probe() == {"mode": "during-save", "at": 10, "rank": 0, "nth": 0}

