"""Notebook 02's exercises, on real tokenized reviews: a collate function whose mask a real
model honours, and length-grouped batches that waste little padding."""
from __future__ import annotations

import math
import random

import torch

from course_lib.exercises.base import Exercise, Fail, book_data, learner_call, register
from course_lib.lab.i18n import both, tr


def _reviews(seed: int):
    data = book_data()
    rng = random.Random(seed)
    order = sorted(rng.sample(range(len(data.train)), 40), key=lambda i: len(data.train.sequence(i)))
    picked = [order[j * (len(order) - 1) // 7] for j in range(8)]  # 8 of them, shortest to longest
    rng.shuffle(picked)
    return data, [{"input_ids": data.train.sequence(i).tolist(), "label": int(data.train.labels[i])} for i in picked]


def _check_collate(funcs: dict, seed: int, lang: str) -> str:
    from course_lib.ddp.models import build_model

    data, features = _reviews(seed)
    pad = data.info["tokenizer"]["pad_id"]
    got = learner_call("02.collate", lang, funcs["collate"], [dict(f) for f in features], pad)
    keys = ("input_ids", "attention_mask", "label")
    missing = [k for k in keys if not isinstance(got, dict) or k not in got]
    if missing:
        raise Fail(tr("the batch has no {k}: return a dict with input_ids, attention_mask and label", lang,
                      k=", ".join(missing)))
    wrong_type = [k for k in keys if not isinstance(got[k], torch.Tensor)]
    if wrong_type:
        raise Fail(tr("{k} must be a torch tensor (dtype torch.long), got {t}", lang, k=wrong_type[0],
                      t=type(got[wrong_type[0]]).__name__))
    ids, mask = got["input_ids"], got["attention_mask"]
    lengths = [len(f["input_ids"]) for f in features]
    want = (len(features), max(lengths))
    if tuple(ids.shape) != want or tuple(mask.shape) != want:
        raise Fail(tr("input_ids is {a} and attention_mask {b}; expected {w}: one row per review, padded to the longest "
                      "review of this batch", lang, a=tuple(ids.shape), b=tuple(mask.shape), w=want))
    for row, n in enumerate(lengths):
        if ids[row, :n].tolist() != features[row]["input_ids"]:
            raise Fail(tr("row {r} does not start with review {r}'s tokens: put the tokens first and the padding after "
                          "them (right padding)", lang, r=row))
        if mask[row].tolist() != [1] * n + [0] * (want[1] - n):
            raise Fail(tr("row {r}'s attention_mask is wrong: 1 on its {n} real tokens, 0 on the {p} padding positions",
                          lang, r=row, n=n, p=want[1] - n))
        if set(ids[row, n:].tolist()) - {pad}:
            raise Fail(tr("row {r} is padded with something other than pad_id={p}", lang, r=row, p=pad))
    if got["label"].tolist() != [f["label"] for f in features]:
        raise Fail(tr("label does not follow the reviews' order", lang))
    # the proof a model gives: each review padded in the batch is predicted as it is alone
    torch.manual_seed(seed)
    for name in ("bag", "transformer"):
        model = build_model(name, data.info["tokenizer"]["vocab_size"], **({"dim": 16} if name == "bag" else {})).eval()
        with torch.no_grad():
            batch = model(ids.long(), mask)
            for row, f in enumerate(features):
                alone = model(torch.tensor([f["input_ids"]]), torch.ones(1, lengths[row], dtype=torch.long))
                if not torch.allclose(batch[row], alone[0], atol=1e-4):
                    raise Fail(tr("the {m} model's output for review {r} changes when it is padded in your batch ({a} "
                                  "alone, {b} in the batch)", lang, m=name, r=row, a=alone[0].tolist(),
                                  b=batch[row].tolist()))
    return tr("{k} real reviews of {lo} to {hi} tokens: a real bag model and a transformer predict each one in your padded "
              "batch exactly as alone", lang, k=len(features), lo=min(lengths), hi=max(lengths))


def _check_group(funcs: dict, seed: int, lang: str) -> str:
    from course_lib.data.batching import padded_share, random_batches

    lengths = book_data().train.lengths().tolist()
    size = random.Random(seed).choice([16, 32])
    got = learner_call("02.group", lang, funcs["length_batches"], list(lengths), size, seed)
    flat = [i for b in got for i in b]
    if sorted(flat) != list(range(len(lengths))):
        extra, missing = len(flat) - len(set(flat)), len(set(range(len(lengths))) - set(flat))
        raise Fail(tr("every review must be in exactly one batch: {m} missing, {e} repeated", lang, m=missing, e=extra))
    if max(map(len, got)) > size or len(got) > math.ceil(len(lengths) / size) + 50:
        raise Fail(tr("batches must hold at most {s} reviews and not be needlessly small ({n} batches for {r} reviews)",
                      lang, s=size, n=len(got), r=len(lengths)))
    mine, rand = padded_share(lengths, got), padded_share(lengths, random_batches(len(lengths), size, seed))
    if mine > rand / 2:
        raise Fail(tr("your batches leave {m:.0%} of the tokens as padding, random batches {r:.0%}: put reviews of similar "
                      "length together", lang, m=mine, r=rand))
    means = [sum(lengths[i] for i in b) / len(b) for b in got]
    if means == sorted(means) or means == sorted(means, reverse=True):
        raise Fail(tr("your batches come sorted by length: shuffle the order of the batches, or every epoch is the same "
                      "curriculum from short to long", lang))
    again = learner_call("02.group", lang, funcs["length_batches"], list(lengths), size, seed + 1)
    if again == got:
        raise Fail(tr("another seed gives the same batches: use the seed for the shuffles", lang))
    return tr("{n} real reviews in batches of {s}: {m:.1%} padding against {r:.1%} for random batches, in a random order",
              lang, n=len(lengths), s=size, m=mine, r=rand)


register(Exercise(
    "02.collate", both("A collate function with attention_mask"), ("collate",),
    _check_collate,
    hints=[both("A batch is a rectangle: one row per review, as wide as the longest review of this batch (dynamic "
                "padding). A review's tokens go at the start of its row and padding (pad_id) after them; the mask says "
                "which positions are which."),
           both("torch.full((rows, width), pad_id, dtype=torch.long) is a rectangle of padding to copy the reviews into; "
                "torch.zeros of the same shape is a mask with nothing real in it yet."),
           both("For row r with n tokens: input_ids[r, :n] holds the review's ids and attention_mask[r, :n] is 1. Return "
                "a dict with input_ids, attention_mask and label, all of dtype torch.long.")]))

register(Exercise(
    "02.group", both("Batches of similar lengths"), ("length_batches",), _check_group,
    hints=[both("Sorting all reviews by length gives batches with almost no padding, but then every epoch is the same "
                "order, from short to long. Keep similar lengths together only locally, and let the rest be random."),
           both("random.Random(seed) gives a generator of your own: its shuffle(list) changes with the seed, and the same "
                "seed gives the same batches again."),
           both("Shuffle the indices; sort each slice of about 50 batches' worth by length and cut it into batches; at "
                "the end, shuffle the list of batches.")]))
