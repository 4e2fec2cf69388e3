"""Runs compared by content: two uninterrupted runs with each other, an interrupted run's every
restart with the uninterrupted run from the step it went on from. What it returns are facts
(:class:`Segment`, :class:`Difference`), not findings (the pipeline: :mod:`resume_audit.verdict`).

The unit is a *segment*: the steps one process of one rank took, from where its first step says
it went on (:func:`resume_audit_digests.resume_point`), each set beside the reference's step of
the same number, component by component, in the order a step reads them (:data:`ORDER`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from resume_audit.probe.resume_audit_digests import resume_point
from resume_audit.records import Process, alignment_table, segments

# what a step is made of, in the order it reads them: a difference earlier in the list explains the later ones
ORDER = ("params_before", "state_before", "lr", "hyper", "scale", "rng.python", "rng.numpy", "rng.torch", "rng.cuda",
         "backwards", "batches", "buffers", "grads", "params", "state", "ema")


@dataclass
class Difference:
    step: int           # the reference's step number
    rank: int
    components: list[str]   # every component that differs at that step, in ORDER
    ours: dict = field(default_factory=dict)    # the values of the differing ones, this run's
    theirs: dict = field(default_factory=dict)  # and the reference's


@dataclass
class Segment:
    """One process of one rank: where it went on from and where it first parted."""
    attempt: int
    rank: int
    process: Process
    resumed_from: int | None     # the reference step it went on from (None: no state of the reference)
    at_start: Difference | None  # what differed on its first step
    parted: Difference | None    # the first step where what is trained differed (:func:`parts`)

    @property
    def reached(self) -> int | None:
        return None if self.resumed_from is None else self.resumed_from + len(self.process.steps)


class Reference:
    """The uninterrupted run, per rank: its steps by number, its states after each step, its batches."""

    def __init__(self, processes: list[Process]):
        self.processes = processes
        self.finals: dict | None = None  # where each save ends (disk.final_paths), once the run's folder is known
        self.table = alignment_table(processes)
        self.steps: dict[int, dict[int, dict]] = {}
        self.final: dict[int, str | None] = {}
        self.final_ema: dict[int, str | None] = {}
        self.final_buffers: dict[int, str | None] = {}
        self.loaders: dict[int, list[dict]] = {}  # each DataLoader pass: as it began
        for p in (p for p in processes if p.steps):
            self.steps.setdefault(p.rank, {s["local_step"]: s for s in p.steps})  # the reference's numbers: 1, 2, ...
            self.final.setdefault(p.rank, p.final_params())
            self.final_ema.setdefault(p.rank, p.final_ema())
            self.final_buffers.setdefault(p.rank, p.final_buffers())
            self.loaders.setdefault(p.rank, p.of_type("loader"))
        self.after = {int(r): {c: (params, state) for c, params, state in rows} for r, rows in self.table.items()}
        # the RNGs something draws from while it trains (their state changes): only those can change a resumed run
        self.live = {r: {f"rng.{name}" for name in {n for s in st.values() for n in s.get("rng", {})}
                         if len({s.get("rng", {}).get(name) for s in st.values()}) > 1} for r, st in self.steps.items()}

    def state_step(self, rank: int, state: str | None) -> int | None:
        """The latest step after which the reference's optimizer state was ``state`` (``None``: never)."""
        hits = [c for c, (_, st) in self.after.get(rank, {}).items() if state is not None and st == state]
        return max(hits, default=None)

    @property
    def ranks(self) -> list[int]:
        return sorted(self.steps)

    def length(self, rank: int) -> int:
        return max(self.steps.get(rank, {0: None}))

    def data_step(self, rank: int, batches: list[str] | None, near: int) -> int | None:
        """The reference step (nearest ``near``) that trained the last of ``batches``."""
        if not batches:
            return None
        hits = [g for g, s in self.steps[rank].items() if (s.get("batches") or [None])[-1] == batches[-1]]
        return min(hits, key=lambda g: (abs(g - near), g)) if hits else None

    def saves(self) -> dict[tuple[int, int], int]:
        """``(rank, step) -> saves`` after that step (``torch.save``, safetensors, ``pickle``,
        NumPy), where they reach a file: one saved to a file, or into memory and then fsynced or
        renamed (not, say, the ``torch.save`` inside ``all_gather_object``)."""
        out: dict[tuple[int, int], int] = {}
        for p in self.processes:
            if p.rank is None:
                continue
            synced = {e["local_step"] for e in p.of_type("sync")}
            saves = p.of_type("save")
            to_disk = {e["local_step"] for e in saves if not e["target"].startswith("<")} | synced
            for e in saves:
                if e["local_step"] in to_disk:
                    out[(p.rank, e["local_step"])] = out.get((p.rank, e["local_step"]), 0) + 1
        return out


def _component(step: dict, name: str):
    if name.startswith("rng."):
        return step.get("rng", {}).get(name[4:])
    return step.get(name)


def compare_step(ours: dict, theirs: dict, rank: int, step: int, before: tuple | None, live: set[str]) -> Difference | None:
    """Every component recorded on both sides that differs. ``before``: the reference's
    ``(params, state)`` before this step, for a process's first step. ``live``: the RNGs to
    compare (those the run draws from)."""
    theirs = dict(theirs)
    if before is not None:
        theirs["params_before"], theirs["state_before"] = before
    diff = Difference(step, rank, [])
    for name in ORDER:
        if name.startswith("rng.") and name not in live:
            continue
        a, b = _component(ours, name), _component(theirs, name)
        if name == "batches" and a is not None and b is not None:  # batches fetched to be skipped come first
            a = a[-len(b):]
        if name == "scale" and before is not None and a is not None and b is not None:
            b = b[-len(a):]  # a process's first step: the skipped steps before its checkpoint were the run before's
        if a is not None and b is not None and a != b:
            diff.components.append(name)
            diff.ours[name], diff.theirs[name] = a, b
    return diff if diff.components else None


def follow(ref: Reference, attempts: list[list[Process]]) -> list[Segment]:
    """Every segment of every rank of one run (its attempts in order), set beside the reference."""
    out = []
    for rank in ref.ranks:
        reached = None
        for attempt, process in segments(attempts, rank):
            first = process.steps[0]
            start = resume_point(ref.table.get(str(rank), []), first.get("params_before"), first.get("state_before"),
                                 reached)
            seg = Segment(attempt, rank, process, start, None, None)
            if start is not None:
                _walk(ref, seg)
            else:
                seg.parted = seg.at_start = Difference(0, rank, ["params_before"])
            reached = seg.reached if seg.reached is not None else reached
            out.append(seg)
    return out


def _walk(ref: Reference, seg: Segment) -> None:
    theirs = ref.steps[seg.rank]
    for j, ours in enumerate(seg.process.steps):
        g = seg.resumed_from + j + 1
        if g not in theirs:
            seg.parted = Difference(g, seg.rank, ["steps"])
            return
        before = ref.after[seg.rank].get(g - 1) if j == 0 else None
        diff = compare_step(ours, theirs[g], seg.rank, g, before, ref.live[seg.rank])
        if j == 0:
            seg.at_start = diff
        if parts(diff):
            seg.parted = diff
            return


def parts(diff: Difference | None) -> bool:
    """Does ``diff`` change what is trained? An RNG that differs changes nothing until something
    draws from it: then the batch, the gradients or the parameters differ too."""
    return diff is not None and any(not c.startswith("rng.") for c in diff.components)


def compare_references(a: list[Process], b: list[Process]) -> Difference | str | None:
    """Two runs never interrupted, step by step: the first difference, a sentence when their
    shape differs (ranks, number of steps), ``None`` when they are the same run."""
    ra, rb = Reference(a), Reference(b)
    if ra.ranks != rb.ranks:
        return f"the two runs stepped on ranks {ra.ranks} and {rb.ranks}"
    for rank in ra.ranks:
        sa, sb = ra.steps[rank], rb.steps[rank]
        for g in sorted(set(sa) & set(sb)):
            diff = compare_step(sb[g], sa[g], rank, g, None, ra.live[rank] | rb.live[rank])
            if parts(diff):
                return diff
        if len(sa) != len(sb):
            return f"the two runs took {len(sa)} and {len(sb)} steps on rank {rank}"
        if ra.final[rank] != rb.final[rank]:
            return Difference(len(sa), rank, ["params"], {"params": rb.final[rank]}, {"params": ra.final[rank]})
        if ra.final_buffers[rank] != rb.final_buffers[rank]:
            return Difference(len(sa), rank, ["buffers"], {"buffers": rb.final_buffers[rank]},
                              {"buffers": ra.final_buffers[rank]})
    return None
