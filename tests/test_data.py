import pytest

from course_lib.data.sources import clean_dataset, clean_text, exact_dedup, load_imdb, stratified_split


def test_clean_text_html_entities_unicode_whitespace():
    raw = "Great<br /><br />film &amp; cast.\x00\u200b <i>Loved</i>   it\t\nｆｕｌｌ &lt;b&gt;"
    assert clean_text(raw) == "Great film & cast. Loved it full <b>"


def test_clean_text_bad_input():
    assert clean_text("") == ""
    assert clean_text("caf\u00e9".encode()) == "café"
    with pytest.raises(ValueError, match="not valid UTF-8"):
        clean_text(b"\xff\xfe bad")
    with pytest.raises(TypeError, match="None"):
        clean_text(None)
    with pytest.raises(TypeError, match="int"):
        clean_text(42)


def test_clean_dataset_batched():
    from datasets import Dataset

    ds = clean_dataset(Dataset.from_dict({"text": ["a<br/>b", " x  y "], "label": [0, 1]}))
    assert ds["text"] == ["a b", "x y"]
    with pytest.raises(KeyError, match="review"):
        clean_dataset(ds, column="review")


def test_exact_dedup_keeps_first_and_order():
    texts = ["b", "a", "b", "c", "a", "b"]
    r = exact_dedup(texts)
    assert r.keep == [0, 1, 3] and r.groups == {0: [2, 5], 1: [4]} and r.n_dropped == 3
    assert exact_dedup(["x"] * 5).n_out == 1  # a corpus of copies
    assert exact_dedup([]).n_out == 0
    assert exact_dedup(["A  b", "a b"], key=lambda t: " ".join(t.lower().split())).n_out == 1


def test_offline_imdb_counts_and_split(imdb_texts):
    assert len(imdb_texts.texts) == 25000
    assert exact_dedup(imdb_texts.texts).n_out == 24904
    d = load_imdb(source="offline")
    assert d.provenance["unique_reviews"] == 24904 and d.provenance["exact_duplicates_removed"] == 96
    n_train, n_test = len(d["train"]), len(d["test"])
    assert n_train + n_test == 24904 and abs(n_test / 24904 - 0.2) < 0.001
    assert not set(d["train"]["text"]) & set(d["test"]["text"])
    for split in ("train", "test"):  # stratified: both classes about half
        labels = d[split]["label"]
        assert abs(sum(labels) / len(labels) - 0.5) < 0.01
    again = load_imdb(source="offline")
    assert again["test"]["id"] == d["test"]["id"]  # deterministic


def test_leakage_check_on_limit():
    d = load_imdb(source="offline", limit=3000, leakage_check=True)
    assert len(d["train"]) + len(d["test"]) == 3000
    assert set(d.provenance["leakage"]) >= {"straddling_pairs", "near_duplicate_pairs"}


def test_stratified_split_errors_and_balance():
    tr, te = stratified_split([0] * 50 + [1] * 50, 0.2, seed=3)
    assert len(te) == 20 and not set(tr) & set(te)
    with pytest.raises(ValueError):
        stratified_split([0, 1], 1.5)


def test_path_sources(tmp_path):
    root = tmp_path / "aclImdb"
    for split in ("train", "test"):
        for name in ("neg", "pos"):
            (root / split / name).mkdir(parents=True)
            for i in range(3):
                (root / split / name / f"{i}_1.txt").write_text(f"{split} {name} review {i} <br />text")
    d = load_imdb(source="path", path=root)
    assert len(d["train"]) == 6 and len(d["test"]) == 6 and d.provenance["held_out"].startswith("the source")
    assert load_imdb(source="auto", path=root).provenance["source"] == "path"
    csv = tmp_path / "r.csv"
    csv.write_text("text,label\n" + "\n".join(f"review number {i},{i % 2}" for i in range(20)))
    assert len(load_imdb(source="path", path=csv)["test"]) == 4


def test_path_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_imdb(source="path", path=tmp_path / "nope")
    with pytest.raises(ValueError, match="aclImdb"):
        load_imdb(source="path", path=tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("review,stars\nx,1\n")
    with pytest.raises(ValueError, match="text"):
        load_imdb(source="path", path=bad)
    with pytest.raises(ValueError, match="source"):
        load_imdb(source="ftp")
    with pytest.raises(ValueError, match="needs path"):
        load_imdb(source="path")
