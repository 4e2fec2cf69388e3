"""Notebook 02: a collate function with attention_mask; batches of similar lengths.
notebook 02：带 attention_mask 的整理函数；长度相近的样本组成批次。"""
import random

import torch


def collate(features, pad_id):
    # Pad every review to the longest one in this batch (dynamic padding), on the right;
    # the mask says which positions are real (1) and which are padding (0): "padding, don't look".
    # 每条影评填充到本批最长的长度（动态填充），填在右边；mask 标出真实位置（1）和填充位置（0）："填充别看"。
    width = max(len(f["input_ids"]) for f in features)
    input_ids = torch.full((len(features), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(features), width), dtype=torch.long)
    for row, f in enumerate(features):
        n = len(f["input_ids"])
        input_ids[row, :n] = torch.tensor(f["input_ids"], dtype=torch.long)
        attention_mask[row, :n] = 1
    labels = torch.tensor([f["label"] for f in features], dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "label": labels}


def length_batches(lengths, batch_size, seed):
    # Shuffle, cut into mega-batches of 50 batches, sort each by length, cut into batches,
    # then shuffle the order of the batches: little padding, and still random for SGD.
    # 先打乱，每 50 个批次的量为一大块，块内按长度排序再切成批次，最后打乱批次顺序：填充少，对 SGD 仍然随机。
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches = []
    mega = 50 * batch_size
    for start in range(0, len(order), mega):
        chunk = sorted(order[start:start + mega], key=lambda i: lengths[i])
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches
