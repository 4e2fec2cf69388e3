"""Which faults an audit delivers, chosen by a seed from what the reference run did.

Two families (what each kind is and finds: docs/audit.md, "What it does"). At a *step*
(:data:`KINDS`, real signals): the steps are spread over the run (one per stretch of
``steps / count`` steps, its place in the stretch drawn by the seed), the save-bound kinds moved
to the nearest save, all drawn by the seed except ``during-commit`` (only when named); several
share one run (``per_run``): the first kills the run, the resumed run is killed by the next one,
and so on; the run's last attempt goes to its end undisturbed. At a *file event* of a save
(:data:`EVENT_KINDS`, the crash points of :mod:`resume_audit.crashpoints`): one a run, since a
resumed run numbers its file events otherwise.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from resume_audit.findings import describe_fault

KINDS = ("sigkill", "sigterm", "during-save", "after-save", "during-commit")
EVENT_KINDS = ("before", "torn", "power-data", "power-names")
DRAWN = KINDS[:4]  # what a seed draws from
CUT_KINDS = ("during-save", "during-commit", "before", "torn")  # a save may be in progress when they strike
POWER_KINDS = EVENT_KINDS[2:]


@dataclass(frozen=True)
class Fault:
    kind: str            # one of KINDS or EVENT_KINDS
    at: int              # the reference run's step: as it begins, or (CUT_KINDS) the save after it
    rank: int | None     # the rank it strikes; None: every rank (SIGTERM), or a file event's (``who`` says)
    nth: int = 0         # during-save: which save after that step
    who: str | None = None   # a file event's role (rank0, main, proc) ...
    n: int = 0               # ... and its number among that role's events
    op: str | None = field(default=None, compare=False)    # what the event does (from the reference run)
    path: str | None = field(default=None, compare=False)  # to which file

    @property
    def event(self) -> bool:
        return self.kind in EVENT_KINDS

    def for_probe(self) -> dict:
        if self.event:
            return {"mode": self.kind, "who": self.who, "n": self.n, "at": self.at}
        return {"mode": "sigkill" if self.kind == "after-save" else self.kind, "at": self.at, "rank": self.rank,
                "nth": self.nth}

    @property
    def when(self) -> float:
        """Where in the run it strikes, to order the faults of one run (a step's save follows it)."""
        return self.at + 0.25 if self.kind in CUT_KINDS else self.at - 0.5

    def for_report(self) -> dict:
        out = {"kind": self.kind, "at": self.at, "rank": self.rank}
        if self.event:
            out.update(who=self.who, n=self.n, op=self.op, path=self.path)
        return out

    def describe(self) -> str:
        return describe_fault(self.for_report())

    @property
    def spec(self) -> str:
        """The ``--fault`` that delivers it again."""
        if self.event:
            return f"{self.kind}@e{self.n}:{self.who}"
        return f"{self.kind}@{self.at}" + ("" if self.rank is None else f":{self.rank}")


def plan(steps: int, ranks: list[int], saves: dict[tuple[int, int], int], count: int, seed: int = 0,
         kinds: tuple[str, ...] = DRAWN, per_run: int = 2) -> list[list[Fault]]:
    """``count`` faults for a run of ``steps`` optimizer steps on ``ranks``, in runs of at most
    ``per_run``, each run's faults in the order they strike. ``saves``: ``(rank, step) -> number
    of torch.save calls`` after that step in the reference run. Kinds that need a save are left
    out when the script never saves (the others take their place)."""
    rng = random.Random(seed)
    save_steps = sorted({s for (_, s) in saves if 0 < s <= steps})
    usable = [k for k in kinds if k in ("sigkill", "sigterm")
              or (k in CUT_KINDS and save_steps) or (k == "after-save" and any(s < steps for s in save_steps))]
    if not usable or steps < 1 or count < 1:
        return []
    chosen = [usable[i % len(usable)] for i in range(count)]
    rng.shuffle(chosen)
    faults: list[Fault] = []
    for i, kind in enumerate(chosen):
        lo = 1 + steps * i // count
        hi = max(lo, steps * (i + 1) // count)
        faults.append(_fault(kind, rng.randint(lo, min(hi, steps)), ranks, saves, save_steps, steps, rng))
    unique = list(dict.fromkeys(faults))
    for _ in range(10 * count):  # a fault drawn twice (a short run, the nearest save) is drawn again elsewhere
        if len(unique) >= count:
            break
        extra = _fault(rng.choice(usable), rng.randint(1, steps), ranks, saves, save_steps, steps, rng)
        if extra not in unique:
            unique.append(extra)
    return _deal(sorted(unique, key=lambda f: (f.when, f.kind, -1 if f.rank is None else f.rank)), per_run)


def _deal(faults: list[Fault], per_run: int) -> list[list[Fault]]:
    """Faults in runs of at most ``per_run``, dealt in turn so that each run's span the whole
    run; within a run each strikes a later step than the one before (a resumed run goes on after
    the step it saved, so a second fault at that step could not strike), two steps later after a
    SIGTERM (a script that finishes its step before it saves has gone one step further)."""
    runs: list[list[Fault]] = [[] for _ in range(-(-len(faults) // max(1, per_run)))]
    for i, fault in enumerate(faults):
        order = runs[i % len(runs):] + runs[:i % len(runs)]
        home = next((r for r in order if len(r) < per_run and (not r or _after(r[-1]) < fault.at)), None)
        if home is None:
            runs.append(home := [])
        home.append(fault)
    return [r for r in runs if r]


def _after(fault: Fault) -> int:
    """The last step a run struck by ``fault`` may have gone past when it resumes."""
    return fault.at + (fault.kind == "sigterm")


def parse_fault(text: str) -> Fault:
    """``KIND@STEP[:RANK]`` (``sigkill@14:1``), or at a file event ``KIND@eN[:WHO]``
    (``torn@e12:rank0``, ``power-data@e7``): one fault given by hand, e.g. to deliver again the one
    a report showed. A SIGTERM strikes every rank; the rank defaults to 0; a file event's role
    defaults to the first one whose N-th event the run never interrupted made."""
    kind, _, where = text.partition("@")
    step, _, rank = where.partition(":")
    if kind in EVENT_KINDS and step[:1] == "e" and step[1:].isdigit() and int(step[1:]) >= 1:
        return Fault(kind, 0, None, who=rank or None, n=int(step[1:]))
    if kind not in KINDS or not step.isdigit() or int(step) < 1 or (rank and not rank.isdigit()):
        raise ValueError(f"--fault {text!r} is not KIND@STEP[:RANK] with KIND one of {', '.join(KINDS)} "
                         f"and STEP >= 1 (e.g. sigkill@14:1), nor KIND@eN[:WHO] with KIND one of "
                         f"{', '.join(EVENT_KINDS)} (e.g. torn@e12:rank0)")
    return Fault(kind, int(step), None if kind == "sigterm" else int(rank or 0))


def given(faults: list[Fault], per_run: int) -> list[list[Fault]]:
    """Faults given by hand, in runs of at most ``per_run``, each run's in the order they strike;
    a fault at a file event strikes a run of its own."""
    steps = [f for f in faults if not f.event]
    return _deal(sorted(steps, key=lambda f: f.when), per_run) + [[f] for f in faults if f.event]


def _fault(kind: str, step: int, ranks: list[int], saves: dict, save_steps: list[int], steps: int,
           rng: random.Random) -> Fault:
    if kind == "sigterm":
        return Fault(kind, step, None)
    if kind == "sigkill":
        return Fault(kind, step, rng.choice(ranks))
    candidates = save_steps if kind in CUT_KINDS else [s for s in save_steps if s < steps]
    nearest = min(candidates, key=lambda s: (abs(s - step), s))
    if kind == "after-save":
        return Fault(kind, nearest + 1, rng.choice(ranks))
    savers = sorted(r for (r, s) in saves if s == nearest)
    rank = rng.choice(savers)
    return Fault(kind, nearest, rank, rng.randrange(saves[(rank, nearest)]))
