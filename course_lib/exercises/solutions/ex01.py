"""Notebook 01: exact and near-duplicate removal; chunks that cover the text.
notebook 01：精确去重与近似去重；能覆盖全文的切分。"""
import re


def _shingles(text):
    # Word 3-shingles with case and punctuation folded away: re-posting edits do not count.
    # 词级 3-shingle，忽略大小写和标点：转贴时的小改动不算数。
    words = re.sub(r"[^\w\s]", " ", text.lower()).split()
    return {tuple(words[i:i + 3]) for i in range(max(len(words) - 2, 1))}


def remove_duplicates(texts):
    # 1. exact: the chapter's set(), but remembering the first index so labels can follow.
    # 1. 精确去重：本章的 set()，但记住第一次出现的位置，标签才能跟着走。
    seen, unique = set(), []
    for i, text in enumerate(texts):
        if text not in seen:
            seen.add(text)
            unique.append(i)
    # 2. near: Jaccard similarity of shingle sets >= 0.8 means "the same review, lightly edited";
    #    keep the first of each such group. (All pairs: fine for a few hundred reviews; at scale,
    #    MinHash + LSH finds the candidate pairs: course_lib.data.near_dup.)
    # 2. 近似去重：shingle 集合的 Jaccard 相似度 >= 0.8 即"同一条影评、略有改动"，每组只留第一条。
    #    （两两比较：几百条没问题；规模大时用 MinHash + LSH 找候选对：course_lib.data.near_dup。）
    kept, kept_sets = [], []
    for i in unique:
        s = _shingles(texts[i])
        if all(len(s & t) / len(s | t) < 0.8 for t in kept_sets):
            kept.append(i)
            kept_sets.append(s)
    return kept


def chunk_words(text, size, overlap):
    # Windows of `size` words, each starting `size - overlap` words after the previous one,
    # until a window reaches the last word: every word is in some chunk.
    # 每块 `size` 个词，下一块比上一块晚 `size - overlap` 个词开始，直到某一块到达最后一个词：每个词都被覆盖。
    words = text.split()
    chunks, start = [], 0
    while True:
        chunks.append(" ".join(words[start:start + size]))
        if start + size >= len(words):
            return chunks
        start += size - overlap
