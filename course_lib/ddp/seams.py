"""Where the trainer lets others in, each with its contract; the core never names what plugs in.

* :class:`GradientSync` replaces DDP's gradient sync (a factory ``gradients(model)``), and
  :class:`SyncTraits` says what the rest of the core must know of it (the core's: :data:`DDP_TRAITS`);
* :class:`Agreement` adds votes to what the ranks agree on at each step's end;
* :class:`Seams` carries those into a :class:`~course_lib.ddp.train.Trainer`, with a training
  carried over from an earlier trainer of the process (a group that re-formed);
* :class:`FaultHook` is told as each step begins and gives the writer of each save: the kit's
  real faults (:class:`~course_lib.checkpoint.faults.FaultInjector`) are one, passed only when
  a fault is asked for.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import torch

if TYPE_CHECKING:
    from course_lib.ddp.outcome import Outcome
    from course_lib.ddp.training import Training

Writer = Callable[[Path, str, object], dict]  # writes one part of a save: (folder, file name, state) -> sha256, size


@dataclass(frozen=True)
class SyncTraits:
    """What the sampler, the checkpoint, the resume and the launcher need to know of a sync."""
    contiguous: bool = False      # a rank's share of a global batch: one block (True), or every W-th sample
    rank_rng: bool = True         # each rank's RNG (dropout) belongs in the checkpoint
    any_world_size: bool = False  # the same bits on any world size: a checkpoint may resume on another one
    threads: int = 0              # intra-op threads per rank (0: the cores shared out among this machine's ranks)


DDP_TRAITS = SyncTraits()  # every W-th sample, each rank's own dropout stream, a sum whose order depends on W


class GradientSync(Protocol):
    """Computes the global batch's gradient into every ``param.grad``, in place of DDP's
    all-reduce. All its collectives come before the optimizer step: a rank that sees a peer fail
    in one still holds the last finished step."""
    traits: SyncTraits

    def parts(self, indices: list[int]) -> list[list[int]]:
        """This rank's micro-batches of its share ``indices`` of the global batch."""

    def compute(self, step: int, batches: list[dict[str, torch.Tensor]]) -> tuple[float, float]:
        """Forward and backward of ``batches`` (one per part, on the device) of global step
        ``step`` (1-based), a collective; returns this rank's loss and the global batch's."""


class Agreement(Protocol):
    """What an extension adds to the ranks' agreement at a step's end (an elastic group: "a node
    waits to join"). Both methods run on every rank, in the same order."""

    def votes(self) -> dict[str, float]:
        """This rank's votes, by name; the trainer sums them over the ranks with its own."""

    def decide(self, votes: dict[str, float]) -> Outcome | None:
        """The summed votes: an outcome that ends the epoch here, or ``None`` to go on."""


class FaultHook(Protocol):
    """Told by the loop where it stands, to act there (a real kill): as each step begins, and as
    each save begins, when it hands over the writer of that save's parts."""

    def before_step(self, step: int) -> None:
        """Global step ``step`` (1-based) begins."""

    def writer(self, step: int, parts: list[str]) -> Writer:
        """The save of ``step`` begins; this rank will write ``parts``: what writes each of them."""


@dataclass
class Seams:
    """An extension's way into the trainer; every field is optional (DDP's, built afresh)."""
    gradients: Callable[[torch.nn.Module], GradientSync] | None = None
    agreement: Agreement | None = None
    training: Training | None = None  # what an earlier trainer of this process trained: go on from it
    about: dict | None = None         # this start's row in attempts.jsonl gets these too
