"""Real faults: real signals sent to real worker processes.

Each planned kill fires **once per run**: the rank that fires writes it to ``DIR/faults.jsonl``
first, so a resumed attempt that passes its step again knows it already happened (see
docs/cli.md, "Killed again and again").

Three modes:

* ``sigkill``: SIGKILL when the step begins. No handler can run: a hard crash, like the
  out-of-memory killer or a pulled plug. Everything since the last checkpoint is lost.
* ``sigterm``: SIGTERM when the step begins. The handler only raises a flag; the step
  finishes, the ranks agree (one all-reduce) to stop, save a checkpoint and exit. This is how
  schedulers (Slurm, Kubernetes, spot instances) announce a preemption.
* ``during-save``: SIGKILL in the middle of writing the first checkpoint at or after the
  step, with half of a file on disk. The commit protocol must make that harmless. The
  production writer, :func:`course_lib.checkpoint.store.write_part`, knows nothing of faults,
  and neither does the trainer (:class:`FaultInjector`).
"""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from course_lib._runtime.portability import hard_kill_signal
from course_lib.checkpoint import store
from course_lib.config import TrainConfig
from course_lib.watch.monitor import append_jsonl, read_attempts, read_jsonl


@dataclass(frozen=True)
class Kill:
    step: int
    rank: int
    mode: str


def planned_kills(cfg: TrainConfig) -> list[Kill]:
    """The kills ``cfg`` asks for, in the order given."""
    def pick(values: list, i: int):
        return values[i] if len(values) > 1 else values[0]

    return [Kill(step, pick(cfg.kill_rank, i), pick(cfg.kill_mode, i)) for i, step in enumerate(cfg.kill_at_step)]


def fired_kills(run_dir: str | Path) -> list[dict]:
    """The kills already carried out in this run directory (``faults.jsonl``)."""
    return read_jsonl(Path(run_dir) / "faults.jsonl")


class FaultInjector:
    """This rank's share of the kill plan, for one attempt: the trainer's
    :class:`~course_lib.ddp.seams.FaultHook`, passed by ``launch`` only when a kill is asked for."""

    def __init__(self, cfg: TrainConfig, rank: int):
        self.run_dir, self.rank = Path(cfg.run_dir), rank
        done = {k["step"] for k in fired_kills(cfg.run_dir)}  # a kill is known by its step
        self.done = [k for k in planned_kills(cfg) if k.step in done]
        self.pending = [k for k in planned_kills(cfg) if k.step not in done]

    def explain(self, start_step: int, total_steps: int) -> list[str]:
        """Lines that say which planned kills will not fire in this attempt, and why."""
        lines = [f"kill at step {k.step} (rank {k.rank}, {k.mode}) already fired in an earlier attempt; "
                 "it does not fire again" for k in self.done]
        for k in self.pending:
            if k.step > total_steps:
                lines.append(f"WARNING: kill at step {k.step} will not fire: the run ends at step {total_steps}")
            elif k.step <= start_step and k.mode != "during-save":
                lines.append(f"WARNING: kill at step {k.step} will not fire: this attempt resumes after step "
                             f"{start_step}; pick a later step")
        return lines

    def due(self, step: int, modes: tuple[str, ...], at_or_after: bool = False) -> Kill | None:
        """This rank's kill of one of ``modes`` not yet fired, planned at ``step`` (or, ``at_or_after``, at
        or before it: a save comes at the first save step after its kill step), or ``None``."""
        return next((k for k in self.pending if k.rank == self.rank and k.mode in modes
                     and (k.step <= step if at_or_after else k.step == step)), None)

    def fire(self, kill: Kill) -> None:
        """Record the kill (flushed and fsynced: the signal may end the process at once), then send it."""
        self.pending.remove(kill)
        append_jsonl(self.run_dir / "faults.jsonl", {"step": kill.step, "rank": kill.rank, "mode": kill.mode,
                     "attempt": len(read_attempts(self.run_dir)), "time": time.time()}, sync=True)
        os.kill(os.getpid(), signal.SIGTERM if kill.mode == "sigterm" else hard_kill_signal())

    def before_step(self, step: int) -> None:
        """Called as global step ``step`` (1-based) begins."""
        kill = self.due(step, ("sigkill", "sigterm"))
        if kill is not None:
            self.fire(kill)

    def writer(self, step: int, parts: list[str]) -> Callable[[Path, str, object], dict]:
        """What writes this rank's ``parts`` of the save of ``step``:
        :func:`~course_lib.checkpoint.store.write_part`, or, when a ``during-save`` kill of this
        rank is due, one that dies half-way through one of them (rank 0's ``model.pt``, another
        rank's RNG file), a real SIGKILL. A rank with no part in this save dies as it begins."""
        kill = self.due(step, ("during-save",), at_or_after=True)
        if kill is None:
            return store.write_part
        if not parts:
            self.fire(kill)
        cut = "model.pt" if "model.pt" in parts else parts[0]

        def write(folder: Path, name: str, obj) -> dict:
            if name != cut:
                return store.write_part(folder, name, obj)
            folder.mkdir(parents=True, exist_ok=True)
            write_half(obj, folder / name, then=lambda: self.fire(kill))
            raise AssertionError("unreachable: the process was killed")
        return write


def write_half(obj, path: str | Path, then: Callable[[], None]) -> None:
    """What a crash half-way through a write leaves: the first half of ``obj``'s bytes (bytes, or
    a state serialised as ``torch.save`` would) in ``path``, flushed and fsynced, then ``then()``
    (the kill). The one cut-a-save-half-way of the kit: the trainer's kills, the book's observer and
    the exercises use it (the audit has its own: it runs in scripts that have no kit)."""
    data = obj if isinstance(obj, (bytes, memoryview)) else store.serialize(obj)
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
        f.flush()
        os.fsync(f.fileno())
    then()
