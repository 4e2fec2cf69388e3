"""The attention mask matters: a trained model's answers do not depend on padding with the
mask, and do without it (real reviews, a real model trained in-process)."""
import pytest

from course_lib.data import prepare
from course_lib.lab import masking

# one worker runs the whole file (its module fixture is trained once): .ci/run uses --dist loadgroup
pytestmark = pytest.mark.xdist_group("test_masking")


@pytest.fixture(scope="module")
def prepared():
    return prepare.prepare_imdb(limit=1500, max_length=512, progress=False)


@pytest.fixture(scope="module")
def model(prepared):
    return masking.train_quickly(prepared, epochs=2)


def test_answers_with_the_mask_ignore_padding_and_without_it_do_not(prepared, model):
    table = masking.why_the_mask_matters(prepared, model, n=16, lang="en").reset_index()
    used = table[table["mask"] == "used"]
    ignored = table[table["mask"] == "ignored (all ones)"]
    assert list(used["same answer as alone"]) == ["16/16", "16/16"]
    assert all(float(x) < 1e-5 for x in used["largest change in P(positive)"])
    assert any(x != "16/16" for x in ignored["same answer as alone"]), table
    assert all(float(x) > 1e-3 for x in ignored["largest change in P(positive)"])


def test_the_chinese_table_speaks_chinese(prepared, model):
    table = masking.why_the_mask_matters(prepared, model, n=8, lang="zh")
    assert "与单独打分时的判断相同" in table.columns and "注意力掩码" in table.index.names
