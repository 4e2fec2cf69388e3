"""The verdict on one interrupted run, and on two uninterrupted ones: facts from
:mod:`course_lib.audit.judge`, named as :mod:`course_lib.audit.findings`.

For each fault of a run: was it delivered, did the run start again, from which step of the
uninterrupted run did it go on (steps redone), which state matched there, where it first
parted. Then the run's end: the same number of steps, the same final parameters. Only the
first parting of a run is explained: what follows it differs because of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from course_lib.audit.attempt import Attempt
from course_lib.audit.findings import Finding
from course_lib.audit.judge import ORDER, Difference, Reference, Segment, compare_references, follow
from course_lib.audit.plan import Fault

STATE = ("params", "optimizer", "lr", "rng", "data")  # the columns of "the state at the resume"
_COLUMN = {"params_before": "params", "state_before": "optimizer", "lr": "lr", "hyper": "lr", "data": "data"}


@dataclass
class FaultRow:
    """One fault, as the report's table shows it."""
    fault: Fault
    delivered: bool
    started: bool | None = None          # did the run start again after it
    reached: int | None = None           # the reference step the run had reached when it struck
    resumed_from: int | None = None      # the reference step the restart went on from
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
                "resumed_from": self.resumed_from, "redone": self.redone, "state": self.state, "parted": self.parted}


@dataclass
class RunVerdict:
    rows: list[FaultRow]
    findings: list[Finding]
    steps: int | None
    reference_steps: int
    final_identical: bool

    @property
    def exact(self) -> bool:
        return self.final_identical and self.steps == self.reference_steps and not any(f.defect for f in self.findings)


def judge_run(ref: Reference, faults: list[Fault], attempts: list[Attempt]) -> RunVerdict:
    """``attempts[i]`` was struck by ``faults[i]`` (when it was delivered); the attempt after the
    last fault ran undisturbed."""
    segs = follow(ref, [a.processes for a in attempts])
    of = {i: [s for s in segs if s.attempt == i] for i in range(len(attempts))}
    rows, findings, explained = [], [], False
    for i, fault in enumerate(faults[: len(attempts)]):
        name = fault.for_report()
        here, after = attempts[i], (attempts[i + 1] if i + 1 < len(attempts) else None)
        row = FaultRow(fault, any(p.fault for p in here.processes))
        rows.append(row)
        row.reached = max((s.reached for s in of[i] if s.reached is not None), default=None)
        if not row.delivered:
            if not (rows[:-1] and rows[-2].started is False):  # the run could not start again: this one was never due
                findings.append(_undelivered(fault, here, of[i]))
            continue
        row.after_parting = explained
        if here.timed_out and fault.kind != "sigterm":
            findings.append(Finding("hung", {"fault": name, "seconds": here.seconds}))
        if fault.kind == "sigterm":
            findings += _sigterm(fault, here, of.get(i + 1, []), row.reached)
        if after is None:
            break
        nxt = of.get(i + 1, [])
        row.started = bool(nxt) or after.exit_code == 0
        if not nxt:
            if after.exit_code != 0:
                error = _load_error(after) or _last_error(after)
                if fault.kind == "during-save":
                    findings.append(Finding("not-atomic", {"fault": name, "error": error}))
                else:
                    findings.append(Finding("did-not-start", {"fault": name, "error": error}))
                explained = True
            continue
        row.resumed_from = None if any(s.resumed_from is None for s in nxt) else min(s.resumed_from for s in nxt)
        row.state = _state(ref, nxt)
        first = min((s for s in nxt if s.parted), key=lambda s: s.parted.step, default=None)
        if first is not None:
            row.parted = f"step {first.parted.step} ({', '.join(first.parted.components)})"
        if explained:
            continue
        new = _restart(ref, fault, name, row, nxt, _total(of, len(attempts)))
        findings += new
        explained = any(f.defect for f in new)
    return _end(ref, faults, attempts, of, rows, findings, explained)


def passed_over(verdict: RunVerdict, faults: list[Fault]) -> list[Fault]:
    """The faults of a run that never struck: the run had gone past their step (a SIGTERM saved
    a step later than it struck, a restart went on after it) or ended before them. An exact
    run's are worth delivering again in a fresh run; a broken run's would show the defect again."""
    if not verdict.exact:
        return []
    struck = {row.fault for row in verdict.rows if row.delivered}
    return [f for f in faults if f not in struck]


def _total(of: dict, n: int) -> int | None:
    """The steps the run took in all: where its last process that stepped ended."""
    last = next((of[i] for i in range(n - 1, -1, -1) if of[i]), [])
    return max((s.reached for s in last if s.reached is not None), default=None)


def _end(ref, faults, attempts, of, rows, findings, explained) -> RunVerdict:
    last = next((of[i] for i in range(len(attempts) - 1, -1, -1) if of[i]), [])
    steps = _total(of, len(attempts))
    n = ref.length(ref.ranks[0]) if ref.ranks else 0
    identical = bool(last) and all(s.process.final_params() is not None
                                   and s.process.final_params() == ref.final.get(s.rank) for s in last)
    tail = attempts[-1] if attempts else None
    name = next((r.fault for r in reversed(rows) if r.delivered), rows[-1].fault if rows else faults[0]).for_report()
    if tail is not None and tail.exit_code not in (0, None) and of[len(attempts) - 1] and not explained:
        findings.append(Finding("crashed", {"fault": name, "code": tail.exit_code, "error": _last_error(tail)}))
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
        for comp in ("state_before", "lr", "data", *sorted(ref.live[s.rank])):
            column = _COLUMN.get(comp, comp)
            differs = s.at_start is not None and comp in s.at_start.components
            if comp == "data" and first.get("data") is None:
                continue
            state[column] = (state.get(column, True) is not False) and not differs
    return state


def _restart(ref: Reference, fault: Fault, name: str, row: FaultRow, nxt: list[Segment], total: int | None) -> list[Finding]:
    """Name what went wrong at one restart (nothing when it went on exactly)."""
    if any(s.resumed_from is None for s in nxt):
        return [Finding("unaligned", {"fault": name})]
    out = []
    newest = newest_checkpoint(ref, fault)
    if fault.kind == "during-save":
        out += _after_cut(fault, name, row, nxt, newest)
    if not out and newest is not None and row.resumed_from < newest and fault.kind != "sigterm":
        kind = "started-over" if row.resumed_from == 0 else "older"
        out.append(Finding(kind, {"fault": name, "redone": row.reached, "resumed": row.resumed_from, "newest": newest}))
    parted = [s for s in nxt if s.parted]
    if not parted:
        return out
    step = min(s.parted.step for s in parted)
    at = sorted((s for s in parted if s.parted.step == step), key=lambda s: s.rank)  # every rank that parted there
    comps = [c for c in ORDER + ("steps",) if any(c in s.parted.components for s in at)]
    first = next(s for s in at if s.parted.components[0] == comps[0])  # the rank where the first cause shows
    diff = first.parted
    if "state_before" in comps:
        return out + [Finding("optimizer", {"fault": name, "resumed": first.resumed_from})]
    if "lr" in comps:
        return out + [Finding("scheduler", {"fault": name, "step": diff.step, "ours": _lr(diff.ours["lr"]),
                                            "theirs": _lr(diff.theirs["lr"])})]
    if "hyper" in comps:
        return out + [Finding("hyper", {"fault": name, "step": diff.step})]
    rngs = [c for c in comps if c.startswith("rng.")]
    if "data" in comps:
        return out + [_data(ref, name, first, diff, total)]
    if rngs:
        return out + [_rng(name, nxt, rngs)]
    what = ", ".join(c for c in comps if c in ("grads", "params", "state"))
    if diff.step == first.resumed_from + 1 and first.process.steps[0].get("data") is None and "grads" in comps:
        return out + [Finding("data-unseen", {"fault": name, "step": diff.step})]
    if "steps" in comps:
        return out  # more steps than the uninterrupted run: the end says how many
    return out + [Finding("unseen", {"fault": name, "step": diff.step, "what": what or "the results"})]


def newest_checkpoint(ref: Reference, fault: Fault) -> int | None:
    """The step of the newest checkpoint that was complete when ``fault`` struck, as the
    uninterrupted run saved them (``None``: the script saves in a way the audit does not see)."""
    saves = sorted({step for (_, step) in ref.saves() if step > 0})
    if not saves:
        return None
    last_done = fault.at - 1 if fault.kind != "during-save" else fault.at - 0.5
    complete = [s for s in saves if s <= last_done]
    return complete[-1] if complete else 0


def _after_cut(fault: Fault, name: str, row: FaultRow, nxt: list[Segment], newest: int | None) -> list[Finding]:
    """A crash during a save: did the resume lose the checkpoint before it?"""
    errors = [e for s in nxt for e in s.process.of_type("load") if "error" in e]
    if errors:
        return [Finding("not-atomic-read", {"fault": name, "target": errors[0]["target"],
                                            "error": errors[0]["error"][:120]})]
    if newest is not None and row.resumed_from < newest:
        return [Finding("not-atomic-lost", {"fault": name, "resumed": row.resumed_from, "newest": newest})]
    return []


def _load_error(attempt: Attempt) -> str | None:
    errors = [e for p in attempt.processes for e in p.of_type("load") if "error" in e]
    return f"{errors[0]['error'][:160]}, reading {errors[0]['target']}" if errors else None


def _data(ref: Reference, name: str, seg: Segment, diff: Difference, total: int | None) -> Finding:
    """The batch after a resume is not the uninterrupted run's: from another place in the epoch
    (repeated or skipped), or from another epoch's shuffle at the right place. ``total``: the
    steps the whole run took (an epoch trained twice makes it one epoch longer)."""
    step = diff.step
    ours = seg.process.steps[step - seg.resumed_from - 1]
    other = ref.data_step(seg.rank, ours.get("data"), step)
    values = {"fault": name, "step": step}
    if other is None or other == step:
        return _order(ref, seg, step, values)
    values.update(other=other, n=abs(step - other))
    here, there = _pos(ours), _pos(ref.steps[seg.rank][step])
    if here == there:  # the right place in the epoch, another epoch's batch
        # the epoch before, trained again, makes the run one epoch longer; a shuffle one epoch behind does not
        # (unknown when the run parted before its end: then an epoch boundary counts as the epoch trained again)
        longer = total > ref.length(seg.rank) if total is not None else here == 1
        if longer and step - other == _pass_length(ref, seg.rank, other - here + 1):
            return Finding("epoch", values)
        return _order(ref, seg, step, values)
    if here is not None and there is not None and here > there:
        return Finding("skip", values)
    return Finding("position", values)


def _pos(step: dict) -> int | None:
    """Where in its DataLoader pass a step's (last) batch was: 1 for the first batch."""
    return (step.get("pos") or [None])[-1]


def _pass_length(ref: Reference, rank: int, step: int) -> int | None:
    """How many steps the DataLoader pass that starts at ``step`` lasted in the reference."""
    starts = sorted(g for g, s in ref.steps[rank].items() if (s.get("pos") or [None])[0] == 1)
    later = [g for g in starts if g > step]
    return later[0] - step if later and step in starts else None


def _order(ref: Reference, seg: Segment, step: int, values: dict) -> Finding:
    """Another epoch's shuffle: with a DistributedSampler, the epochs it was set to, when they differ."""
    ours = [e["epoch"] for e in seg.process.of_type("sampler")]
    theirs = [e["epoch"] for p in ref.processes if p.rank == seg.rank for e in p.of_type("sampler") if e["k"] < step]
    if ours and theirs and ours[0] != theirs[-1]:
        return Finding("order-sampler", {"fault": values["fault"], "step": step, "ours": ours[0], "theirs": theirs[-1]})
    return Finding("order", {"fault": values["fault"], "step": step})


def _rng(name: str, nxt: list[Segment], rngs: list[str]) -> Finding:
    bad = sorted(s.rank for s in nxt if s.at_start and any(c in s.at_start.components for c in rngs))
    good = sorted(s.rank for s in nxt if s.rank not in bad)
    if bad and good:
        return Finding("rng-rank", {"fault": name, "rngs": rngs, "bad": _ranks(bad), "good": _ranks(good)})
    events = [e for s in nxt for e in s.process.events if e.get("k") == 0]
    loaded = max((j for j, e in enumerate(events) if e["type"] == "load"), default=-1)
    which = {c.removeprefix("rng.") for c in rngs}
    reseeded = any(e["type"] == "seed" and e["which"] in which for e in events[loaded + 1:]) and loaded >= 0
    restored = any(e["type"] == "restore" and e["which"] in which for e in events)
    kind = "rng-reseeded" if reseeded and not restored else "rng-drawn" if restored else "rng"
    return Finding(kind, {"fault": name, "rngs": rngs, "ranks": _ranks(bad or good)})


def _sigterm(fault: Fault, here: Attempt, nxt: list[Segment], reached: int | None) -> list[Finding]:
    name = fault.for_report()
    if here.timed_out:
        return [Finding("sigterm-ignored", {"fault": name, "grace": here.seconds})]
    signalled = [p for p in here.processes if p.fault]
    # a save is recorded before it is written: one that comes after the signal is the script's answer to it
    saved = any(e["type"] == "save" for p in signalled for e in p.events[p.events.index(p.fault) + 1:])
    resumed = min((s.resumed_from for s in nxt if s.resumed_from is not None), default=None)
    if saved or not signalled or resumed is None:
        return []
    return [Finding("sigterm-no-save", {"fault": name, "resumed": resumed,
                                        "lost": max(0, (reached or fault.at - 1) - resumed)})]


def _undelivered(fault: Fault, here: Attempt, segs: list[Segment]) -> Finding:
    name = fault.for_report()
    if not segs:
        return Finding("undelivered-no-step", {"fault": name, "code": here.exit_code})
    if fault.kind == "during-save":
        return Finding("undelivered-no-save", {"fault": name, "rank": fault.rank, "at": fault.at})
    reached = max((s.reached for s in segs if s.reached is not None), default=0)
    return Finding("undelivered-ended", {"fault": name, "reached": reached, "code": here.exit_code})


def _last_error(attempt: Attempt) -> str:
    lines = [ln for ln in attempt.tail().splitlines() if ln.strip()]
    return lines[-1].strip()[:200] if lines else attempt.how


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks))


def _lr(values: list[float]) -> str:
    return ", ".join(f"{v:.4g}" for v in values)


def judge_references(a: list, b: list) -> list[Finding]:
    """Two runs never interrupted: are they the same run (else the finding that says where not),
    and does the run show a habit that breaks training whatever the faults (``set_epoch``)?"""
    diff = compare_references(a, b)
    if isinstance(diff, str):
        return [Finding("runs-differ", {"what": diff})]
    if diff is not None:
        comps = diff.components
        rngs = [c for c in comps if c.startswith("rng.")]
        if diff.step == 1 and "params_before" in comps:
            return [Finding("unseeded-init", {})]
        if "data" in comps:
            return [Finding("unseeded-data", {"step": diff.step})]
        if rngs:
            return [Finding("unseeded-rng", {"step": diff.step, "rngs": rngs})]
        what = ", ".join(comps)
        return [Finding("nondeterministic", {"step": diff.step, "what": what})]
    return _set_epoch(a)


def _set_epoch(processes: list) -> list[Finding]:
    for p in sorted((p for p in processes if p.rank is not None), key=lambda p: p.rank):
        passes = [e["epoch"] for e in p.of_type("sampler") if e.get("shuffle")]
        if len(passes) > 1 and len(set(passes)) == 1:
            return [Finding("set-epoch", {"epoch": passes[0], "passes": len(passes), "rank": p.rank})]
    return []
