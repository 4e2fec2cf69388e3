"""Notebook 01's exercises, on real reviews: remove exact and near-duplicate copies; chunk a review."""
from __future__ import annotations

import random

from course_lib.exercises.base import Exercise, Fail, learner_call, register, say

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
        raise Fail(say(lang, "remove_duplicates must return the indices it keeps (a list of ints), got {t}",
                       "remove_duplicates 应返回保留下来的下标（int 列表），实际返回了 {t}", t=type(got).__name__))
    if not got:
        raise Fail(say(lang, "remove_duplicates returned no index: return the indices of the reviews to keep",
                       "remove_duplicates 没有返回任何下标：请返回要保留的影评下标"))
    kept = set(got)
    exact = [c for c, s in copy_of.items() if corpus[c] == corpus[s]]
    swapped = [c for c, s in copy_of.items() if c in kept and s not in kept]
    if swapped:
        raise Fail(say(lang, "for #{s} and its copy #{c} you kept the copy: keep the first occurrence (labels and order "
                             "follow the original)", "#{s} 和它的副本 #{c}，你留下了副本：应保留第一次出现的那条",
                       s=copy_of[swapped[0]], c=swapped[0]))
    kept_exact = [c for c in exact if c in kept]
    if kept_exact:
        raise Fail(say(lang, "kept {k} of {n} exact copies (e.g. #{c} is #{s} again, character for character): compare "
                             "the texts exactly first (a set of the texts seen, as the chapter's set())",
                       "{n} 条完全相同的副本留下了 {k} 条（例如 #{c} 与 #{s} 一字不差）：先做精确比较"
                       "（像本章的 set() 那样记下见过的文本）",
                       k=len(kept_exact), n=len(exact), c=kept_exact[0], s=copy_of[kept_exact[0]]))
    kept_near = [c for c in copy_of if c in kept and c not in exact]
    if kept_near:
        raise Fail(say(lang, "kept {k} of {n} near-duplicates (e.g. #{c} is #{s} with a word or two and the punctuation "
                             "changed): exact comparison misses them; compare word 3-shingle sets, case and punctuation "
                             "folded, and drop a review whose Jaccard similarity to a kept one is >= 0.8",
                       "{n} 条近似重复留下了 {k} 条（例如 #{c} 只是把 #{s} 改了一两个词和标点）：精确比较找不到它们；"
                       "请比较词级 3-shingle 集合（忽略大小写和标点），与已保留影评的 Jaccard 相似度 >= 0.8 的就丢掉",
                       k=len(kept_near), n=len(copy_of) - len(exact), c=kept_near[0], s=copy_of[kept_near[0]]))
    lost = [i for i in keep if i not in kept]
    if lost:
        raise Fail(say(lang, "dropped {k} reviews that have no copy (e.g. #{i}): your test of 'the same review' is too "
                             "loose (Jaccard >= 0.8 of word 3-shingles)", "丢掉了 {k} 条没有副本的影评（例如 #{i}）："
                             "你判断\"同一条\"的标准太松了（应为词级 3-shingle 的 Jaccard >= 0.8）", k=len(lost), i=lost[0]))
    return say(lang, "{n} reviews in, {k} kept: all {e} exact and {m} near-duplicate copies removed, no original lost",
               "输入 {n} 条，保留 {k} 条：{e} 条精确副本和 {m} 条近似副本全部去掉，原文一条不少",
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
            raise Fail(say(lang, "chunk_words must return a list of chunks, each a string of words; got {g!r}",
                           "chunk_words 应返回片段列表，每个片段是由词组成的字符串；实际得到 {g!r}",
                           g=got[:2] if got else got))
        got_words = [c.split() for c in got]
        if any(len(c) > size for c in got_words):
            raise Fail(say(lang, "review #{r}: a chunk has {n} words, more than size={s}",
                           "影评 #{r}：有一个片段 {n} 个词，超过了 size={s}", r=r, n=max(map(len, got_words)), s=size))
        if any(not c for c in got_words):
            raise Fail(say(lang, "review #{r}: an empty chunk; stop as soon as a chunk reaches the last word",
                           "影评 #{r}：出现了空片段；某个片段到达最后一个词就应停止", r=r))
        if got_words and got_words[-1][-1:] != words[-1:]:
            raise Fail(say(lang, "review #{r} ({n} words, size={s}, overlap={o}): the last words are in no chunk (your "
                                 "last chunk ends with {last!r}): keep going until a chunk reaches the last word",
                           "影评 #{r}（{n} 个词，size={s}，overlap={o}）：最后几个词不在任何片段里（最后一个片段以 "
                           "{last!r} 结尾）：要一直切分到某个片段到达最后一个词", r=r, n=len(words), s=size, o=overlap,
                           last=" ".join(got_words[-1][-3:])))
        raise Fail(say(lang, "review #{r} ({n} words, size={s}, overlap={o}): your chunks cover {c} words; consecutive "
                             "chunks must share exactly {o} words (the next starts size - overlap = {step} words later)",
                       "影评 #{r}（{n} 个词，size={s}，overlap={o}）：你的片段共覆盖 {c} 个词；相邻两个片段必须恰好"
                       "共享 {o} 个词（下一个片段晚 size - overlap = {step} 个词开始）", r=r, n=len(words), s=size,
                       o=overlap, c=sum(map(len, got_words)) - overlap * (len(got_words) - 1), step=size - overlap))
    return say(lang, "{n} real reviews chunked (size={s}, overlap={o}): every word covered, overlaps exact",
               "{n} 条真实影评已切分（size={s}，overlap={o}）：每个词都被覆盖，重叠正好", n=len(reviews), s=size,
               o=overlap)


register(Exercise(
    "01.dedup", ("Exact and near-duplicate removal", "精确去重与近似去重"), ("remove_duplicates",), _check_dedup,
    hints=[("Copies come in two kinds: exact ones (the same string) and near ones (a word or two, the case or the "
            "punctuation changed). Keep the first review of every group of copies, drop the later ones, and "
            "return the indices you keep, in order.",
            "副本有两种：完全相同的（同一个字符串），和近似的（改了一两个词、大小写或标点）。每组副本只留第一条，"
            "丢掉后面的，按顺序返回保留下来的下标。"),
           ("Exact copies: walk through enumerate(texts) and remember the texts already seen in a set(), as the "
            "chapter does, but keep the index. Near copies need a comparison that small edits barely move: the "
            "Jaccard similarity of the reviews' sets of word 3-shingles.",
            "完全相同的副本：遍历 enumerate(texts)，像本章那样用 set() 记下见过的文本，但要记住下标。近似副本要用"
            "一种不怕小改动的比较：两条影评的词级 3-shingle 集合的 Jaccard 相似度。"),
           ("A review's shingles: lower-case it, turn punctuation into spaces (re.sub(r'[^\\w\\s]', ' ', text)), "
            "split into words, and take the set of tuples of 3 consecutive words. Jaccard(A, B) = "
            "len(A & B) / len(A | B); a review whose Jaccard with one already kept is >= 0.8 is a copy.",
            "一条影评的 shingle：转小写，把标点换成空格（re.sub(r'[^\\w\\s]', ' ', text)），切成词，取相邻 3 个词"
            "组成的元组的集合。Jaccard(A, B) = len(A & B) / len(A | B)；与某条已保留影评的 Jaccard >= 0.8 的就是副本。")]))

register(Exercise(
    "01.chunk", ("Chunks that cover the review", "覆盖全文的片段"), ("chunk_words",), _check_chunk,
    hints=[("A chunk is a window of size words, and consecutive windows share overlap words: each one starts "
            "size - overlap words after the one before. Keep going until a window reaches the review's last word.",
            "一个片段是 size 个词的窗口，相邻两个窗口共享 overlap 个词：每个窗口比前一个晚 size - overlap 个词开始。"
            "一直切分，直到某个窗口到达影评的最后一个词。"),
           ("text.split() gives the words; the chunk that starts at word start is ' '.join(words[start:start + "
            "size]).", "text.split() 给出词的列表；从第 start 个词开始的片段是 ' '.join(words[start:start + size])。"),
           ("Stop right after the chunk that reaches the last word (start + size >= len(words)): one more would "
            "only repeat words already covered. A review shorter than size is one chunk.",
            "到达最后一个词的那个片段（start + size >= len(words)）切完就停：再切一个只会重复已经覆盖的词。"
            "比 size 还短的影评就是一个片段。")]))
