"""Why ``attention_mask`` matters: the same reviews, padded two ways, with and without it.

The chapter says padding makes a batch's sequences the same length and the mask tells the
model "do not look at the padding". Padding is cheap to show (notebook 02's heatmap); that the
mask *matters* is shown here with a real model: a bag of n-grams trained for a few seconds in
this process on the prepared reviews. Each review is scored alone (no padding at all), then
inside a padded batch, with the mask and with the mask ignored (all ones). With the mask the
answers are the same whatever the padding; without it the padding tokens join the average the
model pools, and answers change with the length of the review's batch-mates. (A transformer
uses the mask the same way inside attention: padded positions get no attention weight.)
"""
from __future__ import annotations

import contextlib

import pandas as pd
import torch
import torch.nn.functional as F

from course_lib.data.batching import pad_batch
from course_lib.ddp.evaluation import stratified_subset
from course_lib.ddp.models import build_model
from course_lib.lab.i18n import tr


@contextlib.contextmanager
def one_thread():
    """torch computes on one thread inside the block. In a notebook's own process the model is small
    and the machine may be shared: with another program busy on one of two cores, two threads wait
    for each other and ran notebook 02's model 3.5x slower (16.6 s against 4.7 s idle), one thread
    the same either way (6.9 s against 6.8 s; issue 63)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train_quickly(prepared, epochs: int = 3, batch_size: int = 64, lr: float = 5e-3, seed: int = 0) -> torch.nn.Module:
    """A ``bag`` classifier trained on ``prepared.train`` in this process (seconds on a CPU; on one
    thread, :func:`one_thread`)."""
    with one_thread():
        return _train(prepared, epochs, batch_size, lr, seed)


def _train(prepared, epochs: int, batch_size: int, lr: float, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    pad_id = prepared.info["tokenizer"]["pad_id"]
    model = build_model("bag", prepared.info["tokenizer"]["vocab_size"])
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(prepared.train), generator=gen).split(batch_size):
            batch = prepared.train.batch(idx.tolist(), pad_id)
            loss = F.cross_entropy(model(batch["input_ids"], batch["attention_mask"]), batch["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def _p_positive(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return model(ids, mask).softmax(-1)[:, 1]


def why_the_mask_matters(prepared, model: torch.nn.Module | None = None, n: int = 16, shorter_than: int = 160,
                         pad_to: int = 512, lang: str | None = None) -> pd.DataFrame:
    """``n`` short held-out reviews (both classes, under ``shorter_than`` tokens) scored alone,
    then in one batch padded to its longest member and to ``pad_to`` tokens, with the mask and
    with the mask ignored. One row per way: how many answers agree with the review scored
    alone, and the largest change in P(positive) (with the mask: float rounding, ~1e-7). Used in notebook 02 (§6)."""
    model = model or train_quickly(prepared)
    pad_id = prepared.info["tokenizer"]["pad_id"]
    short = torch.nonzero(prepared.test.lengths() < shorter_than).flatten()
    idx = short[stratified_subset(prepared.test.labels[short], n)].tolist()
    alone = torch.cat([_p_positive(model, seq, torch.ones_like(seq))
                       for seq in (prepared.test.sequence(i)[None].long() for i in idx)])
    reviews = [{"input_ids": prepared.test.sequence(i)} for i in idx]
    batch, padded_max = pad_batch(reviews, pad_id), pad_batch(reviews, pad_id, max_length=pad_to)
    width = padded_max["input_ids"].shape[1]
    rows = []
    for padding, b in ((tr("to the batch's longest review", lang), batch), (tr("to {n} tokens", lang, n=width), padded_max)):
        share = 1 - b["attention_mask"].float().mean().item()
        for with_mask in (True, False):
            mask = b["attention_mask"] if with_mask else torch.ones_like(b["attention_mask"])
            p = _p_positive(model, b["input_ids"], mask)
            rows.append({tr("padded", lang): padding, tr("padding share", lang): f"{share:.0%}",
                         tr("mask", lang): tr("used" if with_mask else "ignored (all ones)", lang),
                         tr("same answer as alone", lang): f"{int(((p > 0.5) == (alone > 0.5)).sum())}/{len(idx)}",
                         tr("largest change in P(positive)", lang): f"{float((p - alone).abs().max()):.1g}"})
    return pd.DataFrame(rows).set_index([tr("padded", lang), tr("mask", lang)])
