import numpy as np
import pytest

from course_lib.data.near_dup import (
    find_near_duplicates,
    flat_shingles,
    jaccard,
    lsh_params,
    pair_scores,
    plant_near_duplicates,
)


def test_planted_pairs_found_on_real_reviews(imdb_texts):
    texts = sorted(set(imdb_texts.texts))[:1500]
    corpus, planted = plant_near_duplicates(texts, 100, seed=1)
    r = find_near_duplicates(corpus, threshold=0.8, progress=False)
    scores = pair_scores({(i, j) for i, j, _ in r.pairs}, planted, len(texts))
    assert scores["recall"] >= 0.95 and scores["precision"] >= 0.95
    assert set(r.dropped) >= {copy for _, copy in planted if any(copy == j for _, j, _ in r.pairs)}
    assert all(s >= 0.8 for _, _, s in r.pairs)


def test_case_and_punctuation_do_not_matter():
    a = "This movie was great, and the acting was superb. I loved every minute of it."
    b = "THIS movie was great; and the acting was superb! i loved every minute of it"
    r = find_near_duplicates([a, b, "Something entirely different about cooking pasta at home."], progress=False)
    assert [(i, j) for i, j, _ in r.pairs] == [(0, 1)] and r.keep == [0, 2] and r.dropped == [1]


def test_threshold_separates():
    base = " ".join(f"word{i}" for i in range(100))
    edited = base.replace("word50", "changed")  # 3 of 98 shingles differ
    far = " ".join(f"word{i}" for i in range(50)) + " " + " ".join(f"other{i}" for i in range(50))
    flat, offsets = flat_shingles([base, edited, far])
    sh = [np.unique(part) for part in np.split(flat, offsets[1:])]  # each text's set of shingles
    assert jaccard(sh[0], sh[1]) > 0.9 > 0.5 > jaccard(sh[0], sh[2])
    assert len(find_near_duplicates([base, edited, far], threshold=0.9, progress=False).pairs) == 1
    assert len(find_near_duplicates([base, far], threshold=0.3, progress=False).pairs) == 1


def test_edge_cases():
    assert find_near_duplicates([], progress=False).pairs == []
    r = find_near_duplicates(["same text here"] * 200, progress=False)  # one huge bucket
    assert r.keep == [0] and len(r.dropped) == 199
    r = find_near_duplicates(["", "", "a"], progress=False)
    assert r.keep == [0, 2]
    with pytest.raises(TypeError, match="item 1"):
        find_near_duplicates(["ok", None], progress=False)


def test_lsh_params_find_threshold_pairs():
    bands, rows = lsh_params(0.8, 128)
    assert bands * rows <= 128 and 1 - (1 - 0.8 ** rows) ** bands >= 0.99
    with pytest.raises(ValueError):
        lsh_params(0, 128)
