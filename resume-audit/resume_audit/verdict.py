"""The verdict on one interrupted run, the audit's pipeline: :mod:`resume_audit.judge` sets
it beside the run never interrupted (facts), :mod:`resume_audit.diagnosis` says what they
mean as :mod:`resume_audit.findings`. One :class:`FaultRow` per fault (the report's table:
docs/audit.md, "What it does"), then the run's end. Only the first parting of a run is
explained: what follows it differs because of it.
"""
from __future__ import annotations

import signal
from dataclasses import dataclass, field

from resume_audit import disk
from resume_audit.attempt import Attempt
from resume_audit.diagnosis import AfterFault, live_save_read, restart_findings, unsynced
from resume_audit.findings import DURABILITY, Finding
from resume_audit.judge import Reference, Segment, follow
from resume_audit.plan import CUT_KINDS, POWER_KINDS, Fault
from resume_audit.records import load_errors

STATE = ("params", "optimizer", "lr", "rng", "batches")  # the columns of "the state at the resume"


@dataclass
class FaultRow:
    """One fault, as the report's table shows it."""
    fault: Fault
    delivered: bool
    started: bool | None = None          # did the run start again after it
    reached: int | None = None           # the reference step the run had reached when it struck
    resumed_from: int | None = None      # the reference step the restart went on from
    lost: int = 0                        # steps trained again that a checkpoint had saved or a SIGTERM could have
    state: dict[str, bool | None] = field(default_factory=dict)  # at the resume point: does it match?
    parted: str | None = None            # "step 14 (grads)": where the restart first parted
    after_parting: bool = False          # the run had parted before this fault: what follows is its consequence

    @property
    def redone(self) -> int | None:
        if self.reached is None or self.resumed_from is None:
            return None
        return self.reached - self.resumed_from

    def to_dict(self) -> dict:
        return {"fault": self.fault.describe(), "kind": self.fault.kind, "at": self.fault.at, "rank": self.fault.rank,
                "delivered": self.delivered, "started": self.started, "reached": self.reached,
                "resumed_from": self.resumed_from, "redone": self.redone, "lost": self.lost, "state": self.state,
                "parted": self.parted}


@dataclass
class RunVerdict:
    rows: list[FaultRow]
    findings: list[Finding]
    steps: int | None
    reference_steps: int
    final_identical: bool

    @property
    def exact(self) -> bool:
        """After every fault the run went on bit-identically and ended where the uninterrupted
        run ends (lost work aside: steps trained again are the same steps)."""
        return self.final_identical and self.steps == self.reference_steps and not any(f.defect for f in self.findings)

    @property
    def power_only(self) -> bool:
        """Everything that went wrong is a power cut's loss: not durable, not inexact."""
        return any(f.kind in DURABILITY for f in self.findings) and not any(f.defect for f in self.findings)

    @property
    def lost(self) -> int:
        return sum(row.lost for row in self.rows)


def judge_run(ref: Reference, faults: list[Fault], attempts: list[Attempt]) -> RunVerdict:
    """``attempts[i]`` was struck by ``faults[i]`` (when it was delivered); the attempt after the
    last fault ran undisturbed."""
    segs = follow(ref, [a.processes for a in attempts])
    of = {i: [s for s in segs if s.attempt == i] for i in range(len(attempts))}
    last = next((of[i] for i in range(len(attempts) - 1, -1, -1) if of[i]), [])  # the last attempt that stepped
    rows, findings, explained = [], [], False
    for i, fault in enumerate(faults[: len(attempts)]):
        name = fault.for_report()
        here, after = attempts[i], (attempts[i + 1] if i + 1 < len(attempts) else None)
        row = FaultRow(fault, any(p.fault for p in here.processes))
        rows.append(row)
        row.reached = _reached(of[i])
        found = after_fault(attempts[: i + 1], ref.finals)
        if not row.delivered:
            if not (rows[:-1] and rows[-2].started is False):  # the run could not start again: this one was never due
                findings.append(_undelivered(fault, here, of[i]))
            continue
        row.after_parting = explained
        if here.timed_out and fault.kind != "sigterm":
            findings.append(Finding("hung", {"fault": name, "seconds": here.seconds}))
        if fault.kind == "sigterm":
            findings += _sigterm(fault, here, of.get(i + 1, []), row)
        if after is None:
            break
        nxt = of.get(i + 1, [])
        row.started = bool(nxt) or after.exit_code == 0
        if not nxt:  # no step after the fault: did the restart fail?
            failed = _failed_restart(fault, after, found)
            findings += failed
            explained = explained or bool(failed)
            continue
        row.resumed_from = None if any(s.resumed_from is None for s in nxt) else min(s.resumed_from for s in nxt)
        row.state = _state(ref, nxt)
        first = min((s for s in nxt if s.parted), key=lambda s: s.parted.step, default=None)
        if first is not None:
            row.parted = f"step {first.parted.step} ({', '.join(first.parted.components)})"
        if explained:
            continue
        if row.resumed_from is None:  # no state of the uninterrupted run: a background save's mix of steps, or else
            snap = next(filter(None, (live_save_read(s, found) for s in nxt)), None)
            findings.append(Finding("snapshot", {"fault": name, "thread": snap.get("thread", "?"), "step": snap["step"] + 1})
                            if snap else Finding("unaligned", {"fault": name}))
            explained = True
            continue
        new = restart_findings(ref, fault, row.resumed_from, nxt, _reached(last), found)
        row.lost += sum(f.lost for f in new)
        findings += new
        explained = any(f.defect for f in new)
    return _end(ref, faults, attempts, last, rows, findings, explained)


def passed_over(verdict: RunVerdict, faults: list[Fault]) -> list[Fault]:
    """The faults of a run that never struck: the run had gone past their step (a SIGTERM saved
    a step later than it struck, a restart went on after it) or ended before them. An exact
    run's are worth delivering again in a fresh run; a broken run's would show the defect again."""
    if not verdict.exact:
        return []
    struck = {row.fault for row in verdict.rows if row.delivered}
    return [f for f in faults if f not in struck]


def _reached(segs: list[Segment], default: int | None = None) -> int | None:
    """The furthest reference step ``segs`` reached (of the last attempt: the steps the run took in all)."""
    return max((s.reached for s in segs if s.reached is not None), default=default)


def _end(ref, faults, attempts, last, rows, findings, explained) -> RunVerdict:
    steps = _reached(last)
    n = ref.length(ref.ranks[0]) if ref.ranks else 0
    identical = bool(last) and all(s.process.final_params() is not None
                                   and s.process.final_params() == ref.final.get(s.rank)
                                   and s.process.final_buffers() == ref.final_buffers.get(s.rank)
                                   and s.process.final_ema() == ref.final_ema.get(s.rank) for s in last)
    tail = attempts[-1] if attempts else None
    name = next((r.fault for r in reversed(rows) if r.delivered), rows[-1].fault if rows else faults[0]).for_report()
    if tail is not None and tail.exit_code not in (0, None) and last and last[0].attempt == len(attempts) - 1 \
            and not explained:
        # its work done and identical, then SIGABRT: died in the interpreter's teardown (a note, not a defect).
        # A launcher names the signal: mp.spawn in its last line, torchrun (exit code 1) in its summary's root cause
        abort = tail.said("SIGABRT")
        kind = "teardown" if identical and steps == n and (tail.exit_code == -signal.SIGABRT or abort) else "crashed"
        error = abort if kind == "teardown" and abort else tail.last_line
        findings.append(Finding(kind, {"fault": name, "code": tail.exit_code, "error": error}))
        explained = True
    if steps is not None and steps != n and not explained:
        findings.append(Finding("steps", {"fault": name, "ours": steps, "theirs": n}))
        explained = True
    if not identical and not explained and steps is not None:
        findings.append(Finding("final", {"fault": name}))
    if identical and steps == n:  # an RNG that differed at a resume, and nothing drew from it
        unused = sorted({c for r in rows for c, ok in r.state.items() if c.startswith("rng.") and ok is False})
        findings = [f for f in findings if f.kind not in ("rng", "rng-rank")]
        if unused:
            findings.append(Finding("rng-unused", {"rngs": unused}))
    return RunVerdict(rows, findings, steps, n, identical)


def _state(ref: Reference, nxt: list[Segment]) -> dict[str, bool | None]:
    """What matched at the resume point, over every rank of the restart."""
    state: dict[str, bool | None] = {"params": None if any(s.resumed_from is None for s in nxt) else True}
    for s in nxt:
        if s.resumed_from is None:
            state["params"] = False
            continue
        first = s.process.steps[0]
        for comp in ("state_before", "hyper", "lr", "batches", *sorted(ref.live[s.rank])):
            column = "optimizer" if comp in ("state_before", "hyper") else comp  # hyper: its param groups' settings
            differs = s.at_start is not None and comp in s.at_start.components
            if comp == "batches" and first.get("batches") is None:
                continue
            state[column] = (state.get(column, True) is not False) and not differs
    return state


def after_fault(attempts: list[Attempt], finals: dict | None = None) -> AfterFault:
    """What the disk held when the last of ``attempts`` was struck: the checkpoints the run had
    written, the newest complete and the newest the crash left intact, what a power cut took back,
    and the files background saves wrote from live tensors."""
    struck = attempts[-1]
    processes = [p for a in attempts for p in a.processes]
    found = disk.checkpoints(processes, struck.run, finals) if struck.run else []
    crashed = struck.crash_disk if struck.crash_disk is not None else struck.disk
    intact = disk.newest(found, crashed) if crashed is not None else disk.newest(found)
    live = []
    for p in processes:
        events, offset = disk.happened(p), disk.step_offset(p)
        for i, e in enumerate(events):
            if e["type"] == "save" and e.get("live") and e.get("thread") and struck.run:
                path, fp = disk.follow(events[i + 1:], disk.rel(e["target"], struck.run))
                if path is not None:  # its step in the uninterrupted run's numbers
                    asked = e.get("step") if e.get("step") is not None else (e.get("holds") or [0])[0] or 0
                    live.append({**e, "file": fp, "step": offset + asked})
    moved = any(c.moved for c in found if c.step == intact)
    survived = disk.newest(found, struck.disk) if struck.disk is not None and struck.power else intact
    return AfterFault(found, disk.newest(found), intact, struck.power, live, moved, survived)


def _failed_restart(fault: Fault, after: Attempt, found: AfterFault) -> list[Finding]:
    """A restart that took no step: a failure (a file a crash cut or a power cut took back, or
    another error), or nothing."""
    if after.exit_code == 0:
        return []
    errors = load_errors(after.processes)
    error = f"{errors[0]['error'][:160]}, reading {errors[0]['target']}" if errors else after.last_line
    if fault.kind in POWER_KINDS:
        return [unsynced(fault, fault.for_report(), found, {"error": error})]
    damaged = bool(errors) and not any(disk.rel(errors[0]["target"], after.run or "/") in c.files
                                       for c in found.found if c.step == found.intact)
    kind = "not-atomic" if fault.kind in CUT_KINDS and (damaged or not errors) else "did-not-start"
    return [Finding(kind, {"fault": fault.for_report(), "error": error})]


def _sigterm(fault: Fault, here: Attempt, nxt: list[Segment], row: FaultRow) -> list[Finding]:
    """A preemption: did the script save and leave? If not, the steps since its last checkpoint
    are lost work (the resumed run is still the same run)."""
    name = fault.for_report()
    resumed = min((s.resumed_from for s in nxt if s.resumed_from is not None), default=None)
    lost = None if resumed is None else max(0, (row.reached or fault.at - 1) - resumed)
    if here.timed_out:
        row.lost = lost or 0
        return [Finding("sigterm-ignored", {"fault": name, "grace": here.seconds, "resumed": resumed, "lost": lost})]
    signalled = [p for p in here.processes if p.fault]
    # a save or a write under the run that comes after the signal is the script's answer to it
    saved = any(e["type"] == "save" or (e["type"] == "file" and e["op"] != "fsync-dir")
                for p in signalled for e in p.events[p.events.index(p.fault) + 1:])
    if saved or not signalled or resumed is None:
        return []
    row.lost = lost
    return [Finding("sigterm-no-save", {"fault": name, "resumed": resumed, "lost": lost})]


def _undelivered(fault: Fault, here: Attempt, segs: list[Segment]) -> Finding:
    name = fault.for_report()
    if not segs:
        return Finding("undelivered-no-step", {"fault": name, "code": here.exit_code})
    if fault.event:
        return Finding("undelivered-no-event", {"fault": name})
    if fault.kind in CUT_KINDS:
        kind = "undelivered-no-save" if fault.kind == "during-save" else "undelivered-no-commit"
        return Finding(kind, {"fault": name, "rank": fault.rank, "at": fault.at})
    return Finding("undelivered-ended", {"fault": name, "reached": _reached(segs, 0), "code": here.exit_code})
