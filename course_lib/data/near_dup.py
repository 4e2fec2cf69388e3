"""Near-duplicates: MinHash signatures, LSH banding, then the exact Jaccard of every candidate.

``set()`` (the textbook's dedup) misses a review re-posted with a word, the case or the punctuation
changed, and one copy in each split inflates the held-out score. Every step is vectorised over the
corpus: hashed word *k*-shingles (ASCII case and punctuation folded); multiply-shift hashes
``(a*x + b) >> 32`` with ``np.minimum.reduceat`` per review (the MinHash signature); LSH bands, with
``rows`` chosen so a pair at the threshold is found with probability >= 0.99; then each candidate's
*exact* Jaccard decides, and union-find keeps each cluster's first review. As the signature only
has to *find* pairs, 60 hash functions (12 bands x 5 rows at 0.8) do, where datasketch's estimating
default uses 128 (``bench/near_dup_bench.py`` compares the two).
"""
from __future__ import annotations

import functools
import itertools
import string
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from course_lib._runtime.rank_output import shown

_FOLD = bytes(32 if chr(c) in string.punctuation else c for c in range(256))  # ASCII punctuation -> space
MAX_ALL_PAIRS = 64  # a bigger LSH bucket is linked to its first member, not pair by pair
_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93], dtype=np.uint64)


def _words(texts: list[str]) -> list[list[bytes]]:
    """Each text's words as bytes, ASCII case and punctuation folded away (re-posting edits do not count)."""
    # one pass over all texts as UTF-8 bytes: lower() and translate() run in C on the whole
    # corpus (NUL separates texts; a NUL inside a text is folded to a space first)
    blob = "\x00".join(t.replace("\x00", " ") for t in texts).encode("utf-8", "surrogatepass")
    return [doc.split() for doc in blob.lower().translate(_FOLD).split(b"\x00")]


def flat_shingles(texts: list[str], k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``(hashes, offsets)``: the 64-bit hash of every word ``k``-shingle of every text, flat, and each
    text's start in it; raises ValueError if ``k < 1``. Words are numbered corpus-wide by one
    ``pandas.factorize``. Every text has a shingle, as ``np.minimum.reduceat`` needs (an empty text that
    of one empty word); repeats are kept (they do not change a minimum)."""
    if k < 1:
        raise ValueError(f"shingle size k must be >= 1, got {k}")
    words = [w or [b""] for w in _words(texts)]
    lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    codes, _ = pd.factorize(np.fromiter(itertools.chain.from_iterable(words), dtype=object, count=int(lens.sum())))
    ids = codes.astype(np.uint64) + np.uint64(1)
    starts = np.cumsum(lens) - lens                            # each text's first word
    counts = np.maximum(lens - k + 1, 1)                       # shingles per text
    offsets = np.cumsum(counts) - counts
    doc = np.repeat(np.arange(len(lens)), counts)
    pos = starts[doc] + (np.arange(len(doc)) - offsets[doc])  # first word of each shingle
    end = (starts + lens)[doc]
    h = np.zeros(len(doc), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):
            idx = pos + j
            word = np.where(idx < end, ids[np.minimum(idx, len(ids) - 1)], np.uint64(0))
            h = (h ^ (word * _MULT[j % 4])) * np.uint64(0xFF51AFD7ED558CCD)
    return h, offsets


def lsh_params(threshold: float, num_perm: int, target: float = 0.99) -> tuple[int, int]:
    """``(bands, rows)``: the largest ``rows`` whose ``num_perm // rows`` bands still find a pair of
    Jaccard ``threshold`` with probability >= ``target`` (more rows, fewer false candidates to
    verify); raises ValueError for a threshold outside (0, 1]. Notebook 01, §4."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    best = (num_perm, 1)
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if 1 - (1 - threshold**rows) ** bands >= target:
            best = (bands, rows)
    return best


def minhash_signatures(hashes: np.ndarray, offsets: np.ndarray, num_perm: int = 64, seed: int = 1,
                       progress: bool = True) -> np.ndarray:
    """``(num_perm, n_texts)`` uint32 MinHash signatures of :func:`flat_shingles`' output: one hash
    function at a time over the whole flat array (in place, no temporaries), minimum per text."""
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63, size=num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd
    b = rng.integers(0, 2**63, size=num_perm, dtype=np.uint64)
    sig = np.empty((num_perm, len(offsets)), dtype=np.uint32)
    buf = np.empty_like(hashes)
    with np.errstate(over="ignore"):
        for p in tqdm(range(num_perm), desc=shown("MinHash signatures"), disable=not progress, leave=False):
            np.multiply(hashes, a[p], out=buf)
            np.add(buf, b[p], out=buf)
            np.right_shift(buf, np.uint64(32), out=buf)
            sig[p] = np.minimum.reduceat(buf, offsets)
    return sig


def jaccard(x: np.ndarray, y: np.ndarray) -> float:
    """The exact Jaccard similarity of two sorted unique hash arrays."""
    inter = len(np.intersect1d(x, y, assume_unique=True))
    return inter / (len(x) + len(y) - inter)


@dataclass
class NearDupResult:
    """What :func:`find_near_duplicates` found, as indices into its ``texts``."""

    pairs: list[tuple[int, int, float]]      # (i, j, exact Jaccard), i < j, Jaccard >= threshold
    keep: list[int]                          # first member of every cluster of near-duplicates + all singletons
    dropped: list[int]
    candidates: int                          # LSH candidate pairs checked exactly
    params: dict = field(default_factory=dict)
    seconds: float = 0.0

    def straddling(self, n_train: int) -> list[tuple[int, int, float]]:
        """For ``texts = train + test``: the pairs with one member in each, ``(train index, test index, Jaccard)``."""
        return [(i, j - n_train, s) for i, j, s in self.pairs if i < n_train <= j]


def _bucket_pairs(keys: np.ndarray) -> set[tuple[int, int]]:
    """The pairs ``(i, j)``, ``i < j``, of texts that share a bucket ``key``."""
    order = np.argsort(keys, kind="stable")
    pairs: set[tuple[int, int]] = set()
    for group in np.split(order, np.flatnonzero(np.diff(keys[order])) + 1):
        g = np.sort(group).tolist()
        if len(g) <= MAX_ALL_PAIRS:
            pairs.update(itertools.combinations(g, 2))
        else:  # a huge bucket (e.g. a corpus of copies): link to its first member, not n^2 pairs
            pairs.update((g[0], other) for other in g[1:])
    return pairs


def find_near_duplicates(
    texts: list[str],
    threshold: float = 0.8,
    num_perm: int = 64,
    k: int = 3,
    seed: int = 1,
    progress: bool = True,
) -> NearDupResult:
    """A :class:`NearDupResult`: the pairs whose word-``k``-shingle Jaccard is >= ``threshold`` (exact),
    and the texts to keep (the first of each cluster); raises TypeError for a text not a str.
    Notebook 01, §4. An LSH bucket of more than :data:`MAX_ALL_PAIRS` texts is linked to its first
    member, not pair by pair."""
    t0 = time.perf_counter()
    texts = list(texts)
    if not texts:
        return NearDupResult([], [], [], 0, {"threshold": threshold}, 0.0)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must be strings; item {bad[0]} is {type(texts[bad[0]]).__name__}")
    flat, offsets = flat_shingles(texts, k)
    bands, rows = lsh_params(threshold, num_perm)
    sig = minhash_signatures(flat, offsets, bands * rows, seed, progress=progress)
    band_rng = np.random.default_rng(seed + 1)
    band_mult = band_rng.integers(1, 2**63, size=rows, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    candidates: set[tuple[int, int]] = set()
    with np.errstate(over="ignore"):
        for band in range(bands):
            block = sig[band * rows:(band + 1) * rows].astype(np.uint64)
            keys = (block * band_mult[:, None]).sum(axis=0, dtype=np.uint64)
            candidates |= _bucket_pairs(keys)
    pairs = []
    parent = list(range(len(texts)))  # union-find: the root of a cluster is its first text, the one kept
    ends = np.append(offsets[1:], len(flat))

    @functools.cache  # unique shingles, only for texts that are candidates
    def shingle_set(i: int) -> np.ndarray:
        return np.unique(flat[offsets[i]:ends[i]])

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in sorted(candidates):
        s = jaccard(shingle_set(i), shingle_set(j))
        if s >= threshold:
            pairs.append((i, j, s))
            ri, rj = root(i), root(j)
            parent[max(ri, rj)] = min(ri, rj)
    keep = [i for i in range(len(texts)) if root(i) == i]
    dropped = [i for i in range(len(texts)) if root(i) != i]
    params = {"threshold": threshold, "num_perm": bands * rows, "k": k, "bands": bands, "rows": rows}
    return NearDupResult(pairs, keep, dropped, len(candidates), params, time.perf_counter() - t0)


# --------------------------------------------------------------------------- planted pairs
def plant_near_duplicates(
    texts: list[str], n: int, edit_rate: float = 0.02, seed: int = 0
) -> tuple[list[str], list[tuple[int, int]]]:
    """``(corpus, planted)``: ``texts`` followed by edited copies of ``n`` random ones, and the
    ``(source, copy)`` index pairs. Notebook 01, optional deep-dive A. Each copy gets
    ``max(1, edit_rate * words)`` word insertions or deletions, then random case changes and
    punctuation swaps: the edits people make when re-posting a review."""
    rng = np.random.default_rng(seed)
    filler = ["really", "very", "just", "movie", "film", "quite", "so", "honestly"]
    out = list(texts)
    planted = []
    for src in rng.choice(len(texts), size=n, replace=False).tolist():
        words = texts[src].split()
        for _ in range(max(1, int(round(edit_rate * len(words))))):
            pos = int(rng.integers(0, len(words) + 1))
            if rng.random() < 0.5 or len(words) < 2:
                words.insert(pos, filler[int(rng.integers(len(filler)))])
            else:
                del words[min(pos, len(words) - 1)]
        words = [w.upper() if rng.random() < 0.05 else w for w in words]
        copy = " ".join(words).replace(".", "!" if rng.random() < 0.5 else " .").replace(",", ";")
        planted.append((src, len(out)))
        out.append(copy)
    return out, planted


def pair_scores(found: set[tuple[int, int]], planted: list[tuple[int, int]], n_original: int) -> dict:
    """``{planted, found_involving_planted, recall, precision}`` of the ``found`` pairs against the
    planted ones. Notebook 01, optional deep-dive A. Precision counts only found pairs that involve a
    planted copy: pairs among the original reviews are real near-duplicates, not errors."""
    truth = {tuple(sorted(p)) for p in planted}
    involving = {p for p in found if max(p) >= n_original}
    hit = len(truth & involving)
    return {
        "planted": len(truth),
        "found_involving_planted": len(involving),
        "recall": hit / len(truth) if truth else 1.0,
        "precision": hit / len(involving) if involving else 1.0,
    }
