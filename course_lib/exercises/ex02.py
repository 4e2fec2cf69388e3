"""Notebook 02's exercises, on real tokenized reviews: a collate function whose mask a real
model honours, and length-grouped batches that waste little padding."""
from __future__ import annotations

import math
import random

import torch

from course_lib.exercises.base import Exercise, Fail, book_data, learner_call, register, say


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
        raise Fail(say(lang, "the batch has no {k}: return a dict with input_ids, attention_mask and label",
                       "批次里没有 {k}：请返回包含 input_ids、attention_mask 和 label 的字典", k=", ".join(missing)))
    wrong_type = [k for k in keys if not isinstance(got[k], torch.Tensor)]
    if wrong_type:
        raise Fail(say(lang, "{k} must be a torch tensor (dtype torch.long), got {t}",
                       "{k} 必须是 torch 张量（dtype torch.long），实际是 {t}", k=wrong_type[0],
                       t=type(got[wrong_type[0]]).__name__))
    ids, mask = got["input_ids"], got["attention_mask"]
    lengths = [len(f["input_ids"]) for f in features]
    want = (len(features), max(lengths))
    if tuple(ids.shape) != want or tuple(mask.shape) != want:
        raise Fail(say(lang, "input_ids is {a} and attention_mask {b}; expected {w}: one row per review, padded to the "
                             "longest review of this batch", "input_ids 是 {a}，attention_mask 是 {b}；应为 {w}："
                             "每条影评一行，填充到本批次最长影评的长度", a=tuple(ids.shape), b=tuple(mask.shape), w=want))
    for row, n in enumerate(lengths):
        if ids[row, :n].tolist() != features[row]["input_ids"]:
            raise Fail(say(lang, "row {r} does not start with review {r}'s tokens: put the tokens first and the padding "
                                 "after them (right padding)", "第 {r} 行不是以第 {r} 条影评的词元开头："
                                 "词元在前，填充在后（右填充）", r=row))
        if mask[row].tolist() != [1] * n + [0] * (want[1] - n):
            raise Fail(say(lang, "row {r}'s attention_mask is wrong: 1 on its {n} real tokens, 0 on the {p} padding "
                                 "positions", "第 {r} 行的 attention_mask 不对：{n} 个真实词元处为 1，{p} 个填充位置为 0",
                           r=row, n=n, p=want[1] - n))
        if set(ids[row, n:].tolist()) - {pad}:
            raise Fail(say(lang, "row {r} is padded with something other than pad_id={p}", "第 {r} 行填充的不是 pad_id={p}",
                           r=row, p=pad))
    if got["label"].tolist() != [f["label"] for f in features]:
        raise Fail(say(lang, "label does not follow the reviews' order", "label 的顺序和影评的顺序对不上"))
    # the proof a model gives: each review padded in the batch is predicted as it is alone
    torch.manual_seed(seed)
    for name in ("bag", "transformer"):
        model = build_model(name, data.info["tokenizer"]["vocab_size"], **({"dim": 16} if name == "bag" else {})).eval()
        with torch.no_grad():
            batch = model(ids.long(), mask)
            for row, f in enumerate(features):
                alone = model(torch.tensor([f["input_ids"]]), torch.ones(1, lengths[row], dtype=torch.long))
                if not torch.allclose(batch[row], alone[0], atol=1e-4):
                    raise Fail(say(lang, "the {m} model's output for review {r} changes when it is padded in your batch "
                                         "({a} alone, {b} in the batch)", "{m} 模型对第 {r} 条影评的输出，在你的批次里"
                                         "填充后变了（单独 {a}，批次中 {b}）", m=name, r=row, a=alone[0].tolist(),
                                   b=batch[row].tolist()))
    return say(lang, "{k} real reviews of {lo} to {hi} tokens: a real bag model and a transformer predict each one "
                     "in your padded batch exactly as alone", "{k} 条真实影评（{lo} 到 {hi} 个词元）：真实的 bag 模型和 "
                     "transformer 对你的填充批次中每一条的预测与单独预测完全一样", k=len(features), lo=min(lengths),
               hi=max(lengths))


def _check_group(funcs: dict, seed: int, lang: str) -> str:
    from course_lib.data.batching import padded_share, random_batches

    lengths = book_data().train.lengths().tolist()
    size = random.Random(seed).choice([16, 32])
    got = learner_call("02.group", lang, funcs["length_batches"], list(lengths), size, seed)
    flat = [i for b in got for i in b]
    if sorted(flat) != list(range(len(lengths))):
        extra, missing = len(flat) - len(set(flat)), len(set(range(len(lengths))) - set(flat))
        raise Fail(say(lang, "every review must be in exactly one batch: {m} missing, {e} repeated",
                       "每条影评必须恰好在一个批次里：{m} 条缺失，{e} 条重复", m=missing, e=extra))
    if max(map(len, got)) > size or len(got) > math.ceil(len(lengths) / size) + 50:
        raise Fail(say(lang, "batches must hold at most {s} reviews and not be needlessly small ({n} batches for {r} "
                             "reviews)", "每个批次最多 {s} 条，也不要无谓地切得太小（{r} 条影评切成了 {n} 个批次）",
                       s=size, n=len(got), r=len(lengths)))
    mine, rand = padded_share(lengths, got), padded_share(lengths, random_batches(len(lengths), size, seed))
    if mine > rand / 2:
        raise Fail(say(lang, "your batches leave {m:.0%} of the tokens as padding, random batches {r:.0%}: put reviews "
                             "of similar length together", "你的批次里 {m:.0%} 的词元是填充，随机组成的批次是 {r:.0%}："
                             "把长度相近的影评放在一起", m=mine, r=rand))
    means = [sum(lengths[i] for i in b) / len(b) for b in got]
    if means == sorted(means) or means == sorted(means, reverse=True):
        raise Fail(say(lang, "your batches come sorted by length: shuffle the order of the batches, or every epoch is "
                             "the same curriculum from short to long", "你的批次按长度排好了序：请打乱批次的顺序，"
                             "否则每个 epoch 都是从短到长的同一套课程"))
    again = learner_call("02.group", lang, funcs["length_batches"], list(lengths), size, seed + 1)
    if again == got:
        raise Fail(say(lang, "another seed gives the same batches: use the seed for the shuffles",
                       "换了种子批次却一样：打乱时要用上 seed"))
    return say(lang, "{n} real reviews in batches of {s}: {m:.1%} padding against {r:.1%} for random batches, in a "
                     "random order", "{n} 条真实影评、每个批次 {s} 条：填充占 {m:.1%}，随机组成的批次为 {r:.1%}，"
                     "批次的顺序是随机的", n=len(lengths), s=size, m=mine, r=rand)


register(Exercise(
    "02.collate", ("A collate function with attention_mask", "带 attention_mask 的整理函数"), ("collate",),
    _check_collate,
    hints=[("A batch is a rectangle: one row per review, as wide as the longest review of this batch (dynamic "
            "padding). A review's tokens go at the start of its row and padding (pad_id) after them; the mask says "
            "which positions are which.",
            "一个批次是一个矩形：每条影评一行，宽度等于本批次最长的影评（动态填充）。影评的词元放在这一行的开头，"
            "后面是填充（pad_id）；注意力掩码标出哪些位置是哪一种。"),
           ("torch.full((rows, width), pad_id, dtype=torch.long) is a rectangle of padding to copy the reviews "
            "into; torch.zeros of the same shape is a mask with nothing real in it yet.",
            "torch.full((rows, width), pad_id, dtype=torch.long) 是一个全是填充的矩形，把各条影评复制进去；"
            "同样形状的 torch.zeros 是一个还没有标出任何真实词元的注意力掩码。"),
           ("For row r with n tokens: input_ids[r, :n] holds the review's ids and attention_mask[r, :n] is 1. "
            "Return a dict with input_ids, attention_mask and label, all of dtype torch.long.",
            "第 r 行有 n 个词元：input_ids[r, :n] 放这条影评的编号，attention_mask[r, :n] 设为 1。返回一个包含 "
            "input_ids、attention_mask 和 label 的 dict，dtype 都是 torch.long。")]))

register(Exercise(
    "02.group", ("Batches of similar lengths", "长度相近的批次"), ("length_batches",), _check_group,
    hints=[("Sorting all reviews by length gives batches with almost no padding, but then every epoch is the same "
            "order, from short to long. Keep similar lengths together only locally, and let the rest be random.",
            "把所有影评按长度排序，组成的批次几乎没有填充，但这样每个 epoch 都是同一个顺序，从短到长。"
            "只在局部把长度相近的放在一起，其余的保持随机。"),
           ("random.Random(seed) gives a generator of your own: its shuffle(list) changes with the seed, and the "
            "same seed gives the same batches again.",
            "random.Random(seed) 给你一个自己的随机数生成器：它的 shuffle(list) 随种子变化，同一个种子给出同样的批次。"),
           ("Shuffle the indices; sort each slice of about 50 batches' worth by length and cut it into batches; at "
            "the end, shuffle the list of batches.",
            "先打乱下标；每次取大约 50 个批次的量，按长度排序后切成批次；最后打乱批次的列表。")]))
