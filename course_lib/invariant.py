"""A world-size-invariant optimizer step: the same bits on 1, 2 or 4 ranks.

Plain DDP averages gradients with an all-reduce whose summation order depends on the number of
ranks (and floating-point addition is not associative), and each rank draws dropout masks from
a random stream it owns. So a 2-rank run and a 1-rank run of the same config part after the
first step, and a 2-rank checkpoint resumed on 1 rank continues "closely". Both causes are
ours to remove:

* **fixed micro-batches.** The global batch is cut into ``M`` micro-batches of fixed size (``M``
  a power of two, the same for every world size); rank ``r`` of ``W`` computes the contiguous
  block ``r*M/W .. (r+1)*M/W - 1``. A micro-batch holds the same samples, padded to the same
  length, whichever rank computes it;
* **randomness per micro-batch**: before micro-batch ``j`` of global step ``s`` the generator is
  seeded from ``(seed, s, j)``, so its dropout masks do not depend on which rank draws them;
* **one fixed summation tree**: the ``M`` per-micro-batch gradients are summed pairwise in a
  balanced binary tree. A rank's block is a subtree, summed locally; the ``W`` block sums are
  gathered and summed by the rest of the tree on every rank. Every rank, at every world size,
  performs the same additions in the same order: the same bits;
* **the same thread count per micro-batch**: a CPU kernel can sum in another order with more
  threads (``transformer``'s LayerNorm gradients differ between 1 and 2 intra-op threads), so
  the invariant step pins ``threads_per_rank`` (default 1) instead of ``cores // world_size``.

Loss scaling (each micro-batch's mean loss times ``m / B``), clipping, AdamW and the schedule
are unchanged. On GPUs the same construction needs deterministic kernels
(``torch.use_deterministic_algorithms(True)``) and fixed micro-batch shapes, which this gives.
"""
from __future__ import annotations

import hashlib

import torch
import torch.distributed as dist
import torch.nn.functional as F

DEFAULT_MICRO_BATCHES = 4  # micro-batches per global batch when --micro-batch is 0: 1, 2 or 4 ranks


def micro_batch_count(global_batch_size: int, micro_batch: int) -> int:
    """``M``: how many micro-batches a global batch is cut into (never depends on the world size)."""
    if micro_batch:
        return global_batch_size // micro_batch
    m = DEFAULT_MICRO_BATCHES
    while m > 1 and global_batch_size % m:
        m //= 2
    return m


def check_layout(global_batch_size: int, micro_batch: int, world_size: int) -> str | None:
    """Why this layout cannot be world-size invariant, or ``None`` when it can."""
    if micro_batch and global_batch_size % micro_batch:
        return f"--micro-batch {micro_batch} does not divide the global batch {global_batch_size}"
    m = micro_batch_count(global_batch_size, micro_batch)
    if m & (m - 1):
        return f"the global batch holds {m} micro-batches; the invariant reduction needs a power of two"
    if m % world_size:
        return (f"{m} micro-batches cannot be split evenly over {world_size} ranks; the invariant reduction "
                f"needs a world size that divides {m} (choose a smaller --micro-batch)")
    return None


def micro_batch_seed(seed: int, step: int, index: int) -> int:
    """The seed of micro-batch ``index`` of global step ``step``: a function of the run, not of a rank."""
    digest = hashlib.blake2b(f"{seed}/{step}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def tree_sum(values: list) -> object:
    """Pairwise sum in a balanced binary tree over ``len(values)`` (a power of two) leaves."""
    while len(values) > 1:
        values = [values[i] + values[i + 1] for i in range(0, len(values), 2)]
    return values[0]


class InvariantStep:
    """Computes the summed gradient of one global batch into ``param.grad``, identically at
    every world size. Used instead of DDP's all-reduce when ``--reduction invariant``.

    Memory is allocated once: one flat gradient buffer per micro-batch of this rank, into which
    autograd accumulates directly (``param.grad`` are views of it). A
    fresh 20 MB tensor per micro-batch and per addition cost ``bag`` ~8 ms each in page faults,
    more than the arithmetic."""

    def __init__(self, model: torch.nn.Module, global_batch_size: int, micro_batch: int, world_size: int, rank: int,
                 seed: int):
        self.model, self.world_size, self.rank, self.seed = model, world_size, rank, seed
        self.count = micro_batch_count(global_batch_size, micro_batch)
        self.size = global_batch_size // self.count
        self.global_batch_size = global_batch_size
        self.params = [p for p in model.parameters() if p.requires_grad]
        n, like = sum(p.numel() for p in self.params), self.params[0]
        self.slots = [torch.zeros(n, dtype=like.dtype, device=like.device) for _ in range(self.count // world_size)]
        self.pair_groups = []  # level k: {r, r XOR 2^k}; every rank creates every group, in one order
        level = 1
        while level < world_size:
            groups = {pair: dist.new_group(list(pair))
                      for pair in sorted({tuple(sorted((r, r ^ level))) for r in range(world_size)})}
            self.pair_groups.append(groups[tuple(sorted((rank, rank ^ level)))])
            level *= 2

    def _point_grads_at(self, flat: torch.Tensor) -> None:
        offset = 0
        for p in self.params:
            p.grad = flat[offset:offset + p.numel()].view_as(p)
            offset += p.numel()

    def _collect(self, flat: torch.Tensor) -> None:
        """Make sure ``flat`` holds the gradient: autograd accumulates into the views in place,
        unless it had to replace one (then copy it in)."""
        offset = 0
        for p in self.params:
            part = flat[offset:offset + p.numel()]
            if p.grad is None:
                part.zero_()
            elif p.grad.data_ptr() != part.data_ptr():
                part.copy_(p.grad.reshape(-1))
            offset += p.numel()

    def run(self, step: int, indices: list[int], batch_of, autocast) -> tuple[float, float]:
        """Forward and backward of this rank's micro-batches of global step ``step`` (1-based),
        ``indices`` being this rank's contiguous share of the global batch. Returns this rank's
        mean loss and the global loss (also summed in the fixed order)."""
        first = self.rank * len(self.slots)
        losses = []
        for j, flat in enumerate(self.slots):
            torch.manual_seed(micro_batch_seed(self.seed, step, first + j))
            batch = batch_of(indices[j * self.size:(j + 1) * self.size])
            flat.zero_()
            self._point_grads_at(flat)
            with autocast():
                logits = self.model(batch["input_ids"], batch["attention_mask"])
                loss = F.cross_entropy(logits.float(), batch["label"]) * (self.size / self.global_batch_size)
            loss.backward()
            self._collect(flat)
            losses.append(loss.item())
        width = 1
        while width < len(self.slots):  # this rank's subtree, in place: slot i += slot i + width
            for i in range(0, len(self.slots), 2 * width):
                self.slots[i].add_(self.slots[i + width])
            width *= 2
        total = self._across_ranks(self.slots[0])
        self._point_grads_at(total)
        every = torch.tensor(losses, dtype=torch.float64, device=total.device)
        if self.world_size > 1:
            gathered = [torch.empty_like(every) for _ in range(self.world_size)]
            dist.all_gather(gathered, every)
            every = torch.cat(gathered)
        return sum(losses) * self.world_size, float(tree_sum(every.tolist()))

    def _across_ranks(self, mine: torch.Tensor) -> torch.Tensor:
        """The rest of the tree, by recursive doubling: at level ``k`` rank ``r`` and rank
        ``r XOR 2^k`` all-reduce their partial sums in a group of two. A sum of two numbers is
        the same whichever comes first, so both get the bits of the tree's next node. ``log2 W``
        all-reduces of one gradient each. (Point-to-point swaps were 30% faster, but a gloo
        receive waits out the whole timeout when its peer dies; a collective fails at once,
        which is what lets the survivors save.)"""
        for group in self.pair_groups:
            dist.all_reduce(mine, group=group)
        return mine
