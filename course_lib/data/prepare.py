"""Stations 1 + 2 as one call: IMDB -> cleaned, deduplicated, split, tokenized tensors.

``prepare_imdb`` is what the training stations consume. Its result is cached on disk as a
plain tensor file (loadable with ``weights_only=True``), keyed by every setting that changes
the output *and* by a hash of the tokenizer itself, so a second run does not re-tokenize and
a changed tokenizer or setting never reuses stale tokens.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch

from course_lib.data.batching import pad_batch

CACHE_VERSION = 3  # bump when cleaning, dedup, splitting or load_tokenizer changes what a cache file holds


def cache_root() -> Path:
    """The kit's cache folder: ``$COURSE_LIB_CACHE``, else ``~/.cache/course_lib``."""
    return Path(os.environ.get("COURSE_LIB_CACHE", Path.home() / ".cache" / "course_lib"))


@dataclass
class TokenSplit:
    """Variable-length token sequences stored flat: sequence i is
    ``tokens[offsets[i]:offsets[i+1]]``. Flat tensors pickle and load fast."""

    tokens: torch.Tensor   # int32
    offsets: torch.Tensor  # int64, len n+1
    labels: torch.Tensor   # int64
    ids: torch.Tensor      # int64: the review's id in the source, for the sample ledger

    def __len__(self) -> int:
        return len(self.labels)

    def sequence(self, i: int) -> torch.Tensor:
        return self.tokens[self.offsets[i]:self.offsets[i + 1]]

    def lengths(self) -> torch.Tensor:
        return self.offsets[1:] - self.offsets[:-1]

    def batch(self, indices: list[int], pad_id: int) -> dict[str, torch.Tensor]:
        """``input_ids`` + ``attention_mask`` + ``label`` of these samples, padded to their longest
        member (dynamic padding, :func:`~course_lib.data.batching.pad_batch`; at least one column)."""
        starts, ends = self.offsets[indices].tolist(), self.offsets[[i + 1 for i in indices]].tolist()
        rows = [{"input_ids": self.tokens[s:e]} for s, e in zip(starts, ends)]
        return {**pad_batch(rows, pad_id, max_length=1), "label": self.labels[indices]}

    @classmethod
    def from_lists(cls, ids_list: list[list[int]], labels: list[int], ids: list[int]) -> TokenSplit:
        """A :class:`TokenSplit` of per-sample token lists, their labels and their source ids."""
        offsets = torch.tensor([0, *itertools.accumulate(map(len, ids_list))], dtype=torch.int64)
        flat = torch.tensor([t for seq in ids_list for t in seq], dtype=torch.int32)
        return cls(flat, offsets, torch.tensor(labels, dtype=torch.int64), torch.tensor(ids, dtype=torch.int64))


@dataclass
class PreparedData:
    """Both splits' tokens and ``info``, as :func:`prepare_imdb` returns and caches them."""

    train: TokenSplit
    test: TokenSplit
    info: dict  # counts per step, provenance, tokenizer, timings
    path: Path | None = None

    def save(self, path: Path) -> Path:
        """Writes the cache file atomically (temp file + rename) and returns ``path``. The temporary
        file is this process's own: two processes preparing the same data (the members of an
        elastic group on a cold cache) each rename a whole file, and the last one stays."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        torch.save({"train": vars(self.train), "test": vars(self.test), "info": json.dumps(self.info)}, tmp)
        os.replace(tmp, path)
        self.path = path
        return path

    @classmethod
    def load(cls, path: str | Path) -> PreparedData:
        """The :class:`PreparedData` that :meth:`save` wrote to ``path``, read with ``weights_only=True``."""
        blob = torch.load(path, weights_only=True)
        return cls(TokenSplit(**blob["train"]), TokenSplit(**blob["test"]), json.loads(blob["info"]), Path(path))


def prepare_imdb(
    source: str = "offline",
    path: str | None = None,
    limit: int | None = None,
    tokenizer: str = "wordpiece",
    max_length: int = 512,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: bool = True,
) -> PreparedData:
    """:class:`PreparedData`: IMDB loaded, cleaned, deduplicated (exact; then near-duplicates, Jaccard >= 0.8,
    in train and test reviews near a train one), split (20% held out), tokenized, cached. Notebook 02, §5."""
    # imported here, not at the top: training ranks only read the cache file (PreparedData.load),
    # and a cache hit needs neither transformers nor datasets (seconds of imports before each launch)
    from course_lib.data.tokenization import tokenizer_fingerprint

    fingerprint, tok = tokenizer_fingerprint(tokenizer), None
    if fingerprint is None:  # a Hub name: only the loaded tokenizer says what it is
        from course_lib.data.tokenization import load_tokenizer

        tok = load_tokenizer(tokenizer)
        fingerprint = hashlib.sha256(tok.backend_tokenizer.to_str().encode()).hexdigest()[:16]
    settings = {"v": CACHE_VERSION, "source": source, "path": str(path) if path else None, "limit": limit,
                "tokenizer": tokenizer, "tokenizer_sha": fingerprint, "max_length": max_length, "seed": seed}
    if path and Path(path).exists():
        settings["path_mtime"] = Path(path).stat().st_mtime
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:20]
    cache_file = Path(cache_dir or cache_root()) / "prepared" / f"imdb-{key}.pt"
    if cache_file.exists():
        try:
            data = PreparedData.load(cache_file)
            data.info["cache"] = "hit"
            return data
        except Exception:  # a damaged cache is rebuilt, never trusted
            cache_file.unlink(missing_ok=True)

    from course_lib.data.near_dup import find_near_duplicates
    from course_lib.data.sources import clean_text, load_imdb, select_rows
    from course_lib.data.tokenization import encode_texts, load_tokenizer

    tok = tok or load_tokenizer(tokenizer)
    t0 = time.perf_counter()
    dsd = load_imdb(source=source, path=path, seed=seed, limit=limit)
    train, test = dsd["train"].to_dict(), dsd["test"].to_dict()  # text, label, id
    train["text"], test["text"] = [clean_text(t) for t in train["text"]], [clean_text(t) for t in test["text"]]
    info: dict[str, Any] = {"provenance": dsd.provenance, "settings": settings}

    nd = find_near_duplicates(train["text"] + test["text"], progress=progress)
    n_train = len(train["text"])
    drop_train = {i for i in nd.dropped if i < n_train}
    leaked = {j for _, j, _ in nd.straddling(n_train)}  # a leak: dropped from test
    info["near_dup"] = {**nd.params, "pairs": len(nd.pairs), "train_dropped": len(drop_train),
                        "test_leaks_dropped": len(leaked), "seconds": round(nd.seconds, 2)}
    train = select_rows(train, [i for i in range(n_train) if i not in drop_train])
    test = select_rows(test, [i for i in range(len(test["text"])) if i not in leaked])

    info.update({
        "train": len(train["text"]), "test": len(test["text"]),
        "tokenizer": {"name": tokenizer, "vocab_size": len(tok), "pad_id": tok.pad_token_id,
                      "max_length": max_length},
        "seconds": round(time.perf_counter() - t0, 2), "cache": "miss",
    })
    train_split, test_split = (TokenSplit.from_lists(encode_texts(tok, part["text"], max_length)["input_ids"],
                                                     part["label"], part["id"]) for part in (train, test))
    data = PreparedData(train_split, test_split, info)
    data.save(cache_file)
    return data


def prepare_for(cfg, progress: bool = True) -> PreparedData:
    """:func:`prepare_imdb` with the data settings of a :class:`~course_lib.config.TrainConfig`."""
    return prepare_imdb(source=cfg.data_source, path=cfg.data_path, limit=cfg.train_limit or None,
                        tokenizer=cfg.tokenizer, max_length=cfg.max_length, seed=cfg.seed,
                        cache_dir=cfg.cache_dir, progress=progress)


def prepared_for_rank(cfg, rank: int, data_file: str | None) -> PreparedData:
    """The :class:`PreparedData` a rank trains on, called by every rank as it starts; a collective
    (``broadcast_object_list``) when ``data_file`` is None: then rank 0 prepares the data (or finds it
    cached) and sends the others its path (``launch`` passes the file instead), so two ranks never
    tokenize at once and the others never import ``transformers``."""
    if data_file is None:
        import torch.distributed as dist

        where = [str(prepare_for(cfg, progress=True).path) if rank == 0 else None]
        dist.broadcast_object_list(where, src=0)
        data_file = cast(str, where[0])  # rank 0's path, now on every rank
    return PreparedData.load(data_file)
