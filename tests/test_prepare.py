from course_lib.data.prepare import PreparedData, prepare_imdb


def test_prepare_caches_and_invalidates(tmp_path):
    a = prepare_imdb(limit=600, max_length=64, cache_dir=tmp_path, progress=False)
    assert a.info["cache"] == "miss" and len(a.train) + len(a.test) <= 600
    assert int(a.train.lengths().max()) <= 64
    again = prepare_imdb(limit=600, max_length=64, cache_dir=tmp_path, progress=False)
    assert again.info["cache"] == "hit" and again.train.tokens.equal(a.train.tokens)
    other = prepare_imdb(limit=600, max_length=32, cache_dir=tmp_path, progress=False)
    assert other.info["cache"] == "miss"  # a changed setting never reuses stale tokens
    bpe = prepare_imdb(limit=600, max_length=64, tokenizer="bpe", cache_dir=tmp_path, progress=False)
    assert bpe.info["cache"] == "miss" and bpe.info["tokenizer"]["vocab_size"] == 50257
    batch = a.train.batch([0, 1, 2], pad_id=0)
    assert batch["input_ids"].shape[0] == 3 and batch["attention_mask"].sum(1).tolist() == a.train.lengths()[:3].tolist()
    loaded = PreparedData.load(a.path)
    assert loaded.test.labels.equal(a.test.labels)


def test_damaged_cache_is_rebuilt(tmp_path):
    a = prepare_imdb(limit=400, max_length=32, cache_dir=tmp_path, progress=False)
    a.path.write_bytes(b"garbage")
    assert prepare_imdb(limit=400, max_length=32, cache_dir=tmp_path, progress=False).info["cache"] == "miss"
