import numpy as np
import pytest

from course_lib.data.batching import length_grouped_batches, pad_batch, padding_report


def test_pad_batch_pads_to_longest_with_mask():
    b = pad_batch([{"input_ids": [5, 6, 7], "label": 1}, {"input_ids": [8], "label": 0}], pad_id=0)
    assert b["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert b["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert b["label"].tolist() == [1, 0]
    assert pad_batch([{"input_ids": [1]}], 0, max_length=4)["input_ids"].shape == (1, 4)
    with pytest.raises(ValueError):
        pad_batch([], 0)


def test_length_grouping_covers_all_and_cuts_padding():
    lengths = np.random.default_rng(0).lognormal(5.2, 0.7, size=3000).astype(int) + 5  # review-like
    batches = length_grouped_batches(lengths, 32, seed=1)
    assert sorted(i for b in batches for i in b) == list(range(3000))
    r = padding_report(lengths, batch_size=32, max_length=256)
    assert r["grouped"] < r["dynamic"] <= r["pad_to_max"]  # at 256, most random batches hold one full-length review
    assert r["grouped_cut_vs_pad_to_max"] > 0.7
