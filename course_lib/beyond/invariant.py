"""A world-size-invariant optimizer step: the same bits on 1, 2 or 4 ranks.

Plain DDP's all-reduce sums in an order that depends on the number of ranks, and each rank draws
dropout from a stream of its own, so runs on other world sizes part after the first step. Fixed
micro-batches (a rank's contiguous block of them is a subtree), randomness per micro-batch, one
fixed summation tree and the same thread count remove both causes; loss scaling, clipping, AdamW
and the schedule are unchanged. How, what it guarantees, what it costs and what GPUs need
besides: docs/invariant.md.
"""
from __future__ import annotations

import functools
import hashlib
import weakref
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F

from course_lib.ddp.seams import SyncTraits

DEFAULT_MICRO_BATCHES = 4  # micro-batches per global batch when --micro-batch is 0: 1, 2 or 4 ranks


# contiguous micro-batch blocks, no rank's own RNG, the same bits on any world size, one thread per rank
INVARIANT_TRAITS = SyncTraits(contiguous=True, rank_rng=False, any_world_size=True, threads=1)


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


BUCKET_MB = 25  # DDP's default bucket size: big enough that gloo's per-call cost does not show
BLOCK = 32  # elements per block of a sparse exchange (128 bytes: a row of bag's embedding); slices start at one
SPARSE_UP_TO = 0.5  # exchange only the nonzero blocks while they are at most this share of a bucket


def _grad_ready(owner: weakref.ref[InvariantStep], index: int, param: torch.Tensor) -> None:
    """The post-accumulate hook of parameter ``index``. It holds its step weakly and acts only
    inside that step's :meth:`InvariantStep.run`, so a step built anew for another world size
    on the same model leaves the old hooks inert (and the old buffers free)."""
    step = owner()
    if step is not None and step._live:
        step._ready(index, param)


class InvariantStep:
    """Computes the summed gradient of one global batch into ``param.grad``, identically at
    every world size: the :class:`~course_lib.ddp.seams.GradientSync` of ``--reduction invariant``
    (:mod:`course_lib.beyond.invariant_trainer`), instead of DDP's all-reduce. A rank computes a
    contiguous block of micro-batches, and no rank's own RNG is drawn (each micro-batch seeds its
    dropout), so a checkpoint needs no RNG file per rank.

    Kept off the step's time (``bag``, 2 ranks: the exchange of its 20 MB gradient was half a
    step; the costs are in docs/invariant.md):

    * flat buffers allocated once, ``param.grad`` views of them: autograd accumulates in place
      (a fresh tensor per micro-batch and addition cost ~8 ms in page faults);
    * nothing is zeroed: a leaf's gradient, handed over whole (``param.grad`` is ``None``), is
      copied in, and autograd adds its right sibling in place, the tree's ``a + b`` (a zeroed
      leaf would be ``0 + a``: a pass more, and a ``-0`` turned into ``+0``);
    * the exchange overlaps the last backward: each bucket is finished, and its pair all-reduce
      started (``async_op``), as soon as its gradients are; every wait comes before
      :meth:`compute` returns, so every collective of a step still precedes its optimizer step;
    * only the blocks with a bit set travel (:meth:`_pair_sum`): the dense sum's bits;
    * the loss travels the same tree (float64), started before the last backward."""
    traits = INVARIANT_TRAITS

    def __init__(self, model: torch.nn.Module, global_batch_size: int, micro_batch: int, world_size: int, rank: int,
                 seed: int, precision: str = "fp32", bucket_mb: float = BUCKET_MB, timeout: timedelta | None = None):
        self.model, self.world_size, self.rank, self.seed = model, world_size, rank, seed
        self.bf16 = precision == "bf16"
        self.count = micro_batch_count(global_batch_size, micro_batch)
        self.size = global_batch_size // self.count
        self.global_batch_size = global_batch_size
        self.per_rank = self.count // world_size
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.slices, self.buckets, self.bucket_of = self._layout(bucket_mb * 2**20 / self.params[0].element_size())
        like, n = self.params[0], self.buckets[-1][1]
        alive = max(1, self.per_rank.bit_length() - 1)  # subtrees held at once (a binary counter's digits)
        self.buffers = [torch.zeros(n, dtype=like.dtype, device=like.device) for _ in range(alive)]
        self.views = [[buf[a:b].view_as(p) for p, (a, b) in zip(self.params, self.slices)] for buf in self.buffers]
        self.pair_groups = []  # level k: {r, r XOR 2^k}; every rank creates every group, in one order
        level = 1
        while level < world_size:  # with the run's timeout: new_group's own is gloo's default, 30 minutes
            groups = {pair: dist.new_group(list(pair), timeout=timeout)
                      for pair in sorted({tuple(sorted((r, r ^ level))) for r in range(world_size)})}
            self.pair_groups.append(groups[tuple(sorted((rank, rank ^ level)))])
            level *= 2
        self._live = self._last = False
        self._node, self._stack, self._got, self._pending, self._launched, self._sent, self._works = 0, [], [], [], 0, [], []
        self.dense = [[False] * len(self.buckets) for _ in self.pair_groups]  # per level: exchanged dense
        me = weakref.ref(self)
        handles = [p.register_post_accumulate_grad_hook(functools.partial(_grad_ready, me, i))
                   for i, p in enumerate(self.params)]
        weakref.finalize(self, _remove_all, handles)

    def _layout(self, cap: float):
        """Each parameter's slice of the flat buffers, in reverse order (about the order in which
        backward finishes them), each starting at a multiple of ``BLOCK`` (the gaps stay zero), and
        the buckets: runs of whole parameters up to ``cap`` elements."""
        slices, bucket_of, buckets = [None] * len(self.params), [0] * len(self.params), []
        start = offset = members = 0
        for i in reversed(range(len(self.params))):
            if members and offset + self.params[i].numel() - start > cap:
                buckets.append((start, offset, members))
                start, members = offset, 0
            slices[i], bucket_of[i] = (offset, offset + self.params[i].numel()), len(buckets)
            offset, members = -(-(offset + self.params[i].numel()) // BLOCK) * BLOCK, members + 1
        buckets.append((start, offset, members))
        return slices, buckets, bucket_of

    def parts(self, indices: list[int]) -> list[list[int]]:
        """This rank's micro-batches of its contiguous share ``indices`` of the global batch."""
        return [indices[j * self.size:(j + 1) * self.size] for j in range(self.per_rank)]

    def compute(self, step: int, batches: list[dict]) -> tuple[float, float]:
        """Forward and backward of this rank's micro-batches ``batches`` of global step ``step``
        (1-based), a collective. Returns this rank's mean loss and the global loss (also summed
        in the fixed order)."""
        first, losses = self.rank * self.per_rank, []
        self._stack, self._sent, self._works, self._live = [], [], [], True
        try:
            for j, batch in enumerate(batches):
                if j % 2 == 0:  # a new leaf: autograd hands its gradient over whole, _ready copies it in
                    self._node = self._take()
                    for p in self.params:
                        p.grad = None
                self._got = [False] * len(self.params)
                torch.manual_seed(micro_batch_seed(self.seed, step, first + j))
                with torch.autocast(batch["input_ids"].device.type, dtype=torch.bfloat16, enabled=self.bf16):
                    logits = self.model(batch["input_ids"], batch["attention_mask"])
                    loss = F.cross_entropy(logits.float(), batch["label"]) * (self.size / self.global_batch_size)
                losses.append(loss.item())
                if j == self.per_rank - 1:  # the last backward finishes buckets and starts their exchange
                    self._exchange(torch.tensor([tree_sum(losses)], dtype=torch.float64, device=loss.device))
                    self._last, self._pending, self._launched = True, [b[2] for b in self.buckets], 0
                loss.backward()
                self._no_gradient(leaf=j % 2 == 0)
                if j % 2 and not self._last:
                    self._push()
            self._launch_ready(everything=True)  # buckets whose parameters got no gradient this time
            global_loss = self._wait()
        finally:
            self._live = self._last = False
        root = self._stack[0][0] if self._stack else self._node
        if root != self._node:  # the sum is in another buffer than the last leaf's: point param.grad at it
            for p, view in zip(self.params, self.views[root]):
                p.grad = view
        return sum(losses) * self.world_size, global_loss

    # ------------------------------------------------------------------ the tree inside this rank
    def _take(self) -> int:
        """A buffer that holds no subtree of this step."""
        busy = {k for k, _ in self._stack}
        return next(k for k in range(len(self.buffers)) if k not in busy)

    def _no_gradient(self, leaf: bool) -> None:
        """Parameters this micro-batch gave no gradient count as a gradient of ``+0``, as on a
        rank that holds that micro-batch alone: a leaf is zeroed, a right sibling adds ``+0``
        (which turns a ``-0`` into ``+0``, as the sum with a zeroed leaf would)."""
        for i, got in enumerate(self._got):
            if not got:
                view = self.views[self._node][i]
                if leaf:
                    view.zero_()
                else:
                    view.add_(0.0)
                self.params[i].grad = view

    def _push(self) -> None:
        """A pair is summed (not the last one, whose sums are done per bucket in :meth:`_launch`):
        add it to the finished subtrees of its size, as the tree does."""
        node, leaves = self._node, 2
        while self._stack and self._stack[-1][1] == leaves:
            left, _ = self._stack.pop()
            self.buffers[left].add_(self.buffers[node])
            node, leaves = left, leaves * 2
        self._stack.append((node, leaves))

    def _ready(self, index: int, param: torch.Tensor) -> None:
        """Autograd has accumulated ``param``'s gradient. It must be in the buffer: a leaf's is
        copied in; a right sibling's autograd adds into the view in place, unless it had to
        replace it (then the sum is copied in too)."""
        view = self.views[self._node][index]
        if param.grad.data_ptr() != view.data_ptr():
            view.copy_(param.grad)
            param.grad = view
        self._got[index] = True
        if self._last:
            self._pending[self.bucket_of[index]] -= 1
            self._launch_ready()

    def _launch_ready(self, everything: bool = False) -> None:
        """Finish and send the buckets whose gradients are complete, strictly in bucket order (the
        ranks' collectives must match one for one)."""
        while self._launched < len(self.buckets) and (everything or not self._pending[self._launched]):
            a, b, _ = self.buckets[self._launched]
            part = self.buffers[self._node][a:b]
            for left, _ in reversed(self._stack):  # up the tree: (left subtree) + (this one)
                self.buffers[left][a:b].add_(part)
                part = self.buffers[left][a:b]
            self._exchange(part, self._launched)
            self._launched += 1

    # ------------------------------------------------------------------ the tree across ranks
    def _exchange(self, tensor: torch.Tensor, bucket: int | None = None) -> None:
        """Start the rest of the tree for ``tensor`` (bucket ``bucket``, or the loss): level 0 of
        :meth:`_pair_sum` runs up to its first collective; :meth:`_wait` does the rest."""
        self._sent.append((tensor, bucket))
        self._start(tensor, bucket, 0)

    def _start(self, tensor: torch.Tensor, bucket: int | None, level: int) -> None:
        if level < len(self.pair_groups):
            exchange = self._pair_sum(tensor, bucket, level)
            self._works.append((exchange, next(exchange)))

    def _pair_sum(self, tensor: torch.Tensor, bucket: int | None, level: int):
        """Level ``level`` of the tree across ranks, by recursive doubling: rank ``r`` and rank
        ``r XOR 2^level`` all-reduce their partial sums in a group of two. A sum of two numbers
        is the same whichever comes first, so both get the bits of the tree's next node.
        (Point-to-point swaps were 30% faster, but a gloo receive waits out the whole timeout
        when its peer dies; a collective fails at once, which is what lets the survivors save.
        Nearly always: once in ~30 drills a send to a SIGKILLed peer waited, hence the pair
        groups' timeout, the run's.)

        Yields each collective it starts. Sparse when it pays: an embedding's gradient is zero
        outside the rows of the batch's tokens (``bag``: most of its 20 MB), and ``+0 + +0`` is
        ``+0``, so blocks of ``BLOCK`` elements whose bits are all clear on both sides need no
        exchange. The pair first all-reduces which blocks have a bit set on either side, then
        only those: the same bits as the dense sum. A bucket found mostly nonzero is
        exchanged dense from then on (both sides of a pair see the same union, so they decide alike)."""
        group = self.pair_groups[level]
        if bucket is None or self.dense[level][bucket]:
            yield dist.all_reduce(tensor, group=group, async_op=True)
            return
        either = _nonzero_blocks(tensor).to(torch.uint8)
        yield dist.all_reduce(either, group=group, async_op=True)
        rows = either.nonzero().squeeze(1)
        if rows.numel() > SPARSE_UP_TO * len(either):
            self.dense[level][bucket] = True
            yield dist.all_reduce(tensor, group=group, async_op=True)
            return
        blocks = tensor.view(-1, BLOCK)
        values = blocks.index_select(0, rows)
        yield dist.all_reduce(values, group=group, async_op=True)
        blocks.index_copy_(0, rows, values)

    def _wait(self) -> float:
        """Finish the exchange level by level: each exchange waits for its collective and starts
        its next one, in one order on every rank (collectives in a group match one for one).
        Returns the global loss."""
        for level in range(len(self.pair_groups)):
            if level:
                for tensor, bucket in self._sent:
                    self._start(tensor, bucket, level)
            while self._works:
                works, self._works = self._works, []
                for exchange, work in works:
                    work.wait()
                    following = next(exchange, None)
                    if following is not None:
                        self._works.append((exchange, following))
        return self._sent[0][0].item()


_SAME_WIDTH_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _nonzero_blocks(tensor: torch.Tensor) -> torch.Tensor:
    """Which blocks of ``BLOCK`` elements have a bit set (``-0`` and NaN included), read as
    integers of the same width: their extremes are both 0 only if every element is. An int32
    max and min ran ~4x faster than ``blocks.any(1)`` on the floats here."""
    bits = tensor.view(-1, BLOCK).view(_SAME_WIDTH_INT[tensor.element_size()])
    return (bits.amax(1) != 0) | (bits.amin(1) != 0)


def _remove_all(handles) -> None:
    for handle in handles:
        handle.remove()
