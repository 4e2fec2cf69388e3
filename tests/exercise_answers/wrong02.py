"""Wrong answers to notebook 02's exercises."""
import random

import torch


def mask_all_ones(features, pad_id):
    width = max(len(f["input_ids"]) for f in features)
    ids = torch.full((len(features), width), pad_id, dtype=torch.long)
    for r, f in enumerate(features):
        ids[r, :len(f["input_ids"])] = torch.tensor(f["input_ids"])
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "label": torch.tensor([f["label"] for f in features])}


def left_padding(features, pad_id):
    width = max(len(f["input_ids"]) for f in features)
    ids = torch.full((len(features), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, f in enumerate(features):
        n = len(f["input_ids"])
        ids[r, width - n:] = torch.tensor(f["input_ids"])
        mask[r, width - n:] = 1
    return {"input_ids": ids, "attention_mask": mask, "label": torch.tensor([f["label"] for f in features])}


def sorted_batches(lengths, batch_size, seed):
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def random_only(lengths, batch_size, seed):
    order = list(range(len(lengths)))
    random.Random(seed).shuffle(order)
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


WRONG = {
    "02.collate": [("mask of ones", (mask_all_ones,), "attention_mask is wrong"),
                   ("left padding", (left_padding,), "right padding")],
    "02.group": [("sorted, never shuffled", (sorted_batches,), "sorted by length"),
                 ("random batches", (random_only,), "similar length")],
}
