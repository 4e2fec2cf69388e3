"""What the facts of :mod:`resume_audit.judge` mean, as findings (the pipeline:
:mod:`resume_audit.verdict`): what went wrong at one restart (:func:`restart_findings`), and
what two runs never interrupted say about the script itself (:func:`reference_findings`).

Only the first cause is named (a difference earlier in :data:`~resume_audit.judge.ORDER`
explains the later ones); a resume from an older checkpoint than the newest complete one is lost
work, not a different run.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from resume_audit.disk import Checkpoint, same
from resume_audit.findings import Finding
from resume_audit.judge import ORDER, Difference, Reference, Segment, compare_references
from resume_audit.plan import POWER_KINDS, Fault


@dataclass
class AfterFault:
    """What the disk held when a fault struck, and what the resume found there."""
    found: list[Checkpoint]          # the checkpoints the run wrote up to the fault, by the step they hold
    complete: int                    # the newest complete when it struck (0: none)
    intact: int                      # the newest still intact after the crash (before a power cut's loss)
    power: list | None = None        # what a power cut took back (files, or [op, path, ...] undone); None: none
    live: list[dict] = field(default_factory=list)  # the background saves of live tensors, each with its file
    moved: bool = False              # the newest intact one was moved aside by the save the fault struck
    survived: int | None = None      # the newest intact after a power cut's loss too (None: as ``intact``)


def restart_findings(ref: Reference, fault: Fault, resumed: int, nxt: list[Segment], total: int | None,
                     after: AfterFault) -> list[Finding]:
    """Name what went wrong at one restart that went on from step ``resumed`` of the
    uninterrupted run (nothing when it went on exactly and from the newest intact checkpoint).
    ``total``: the steps the whole run took; ``after``: the disk at the fault."""
    name = fault.for_report()
    out = _where_from(name, fault, resumed, after)
    parted = [s for s in nxt if s.parted]
    if not parted:
        return out
    step = min(s.parted.step for s in parted)
    at = sorted((s for s in parted if s.parted.step == step), key=lambda s: s.rank)  # every rank that parted there
    comps = [c for c in ORDER + ("steps",) if any(c in s.parted.components for s in at)]
    first = next(s for s in at if s.parted.components[0] == comps[0])  # the rank where the first cause shows
    snapshot = live_save_read(first, after)
    if snapshot is not None:
        return out + [Finding("snapshot", {"fault": name, "thread": snapshot.get("thread", "?"), "step": step})]
    found = _first_cause(ref, name, first, first.parted, comps, nxt, total)
    return out + ([found] if found else [])


def _where_from(name: dict, fault: Fault, resumed: int, after: AfterFault) -> list[Finding]:
    """Did the resume go on from the newest checkpoint the crash left intact? A power cut that
    took it back is not durable; a crash that tore the only copy of a complete one is not atomic."""
    lost = after.intact - resumed
    survived = after.intact if after.survived is None else after.survived
    if fault.kind in POWER_KINDS and lost > 0 and survived <= resumed:  # the cut took what the resume needed
        return [unsynced(fault, name, after, {"resumed": resumed, "lost": lost})]
    if survived < after.intact:  # a power cut took some, and the resume passed over one it left
        after = replace(after, intact=survived)
        lost = survived - resumed
    if lost > 0 and after.moved:  # intact, under a name the resume never reads: the save's replace left neither
        return [Finding("not-atomic-lost", {"fault": name, "resumed": resumed, "newest": after.intact, "lost": lost})]
    if lost > 0:
        kind = "started-over" if resumed == 0 else "older"
        return [Finding(kind, {"fault": name, "resumed": resumed, "newest": after.intact, "lost": lost})]
    if after.complete > after.intact >= resumed and fault.kind != "sigterm":
        return [Finding("not-atomic-lost", {"fault": name, "resumed": resumed, "newest": after.complete,
                                            "lost": after.complete - resumed})]
    return []


def unsynced(fault: Fault, name: dict, after: AfterFault, values: dict) -> Finding:
    """What a power cut took back, named by the fsync that would have kept it."""
    said = after.power or []
    if fault.kind == "power-data":
        kind, key = "unsynced-file", "files"
    else:
        kind, key = "unsynced-dir", "names"
    if "error" in values:
        kind += "-read"
    return Finding(kind, {"fault": name, "newest": after.intact, key: said, **values})


def live_save_read(seg: Segment, after: AfterFault) -> dict | None:
    """The background save of live tensors whose file this resumed process read, if it read one."""
    reads = [e.get("file") for e in seg.process.events[:_first_step_index(seg.process)]
             if e["type"] in ("read", "load") and e.get("file")]
    for save in after.live:
        if any(same(save.get("file"), r) for r in reads):
            return save
    return None


def _first_step_index(process) -> int:
    return next((i for i, e in enumerate(process.events) if e["type"] == "step"), len(process.events))


def _first_cause(ref: Reference, name: dict, seg: Segment, diff: Difference, comps: list[str], nxt: list[Segment],
                 total: int | None) -> Finding | None:
    """The finding for the first component that parted (``comps``, in :data:`ORDER`), each RNG by
    itself before the batches it may have drawn: a batch that differs because an RNG was not
    restored is that RNG's finding, not the data order's."""
    values = {"fault": name, "step": diff.step}
    first_step = diff.step == seg.resumed_from + 1
    restored = _restored(ref, name, seg, diff, comps, values)
    if restored is not None:
        return restored
    pending = _pending(ref, seg)
    if pending and first_step and {"backwards", "batches", "grads"} & set(comps):
        return Finding("accumulation", {**values, "resumed": seg.resumed_from, "pending": pending})
    rngs = [c for c in comps if c.startswith("rng.")]
    if rngs and first_step:
        return _rng(ref, name, nxt, rngs, "batches" in comps)
    if "batches" in comps:
        return _data(ref, name, seg, diff, total)
    if rngs:
        return _rng(ref, name, nxt, rngs, False)
    if "buffers" in comps:
        return Finding("buffers", values)
    if first_step and seg.process.steps[0].get("batches") is None and "grads" in comps:
        return Finding("data-unseen", values)
    if "steps" in comps:
        return None  # more steps than the uninterrupted run: the end says how many
    if comps == ["ema"]:
        return Finding("ema", values)
    what = ", ".join(c for c in comps if c in ("backwards", "grads", "params", "state"))
    return Finding("unseen", {**values, "what": what or "the results"})


def _restored(ref: Reference, name: dict, seg: Segment, diff: Difference, comps: list[str],
              values: dict) -> Finding | None:
    """What the resume restored wrongly with the parameters: the optimizer (or a state of
    another step: no snapshot), the schedule, the optimizer's settings, the GradScaler."""
    if "state_before" in comps:
        other = ref.state_step(seg.rank, diff.ours.get("state_before"))
        if other is not None and other not in (0, seg.resumed_from):  # 0: a fresh optimizer's, not another step's
            return Finding("snapshot-mix", {"fault": name, "params": seg.resumed_from, "state": other})
        return Finding("optimizer", {"fault": name, "resumed": seg.resumed_from})
    if "lr" in comps:
        return _scheduler(ref, seg, diff, values)
    if "hyper" in comps:
        return Finding("hyper", values)
    if "scale" in comps:
        return Finding("scaler", {**values, "ours": f"{diff.ours['scale'][0]:g}", "theirs": f"{diff.theirs['scale'][0]:g}"})
    return None


def _scheduler(ref: Reference, seg: Segment, diff: Difference, values: dict) -> Finding:
    """Another learning rate after a resume: the schedule was not restored (it started over:
    a rate of an earlier place, or one the run never used), or it was put ahead, at the rate
    of a later place of the schedule only (fast-forwarded too far)."""
    ours, theirs = diff.ours["lr"], diff.theirs["lr"]
    used = sorted(g for g, s in ref.steps[seg.rank].items() if s.get("lr") == ours)
    said = {**values, "ours": _lr(ours), "theirs": _lr(theirs)}
    if not used or used[0] <= diff.step:
        return Finding("scheduler", said)
    return Finding("scheduler-offset", {**said, "then": used[0]})


def _pending(ref: Reference, seg: Segment) -> int:
    """Backward passes the reference had accumulated toward its next step when it saved the
    checkpoint of the step this segment went on from (0: saved at a step's end)."""
    return max((e.get("pending", 0) for p in ref.processes if p.rank == seg.rank for e in p.of_type("save")
                if e["local_step"] == seg.resumed_from), default=0)


def _data(ref: Reference, name: dict, seg: Segment, diff: Difference, total: int | None) -> Finding:
    """The batch after a resume is not the uninterrupted run's: from another place in the epoch
    (repeated or skipped), a whole epoch repeated, or another order at the right place."""
    step = diff.step
    ours = seg.process.steps[step - seg.resumed_from - 1]
    other = ref.data_step(seg.rank, ours.get("batches"), step)
    values = {"fault": name, "step": step}
    if other is None or other == step:
        return _order(ref, seg, step, values)
    values.update(other=other, n=abs(step - other))
    here, there = _pos(ours), _pos(ref.steps[seg.rank][step])
    if here == there:  # the right place in the epoch, another epoch's batch
        if step - other == _pass_length(ref, seg.rank, other - here + 1) and _shifted(ref, seg, step, other):
            return Finding("epoch", values)  # every batch since, one pass back: the finished epoch trained again
        return _order(ref, seg, step, values)
    if here is not None and there is not None and here > there:
        return Finding("skip", values)
    return Finding("position", values)


def _shifted(ref: Reference, seg: Segment, step: int, other: int) -> bool:
    """Does every batch the segment trained from ``step`` on (up to the rest of that pass, at least
    two) equal the reference's ``step - other`` steps back: a whole epoch repeated, not a
    reshuffle that happened to draw one batch of it?"""
    j, k = step - seg.resumed_from - 1, 0
    ours = seg.process.steps
    while j + k < len(ours) and (ours[j + k].get("positions") or [None])[-1] != 1 or k == 0:
        theirs = ref.steps[seg.rank].get(other + k)
        if j + k >= len(ours) or theirs is None or ours[j + k].get("batches") != theirs.get("batches"):
            return False
        k += 1
    return k >= 2


def _pos(step: dict) -> int | None:
    """Where in its DataLoader pass a step's (last) batch was: 1 for the first batch."""
    return (step.get("positions") or [None])[-1]


def _pass_length(ref: Reference, rank: int, step: int) -> int | None:
    """How many steps the DataLoader pass that starts at ``step`` lasted in the reference."""
    starts = sorted(g for g, s in ref.steps[rank].items() if (s.get("positions") or [None])[0] == 1)
    later = [g for g in starts if g > step]
    return later[0] - step if later and step in starts else None


def _order(ref: Reference, seg: Segment, step: int, values: dict) -> Finding:
    """Another order at the right place: the DistributedSampler set to another epoch, the
    DataLoader's own generator in another state as the pass began, or neither seen."""
    ours = [e["epoch"] for e in seg.process.of_type("sampler")]
    theirs = [e["epoch"] for p in ref.processes if p.rank == seg.rank for e in p.of_type("sampler")
              if e["local_step"] < step]
    if ours and theirs and ours[0] != theirs[-1]:
        return Finding("order-sampler", {"fault": values["fault"], "step": step, "ours": ours[0], "theirs": theirs[-1]})
    local = step - seg.resumed_from
    mine = [e for e in seg.process.of_type("loader") if e["local_step"] < local]
    refs = [e for e in ref.loaders.get(seg.rank, []) if e["local_step"] < step]
    if mine and refs and mine[-1].get("generator_state") != refs[-1].get("generator_state"):
        return Finding("order-generator", {"fault": values["fault"], "step": step})
    return Finding("order", {"fault": values["fault"], "step": step})


def _rng(ref: Reference, name: dict, nxt: list[Segment], rngs: list[str], batch_differs: bool) -> Finding:
    bad = sorted(s.rank for s in nxt if s.at_start and any(c in s.at_start.components for c in rngs))
    good = sorted(s.rank for s in nxt if s.rank not in bad)
    if bad and good:
        return Finding("rng-rank", {"fault": name, "rngs": rngs, "bad": _ranks(bad), "good": _ranks(good)})
    events = [e for s in nxt for e in s.process.events if e.get("local_step") == 0]
    loaded = max((j for j, e in enumerate(events) if e["type"] == "load"), default=-1)
    which = {c.removeprefix("rng.") for c in rngs}
    reseeded = any(e["type"] == "seed" and e["which"] in which for e in events[loaded + 1:]) and loaded >= 0
    restored = any(e["type"] == "restore" and e["which"] in which for e in events) and not _fresh(ref, nxt, which)
    kind = "rng-reseeded" if reseeded and not restored else "rng-drawn" if restored else "rng"
    shuffled = [e for s in nxt for e in s.process.of_type("loader")]
    if kind == "rng" and rngs == ["rng.torch"] and batch_differs and shuffled and not shuffled[-1].get("generator"):
        kind = "rng-shuffle"
    return Finding(kind, {"fault": name, "rngs": rngs, "ranks": _ranks(bad or good)})


def _fresh(ref: Reference, nxt: list[Segment], which: set[str]) -> bool:
    """Do the RNGs at the first resumed step hold what they held at the run's first step: a fresh
    start's state, whatever a library set and put back meanwhile (Lightning's ``isolate_rng``)?
    Then nothing was restored from the checkpoint."""
    for s in nxt:
        ours, start = s.process.steps[0].get("rng", {}), ref.steps[s.rank].get(1, {}).get("rng", {})
        if any(ours.get(n) != start.get(n) for n in which):
            return False
    return bool(nxt)


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks))


def _lr(values: list[float]) -> str:
    return ", ".join(f"{v:.4g}" for v in values)


# --------------------------------------------------------------------------- the script itself
def reference_findings(a: list, b: list) -> list[Finding]:
    """Two runs never interrupted: are they the same run (else the finding that says where not),
    and does the run show a habit that breaks training whatever the faults (``set_epoch``, the
    samplers' seeds)?"""
    diff = compare_references(a, b)
    if isinstance(diff, str):
        return [Finding("runs-differ", {"what": diff})]
    if diff is not None:
        return [_not_the_same_run(diff, a)]
    return _habits(a)


def _not_the_same_run(diff: Difference, processes: list) -> Finding:
    comps = diff.components
    rngs = [c for c in comps if c.startswith("rng.")]
    if diff.step == 1 and "params_before" in comps:
        return Finding("unseeded-init", {})
    if "batches" in comps:
        workers = max((e["workers"] for p in processes if p.rank == diff.rank for e in p.of_type("loader")), default=0)
        if workers:
            return Finding("unseeded-workers", {"step": diff.step, "workers": workers})
        return Finding("unseeded-data", {"step": diff.step})
    if rngs:
        return Finding("unseeded-rng", {"step": diff.step, "rngs": rngs})
    cuda = any("cuda" in s.get("rng", {}) for p in processes for s in p.steps[:1])
    return Finding("nondeterministic-cuda" if cuda else "nondeterministic", {"step": diff.step, "what": ", ".join(comps)})


def _habits(processes: list) -> list[Finding]:
    ranked = sorted((p for p in processes if p.rank is not None), key=lambda p: p.rank)
    seeds = {p.rank: e["seed"] for p in ranked for e in p.of_type("sampler")[:1] if e.get("seed") is not None}
    if len(set(seeds.values())) > 1:
        return [Finding("sampler-seed", {"seeds": ", ".join(f"rank {r}: {s}" for r, s in sorted(seeds.items()))})]
    for p in ranked:
        passes = [e["epoch"] for e in p.of_type("sampler") if e.get("shuffle")]
        if len(passes) > 1 and len(set(passes)) == 1:
            return [Finding("set-epoch", {"epoch": passes[0], "passes": len(passes), "rank": p.rank})]
    return []
