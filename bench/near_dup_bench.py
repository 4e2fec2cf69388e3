"""Near-duplicate detection: ours (NumPy MinHash + LSH + exact check) vs datasketch, on the
deduplicated, cleaned IMDB train reviews plus planted edited copies, in one run.

    python bench/near_dup_bench.py [--planted 500] [--limit N]
"""
import argparse
import string
import time

import numpy as np
from common import write
from datasketch import MinHash, MinHashLSH

from course_lib.data.near_dup import find_near_duplicates, flat_shingles, pair_scores, plant_near_duplicates
from course_lib.data.sources import clean_text, exact_dedup, raw_reviews

FOLD = bytes.maketrans(string.punctuation.encode(), b" " * len(string.punctuation))  # the kit's folding


def datasketch_pairs(texts, threshold, num_perm=128, k=3):
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    sigs = []
    for i, t in enumerate(texts):
        w = t.replace("\x00", " ").encode("utf-8", "surrogatepass").lower().translate(FOLD).split()
        shingles = {b" ".join(w[j:j + k]) for j in range(max(1, len(w) - k + 1))}
        m = MinHash(num_perm=num_perm)
        m.update_batch(list(shingles))
        lsh.insert(i, m)
        sigs.append(m)
    pairs = set()
    for i, m in enumerate(sigs):
        for j in lsh.query(m):
            if j != i and sigs[i].jaccard(sigs[j]) >= threshold:
                pairs.add((min(i, j), max(i, j)))
    return pairs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--planted", type=int, default=500)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--threshold", type=float, default=0.8)
    a = ap.parse_args()
    texts, _ = raw_reviews("offline")
    texts = [clean_text(texts[i]) for i in exact_dedup(texts).keep][: a.limit or None]
    corpus, planted = plant_near_duplicates(texts, a.planted, seed=0)
    flat, offsets = flat_shingles(corpus)
    sh = [np.unique(part) for part in np.split(flat, offsets[1:])]
    true_j = [float(len(np.intersect1d(sh[s], sh[c])) / len(np.union1d(sh[s], sh[c]))) for s, c in planted]

    t0 = time.perf_counter()
    ours = find_near_duplicates(corpus, threshold=a.threshold, progress=False)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = datasketch_pairs(corpus, a.threshold)
    t_ds = time.perf_counter() - t0
    write("near_dup", {
        "corpus": len(corpus), "planted": len(planted), "threshold": a.threshold,
        "planted_true_jaccard": {"min": min(true_j), "mean": float(np.mean(true_j))},
        "ours": {"seconds": round(t_ours, 2), **ours.params,
                 **pair_scores({(i, j) for i, j, _ in ours.pairs}, planted, len(texts))},
        "datasketch": {"seconds": round(t_ds, 2), **pair_scores(theirs, planted, len(texts))},
        "speedup_vs_datasketch": round(t_ds / t_ours, 2),
    })


if __name__ == "__main__":
    main()
