"""Wrong answers to notebook 01's exercises."""
import re


def exact_only(texts):
    seen, kept = set(), []
    for i, t in enumerate(texts):
        if t not in seen:
            seen.add(t)
            kept.append(i)
    return kept


def _shingles(text):
    words = re.sub(r"[^\w\s]", " ", text.lower()).split()
    return {tuple(words[i:i + 3]) for i in range(max(len(words) - 2, 1))}


def loose_threshold(texts):
    kept, sets = [], []
    for i, t in enumerate(texts):
        s = _shingles(t)
        if all(len(s & u) / len(s | u) < 0.02 for u in sets):
            kept.append(i)
            sets.append(s)
    return kept


def keeps_the_last(texts):
    last = {t: i for i, t in enumerate(texts)}  # a later copy overwrites the first
    return sorted(last.values())


def no_overlap(text, size, overlap):
    words = text.split()
    return [" ".join(words[i:i + size]) for i in range(0, len(words), size)]


def stops_early(text, size, overlap):
    words = text.split()
    return [" ".join(words[i:i + size]) for i in range(0, max(len(words) - size, 1), size - overlap)]


WRONG = {
    "01.dedup": [("set() only", (exact_only,), "near-duplicates"),
                 ("threshold far too low", (loose_threshold,), "no copy"),
                 ("keeps the later copy", (keeps_the_last,), "kept the copy")],
    "01.chunk": [("no overlap", (no_overlap,), "share exactly"), ("stops a chunk early", (stops_early,), "last words")],
}
