import pytest

from course_lib.data.tokenization import (
    encode_texts,
    encode_windows,
    load_tokenizer,
    train_tokenizer,
)

# one worker runs the whole file (its module fixture is trained once): .ci/run uses --dist loadgroup
pytestmark = pytest.mark.xdist_group("test_tokenization")


@pytest.fixture(scope="module")
def wp():
    return load_tokenizer("wordpiece")


@pytest.fixture(scope="module")
def bpe():
    return load_tokenizer("bpe")


def test_real_vocabularies(wp, bpe):
    assert len(wp) == 30522 and len(bpe) == 50257
    assert bpe("Hello world!")["input_ids"] == [15496, 995, 0]
    assert wp.tokenize("unbelievable") == ["unbelievable"]
    assert bpe.tokenize("unbelievable") == ["un", "bel", "iev", "able"]
    assert wp.tokenize("Tarantino 🎬") == ["tara", "##ntino", "[UNK]"]
    assert wp.convert_ids_to_tokens(encode_texts(wp, ["Hello"])["input_ids"][0]) == ["[CLS]", "hello", "[SEP]"]


def test_no_baked_in_truncation_or_padding(wp):
    long_review = "a truly wonderful film " * 200
    ids = encode_texts(wp, [long_review])["input_ids"][0]
    assert len(ids) > 128  # the packaged tokenizer.json would have cut this to 128
    assert len(encode_texts(wp, [long_review], max_length=256)["input_ids"][0]) == 256
    assert len(encode_texts(wp, [long_review])["input_ids"][0]) == len(ids)  # truncation restored off
    assert len(encode_texts(wp, ["short"])["input_ids"][0]) == 3  # no padding to 128


@pytest.mark.parametrize("name", ["wordpiece", "bpe"])
def test_the_chapters_call_leaks_nothing_into_the_kits(name, wp, bpe):
    """Notebook 02 calls the tokenizer the chapter's way (``padding=True, truncation=True``) before
    the kit's functions: in transformers 5.x that call leaves padding and truncation switched on in
    the Rust backend, and a kit function reading the backend then returned every review padded to the
    longest and cut (notebook 02 showed 0.0 % padding). Each encoding function must set both itself,
    and leave the tokenizer as it found it."""
    tok = wp if name == "wordpiece" else bpe
    texts = ["a short one", "a much longer review than the other one, by far, and then some more words"]
    alone = encode_texts(tok, texts)["input_ids"]
    assert len(alone[0]) < len(alone[1]) > 8
    tok(texts, padding=True, truncation=True, max_length=8)  # the chapter's call
    before = (tok.backend_tokenizer.padding, tok.backend_tokenizer.truncation)
    assert before[0] is not None and before[1] is not None  # the state that leaked
    assert encode_texts(tok, texts)["input_ids"] == alone
    assert encode_texts(tok, texts, max_length=8)["input_ids"] == [alone[0], alone[1][:7] + alone[1][-1:]] \
        if name == "wordpiece" else [ids[:8] for ids in alone]
    win = encode_windows(tok, texts, max_length=8, stride=2)
    assert [len(ids) for ids, s in zip(win["input_ids"], win["sample"]) if s == 0] == [len(alone[0])]  # not padded
    assert all(len(ids) <= 8 for ids in win["input_ids"]) and win["sample"].count(1) > 1
    assert (tok.backend_tokenizer.padding, tok.backend_tokenizer.truncation) == before  # left as found
    tok(texts[0])  # transformers' own call sets what it needs again: nothing of ours lingers either


def test_gpt2_padding_is_explicit(bpe):
    assert bpe.pad_token == "<|endoftext|>" and bpe.pad_token_id == 50256


def test_unknown_tokenizer():
    with pytest.raises(ValueError, match="valid: 'wordpiece', 'bpe'"):
        load_tokenizer("sentencepiece-please")


@pytest.mark.parametrize("name", ["wordpiece", "bpe"])
def test_bad_inputs_have_defined_output(name, wp, bpe):
    tok = wp if name == "wordpiece" else bpe
    texts = ["", None, "x" * 1_000_000, "great movie 🎬🍿 👍🏽", "日本語のレビュー and English, русский"]
    enc = encode_texts(tok, texts)
    assert len(enc["input_ids"]) == 5
    assert all(len(i) == len(m) for i, m in zip(enc["input_ids"], enc["attention_mask"]))
    with pytest.raises(TypeError, match="text 0"):
        encode_texts(tok, [123])


def test_windows_keep_every_token(wp):
    text = " ".join(f"w{i}" for i in range(600))
    full = encode_texts(wp, [text])["input_ids"][0]
    win = encode_windows(wp, [text, "short"], max_length=128, stride=32)
    assert set(win["sample"]) == {0, 1} and win["sample"].count(0) > 1
    inner = [t for ids, s in zip(win["input_ids"], win["sample"]) if s == 0 for t in ids[1:-1]]
    assert set(full[1:-1]) <= set(inner)


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_train_and_reload_own_tokenizer(kind, tmp_path, imdb_texts):
    tok = train_tokenizer(kind, imdb_texts.texts[:300], vocab_size=1000, save_dir=tmp_path / kind)
    assert 300 < len(tok) <= 1000
    ids = encode_texts(tok, ["This movie was great"])["input_ids"][0]
    assert tok.decode(ids, skip_special_tokens=True).strip().lower() == "this movie was great"
    with pytest.raises(ValueError):
        train_tokenizer("unigram", ["x"])


def test_whether_a_word_splits_depends_on_the_vocabulary(wp, imdb_texts):
    """The chapter's example: BERT's vocabulary keeps "unbelievable" whole, spells
    "unwatchable" from pieces; a small vocabulary trained on reviews splits both."""
    from course_lib.data.sources import clean_text
    from course_lib.data.tokenization import train_tokenizer
    from course_lib.lab.tables import pieces_table

    small = train_tokenizer("wordpiece", [clean_text(t) for t in imdb_texts.texts[:2000]], vocab_size=1000)
    t = pieces_table({"bert": wp, "small": small}, ["unbelievable", "unwatchable"], lang="en")
    assert t.loc["unbelievable", "bert"] == "unbelievable" and t.loc["unwatchable", "bert"] == "un · ##watch · ##able"
    assert t.loc["unbelievable", "small"].startswith("un · ##")
