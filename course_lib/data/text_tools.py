"""Station 1, second half: chunking long texts and labelling texts with rules.

Chunks carry their character span in the source text, so a test (or a learner) can check
that nothing was lost: the spans cover every non-space character of the input.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """A piece of a source text and its character span: ``source[start:end] == text``."""

    text: str
    start: int
    end: int


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"chunking needs a str, got {type(text).__name__}; clean the input first")
    return text


def chunk_by_sentence(text: str, max_chars: int = 1000) -> list[Chunk]:
    """Chunks of whole sentences, packed greedily up to ``max_chars`` each (a longer sentence is cut every
    ``max_chars`` characters); raises TypeError for a text that is not a str,
    ValueError if ``max_chars < 1``. Notebook 01, §5."""
    text = _check_text(text)
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    spans, pos = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        spans.append((pos, len(text)))
    bounds: list[tuple[int, int]] = []
    grow = False  # may the last chunk take the next sentence?
    for s, e in spans:
        if grow and e - bounds[-1][0] <= max_chars:
            bounds[-1] = (bounds[-1][0], e)
        elif e > s:  # a sentence longer than max_chars is cut every max_chars characters
            bounds += [(i, min(i + max_chars, e)) for i in range(s, e, max_chars)]
            grow = e - s <= max_chars
    return [Chunk(text[s:e], s, e) for s, e in bounds]


def chunk_fixed(text: str, size: int, overlap: int = 0) -> list[Chunk]:
    """Windows of ``size`` words that step by ``size - overlap``; raises ValueError for a bad size or
    overlap. Notebook 01, §5. A window never splits a word, and the last window reaches the end of the
    text, so the windows cover it."""
    text = _check_text(text)
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got size={size}, overlap={overlap}")
    words = [m.span() for m in _TOKEN.finditer(text)]
    chunks = []
    for i in range(0, len(words), size - overlap):
        s, e = words[i][0], words[min(i + size, len(words)) - 1][1]
        chunks.append(Chunk(text[s:e], s, e))
        if i + size >= len(words):
            break
    return chunks


def coverage(text: str, chunks: Iterable[Chunk]) -> float:
    """Share of ``text``'s non-space characters inside some chunk (1.0: nothing lost); raises ValueError
    for a chunk that does not match the text. Notebook 01, §5."""
    covered = bytearray(len(text))
    for c in chunks:
        if text[c.start:c.end] != c.text:
            raise ValueError(f"chunk at {c.start}:{c.end} does not match the source text")
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    solid = [i for i, ch in enumerate(text) if not ch.isspace()]
    return sum(covered[i] for i in solid) / len(solid) if solid else 1.0


# --------------------------------------------------------------------------- rule labels
POLICIES = ("first", "priority", "vote")


@dataclass
class Rule:
    """A rule that votes for ``label`` where ``pattern`` matches (case-insensitive); raises ValueError for
    a bad regular expression."""

    label: str
    pattern: str        # a regular expression; plain keywords work as they are
    priority: int = 0

    def __post_init__(self):
        try:
            self._rx = re.compile(self.pattern, re.IGNORECASE)
        except re.error as err:
            raise ValueError(f"rule for {self.label!r}: bad regular expression {self.pattern!r}: {err}") from None

    def hits(self, text: str) -> int:
        return len(self._rx.findall(text))


class RuleLabeler:
    """Keyword/regex rules -> one label per text (``default`` where none matches), with an explicit
    conflict ``policy``; raises ValueError for an unknown policy or no rules. Notebook 01, §6.
    ``first``: the first matching rule wins; ``priority``: the matching rule of highest ``priority``;
    ``vote``: the label with the most pattern hits; ties go to list order."""

    def __init__(self, rules: Iterable[Rule | tuple], default: str = "Other", policy: str = "first"):
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy!r}; choose one of {POLICIES}")
        self.rules = [r if isinstance(r, Rule) else Rule(*r) for r in rules]
        if not self.rules:
            raise ValueError("RuleLabeler needs at least one rule")
        self.default, self.policy = default, policy

    def explain(self, text: str) -> dict:
        """``{label, matched, conflict}``: the label, the labels of every rule that matched, and whether
        they disagree, so conflicts are visible, not silent."""
        text = _check_text(text)
        matches = [(r, n) for r in self.rules if (n := r.hits(text))]
        votes: Counter[str] = Counter()  # max() returns the first of equals: ties go to list order
        for r, n in matches:
            votes[r.label] += n
        if not matches:
            label = self.default
        elif self.policy == "first":
            label = matches[0][0].label
        elif self.policy == "priority":
            label = max(matches, key=lambda m: m[0].priority)[0].label
        else:
            label = max(votes, key=votes.__getitem__)
        matched = sorted(votes)
        return {"label": label, "matched": matched, "conflict": len(matched) > 1}

    def __call__(self, text: str) -> str:
        return self.explain(text)["label"]

    def label_all(self, texts: Iterable[str]) -> list[str]:
        return [self(t) for t in texts]


DEMO_RULES = [
    Rule("Technology", r"\b(machine learning|neural|algorithm|software|computer|GPU)\b", priority=2),
    Rule("Sports", r"\b(football|match|tournament|goal|athlete)s?\b", priority=1),
    Rule("Finance", r"\b(stock|market|bank|interest rate|inflation)s?\b", priority=1),
    Rule("Health", r"\b(vaccine|hospital|doctor|patient|disease)s?\b", priority=1),
]


def demo_corpus() -> list[str]:
    """The texts of the handwritten ``data/demo_corpus.txt``, one per line (the book's one sentence when
    the repository's ``data/`` is not there). Notebook 01, §6."""
    path = Path(__file__).resolve().parents[2] / "data" / "demo_corpus.txt"
    if not path.exists():  # installed without the repo: fall back to the book's sentence
        return ["Machine learning is transforming how we build software."]
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
