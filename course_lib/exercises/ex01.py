"""Notebook 01's exercises, on real reviews: remove exact and near-duplicate copies; chunk a review."""
from __future__ import annotations

import random

from course_lib.exercises.base import Exercise, Fail, learner_call, register
from course_lib.lab.i18n import both, tr

ORIGINALS = 240  # 01.dedup's real reviews, before the planted copies


def planted_corpus(seed: int) -> tuple[list[str], list[int], dict[int, int]]:
    """``ORIGINALS`` real reviews with no near-duplicate among them, then planted copies: exact ones,
    and edited ones (a word or two inserted or deleted, case and punctuation changed). Returns
    the corpus, the indices that must stay (the originals) and copy -> original."""
    from course_lib.data.near_dup import find_near_duplicates, plant_near_duplicates
    from course_lib.data.sources import clean_text, raw_reviews

    rng = random.Random(seed)
    texts, _ = raw_reviews("offline")
    pool = [clean_text(t) for t in rng.sample(texts, 2 * ORIGINALS) if len(t.split()) < 400]
    near = find_near_duplicates(pool, threshold=0.5, progress=False)  # none of the originals resemble another
    involved = {i for a, b, _ in near.pairs for i in (a, b)}
    originals = [t for i, t in enumerate(pool) if i not in involved][:ORIGINALS]
    corpus, planted = plant_near_duplicates(originals, 15, edit_rate=0.02, seed=seed)
    copy_of = {copy: src for src, copy in planted}
    for src in rng.sample(range(ORIGINALS), 15):
        copy_of[len(corpus)] = src
        corpus.append(originals[src])
    return corpus, list(range(ORIGINALS)), copy_of


def _check_dedup(funcs: dict, seed: int, lang: str) -> str:
    corpus, keep, copy_of = planted_corpus(seed)
    got = learner_call("01.dedup", lang, funcs["remove_duplicates"], list(corpus))
    if not isinstance(got, (list, tuple)) or not all(isinstance(i, int) for i in got):
        raise Fail(tr("remove_duplicates must return the indices it keeps (a list of ints), got {t}", lang,
                      t=type(got).__name__))
    if not got:
        raise Fail(tr("remove_duplicates returned no index: return the indices of the reviews to keep", lang))
    kept = set(got)
    exact = [c for c, s in copy_of.items() if corpus[c] == corpus[s]]
    swapped = [c for c, s in copy_of.items() if c in kept and s not in kept]
    if swapped:
        raise Fail(tr("for #{s} and its copy #{c} you kept the copy: keep the first occurrence (labels and order follow "
                      "the original)", lang, s=copy_of[swapped[0]], c=swapped[0]))
    kept_exact = [c for c in exact if c in kept]
    if kept_exact:
        raise Fail(tr("kept {k} of {n} exact copies (e.g. #{c} is #{s} again, character for character): compare the texts "
                      "exactly first (a set of the texts seen, as the chapter's set())", lang, k=len(kept_exact),
                      n=len(exact), c=kept_exact[0], s=copy_of[kept_exact[0]]))
    kept_near = [c for c in copy_of if c in kept and c not in exact]
    if kept_near:
        raise Fail(tr("kept {k} of {n} near-duplicates (e.g. #{c} is #{s} with a word or two and the punctuation changed): "
                      "exact comparison misses them; compare word 3-shingle sets, case and punctuation folded, and drop a "
                      "review whose Jaccard similarity to a kept one is >= 0.8", lang, k=len(kept_near),
                      n=len(copy_of) - len(exact), c=kept_near[0], s=copy_of[kept_near[0]]))
    lost = [i for i in keep if i not in kept]
    if lost:
        raise Fail(tr("dropped {k} reviews that have no copy (e.g. #{i}): your test of 'the same review' is too loose "
                      "(Jaccard >= 0.8 of word 3-shingles)", lang, k=len(lost), i=lost[0]))
    return tr("{n} reviews in, {k} kept: all {e} exact and {m} near-duplicate copies removed, no original lost", lang,
              n=len(corpus), k=len(kept), e=len(exact), m=len(copy_of) - len(exact))


def _check_chunk(funcs: dict, seed: int, lang: str) -> str:
    from course_lib.data.sources import clean_text, raw_reviews
    from course_lib.exercises.solutions.ex01 import chunk_words as reference

    rng = random.Random(seed)
    texts, _ = raw_reviews("offline")
    reviews = [clean_text(t) for t in rng.sample(texts, 20)] + ["a short review"]
    size = rng.randint(30, 80)
    overlap = rng.randint(1, size // 3)
    for r, text in enumerate(reviews):
        words = text.split()
        got = learner_call("01.chunk", lang, funcs["chunk_words"], text, size, overlap)
        want = reference(text, size, overlap)
        if got == want:
            continue
        if not got or not all(isinstance(c, str) for c in got):
            raise Fail(tr("chunk_words must return a list of chunks, each a string of words; got {g!r}", lang,
                          g=got[:2] if got else got))
        got_words = [c.split() for c in got]
        if any(len(c) > size for c in got_words):
            raise Fail(tr("review #{r}: a chunk has {n} words, more than size={s}", lang, r=r, n=max(map(len, got_words)),
                          s=size))
        if any(not c for c in got_words):
            raise Fail(tr("review #{r}: an empty chunk; stop as soon as a chunk reaches the last word", lang, r=r))
        if got_words and got_words[-1][-1:] != words[-1:]:
            raise Fail(tr("review #{r} ({n} words, size={s}, overlap={o}): the last words are in no chunk (your last chunk "
                          "ends with {last!r}): keep going until a chunk reaches the last word", lang, r=r, n=len(words),
                          s=size, o=overlap, last=" ".join(got_words[-1][-3:])))
        raise Fail(tr("review #{r} ({n} words, size={s}, overlap={o}): your chunks cover {c} words; consecutive chunks "
                      "must share exactly {o} words (the next starts size - overlap = {step} words later)", lang, r=r,
                      n=len(words), s=size, o=overlap, c=sum(map(len, got_words)) - overlap * (len(got_words) - 1),
                      step=size - overlap))
    return tr("{n} real reviews chunked (size={s}, overlap={o}): every word covered, overlaps exact", lang, n=len(reviews),
              s=size, o=overlap)


register(Exercise(
    "01.dedup", both("Exact and near-duplicate removal"), ("remove_duplicates",), _check_dedup,
    hints=[both("Copies come in two kinds: exact ones (the same string) and near ones (a word or two, the case or the "
                "punctuation changed). Keep the first review of every group of copies, drop the later ones, and return "
                "the indices you keep, in order."),
           both("Exact copies: walk through enumerate(texts) and remember the texts already seen in a set(), as the "
                "chapter does, but keep the index. Near copies need a comparison that small edits barely move: the "
                "Jaccard similarity of the reviews' sets of word 3-shingles."),
           both("A review's shingles: lower-case it, turn punctuation into spaces (re.sub(r'[^\\w\\s]', ' ', text)), "
                "split into words, and take the set of tuples of 3 consecutive words. Jaccard(A, B) = len(A & B) / len(A "
                "| B); a review whose Jaccard with one already kept is >= 0.8 is a copy.")]))

register(Exercise(
    "01.chunk", both("Chunks that cover the review"), ("chunk_words",), _check_chunk,
    hints=[both("A chunk is a window of size words, and consecutive windows share overlap words: each one starts size - "
                "overlap words after the one before. Keep going until a window reaches the review's last word."),
           both("text.split() gives the words; the chunk that starts at word start is ' '.join(words[start:start + size])."),
           both("Stop right after the chunk that reaches the last word (start + size >= len(words)): one more would only "
                "repeat words already covered. A review shorter than size is one chunk.")]))
