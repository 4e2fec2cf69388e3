"""Results as tables a learner reads, in the notebook's language."""
from course_lib.lab import tables

RESULT = {"identical": False, "first_divergent_step": 22, "max_loss_diff": 0.0012, "skipped_samples": 0,
          "repeated_samples": 263, "final_params_identical": False}


def test_facts_keep_integers_and_leave_out_nested_values():
    t = tables.facts({"raw_reviews": 25000, "ratio": 0.123456, "nested": {"a": 1}, "done": True}, lang="en")
    assert list(t.index) == ["raw reviews", "ratio", "done"]
    assert t.loc["raw reviews", "value"] == 25000 and t.loc["ratio", "value"] == 0.1235 and t.loc["done", "value"] == "yes"


def test_comparisons_and_reading_in_both_languages():
    en = tables.comparisons({"weights-only": RESULT, "full": {**RESULT, "identical": True, "first_divergent_step": None}},
                            lang="en")
    assert en.loc["weights-only", "first divergent step"] == 22 and en.loc["full", "identical?"] == "yes"
    assert tables.reading(RESULT, lang="en") == "identical? no; first divergent step: 22"
    zh = tables.comparisons({"full": RESULT}, lang="zh")
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in col) for col in zh.columns), list(zh.columns)
    assert "否" in tables.reading(RESULT, lang="zh")


def test_no_table_cuts_its_text():
    """pandas cuts a cell at 50 characters by default ("write the checkpoint to a temporary file,
    fsyn..."): the teacher's read found the chapter's crash message, the reconstruction's choices and
    the real-scale sources cut in both editions. The kit's table view shows every character, in
    JupyterLab's rich view and in the text one; and a table of the kit's own cuts nothing itself."""
    import pandas as pd

    long = "write the checkpoint to a temporary file, fsync it, then rename it over the old one"
    frame = tables.facts({"the fix": long}, lang="en")
    for shown in (frame._repr_html_(), repr(frame), repr(pd.DataFrame({"x": [long]}))):
        assert long in shown and "..." not in shown, shown
    sentence = "Investors are using machine learning to predict stock prices, and the regulators are worried about it."
    assert sentence in tables.policy_table([("Technology", r"machine learning")], [sentence], lang="en")._repr_html_()
