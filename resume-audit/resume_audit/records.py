"""What the probe wrote, read back: one :class:`Process` per interpreter that took an optimizer
step or saved, loaded or seeded something, and per rank the table a resume is found by.

The records and their keys: :mod:`resume_audit.probe.resume_audit_schema`. A process's
rank is the one its first step recorded (``torch.distributed`` by then, else ``$RANK``, else 0).
A rank may have several processes in one attempt (a launcher that restarts its workers):
:func:`segments` puts them in the order they started.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Process:
    """One interpreter's records, in the order written."""
    pid: int
    started: float
    events: list[dict] = field(default_factory=list)

    def of_type(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def steps(self) -> list[dict]:
        return self.of_type("step")

    @property
    def rank(self) -> int | None:
        return next((s["rank"] for s in self.steps), None)

    @property
    def end(self) -> dict | None:
        return next(reversed(self.of_type("end")), None)

    @property
    def fault(self) -> dict | None:
        return next(iter(self.of_type("fault")), None)

    def final_params(self) -> str | None:
        """The parameters as this process left them: its ``end`` record, else its last full step."""
        if self.end is not None:
            return self.end["params"]
        full = [s for s in self.steps if "params" in s]
        return full[-1]["params"] if full and full[-1] is self.steps[-1] else None

    def final_buffers(self) -> str | None:
        """The model's buffers as this process left them: its ``end`` record, else its last full
        step (the buffers as that step's forward left them: no forward came after it)."""
        if self.end is not None:
            return self.end.get("buffers")
        full = [s for s in self.steps if "params" in s]
        return full[-1].get("buffers") if full and full[-1] is self.steps[-1] else None

    def final_ema(self) -> str | None:
        """The averaged model (EMA, SWA) as this process left it (``None``: it had none)."""
        return (self.end or {}).get("ema")


def read_processes(folder: str | Path) -> list[Process]:
    """Every process of one attempt (``folder``: the probe's ``out``), in the order they started.
    A line cut off by a SIGKILL mid-write is dropped."""
    out = []
    for path in sorted(Path(folder).glob("*.jsonl")) if Path(folder).is_dir() else []:
        events = []
        for line in path.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        start = next((e for e in events if e["type"] == "start"), None)
        if start is not None:
            out.append(Process(start["pid"], start["time"], [e for e in events if e["type"] != "start"]))
    return sorted(out, key=lambda p: p.started)


def segments(attempts: list[list[Process]], rank: int) -> list[tuple[int, Process]]:
    """``(attempt index, process)`` for every process of ``rank`` that took a step, in order."""
    return [(i, p) for i, procs in enumerate(attempts) for p in procs if p.rank == rank]  # no step: no rank


def load_errors(processes: list[Process]) -> list[dict]:
    """The ``load`` records that failed (a checkpoint the script could not read), in order."""
    return [e for p in processes for e in p.of_type("load") if "error" in e]


def alignment_table(processes: list[Process]) -> dict[str, list]:
    """Per rank, ``[c, params, state]`` for every state of the reference after step ``c`` that the
    probe digested: before the first step (``c = 0``), after each full step, at each save. A
    resumed process is found in it by content (``resume_audit_digests.resume_point``)."""
    table: dict[str, list] = {}
    for p in (p for p in processes if p.steps):
        first = p.steps[0]
        rows = [[0, first["params_before"], first["state_before"]]]
        rows += [[s["local_step"], s["params"], s["state"]] for s in p.steps if "params" in s]
        rows += [[e["local_step"], e["params"], e["state"]] for e in p.of_type("save") if "params" in e]
        table[str(p.rank)] = rows
    return table
