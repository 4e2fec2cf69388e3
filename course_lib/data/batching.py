"""Padding and batching: a batch is a rectangle, reviews are not.

Three ways to make the rectangle: pad to ``max_length`` (simple, mostly padding); pad each batch to
its own longest member (:func:`pad_batch`); batch similar lengths together first
(:func:`length_grouped_batches`, random through shuffled *mega-batches*).
"""
from __future__ import annotations

import numpy as np
import torch


def pad_batch(features: list[dict], pad_id: int, max_length: int | None = None) -> dict[str, torch.Tensor]:
    """``input_ids`` + ``attention_mask`` (+ each integer key, e.g. ``label``) of ``features`` as long
    tensors, padded to the longest member or to ``max_length`` if longer (the pad-to-max baseline);
    raises ValueError for an empty batch. Notebook 02, §3."""
    if not features:
        raise ValueError("cannot collate an empty batch")
    longest = max(len(f["input_ids"]) for f in features)
    width = max(max_length or 0, longest)
    ids = torch.full((len(features), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(features), width), dtype=torch.long)
    for i, f in enumerate(features):
        n = len(f["input_ids"])
        ids[i, :n] = torch.as_tensor(f["input_ids"], dtype=torch.long)
        mask[i, :n] = 1
    out = {"input_ids": ids, "attention_mask": mask}
    for key in features[0]:
        if key not in out and isinstance(features[0][key], (int, np.integer)):
            out[key] = torch.tensor([int(f[key]) for f in features])
    return out


def length_grouped_batches(lengths, batch_size: int, seed: int = 0, mega: int = 50) -> list[list[int]]:
    """Batches of indices in which similar lengths share a batch; raises ValueError if ``batch_size < 1``.
    Shuffle, cut into mega-batches of ``mega * batch_size``, sort each by length, cut into batches,
    shuffle the batch order: random enough for SGD, little padding."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    lengths = np.asarray(lengths)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(lengths))
    batches: list[list[int]] = []
    for start in range(0, len(order), mega * batch_size):
        chunk = order[start:start + mega * batch_size]
        chunk = chunk[np.argsort(-lengths[chunk], kind="stable")]
        batches.extend(chunk[i:i + batch_size].tolist() for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def random_batches(n: int, batch_size: int, seed: int = 0) -> list[list[int]]:
    """Indices ``0..n-1`` shuffled by ``seed``, cut into batches of ``batch_size`` (the last may be short)."""
    order = np.random.default_rng(seed).permutation(n)
    return [order[i:i + batch_size].tolist() for i in range(0, n, batch_size)]


def padded_share(lengths, batches: list[list[int]]) -> float:
    """Share of the tokens in the batches' rectangles that are padding (0.0 for no batches), each batch
    padded to its own longest member."""
    lengths = np.asarray(lengths)
    real = sum(int(lengths[b].sum()) for b in batches)
    total = sum(int(lengths[b].max()) * len(b) for b in batches)
    return 1.0 - real / total if total else 0.0


def padding_report(lengths, batch_size: int = 32, max_length: int = 256, seed: int = 0) -> dict:
    """Padded shares ``pad_to_max``, ``dynamic``, ``grouped`` (lengths truncated at ``max_length``), their
    ``pad_tokens``, and ``grouped_cut_vs_pad_to_max``: what length grouping saves. Notebook 02, §4."""
    lengths = np.minimum(np.asarray(lengths), max_length)
    real = float(lengths.sum())
    shares = {"pad_to_max": 1.0 - real / (max_length * len(lengths)) if len(lengths) else 0.0,
              "dynamic": padded_share(lengths, random_batches(len(lengths), batch_size, seed)),
              "grouped": padded_share(lengths, length_grouped_batches(lengths, batch_size, seed))}
    pad_tokens = {name: share / (1 - share) * real if share < 1 else float("inf") for name, share in shares.items()}
    cut = 1 - pad_tokens["grouped"] / pad_tokens["pad_to_max"] if pad_tokens["pad_to_max"] else 0.0
    return {"max_length": max_length, "batch_size": batch_size, **shares, "pad_tokens": pad_tokens,
            "grouped_cut_vs_pad_to_max": cut}
