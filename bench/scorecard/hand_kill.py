"""Kills the scorecard's scripts by hand, without the audit, and compares the final parameters.

For one script: a run never interrupted (its final-parameter digest); a run SIGKILLed once its
2nd checkpoint (step 20) is complete, then started again in the same folder; the same with
SIGTERM to every process of the run; and a run SIGKILLed there whose newest checkpoint is then
made what a SIGKILL half-way through writing it leaves (one file cut to half its size, the
files the framework writes after it absent), then started again.

    python bench/scorecard/hand_kill.py NAME [--python /work/fwvenv/bin/python] [--work DIR]

Prints one JSON object per line (one per trial) and writes them to DIR/NAME.json.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _cut(path: str, remove_after: list[str] = ()) -> str:
    """Half of ``path`` written, the files named in ``remove_after`` (beside it) never written."""
    size = os.path.getsize(path)
    os.truncate(path, size // 2)
    for name in remove_after:
        other = os.path.join(os.path.dirname(path), name)
        if os.path.exists(other):
            os.remove(other)
    return f"{os.sep.join(path.split(os.sep)[-2:])} cut to {size // 2} of {size} bytes" + (
        f"; {', '.join(remove_after)} removed" if remove_after else "")


def _newest(pattern: str, rx: str) -> str:
    return max(glob.glob(pattern), key=lambda p: int(re.search(rx, p).group(1)))


# name -> (command after the Python, is the 2nd checkpoint complete?, the cuts to try)
HF_ORDER = ["config.json", "model.safetensors", "training_args.bin", "optimizer.pt", "scheduler.pt",
            "rng_state.pth", "trainer_state.json"]
ACC_ORDER = ["model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl"]


def _after(order, name):
    return order[order.index(name) + 1:]


def hf_cut(first: str):
    def cut(d):
        ckpt = _newest(f"{d}/checkpoint-*", r"checkpoint-(\d+)$")
        return _cut(os.path.join(ckpt, first), _after(HF_ORDER, first))
    return cut


def acc_cut(first: str):
    def cut(d):
        ckpt = _newest(f"{d}/step_*", r"step_(\d+)$")
        return _cut(os.path.join(ckpt, first), _after(ACC_ORDER, first))
    return cut


def dcp_cut(d):
    ckpt = _newest(f"{d}/checkpoint/step-*", r"step-(\d+)$")
    return _cut(os.path.join(ckpt, "__1_0.distcp"), [".metadata"])


def tmp_cut(d):
    """An atomic writer killed mid-save: a half-written checkpoint.pt.tmp beside the intact checkpoint.pt."""
    src = os.path.join(d, "checkpoint.pt")
    shutil.copyfile(src, src + ".tmp")
    return _cut(src + ".tmp") + " (checkpoint.pt intact)"


def last_ckpt_cut(d):
    """last.ckpt half-written: what Lightning's save leaves when its temporary file lies on another
    filesystem (fsspec's commit is then shutil.move = copy into last.ckpt, not a rename)."""
    return _cut(os.path.join(d, "checkpoints", "last.ckpt"))


def _pl_ready(d, lines):
    top, last = f"{d}/checkpoints/epoch=1-step=20.ckpt", f"{d}/checkpoints/last.ckpt"
    return os.path.exists(top) and os.path.exists(last) and os.path.getmtime(last) >= os.path.getmtime(top)


SCRIPTS = {
    "hf_trainer": (["hf_trainer.py"], lambda d, lines: os.path.exists(f"{d}/checkpoint-20/trainer_state.json"),
                   {"model.safetensors": hf_cut("model.safetensors"), "optimizer.pt": hf_cut("optimizer.pt")}),
    "accelerate_loop": (["accelerate_loop.py"], lambda d, lines: os.path.exists(f"{d}/step_20/random_states_0.pkl"),
                        {"model.safetensors": acc_cut("model.safetensors"),
                         "random_states_0.pkl": acc_cut("random_states_0.pkl")}),
    "lightning_fit": (["lightning_fit.py"], _pl_ready, {"last.ckpt": last_ckpt_cut}),
    "dcp_loop": (["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "dcp_loop.py"],
                 lambda d, lines: os.path.exists(f"{d}/checkpoint/step-20/.metadata"), {"distcp": dcp_cut}),
    "compile_loop": (["compile_loop.py"], lambda d, lines: "saved step 20" in lines, {"tmp": tmp_cut}),
    "dataloader_workers": (["dataloader_workers.py"], lambda d, lines: "saved step 20" in lines, {"tmp": tmp_cut}),
}


def _descendants(root: int) -> set[int]:
    """The processes below ``root`` now (Linux's /proc)."""
    parents = {}
    for entry in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(entry) as f:
                parents[int(entry.split("/")[2])] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


class Run:
    """The script started in ``folder``, in a process group of its own, its output read live."""

    def __init__(self, python: str, name: str, folder: str):
        argv, self.ready, _ = SCRIPTS[name]
        argv = [os.path.join(HERE, a) if a.endswith(".py") else a for a in argv]
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
        self.folder, self.lines, self.t0, self.seen = folder, [], time.monotonic(), set()
        self.proc = subprocess.Popen([python, *argv, "--out", folder], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            self.seen |= _descendants(self.proc.pid)

    def strike(self, sig: int, timeout: float = 120.0) -> float:
        """Wait until the 2nd checkpoint is complete, then send ``sig`` to the whole group."""
        while not self.ready(self.folder, self.lines):
            if self.proc.poll() is not None or time.monotonic() - self.t0 > timeout:
                raise RuntimeError(f"ended before its 2nd checkpoint: {self.lines[-5:]}")
            time.sleep(0.002)
        for pid in [self.proc.pid, *_descendants(self.proc.pid)]:  # torchrun's workers have sessions of their own
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        return time.monotonic()

    def wait(self, timeout: float = 300.0) -> dict:
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            rc = self.proc.wait()
        self.reader.join(5)
        for pid in self.seen:  # whatever is left of the run (torchrun's workers)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        final = next((line.split()[1] for line in self.lines if line.startswith("final-params")), None)
        resumed = next((line for line in self.lines if "resumed from" in line or "Restoring states from" in line), None)
        errors = [line for line in self.lines if re.search(r"Error|error:|Exception", line)]
        return {"rc": rc, "seconds": round(time.monotonic() - self.t0, 1), "final": final, "resumed": resumed,
                "error": errors[-1][:300] if errors else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=sorted(SCRIPTS))
    ap.add_argument("--python", default="/work/fwvenv/bin/python")
    ap.add_argument("--work", default="/tmp/scorecard-hand")
    a = ap.parse_args()
    base = os.path.join(a.work, a.name)
    shutil.rmtree(base, ignore_errors=True)
    results = []

    def report(row):
        results.append(row)
        print(json.dumps(row), flush=True)

    plain = Run(a.python, a.name, os.path.join(base, "plain")).wait()
    report({"trial": "never interrupted", **plain})
    trials = [("sigkill", signal.SIGKILL, None), ("sigterm", signal.SIGTERM, None)]
    trials += [(f"cut {what}", signal.SIGKILL, cut) for what, cut in SCRIPTS[a.name][2].items()]
    for label, sig, cut in trials:
        folder = os.path.join(base, re.sub(r"\W+", "-", label))
        first = Run(a.python, a.name, folder)
        t = first.strike(sig)
        ended = first.wait(60)
        row = {"trial": label, "first": {"rc": ended["rc"], "after_signal_s": round(time.monotonic() - t, 2),
                                         "checkpoints": sorted(os.listdir(folder))}}
        if cut:
            row["cut"] = cut(folder)
        again = Run(a.python, a.name, folder).wait()
        row["resume"] = again
        row["same_final"] = again["final"] is not None and again["final"] == plain["final"]
        report(row)
    with open(os.path.join(base, "hand_kill.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
