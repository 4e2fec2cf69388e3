"""The zoo's truth, settled by hand, without the audit: what a practitioner does to know whether a
script resumes. For a script (or its fixed twin, tests/twins.py):

1. run it never interrupted, twice, each in a fresh folder: the same final state?
2. for each fault of its plan (PLAN), a fresh folder: a real fault at a step, then the same
   command again until the run ends; its final state beside the first uninterrupted run's.

The final state is what ``zoo_common.finish`` writes at the run's end under ``ZOO_FINAL``: the
parameters, the buffers, the optimizer's state (and an EMA's, a GradScaler's). Faults, at step
``N`` (N optimizer steps done, as step N + 1 begins, so a save after step N has returned):

- ``sigkill@N``, ``sigterm@N``: the signal, sent by the process to itself (rank 0);
- ``torn@N``: a kill half-way through the write of step N's save: the process is killed right
  after that save, then its folder is put back as the kill would have left it: as it was before
  the save, with the first file the save opened for writing holding half of its bytes;
- ``powercut@N``: the machine loses power right after step N's save: what was never fsynced is
  lost (POSIX promises nothing else): a file whose data was not fsynced since its last write is
  left empty, and the directory operations of that save (create, rename, remove) not followed by
  an fsync of the folder are undone (a crash loses a suffix of them: here, the last save's).

What each attempt did is recorded from inside its processes by a ``sitecustomize`` this tool
puts first on ``PYTHONPATH`` (:func:`arm`): each optimizer step (with a digest of the parameters
before it, to say from which step a resume went on), the file events under the run's folder
(opens for writing, fsyncs, renames, removes) and each ``DistributedSampler`` pass. The scripts
print and save nothing extra.

    python tests/zoo/hand_truth.py [NAME ...] [--only broken|twin] [--script PATH --faults F ...]

writes (merges into) tests/zoo/truth.json; ``--table`` prints the README's table from it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ZOO = Path(__file__).resolve().parent
TRUTH = ZOO / "truth.json"
U = "the run never interrupted"

# name -> (the finding it must get, its defect in a few words, its fix in a few words, faults by hand)
FAMILIES = {
    "accumulation_lost": ("accumulation", "saves mid-way through a step's gradient accumulation",
                          "save only at an optimizer step's end", ["sigkill@5"]),
    "background_save_live": ("snapshot", "a background thread writes the live state_dict()s two steps later",
                             "copy.deepcopy both state dicts before the hand-over", ["sigkill@14"]),
    "buffers_not_saved": ("buffers", "saves dict(net.named_parameters()): BatchNorm's running statistics lost",
                          "save net.state_dict()", ["sigkill@14"]),
    "ema_not_saved": ("ema", "the EMA (AveragedModel) is not saved", "save and load ema.state_dict()", ["sigkill@14"]),
    "epoch_off_by_one": ("epoch", "resumes at the epoch it had finished", "resume from epoch + 1", ["sigkill@20"]),
    "grad_scaler_not_saved": ("scaler", "the GradScaler's state is not saved", "save and load scaler.state_dict()",
                              ["sigkill@14"]),
    "newest_by_string_sort": ("older", "newest checkpoint by sorted(glob('step-*.pt'))[-1] (step-9 after step-18)",
                              "sort by the integer step", ["sigkill@20"]),
    "no_dir_fsync": ("unsynced-dir", "fsyncs the file, renames it, never fsyncs the folder",
                     "fsync the folder after the rename", ["powercut@10", "sigkill@14"]),
    "no_fsync": ("unsynced-file", "atomic by rename, nothing ever fsynced",
                 "flush + fsync the file before the rename, fsync the folder after it", ["powercut@10", "sigkill@14"]),
    "no_optimizer_state": ("optimizer", "the optimizer's state is not saved",
                           "save and load optimizer.state_dict()", ["sigkill@14"]),
    "no_rng_state": ("rng", "torch's RNG is not saved (dropout)", "save and restore torch.get_rng_state()",
                     ["sigkill@14"]),
    "no_scheduler_state": ("scheduler", "the LR scheduler's state is not saved", "save and load scheduler.state_dict()",
                           ["sigkill@14"]),
    "no_sigterm_save": ("sigterm-no-save", "no SIGTERM handler", "on SIGTERM set a flag, save at the step's end, exit",
                        ["sigterm@14"]),
    "non_atomic_save": ("not-atomic", "torch.save straight onto the checkpoint", "save_atomic (tmp, fsync, os.replace)",
                        ["torn@10"]),
    "numpy_in_place": ("not-atomic", "numpy.savez straight onto the checkpoint",
                       "tmp file, flush + fsync, os.replace, fsync the folder", ["torn@10"]),
    "pickle_in_place": ("not-atomic", "pickle.dump straight onto the checkpoint",
                        "tmp file, flush + fsync, os.replace, fsync the folder", ["torn@10"]),
    "position_lost": ("position", "the position in the epoch is not saved",
                      "save the step and skip the batches already trained", ["sigkill@14"]),
    "python_numpy_rng_not_saved": ("rng", "augmentation from Python's random and NumPy's RNG, neither saved",
                                   "save and restore random.getstate() and np.random.get_state()", ["sigkill@14"]),
    "rng_rank0_only": ("rng-rank", "only rank 0's RNG saved, loaded on every rank",
                       "gather every rank's RNG, each rank restores its own", ["sigkill@14"]),
    "rng_reseeded": ("rng-reseeded", "torch's RNG seeded again at the resume", "torch.set_rng_state(saved)",
                     ["sigkill@14"]),
    "sampler_seed_per_rank": ("sampler-seed", "DistributedSampler(seed=rank)", "the same seed on every rank",
                              ["sigkill@14"]),
    "scheduler_per_epoch": ("scheduler-offset", "a per-epoch schedule fast-forwarded by steps",
                            "save and load scheduler.state_dict()", ["sigkill@14", "sigkill@26"]),
    "set_epoch_missing": ("set-epoch", "sampler.set_epoch never called", "sampler.set_epoch(epoch) each epoch",
                          ["sigkill@14"]),
    "shuffle_from_global_rng": ("rng-shuffle", "DataLoader(shuffle=True) without a generator, torch's RNG never saved",
                                "save torch's RNG as the epoch's iterator is created, restore it before",
                                ["sigkill@14", "sigkill@22"]),
    "shuffle_generator_not_restored": ("order-generator", "the shuffle generator's state is not saved",
                                       "save its state as the epoch's iterator is created, restore it", ["sigkill@20"]),
    "sigterm_save_ignored": ("older", "saves preempted.pt on SIGTERM, resumes from checkpoint.pt only",
                             "resume from whichever holds the later step", ["sigterm@13"]),
    "unseeded_data": ("unseeded-data", "the data subset drawn with unseeded random", "random.seed(0)", ["sigkill@14"]),
    "unseeded_init": ("unseeded-init", "the model built before torch.manual_seed", "seed before building the model",
                      ["sigkill@14"]),
    "worker_rng_unseeded": ("unseeded-workers", "DataLoader workers' generators unseeded",
                            "seed them from torch.initial_seed() in worker_init_fn", ["sigkill@14"]),
}
# fixes that look right and are not: built from a twin by replacing one line (twin's, variant's)
VARIANTS = {
    "sched_ff_by_epochs": ("scheduler_per_epoch", ('    scheduler.load_state_dict(checkpoint["scheduler"])',
                                                   "    fast_forward(scheduler, epoch)"),
                           "the schedule fast-forwarded by epochs, after the optimizer's state is loaded",
                           ["sigkill@14", "sigkill@26"]),
    "shuffle_state_at_save": ("shuffle_generator_not_restored", ('"step": step, "shuffle": epoch_shuffle,',
                                                                 '"step": step, "shuffle": shuffle.get_state(),'),
                              "the shuffle generator's state saved as it is at the save", ["sigkill@20"]),
    "global_rng_at_save": ("shuffle_from_global_rng", ('"step": step, "rng": epoch_rng,',
                                                       '"step": step, "rng": torch.get_rng_state(),'),
                           "torch's RNG saved as it is at the save, restored before the epoch's iterator",
                           ["sigkill@22"]),
}
CORRECT = {"correct_one_process": ["sigkill@14", "sigterm@14", "torn@10", "powercut@10"],
           "correct_spawn_ddp": ["sigkill@14", "sigterm@14"], "correct_torchrun_ddp": ["sigkill@14"]}


# ---------------------------------------------------------------- inside the script's processes

def arm() -> None:
    """Record the attempt from inside (the ``sitecustomize`` calls this in every Python process of
    the command): optimizer steps, file events under the run's folder, sampler passes; deliver the
    kill and take the folder's snapshot the fault asks for. Nothing without ``ZOO_HAND_LOG``."""
    if os.environ.get("ZOO_HAND_LOG"):
        Recorder().install()


class Recorder:
    def __init__(self):
        kind, _, at = os.environ.get("ZOO_HAND_KILL", "").partition("@")
        self.signal = kind
        self.kill_at = int(at) if at else -1
        self.snapshot = os.environ.get("ZOO_HAND_SNAPSHOT")
        self.run = os.path.abspath(os.environ["ZOO_HAND_RUN"])
        self.out = os.open(os.environ["ZOO_HAND_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.done = 0  # optimizer steps this process has taken

    def install(self) -> None:
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
        from torch.utils.data import DistributedSampler

        self.torch = torch
        register_optimizer_step_pre_hook(self.before_step)
        register_optimizer_step_post_hook(self.after_step)
        sys.addaudithook(self.audit)
        self.real_fsync, self.real_save, self.real_pass = os.fsync, torch.save, DistributedSampler.__iter__
        os.fsync, torch.save, DistributedSampler.__iter__ = self.fsync, self.save, self.sampler_pass()

    def rank(self) -> int:
        distributed = self.torch.distributed
        if distributed.is_available() and distributed.is_initialized():
            return distributed.get_rank()
        return int(os.environ.get("RANK", "0"))

    def emit(self, **record) -> None:
        record.update(n=self.done, rank=self.rank(), pid=os.getpid(),
                      main=threading.current_thread() is threading.main_thread())
        os.write(self.out, (json.dumps(record) + "\n").encode())

    def under(self, path) -> bool:
        return isinstance(path, (str, os.PathLike)) and (os.path.abspath(path) + os.sep).startswith(self.run + os.sep)

    def before_step(self, optimizer, *_) -> None:
        import hashlib
        import signal

        if self.rank() == 0 and self.snapshot and self.done == self.kill_at - 1:
            shutil.copytree(self.run, self.snapshot)  # the folder before the save of step kill_at
        if self.rank() == 0 and self.done == self.kill_at:
            os.kill(os.getpid(), signal.SIGTERM if self.signal == "sigterm" else signal.SIGKILL)
        params = [p.detach().cpu().numpy().tobytes() for group in optimizer.param_groups for p in group["params"]]
        self.emit(k="step", params=hashlib.sha256(b"".join(params)).hexdigest()[:16])

    def after_step(self, *_) -> None:
        self.done += 1

    def audit(self, event: str, args: tuple) -> None:
        if event == "open" and self.under(args[0]):
            mode, flags = args[1], args[2] or 0
            if (mode and any(c in mode for c in "wax+")) or (not mode and flags & (os.O_WRONLY | os.O_RDWR)):
                self.emit(k="open", path=os.path.abspath(args[0]))
        elif event in ("os.rename", "os.replace") and (self.under(args[0]) or self.under(args[1])):
            self.emit(k="rename", src=os.path.abspath(args[0]), dst=os.path.abspath(args[1]))
        elif event == "os.remove" and self.under(args[0]):
            self.emit(k="remove", path=os.path.abspath(args[0]))

    def fsync(self, fd) -> None:
        self.real_fsync(fd)
        path = os.readlink(f"/proc/self/fd/{fd if isinstance(fd, int) else fd.fileno()}")
        if self.under(path):
            self.emit(k="fsync", path=path, dir=os.path.isdir(path))

    def save(self, obj, f, *args, **kwargs):
        if self.under(f):  # a path: torch opens it in C++, where no audit event is raised
            self.emit(k="open", path=os.path.abspath(f))
        return self.real_save(obj, f, *args, **kwargs)

    def sampler_pass(self):
        recorder = self

        def __iter__(sampler):
            order = list(recorder.real_pass(sampler))
            recorder.emit(k="sampler", epoch=sampler.epoch, seed=sampler.seed, indices=order)
            return iter(order)

        return __iter__


# ---------------------------------------------------------------- the tool

def command(script: Path, run: Path) -> list[str]:
    if "torchrun" in script.name:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script),
                "--out", str(run)]
    return [sys.executable, str(script), "--out", str(run)]


def attempt(script: Path, run: Path, work: Path, tag: str, final: Path, kill: str = "", snapshot: Path | None = None):
    """One start of the command; what its processes recorded."""
    hooks = work / "hooks"
    if not hooks.exists():
        hooks.mkdir(parents=True)
        (hooks / "sitecustomize.py").write_text(
            "import importlib.util\n"
            f"spec = importlib.util.spec_from_file_location('zoo_hand_truth', {str(Path(__file__).resolve())!r})\n"
            "module = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(module)\nmodule.arm()\n")
    log = work / f"{tag}.jsonl"
    env = {**os.environ, "ZOO_HAND_LOG": str(log), "ZOO_HAND_RUN": str(run), "ZOO_FINAL": str(final),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    for name in ("ZOO_HAND_KILL", "ZOO_HAND_SNAPSHOT"):
        env.pop(name, None)
    if kill:
        env["ZOO_HAND_KILL"] = kill
    if snapshot:
        env["ZOO_HAND_SNAPSHOT"] = str(snapshot)
    try:
        proc = subprocess.run(command(script, run), env=env, capture_output=True, text=True, timeout=300)
        code, said = proc.returncode, (proc.stdout + proc.stderr).strip()
    except subprocess.TimeoutExpired as err:
        code, said = "timeout", str(err)
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    steps = [r for r in records if r["k"] == "step" and r["rank"] == 0]
    error = [line for line in said.splitlines() if line.strip()][-1:] if code != 0 else []
    return {"code": code, "steps": len(steps), "params": [r["params"] for r in steps],
            "files": [r for r in records if r["k"] in ("open", "rename", "remove", "fsync")],
            "sampler": [r for r in records if r["k"] == "sampler"], "error": error[0][:300] if error else None}


def compare(a: Path, b: Path) -> list[str]:
    """What differs between two final states (the groups: parameters, buffers, optimizer, ...)."""
    import torch

    if not (a.exists() and b.exists()):
        return ["no final state"]
    x, y = torch.load(a, weights_only=False), torch.load(b, weights_only=False)
    return [group for group in sorted(set(x) | set(y)) if not same(x.get(group), y.get(group))]


def same(x, y) -> bool:
    import torch

    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        return isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.dtype == y.dtype and torch.equal(x, y)
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(same(i, j) for i, j in zip(x, y))
    return x == y


def tear(run: Path, snapshot: Path, files: list[dict], at: int) -> str:
    """The folder as a kill half-way through the first write of step ``at``'s save leaves it."""
    events = [e for e in files if e["n"] == at]
    first = next((i for i, e in enumerate(events) if e["k"] == "open"), None)
    if first is None:
        raise RuntimeError(f"no save after step {at}")
    opened = written = events[first]["path"]
    for e in events[first:]:  # where its bytes are now
        if e["k"] == "rename" and e["src"] == written:
            written = e["dst"]
    data = Path(written).read_bytes()
    shutil.rmtree(run)
    shutil.copytree(snapshot, run)
    Path(opened).write_bytes(data[: len(data) // 2])
    return f"{Path(opened).name} holds {len(data) // 2} of its {len(data)} bytes, the rest as before the save"


def power_cut(run: Path, snapshot: Path, files: list[dict], at: int) -> str:
    """The folder as a power cut right after step ``at``'s save may leave it (the module's docstring)."""
    synced_before = replay([e for e in files if e["n"] < at])[0]
    synced, pending = replay(files)
    said = []
    for op in reversed([op for op in pending if op["n"] == at]):  # the last save's, undone
        if op["op"] == "rename":
            shutil.move(op["dst"], op["src"])
            synced[op["src"]] = synced.pop(op["dst"], True)
            old = snapshot / Path(op["dst"]).relative_to(run)
            if old.exists():
                shutil.copy2(old, op["dst"])
                synced[op["dst"]] = synced_before.get(op["dst"], True)
            said.append(f"the rename of {Path(op['src']).name} onto {Path(op['dst']).name} undone")
        elif op["op"] == "create":
            Path(op["path"]).unlink(missing_ok=True)
            synced.pop(op["path"], None)
            said.append(f"the creation of {Path(op['path']).name} undone")
        else:
            old = snapshot / Path(op["path"]).relative_to(run)
            if old.exists():
                shutil.copy2(old, op["path"])
            said.append(f"the removal of {Path(op['path']).name} undone")
    for name, durable in synced.items():
        if not durable and Path(name).exists() and Path(name).stat().st_size:
            Path(name).write_bytes(b"")
            said.append(f"{Path(name).name} emptied (its data never fsynced)")
    return "; ".join(said) or "nothing lost: every write and rename of the save was fsynced"


def replay(files: list[dict]) -> tuple[dict[str, bool], list[dict]]:
    """Per name, is its data fsynced since its last write? and the directory operations since the
    folder's last fsync."""
    synced: dict[str, bool] = {}
    present: set[str] = set()
    pending: list[dict] = []
    for e in files:
        if e["k"] == "open":
            if e["path"] not in present:
                pending.append({"op": "create", "path": e["path"], "n": e["n"]})
                present.add(e["path"])
            synced[e["path"]] = False
        elif e["k"] == "fsync" and e["dir"]:
            pending.clear()
        elif e["k"] == "fsync":
            synced[e["path"]] = True
        elif e["k"] == "rename":
            synced[e["dst"]] = synced.pop(e["src"], True)
            present.discard(e["src"])
            present.add(e["dst"])
            pending.append({"op": "rename", "src": e["src"], "dst": e["dst"], "n": e["n"]})
        elif e["k"] == "remove":
            synced.pop(e["path"], None)
            present.discard(e["path"])
            pending.append({"op": "remove", "path": e["path"], "n": e["n"]})
    return synced, pending


def newest_save(files: list[dict], before: int) -> int | None:
    """The step of the newest save that had completed when the attempt was stopped: its rename
    onto a name it keeps, or its write onto its final name. None when a thread other than the
    main one wrote: then the step a file was written at is not the step it holds."""
    done = [e for e in files if e["k"] == "rename" or (e["k"] == "open" and not e["path"].endswith(".tmp"))]
    if any(not e["main"] for e in done):
        return None
    done = [e["n"] for e in done if e["n"] < before]
    return max(done) if done else None


def sampler_habits(sampler: list[dict]) -> dict | None:
    """From the run never interrupted (one pass of each sampler per epoch): does each rank draw
    another order each epoch? do the ranks' shares of an epoch overlap?"""
    if not sampler:
        return None
    passes: dict[int, list[list]] = {}
    for r in sampler:
        passes.setdefault(r["rank"], []).append(r["indices"])
    epochs = min(len(p) for p in passes.values())
    shares = [[set(p[e]) for p in passes.values()] for e in range(epochs)]
    return {"epochs": epochs, "distinct_orders_per_rank": {rank: len({tuple(o) for o in p}) for rank, p in passes.items()},
            "overlap": max(len(set.intersection(*s)) for s in shares),
            "never_trained": max(192 - len(set.union(*s)) for s in shares), "seeds": sorted({r["seed"] for r in sampler})}


def truth(script: Path, faults: list[str], work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    refs = [attempt(script, work / f"ref{i}", work, f"ref{i}", work / f"ref{i}.final") for i in (1, 2)]
    result = {"uninterrupted": {"steps": refs[0]["steps"], "code": refs[0]["code"], "error": refs[0]["error"],
                                "ended": (work / "ref1.final").exists(),
                                "differs_between_two_runs": compare(work / "ref1.final", work / "ref2.final")},
              "faults": []}
    habits = sampler_habits(refs[0]["sampler"])
    if habits:
        result["sampler"] = habits
    total = refs[0]["steps"]
    if not total:
        raise RuntimeError(f"{script.name}: no optimizer step recorded ({refs[0]['error']})")
    for fault in faults:
        kind, at = fault.split("@")
        at = int(at)
        tag = fault.replace("@", "-")
        run, final, snap = work / f"run-{tag}", work / f"{tag}.final", work / f"{tag}.before"
        shutil.rmtree(snap, ignore_errors=True)
        first = attempt(script, run, work, f"{tag}-1", final, kill=f"{'sigterm' if kind == 'sigterm' else 'sigkill'}@{at}",
                        snapshot=snap if kind in ("torn", "powercut") else None)
        row = {"fault": fault, "attempts": [{k: first[k] for k in ("code", "steps", "error")}]}
        if kind == "torn":
            row["state"] = tear(run, snap, first["files"], at)
        elif kind == "powercut":
            row["state"] = power_cut(run, snap, first["files"], at)
        newest = newest_save(first["files"], at if kind == "torn" else at + 2)
        row["newest_save"] = newest
        failures, resumed = 0, None
        while not final.exists() and failures < 2 and len(row["attempts"]) < 6:
            again = attempt(script, run, work, f"{tag}-{len(row['attempts']) + 1}", final)
            row["attempts"].append({k: again[k] for k in ("code", "steps", "error")})
            if resumed is None and again["params"]:
                first_params = again["params"][0]
                resumed = refs[0]["params"].index(first_params) if first_params in refs[0]["params"] else "unknown"
            failures = failures + 1 if again["code"] != 0 and not again["steps"] else 0
        steps = sum(a["steps"] for a in row["attempts"])
        row.update(resumed_from=resumed, steps=steps, redone=steps - total)
        if final.exists():
            after = steps - row["attempts"][0]["steps"]  # the steps of the resumed run
            row["differs"] = compare(work / "ref1.final", final)
            if not isinstance(resumed, int) or after != total - resumed:
                row["differs"].append("steps")
            # lost: steps a save had kept (for a SIGTERM: every step done) that the resume trained again
            kept = row["attempts"][0]["steps"] if kind == "sigterm" else newest
            if not row["differs"] and kept is not None and resumed < kept:
                row["lost"] = kept - resumed
        else:
            row["restart_fails"] = row["attempts"][-1]["error"]
        result["faults"].append(row)
    return result


def verdict(result: dict) -> str:
    """One line: what the hand kills showed."""
    u = result["uninterrupted"]
    said = []
    if not u.get("ended", u["code"] == 0):  # (recorded before "ended" was)
        return f"the run fails on its own: {u['error']}"
    if u["code"] != 0:
        said.append(f"the run never interrupted trained to its end, then exited with {u['code']} ({u['error']})")
    if u["differs_between_two_runs"]:
        said.append(f"two runs never interrupted differ ({', '.join(u['differs_between_two_runs'])})")
    s = result.get("sampler")
    if s and min(s["distinct_orders_per_rank"].values()) < s["epochs"]:
        orders = min(s["distinct_orders_per_rank"].values())
        said.append(f"each rank's sampler drew {'the same order' if orders == 1 else f'{orders} orders'} in all "
                    f"{s['epochs']} epochs")
    if s and s["overlap"]:
        said.append(f"the ranks' shares of an epoch overlap on {s['overlap']} samples, {s['never_trained']} never trained")
    if s and not s["overlap"] and min(s["distinct_orders_per_rank"].values()) == s["epochs"]:
        said.append(f"the samplers drew another order in each of {s['epochs']} epochs, the ranks' shares disjoint")
    for row in result["faults"]:
        f = row["fault"]
        if "restart_fails" in row:
            said.append(f"{f}: every restart fails ({row['restart_fails']})")
        elif row["differs"]:
            start = row["resumed_from"] if row["resumed_from"] != "unknown" else "no state of the uninterrupted run"
            said.append(f"{f}: resumed from {start}, final {', '.join(row['differs'])} differ, {row['steps']} steps in all")
        elif row.get("lost"):
            kept = f"newest save {row['newest_save']}" if row["fault"][:7] != "sigterm" else \
                f"{row['attempts'][0]['steps']} steps done"
            said.append(f"{f}: identical, {row['lost']} steps lost (resumed from {row['resumed_from']}, {kept})")
        else:
            said.append(f"{f}: identical (resumed from {row['resumed_from']}, {row['redone']} redone)")
    return "; ".join(said)


def variant(name: str, folder: Path) -> Path:
    """The variant ``name`` of VARIANTS: its script's twin with one line replaced."""
    from twins import fixed_twin

    script, (line, replacement), _, _ = VARIANTS[name]
    twin = fixed_twin(ZOO / f"{script}.py", folder)
    text = twin.read_text()
    if text.count(line) != 1:
        raise ValueError(f"{name}: {line!r} is not once in {script}'s twin")
    path = folder / f"{name}.py"
    path.write_text(text.replace(line, replacement))
    twin.unlink()
    return path


def table(data: dict) -> str:
    lines = ["| script | its defect | finding | the fix (its `# fix:` markers) | by hand: the script | by hand: its twin |",
             "|---|---|---|---|---|---|"]
    def said(key: str) -> str:
        return verdict(data[key]) if key in data else "not run"

    for name, (finding, defect, fix, _) in FAMILIES.items():
        lines.append(f"| `{name}` | {defect} | `{finding}` | {fix} | {said(name)} | {said(f'{name} (fixed)')} |")
    for name in CORRECT:
        lines.append(f"| `{name}` | none | none | | {said(name)} | |")
    lines += ["", "| variant | of the twin of | what it does instead | by hand |", "|---|---|---|---|"]
    for name, (script, _, what, _) in VARIANTS.items():
        lines.append(f"| `{name}` | `{script}` | {what} | {said(f'{name} (variant)')} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="zoo scripts or VARIANTS (default: every one of FAMILIES, CORRECT, "
                                              "VARIANTS)")
    ap.add_argument("--only", choices=["broken", "twin"], help="the broken scripts only, or their twins only")
    ap.add_argument("--script", type=Path, help="any script (a variant of a twin, say), with --faults; not recorded")
    ap.add_argument("--faults", nargs="+")
    ap.add_argument("--table", action="store_true", help="print the README's table from truth.json")
    a = ap.parse_args(argv)
    if a.table:  # the verdicts said again from the numbers, as this version says them
        data = json.loads(TRUTH.read_text())
        for result in data.values():
            result["verdict"] = verdict(result)
        TRUTH.write_text(json.dumps(data, indent=1) + "\n")
        print(table(data))
        return
    sys.path.insert(0, str(ZOO.parent))
    from twins import fixed_twin

    with tempfile.TemporaryDirectory(prefix="hand-truth-") as tmp:
        if a.script:
            result = truth(a.script.resolve(), a.faults, Path(tmp) / "work")
            result["verdict"] = verdict(result)
            print(json.dumps(result, indent=1))
            return
        data = json.loads(TRUTH.read_text()) if TRUTH.exists() else {}
        for name in a.names or [*FAMILIES, *CORRECT, *VARIANTS]:
            faults = a.faults or (FAMILIES[name][3] if name in FAMILIES else CORRECT.get(name) or VARIANTS[name][3])
            targets = [] if a.only == "twin" or name in VARIANTS else [(name, ZOO / f"{name}.py")]
            if name in VARIANTS:
                targets.append((f"{name} (variant)", variant(name, Path(tmp) / "variants" / name)))
            if name in FAMILIES and a.only != "broken":
                targets.append((f"{name} (fixed)", fixed_twin(ZOO / f"{name}.py", Path(tmp) / "twins" / name)))
            for key, script in targets:
                result = truth(script, faults, Path(tmp) / key.replace(" ", "_"))
                result["verdict"] = verdict(result)
                data[key] = result
                print(f"{key}: {result['verdict']}", flush=True)
                TRUTH.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")


if __name__ == "__main__":
    main()
